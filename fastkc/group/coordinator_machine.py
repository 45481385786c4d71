"""Finding the group coordinator, I/O-free: FindCoordinator, its answer's
checks, the backoff after a failed lookup, and "coordinator lost" (Java's
markCoordinatorUnknown) from whichever request noticed it.

States: UNKNOWN --next_requests--> LOOKING --answer--> KNOWN --lost()--> UNKNOWN
                                    \\--error--> UNKNOWN (retry after retry_backoff_ms)

One instance is shared by the member's machines (membership, commits):
whichever needs the coordinator while it is UNKNOWN gets the one lookup.
"""
import enum
import logging
from typing import Any, NamedTuple

from fastkc.cluster.metadata import address_problem, loggable_host
from fastkc.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    NotCoordinatorError,
    for_code,
)
from fastkc.group.machine import DUE_NOW
from fastkc.request import ANY_NODE, Request, Token
from fastkc.state_machine import StateHolder

log = logging.getLogger(__name__)

#: the coordinator's address as FindCoordinator named it
class Coordinator(NamedTuple):
    node_id: int
    host: str
    port: int


class CoordinatorUnknownError(KafkaError):
    """The coordinator is not known or was lost; look it up again (retriable)."""

    retriable = True


#: Errors after which the coordinator must be looked up again (Java's
#: markCoordinatorUnknown cases).
COORDINATOR_ERRORS = (CoordinatorNotAvailableError, NotCoordinatorError, KafkaConnectionError)


def is_coordinator_error(exc: BaseException) -> bool:
    return isinstance(exc, COORDINATOR_ERRORS + (CoordinatorUnknownError, CoordinatorLoadInProgressError))


def is_retriable(exc: BaseException) -> bool:
    """Whether a retry may help: the error says so, or a new coordinator may."""
    return isinstance(exc, KafkaError) and (exc.retriable or is_coordinator_error(exc))


class CoordinatorState(enum.Enum):
    UNKNOWN = "unknown"
    LOOKING = "looking"
    KNOWN = "known"


_C = CoordinatorState


class CoordinatorMachine(StateHolder[CoordinatorState]):
    _LEGAL = {
        _C.UNKNOWN: {_C.LOOKING},
        _C.LOOKING: {_C.KNOWN, _C.UNKNOWN},
        _C.KNOWN: {_C.UNKNOWN},
    }
    _machine_name = "coordinator lookup"

    def __init__(self, group_id: str, retry_backoff_ms: float, request_timeout_ms: float, key_type: int = 0) -> None:
        self._init_state(_C.UNKNOWN)
        self.group_id = group_id
        self.key_type = key_type
        self._backoff = retry_backoff_ms / 1000.0
        self._request_timeout_ms = request_timeout_ms
        self.coordinator: Coordinator | None = None  # while KNOWN
        self.last_error: KafkaError | None = None  # why the last lookup failed (for the caller's timeout message)
        self._retry_at: float | None = None
        self._token: Token | None = None

    @property
    def known(self) -> bool:
        return self.state is _C.KNOWN

    def next_requests(self, now: float) -> list[Request[Token]]:
        if self.state is not _C.UNKNOWN or (self._retry_at is not None and now < self._retry_at):
            return []
        self._set_state(_C.LOOKING)
        self._token = Token("FindCoordinator")
        body = {"key": self.group_id, "key_type": self.key_type, "coordinator_keys": [self.group_id]}
        return [Request(ANY_NODE, "FindCoordinator", body, self._request_timeout_ms, self._token)]

    def next_deadline(self) -> float | None:
        """When a lookup may go out (DUE_NOW: at once); None while known or
        while a lookup is on the wire."""
        if self.state is not _C.UNKNOWN:
            return None
        return self._retry_at if self._retry_at is not None else DUE_NOW

    def after_lookup(self, due: float) -> float | None:
        """`due` for a request to the coordinator: not before a lookup may
        go out when it is unknown; None while a lookup is on the wire."""
        if self.state is _C.KNOWN:
            return due
        lookup = self.next_deadline()
        return None if lookup is None else max(due, lookup)

    def owns(self, token: Token | None) -> bool:
        return token is not None and token is self._token

    def on_response(self, token: Token, response: Any, now: float) -> None:
        """Raises the broker's error when no retry can fix it
        (GROUP_AUTHORIZATION_FAILED, ...); retriable ones back off."""
        if token is not self._token or self.state is not _C.LOOKING:
            return
        self._token = None
        try:
            self.coordinator = self._read(response)
        except KafkaError as exc:
            self._set_state(_C.UNKNOWN)
            self.last_error = exc
            self._retry_at = now + self._backoff
            if not is_retriable(exc):
                raise
            log.debug("FindCoordinator for %r: %s", self.group_id, exc)
            return
        self._retry_at = None
        self.last_error = None
        self._set_state(_C.KNOWN)

    def _read(self, response: Any) -> Coordinator:
        if isinstance(response, BaseException):
            if isinstance(response, KafkaError):
                raise response
            raise KafkaConnectionError("FindCoordinator: {0!r}".format(response))
        entry = response["coordinators"][0] if response.get("coordinators") else response
        if entry["error_code"]:
            raise for_code(entry["error_code"])(entry.get("error_message") or "FindCoordinator")
        node_id, host, port = entry["node_id"], entry["host"], entry["port"]
        problem = address_problem(host, port, node_id)
        if problem is not None:
            # nothing could connect there: as if the coordinator were not known yet
            log.warning("FindCoordinator named %r:%s (node %s), not a usable address: %s",
                        loggable_host(host), port, node_id, problem)
            raise CoordinatorNotAvailableError("coordinator advertised at {0!r}:{1}".format(host, port))
        return Coordinator(node_id, host, port)

    def lost(self, now: float | None = None) -> None:
        """The coordinator moved or its connection failed: look it up again
        (at once, as Java does; failed lookups back off)."""
        if self.state is _C.KNOWN:
            assert self.coordinator is not None  # KNOWN is entered only with the coordinator read
            log.info("group coordinator %s marked unknown", self.coordinator.node_id)
            self._set_state(_C.UNKNOWN)
            self._retry_at = None
        self.coordinator = None
