"""The cluster policy both clients run, with no I/O inside: `ClusterCore`.

fastkc.client.KafkaClient (a selector loop) and fastkc.aio.client.AioClient
(an asyncio task) own the sockets, the waiting and the clock; they ask this
core every question whose answer does not depend on how bytes move, and
pass it `now` (their monotonic clock, in seconds):

- **metadata refreshes**: which topics the cache must hold
  (`add_topics`, `set_topics`, `subscribe_all_topics`), whether a refresh
  is wanted (`request_update`, or the cache is older than
  metadata_max_age_ms) and when the next may start (`refresh_due_in`: at
  most one at a time, and retry_backoff_ms after the previous attempt when
  it failed or left a wanted topic incomplete — a leader election in
  progress); `begin_refresh` gives the request, `refresh_answered` /
  `refresh_failed` take its outcome. As the Java client: a refresh that
  keeps being asked for cannot loop.
- **leaders back**: a broker that a Metadata answer names as the leader of
  a wanted partition, while its connection waits out a reconnect backoff
  that grew while it was down (reconnect_backoff_max_ms is 30 s by
  kafka-python's default), is tried again at once the first time, then at
  most LEADER_RETRY_INTERVAL_S (Java's whole reconnect.backoff.max.ms)
  after the previous early attempt: its partitions are read again about a
  second after it is back, not 11-13 s later. Applied when an answer names
  it and whenever a driver wants its connection (`connection_wanted`: the
  fetcher asks for its leaders' every poll); bounded: at most one early
  attempt per broker per interval, and the failure count is kept (its own
  backoff, when shorter, still rules).
- **least-loaded node**: a ready broker with the fewest requests in flight,
  else one that is not backing off, else any known one.
- **parse failures**: an unparseable answer fails its connection with a
  backoff whose exponent is the count of such answers of that API from that
  broker; below MAX_PARSE_FAILURES the caller gets a retriable
  KafkaConnectionError, from then on the ProtocolParseError itself. For a
  handshake answer (ApiVersions, SASL) the connection attempt fails with
  that error (`last_error`). A good answer clears the count.
- **idle connections**: ready and idle past connections_max_idle_ms.
- **fatal errors**: errors no retry can fix (FATAL_CONNECT_ERRORS, and a
  ProtocolParseError past the limit) are kept until the application's next
  call raises them (`raise_fatal`).

The connection it reads is the I/O-free connection core (fastkc.net.core.
ConnectionCore), through the `Link` protocol: both clients' connections
drive one.
"""
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fastkc.cluster.metadata import Body, ClusterMetadata, metadata_incomplete, metadata_request_body
from fastkc.errors import (
    AuthorizationError,
    KafkaConnectionError,
    ProtocolParseError,
    SaslAuthenticationFailedError,
    SslAuthenticationError,
    UnsupportedSaslMechanismError,
)

log = logging.getLogger(__name__)

#: Errors that no retry can fix: raised to the application at once.
FATAL_CONNECT_ERRORS: tuple[type[BaseException], ...] = (
    SaslAuthenticationFailedError, UnsupportedSaslMechanismError, AuthorizationError, SslAuthenticationError)
#: Unparseable responses of one API from one broker tolerated (each closes the
#: connection and backs off) before the ProtocolParseError reaches the caller.
MAX_PARSE_FAILURES = 3
#: A broker named leader again gets an attempt before its grown backoff ends
#: at most this often (seconds): the Java client's reconnect.backoff.max.ms.
LEADER_RETRY_INTERVAL_S = 1.0
#: The spare bootstrap connection (no broker of the metadata has its address)
#: is closed once idle this long (seconds): it has done its job.
SPARE_CONNECTION_IDLE_S = 1.0
#: Answers that belong to the connection's handshake, not to a caller.
_HANDSHAKE_APIS = frozenset(("SaslHandshake", "SaslAuthenticate"))


def is_fatal(error: BaseException | None) -> bool:
    """An error that ends attempts at once: no retry can fix it."""
    return isinstance(error, FATAL_CONNECT_ERRORS + (ProtocolParseError,))


class Link(Protocol):
    """What the policy reads of, and does to, one broker connection
    (fastkc.net.core.ConnectionCore is one)."""

    host: str
    port: int
    last_error: BaseException | None

    @property
    def ready(self) -> bool: ...

    @property
    def established(self) -> bool: ...

    @property
    def connecting(self) -> bool: ...

    def in_flight_count(self) -> int: ...

    def backoff_remaining(self, now: float) -> float: ...

    def idle_for(self, now: float) -> float: ...

    def fail(self, error: BaseException, now: float, backoff_failures: int = 0) -> None: ...

    def retry_at(self, when: float) -> None: ...


@dataclass(frozen=True)
class RefreshRequest:
    """The Metadata request a due refresh sends."""

    body: Body
    all_topics: bool


class ClusterCore:
    """See the module docstring."""

    def __init__(self, *, metadata_max_age_ms: float, retry_backoff_ms: float, connections_max_idle_ms: float,
                 allow_auto_create_topics: bool) -> None:
        self.cluster = ClusterMetadata()
        self.max_age_s = metadata_max_age_ms / 1000.0
        self.retry_backoff_s = retry_backoff_ms / 1000.0
        self.max_idle_s = connections_max_idle_ms / 1000.0
        self.allow_auto_create_topics = allow_auto_create_topics
        #: a pattern subscription: every refresh asks for all topics
        self.subscribe_all_topics = False
        self._topics: set[str] = set()  # topics the consumer needs
        self._wanted = False
        self._all_wanted = False
        self._in_flight: RefreshRequest | None = None
        # when the last refresh attempt failed or left a wanted topic incomplete
        self._backoff_from: float | None = None
        # the brokers that lead a wanted partition, as of the last answer
        self._wanted_leaders: frozenset[int] = frozenset()
        # node id -> when it was last let connect before its backoff ended
        self._leader_retries: dict[int, float] = {}
        # (host, port, api name) -> unparseable responses in a row
        self._parse_failures: dict[tuple[str, int, str], int] = {}
        self._fatal_error: BaseException | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ClusterCore":
        return cls(metadata_max_age_ms=config["metadata_max_age_ms"], retry_backoff_ms=config["retry_backoff_ms"],
                   connections_max_idle_ms=config["connections_max_idle_ms"],
                   allow_auto_create_topics=config["allow_auto_create_topics"])

    # --- which topics, and when to refresh ----------------------------------------------------
    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self._topics)

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Keep `topics` in the cache too; True when one was new (a refresh is wanted)."""
        new = set(topics) - self._topics
        if new:
            self._topics |= new
            self._wanted = True
        return bool(new)

    def set_topics(self, topics: Iterable[str]) -> bool:
        """Keep exactly `topics`; True when one was new (a refresh is wanted)."""
        wanted = set(topics)
        new = bool(wanted - self._topics)
        if new:
            self._wanted = True
        self._topics = wanted
        return new

    def request_update(self, all_topics: bool = False) -> None:
        self._wanted = True
        if all_topics:
            self._all_wanted = True

    @property
    def update_requested(self) -> bool:
        return self._wanted or self._all_wanted

    @property
    def refresh_in_flight(self) -> bool:
        return self._in_flight is not None

    def refresh_wanted(self, now: float) -> bool:
        """A refresh was asked for, or the cache is older than metadata_max_age_ms."""
        if self.update_requested:
            return True
        last = self.cluster.last_refresh
        return last is None or now - last >= self.max_age_s

    def refresh_due_in(self, now: float) -> float:
        """Seconds until the next refresh may start: 0 now, inf while one is in flight."""
        if self._in_flight is not None:
            return float("inf")
        if self.update_requested:
            if self._backoff_from is None:
                return 0.0
            return max(0.0, self._backoff_from + self.retry_backoff_s - now)
        last = self.cluster.last_refresh
        if last is None:
            return 0.0
        return max(0.0, last + self.max_age_s - now)

    def begin_refresh(self) -> RefreshRequest:
        """The refresh starts (the driver sends the body): what it asks for."""
        all_topics = self._all_wanted or self.subscribe_all_topics
        request = RefreshRequest(metadata_request_body(self._topics, all_topics, self.allow_auto_create_topics),
                                 all_topics)
        self._in_flight = request
        self._wanted = self._all_wanted = False
        return request

    def refresh_failed(self, error: BaseException, now: float) -> None:
        """The refresh got no answer: ask again after retry_backoff_ms; a
        parse failure past the limit reaches the application."""
        request, self._in_flight = self._in_flight, None
        if isinstance(error, ProtocolParseError):
            self._fatal_error = error
        self._backoff_from = now
        self._wanted = True
        self._all_wanted = self._all_wanted or (request is not None and request.all_topics)

    def refresh_answered(self, response: Body, now: float, links: Mapping[int, Link]) -> None:
        """The refresh's answer: the cache updated; a wanted topic with an
        error or a leaderless partition is asked for again after the backoff;
        `links` (node id -> connection) of brokers leading wanted partitions
        may connect at once (the module docstring's "leaders back")."""
        request, self._in_flight = self._in_flight, None
        self.cluster.update(response, all_topics=request is not None and request.all_topics)
        self.cluster.last_refresh = now
        self._backoff_from = None
        if metadata_incomplete(self.cluster, self._topics):
            self._wanted = True
            self._backoff_from = now
        self._let_leaders_reconnect(links, now)

    def bootstrap_answered(self, response: Body, now: float) -> None:
        """The bootstrap's Metadata answer (the broker list) fills the cache."""
        self.cluster.update(response, all_topics=False)
        self.cluster.last_refresh = now

    def _let_leaders_reconnect(self, links: Mapping[int, Link], now: float) -> None:
        wanted: Iterable[str] = self.cluster.topics if self.subscribe_all_topics else self._topics
        self._wanted_leaders = frozenset(self.cluster.leaders_of(wanted))
        for node_id in self._wanted_leaders:
            link = links.get(node_id)
            if link is not None:
                self._retry_leader(node_id, link, now)

    def connection_wanted(self, node_id: int, link: Link, now: float) -> None:
        """A driver wants node_id's connection (ready()) while it is down: if
        the last answer named it leader of a wanted partition, its grown
        backoff gives way as after that answer (the module docstring's
        "leaders back"). A refused connect fails at once on a local host,
        before the lost-connection rule could ask for metadata: this is what
        keeps such a broker tried about once a second."""
        if node_id in self._wanted_leaders:
            self._retry_leader(node_id, link, now)

    def _retry_leader(self, node_id: int, link: Link, now: float) -> None:
        if link.established or link.connecting:
            return
        last = self._leader_retries.get(node_id)
        earliest = now if last is None else max(now, last + LEADER_RETRY_INTERVAL_S)
        if link.backoff_remaining(now) <= earliest - now:
            return  # its own backoff ends first
        self._leader_retries[node_id] = earliest
        log.debug("broker %s leads wanted partitions: its next attempt in %.2f s, not after its backoff",
                  node_id, earliest - now)
        link.retry_at(earliest)

    # --- connections -----------------------------------------------------------------------------
    def least_loaded_node(self, links: Mapping[int, Link], now: float) -> int | None:
        """A ready broker with the fewest requests in flight, else a known one
        not backing off, else any known one (None: no broker known)."""
        best: int | None = None
        best_load = 0
        for node_id, link in links.items():
            if link.ready and (best is None or link.in_flight_count() < best_load):
                best, best_load = node_id, link.in_flight_count()
        if best is not None:
            return best
        for node_id in self.cluster.brokers:
            spare = links.get(node_id)
            if spare is None or spare.backoff_remaining(now) == 0:
                return node_id
        return next(iter(self.cluster.brokers), None)

    def idle_nodes(self, links: Mapping[int, Link], now: float) -> list[int]:
        """The ready connections idle past connections_max_idle_ms (to close)."""
        return [node_id for node_id, link in links.items() if link.ready and link.idle_for(now) > self.max_idle_s]

    @property
    def idle_check_period(self) -> float:
        """How often (seconds) a driver that is not woken by deadlines looks for idle connections."""
        return max(0.1, min(30.0, self.max_idle_s / 2))

    # --- parse failures --------------------------------------------------------------------------
    def parse_failed(self, link: Link, api_name: str, exc: ProtocolParseError, now: float) -> BaseException:
        """An answer of `api_name` on `link` could not be parsed: fail the
        connection with backoff and return the error the caller must see."""
        key = (link.host, link.port, api_name)
        count = self._parse_failures.get(key, 0) + 1
        self._parse_failures[key] = count
        log.warning("%s response from %s:%s could not be parsed (%d in a row): %s",
                    api_name, link.host, link.port, count, exc)
        lost = KafkaConnectionError("{0}:{1} closed after an unparseable {2} response ({3} of {4} tolerated): "
                                    "{5}".format(link.host, link.port, api_name, count, MAX_PARSE_FAILURES, exc))
        lost.__cause__ = exc
        # an ApiVersions / SASL answer (also a re-authentication's), not a caller's request
        handshake = not link.established or api_name in _HANDSHAKE_APIS
        if link.established or link.connecting:
            # the other requests on the connection lost it: theirs is the retriable error
            link.fail(lost, now, backoff_failures=count)
        error: BaseException = exc if count >= MAX_PARSE_FAILURES else lost
        if handshake:
            # a handshake answer has no caller to hand the error to: the
            # attempt fails with it (bootstraps and lost connections read it)
            link.last_error = error
        return error

    def parse_ok(self, link: Link, api_name: str) -> None:
        """A good answer of `api_name` on `link`: the count starts again."""
        if self._parse_failures:
            self._parse_failures.pop((link.host, link.port, api_name), None)

    def parse_failures(self, host: str, port: int, api_name: str) -> int:
        """Unparseable answers of `api_name` from host:port in a row."""
        return self._parse_failures.get((host, port, api_name), 0)

    # --- fatal errors ----------------------------------------------------------------------------
    def connection_failed(self, error: BaseException | None, *, reauth_failed: bool = False) -> None:
        """A connection failed with `error`: one no retry can fix is kept for
        the application. A refused re-authentication (KIP-368) is not: the
        connection had been authenticated, so it reconnects, and a refusal of
        the new connection's authentication reaches the application then."""
        if error is not None and is_fatal(error) and not reauth_failed:
            self._fatal_error = error

    def raise_fatal(self) -> None:
        """Raise (once) the error kept for the application, if any."""
        if self._fatal_error is not None:
            error, self._fatal_error = self._fatal_error, None
            raise error


class ClusterCoreDriver:
    """What both clients expose of their ClusterCore in the same words (a
    base class without state of its own: the client sets `policy`)."""

    policy: ClusterCore

    @property
    def subscribe_all_topics(self) -> bool:
        """A pattern subscription: every refresh asks for all topics."""
        return self.policy.subscribe_all_topics

    @subscribe_all_topics.setter
    def subscribe_all_topics(self, value: bool) -> None:
        self.policy.subscribe_all_topics = value

    def set_topics(self, topics: Iterable[str]) -> None:
        raise NotImplementedError  # each client's: keep exactly `topics`

    def request_metadata_update(self, all_topics: bool = False) -> None:
        raise NotImplementedError  # each client's: a refresh is wanted

    def follow_topics(self, topics: Iterable[str] | None) -> None:
        """Keep the metadata a subscription needs, refreshed now: exactly
        `topics`, or every topic (None: a pattern, whose matches can only be
        found in all of them; each later refresh asks for all too). The one
        rule both consumers follow when they subscribe, and when their group
        asks for its subscription's metadata."""
        if topics is None:
            self.subscribe_all_topics = True
            self.request_metadata_update(all_topics=True)
        else:
            self.subscribe_all_topics = False
            self.set_topics(topics)
            self.request_metadata_update()

    def raise_fatal(self) -> None:
        """Raise (once) an error no retry can fix that a connection or refresh met."""
        self.policy.raise_fatal()
