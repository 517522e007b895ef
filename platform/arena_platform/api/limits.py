"""Limits that keep one busy client from slowing everyone: request rates per key, and the pool that
runs the API's CPU-heavy jobs (validating an upload, predict's search).

The rates are counted in Redis when the API has one (its broker), so every API process shares one
count per client; without Redis (the embedded default: one process) they are counted in the
process. Routes check them in dependencies, which run before a request's body is validated. The
upload limit is different: it counts rows in the database (`store.users.count_upload_attempt`), as
uploads are few and must be counted exactly.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread
from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.requests import HTTPConnection

from arena_platform.api.errors import ApiError
from arena_platform.settings import Settings

Params = ParamSpec("Params")
Result = TypeVar("Result")
_SWEEP_AT_KEYS = 10_000  # past this many keys, those idle for a whole window are forgotten
_REDIS_TIMEOUT_S = 0.5  # a Redis that answers slower than this counts as unreachable
_log = logging.getLogger(__name__)


def client_address(request: HTTPConnection) -> str:
    """The key of an anonymous client: its IP address as the server sees it. Behind a proxy that
    `Settings.trusted_proxies` names, the address the proxy forwards (uvicorn's proxy headers
    support rewrites it); any other client's X-Forwarded-For is ignored."""
    return request.client.host if request.client else "unknown"


class RateLimiter:
    """At most `limit` hits per `window_seconds` per key, over a sliding window, counted in this
    process.

    Not thread-safe: call it from the event loop (async routes and dependencies). Memory: at most
    `limit` times per key, and keys idle for a window are dropped once there are many.
    """

    def __init__(self, *, limit: int, window_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window_seconds = window_seconds
        self._clock = clock
        self._hits: dict[Hashable, deque[float]] = {}

    async def hit(self, key: Hashable) -> float:
        """Count a hit for `key` and return 0; or, when `key` has used its allowance, count nothing
        and return the seconds until its oldest hit leaves the window (> 0)."""
        return self._local_hit(key)

    async def check(self, key: Hashable, *, what: str) -> None:
        """`hit(key)`, raising 429 `rate_limited` (with Retry-After, whole seconds) when refused;
        `what` names the allowance in the sentence, e.g. "predictions per minute from one address"."""
        wait = await self.hit(key)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise ApiError(
                429,
                "rate_limited",
                f"at most {self.limit} {what} are allowed; try again in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )

    def _local_hit(self, key: Hashable) -> float:
        now = self._clock()
        hits = self._hits.get(key)
        if hits is None:
            if len(self._hits) >= _SWEEP_AT_KEYS:
                self._forget_idle(now)
            hits = self._hits[key] = deque(maxlen=self.limit)
        while hits and hits[0] <= now - self.window_seconds:
            hits.popleft()
        if len(hits) >= self.limit:
            return hits[0] + self.window_seconds - now
        hits.append(now)
        return 0.0

    def _forget_idle(self, now: float) -> None:
        idle = [key for key, hits in self._hits.items() if not hits or hits[-1] <= now - self.window_seconds]
        for key in idle:
            del self._hits[key]


# One hit of a sliding window in a sorted set (members: hits, scores: their times in microseconds,
# Redis's clock, so API processes on several hosts agree). ARGV: limit, window (us), a unique
# member. Returns 0 when counted, else the microseconds until the oldest hit leaves the window.
_HIT_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local limit, window = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return 0
"""


class SharedRateLimiter(RateLimiter):
    """The same allowance counted in Redis under `arena:rate:<name>:<key>`, one count for every API
    process on that Redis. While Redis cannot be reached, hits are counted in this process (a
    warning is logged when that starts), so an outage neither refuses everyone nor lifts the limit."""

    def __init__(self, redis: Redis, *, name: str, limit: int, window_seconds: float):
        super().__init__(limit=limit, window_seconds=window_seconds)
        self.name = name
        self._script = redis.register_script(_HIT_SCRIPT)
        self._unreachable = False

    async def hit(self, key: Hashable) -> float:
        window_us = round(self.window_seconds * 1e6)
        try:
            wait_us = await self._script(
                keys=[f"arena:rate:{self.name}:{key}"], args=[self.limit, window_us, uuid.uuid4().hex]
            )
        except (RedisError, OSError) as error:
            if not self._unreachable:
                _log.warning("rate limit %s counted in this process: Redis failed (%s)", self.name, error)
            self._unreachable = True
            return self._local_hit(key)
        self._unreachable = False
        return int(wait_us) / 1e6


def shared_counter(settings: Settings) -> Redis | None:
    """The Redis the rate limits are counted in: the broker's, when it is Redis; else None."""
    if not settings.broker_url.startswith(("redis://", "rediss://")):
        return None
    return Redis.from_url(
        settings.broker_url, socket_timeout=_REDIS_TIMEOUT_S, socket_connect_timeout=_REDIS_TIMEOUT_S
    )


class ComputePool:
    """Runs CPU-heavy jobs in worker threads, at most `slots` at once, so that however many arrive
    the event loop and the other routes keep their share of the CPU and of the threadpool.

    A caller past the `slots` running jobs waits in the event loop, holding no thread. `run` queues
    without bound (uploads, limited per user, wait their turn); `run_or_refuse` refuses with 503
    `busy` once `max_waiting` callers wait already (predict: better a quick retry than a long queue).
    """

    def __init__(self, *, slots: int, max_waiting: int) -> None:
        self.slots = slots
        self.max_waiting = max_waiting
        self._limiter = anyio.CapacityLimiter(slots)  # bound to the first event loop that uses it

    async def run(self, job: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs) -> Result:
        return await anyio.to_thread.run_sync(lambda: job(*args, **kwargs), limiter=self._limiter)

    async def run_or_refuse(
        self, job: Callable[Params, Result], *args: Params.args, **kwargs: Params.kwargs
    ) -> Result:
        if self.waiting() >= self.max_waiting:
            raise ApiError(
                503,
                "busy",
                f"Arena is computing {self.slots} answers with {self.max_waiting} waiting; try again shortly",
                headers={"Retry-After": "1"},
            )
        return await self.run(job, *args, **kwargs)

    def waiting(self) -> int:
        """Callers waiting for a slot (not counting the `slots` running)."""
        statistics = self._limiter.statistics()
        return statistics.tasks_waiting


@dataclass(frozen=True)
class RateLimits:
    """The API's per-client allowances (`Settings` gives the numbers)."""

    predict_by_address: RateLimiter  # predict requests without a token, per client address
    predict_by_owner: RateLimiter  # predict requests with a token, per token owner
    accounts_by_address: RateLimiter  # self-serve accounts, per client address
    human_games_by_address: RateLimiter  # games against a bot started, per client address
    human_moves_by_address: RateLimiter  # moves in such games (the bot answers each), per client address
    tokens_by_owner: RateLimiter  # API tokens issued, per user (revoked ones stay stored)

    @classmethod
    def of(cls, settings: Settings, redis: Redis | None = None) -> RateLimits:
        """Counted in `redis` (shared by the API processes using it), else in this process."""

        def allowance(name: str, limit: int, window_seconds: float) -> RateLimiter:
            if redis is None:
                return RateLimiter(limit=limit, window_seconds=window_seconds)
            return SharedRateLimiter(redis, name=name, limit=limit, window_seconds=window_seconds)

        return cls(
            predict_by_address=allowance("predict_by_address", settings.predicts_per_minute, 60),
            predict_by_owner=allowance("predict_by_owner", settings.predicts_per_minute_per_token, 60),
            accounts_by_address=allowance("accounts_by_address", settings.accounts_per_hour, 3600),
            human_games_by_address=allowance("human_games_by_address", settings.human_games_per_hour, 3600),
            human_moves_by_address=allowance("human_moves_by_address", settings.human_moves_per_minute, 60),
            tokens_by_owner=allowance("tokens_by_owner", settings.tokens_per_hour, 3600),
        )
