"""The one request type every I/O-free machine hands its driver: the group
machines (fastkc/group/), the fetch machine (fastkc/fetch/) and the share
machines (fastkc/share/).

A machine never does I/O: its `next_requests(...)` returns `Request`s, the
driver sends each to its target and gives the answer (the decoded body, or
(payload, version) when `raw`, or the exception that ended it) back to
`on_response(request.token, answer, now)`.

Targets:
- `COORDINATOR`: the group coordinator the CoordinatorMachine found (a
  driver that cannot reach it answers with CoordinatorUnknownError);
- `ANY_NODE`: whichever broker the driver picks (FindCoordinator;
  "Metadata", answered with the driver's refreshed cluster view: `.topics`
  {name: TopicMetadata}, `.brokers`, `.topic_names_by_id`);
- a node id (int): that broker (Fetch, ListOffsets, ShareFetch, ...);
  `node_id` reads it.

Tokens are opaque to the driver and typed per machine (`Request[Token]` for
the group machines, `Request[int]` for the fetch machine, the share fetch
machine's own token): the driver hands each back unread.
"""
from typing import Any, Generic, NamedTuple, TypeVar

COORDINATOR = "coordinator"
ANY_NODE = "any"

#: what a request's token is: each machine's own type
T = TypeVar("T")


class Token:
    """An opaque request token (identity compared), named for logs."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return "<token {0}>".format(self.what)


class Request(NamedTuple, Generic[T]):
    """One outgoing request: where to, the API name, its body (a dict the
    protocol codec encodes), how long the driver may wait for the answer,
    the token to give back with it; the version the body was built for
    (None: whichever the connection speaks) and whether the answer is
    wanted undecoded, as (payload bytes, version)."""

    target: int | str  # a node id, COORDINATOR or ANY_NODE
    api: str
    body: dict[str, Any]
    timeout_ms: float
    token: T
    version: int | None = None
    raw: bool = False

    @property
    def node_id(self) -> int:
        """The broker a request addressed to one node goes to."""
        if isinstance(self.target, str):
            raise TypeError("{0} goes to {1}, not to a node".format(self.api, self.target))
        return self.target
