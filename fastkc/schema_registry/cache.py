"""Bounded, thread-safe caches for the registry client, and one fetch per key.

One SchemaRegistryClient is shared by a consumer's decode threads: a schema
that several threads miss at once is fetched once (`SingleFlight`), and every
cache holds at most `cache.capacity` entries, the least recently used going
first.
"""
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most `capacity` entries; an entry older than `ttl` seconds (when
    given) counts as absent. `clock` is injectable for tests."""

    def __init__(self, capacity: int, ttl: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (value, time stored)
        self._entries: OrderedDict[K, tuple[V, float]] = OrderedDict()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            value, stored = entry
            if self._ttl is not None and self._clock() - stored >= self._ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = (value, self._clock())
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries


class _Flight:
    __slots__ = ("lock", "waiters")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiters = 0


class SingleFlight(Generic[K, V]):
    """get_or_load(key, load): the cached value, else load() run by one thread
    while the others asking for the same key wait for its result (a failed
    load is not cached: the next caller tries again)."""

    def __init__(self, cache: LruCache[K, V]) -> None:
        self.cache = cache
        self._lock = threading.Lock()
        self._flights: dict[K, _Flight] = {}

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        with self._lock:
            flight = self._flights.get(key)
            if flight is None:
                flight = self._flights[key] = _Flight()
            flight.waiters += 1
        try:
            with flight.lock:
                hit = self.cache.get(key)
                if hit is not None:
                    return hit
                value = load()
                self.cache.put(key, value)
                return value
        finally:
            with self._lock:
                flight.waiters -= 1
                if flight.waiters == 0:
                    del self._flights[key]
