"""A short-lived cache of serialized responses, per key, in the API process.

The database stays the truth: an entry is served while it is younger than `ttl` seconds. Once it
is older, one thread recomputes it (a lock per key) while the others keep serving the old bytes,
so a read is at most `ttl` plus one refresh old; only when there is nothing to serve do they wait
for that thread. So 50 clients asking for a ladder's leaderboard cost one query every `ttl`
seconds, not 50 at once.
A TTL of 0 disables the cache: every call computes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class ResponseCache:
    """Bytes per key, each at most `ttl` seconds old (plus the time of a refresh under way)."""

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not ttl >= 0:
            raise ValueError(f"the TTL must be at least 0 seconds, got {ttl}")
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, tuple[float, bytes]] = {}  # key -> (computed at, bytes)
        self._locks: dict[Hashable, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], bytes]) -> bytes:
        """The cached bytes of `key`, or `compute()`'s (cached) when missing or too old.

        Exceptions of `compute` propagate and nothing is cached (a 404 is not remembered).
        """
        if self.ttl == 0:
            return compute()
        entry = self._entries.get(key)
        if entry is not None and self._age(entry) < self.ttl:
            return entry[1]
        lock = self._lock(key)
        if entry is not None:
            if not lock.acquire(blocking=False):
                return entry[1]  # stale, but another thread is refreshing it
        else:
            lock.acquire()  # nothing fit to serve: wait for the thread computing it, if any
        try:
            entry = self._entries.get(key)  # another thread may have refreshed it meanwhile
            if entry is not None and self._age(entry) < self.ttl:
                return entry[1]
            started = self._clock()  # the data is as old as the start of its query
            value = compute()
            self._entries[key] = (started, value)
            return value
        finally:
            lock.release()

    def invalidate(self, key: Hashable) -> None:
        """Forget `key`: the next call computes it (after a write this process made)."""
        self._entries.pop(key, None)

    def _age(self, entry: tuple[float, bytes]) -> float:
        return self._clock() - entry[0]

    def _lock(self, key: Hashable) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())
