"""A short-lived cache of serialized responses, per key, in the API process.

The database stays the truth: an entry is served while it is younger than `ttl` seconds. Once it
is older, one thread recomputes it (a lock per key) while the others keep serving the old bytes,
so a read is at most `ttl` plus one refresh old; only when there is nothing to serve do they wait
for that thread. So 50 clients asking for a ladder's leaderboard cost one query every `ttl`
seconds, not 50 at once.
A TTL of 0 disables the cache: every call computes (and compresses at the fastest level).

An entry is kept ready to send (`Body`): the JSON, the same gzip-compressed and an ETag, made once
per refresh. A hit then costs no work but picking the answer (`Body.response`): the gzip bytes to
a client that accepts them (about a fifth of the size), 304 Not Modified to one whose
If-None-Match names the tag. From the event loop, `get_async` answers hits without leaving it and
refreshes in a worker thread, so the database work never blocks the loop.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import anyio.to_thread
from starlette.responses import Response

GZIP_LEVEL = 6  # a 250 kB leaderboard: 50 kB in 5 ms, once per refresh (level 1: 58 kB in 1.4 ms)
UNCACHED_GZIP_LEVEL = 1  # without a cache every request compresses: the fastest level


@dataclass(frozen=True)
class Body:
    """One serialized response body in both encodings, with its entity tag."""

    plain: bytes
    gzipped: bytes  # `plain` gzip-compressed
    etag: str  # weak (W/"..."): the plain and the gzipped bytes are one representation

    @classmethod
    def of(cls, plain: bytes, gzip_level: int = GZIP_LEVEL) -> Body:
        """`plain` compressed and tagged; the tag depends on the bytes only, so an unchanged
        leaderboard keeps its tag across refreshes and polling clients keep getting 304."""
        digest = hashlib.blake2b(plain, digest_size=16).hexdigest()
        return cls(plain, gzip.compress(plain, compresslevel=gzip_level, mtime=0), f'W/"{digest}"')

    def response(self, request_headers: Mapping[str, str], media_type: str = "application/json") -> Response:
        """200 with the gzip or the plain bytes (as the request's Accept-Encoding allows), or 304
        when its If-None-Match names this body's tag. Clients must revalidate before reusing."""
        headers = {"ETag": self.etag, "Vary": "Accept-Encoding", "Cache-Control": "no-cache"}
        if etag_matches(request_headers.get("if-none-match"), self.etag):
            return Response(status_code=304, headers=headers)
        if accepts_gzip(request_headers.get("accept-encoding")):
            headers["Content-Encoding"] = "gzip"
            return Response(self.gzipped, media_type=media_type, headers=headers)
        return Response(self.plain, media_type=media_type, headers=headers)


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Whether an Accept-Encoding header allows gzip: named (or `*`, gzip unnamed) with q > 0."""
    weights: dict[str, float] = {}
    for item in (accept_encoding or "").split(","):
        coding, *parameters = (part.strip() for part in item.split(";"))
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0  # malformed: not an acceptance
        weights[coding.lower()] = quality
    return weights.get("gzip", weights.get("*", 0.0)) > 0


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (weak comparison: W/ prefixes do not count)."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == opaque for tag in if_none_match.split(","))


@dataclass(frozen=True)
class _Entry:
    computed_at: float  # the clock when its computation started: the data is at least that old
    body: Body


class ResponseCache:
    """Bodies per key, each at most `ttl` seconds old (plus the time of a refresh under way)."""

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not ttl >= 0:
            raise ValueError(f"the TTL must be at least 0 seconds, got {ttl}")
        self.ttl = ttl
        self._clock = clock
        self._entries: dict[Hashable, _Entry] = {}
        self._locks: dict[Hashable, threading.Lock] = {}  # held by the thread refreshing the key
        self._locks_lock = threading.Lock()
        self._invalidations: dict[Hashable, int] = {}  # per key, so a refresh can tell it was overtaken

    def get(self, key: Hashable, compute: Callable[[], bytes]) -> Body:
        """The cached body of `key`, or `compute()`'s (cached) when missing or too old. Blocks while
        another thread computes a missing entry: call it from a worker thread, or use `get_async`.

        Exceptions of `compute` propagate and nothing is cached (a 404 is not remembered).
        """
        if self.ttl == 0:
            return Body.of(compute(), UNCACHED_GZIP_LEVEL)
        entry = self._entries.get(key)
        if entry is not None and self._fresh(entry):
            return entry.body
        lock = self._lock(key)
        if entry is not None:
            if not lock.acquire(blocking=False):
                return entry.body  # stale, but another thread is refreshing it
        else:
            lock.acquire()  # nothing fit to serve: wait for the thread computing it, if any
        try:
            entry = self._entries.get(key)  # another thread may have refreshed it meanwhile
            if entry is not None and self._fresh(entry):
                return entry.body
            invalidations = self._invalidations.get(key, 0)
            started = self._clock()  # the data is as old as the start of its query
            body = Body.of(compute())
            with self._locks_lock:  # not between an invalidation's count and its removal
                if self._invalidations.get(key, 0) == invalidations:  # else it may predate the write
                    self._entries[key] = _Entry(started, body)
            return body
        finally:
            lock.release()

    async def get_async(self, key: Hashable, compute: Callable[[], bytes]) -> Body:
        """`get` for the event loop: a fresh entry, or a stale one while another refresh is under
        way, is answered at once; anything else (a refresh, or waiting for one) runs in a worker
        thread, `compute` included, so the loop never blocks."""
        entry = self._entries.get(key)
        if entry is not None and (self._fresh(entry) or self._refreshing(key)):
            return entry.body
        return await anyio.to_thread.run_sync(self.get, key, compute)

    def invalidate(self, key: Hashable) -> None:
        """Forget `key`: the next call computes it (after a write this process made). A refresh
        under way that started before this call answers its own caller but is not kept."""
        with self._locks_lock:
            self._invalidations[key] = self._invalidations.get(key, 0) + 1
            self._entries.pop(key, None)

    def _fresh(self, entry: _Entry) -> bool:
        return self._clock() - entry.computed_at < self.ttl

    def _refreshing(self, key: Hashable) -> bool:
        lock = self._locks.get(key)
        return lock is not None and lock.locked()

    def _lock(self, key: Hashable) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())
