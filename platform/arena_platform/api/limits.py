"""Limits that keep one busy client from slowing everyone: request rates per key, and the pool that
runs the API's CPU-heavy jobs (validating an upload, predict's search).

Both live in the API process (a deployment with several API processes multiplies the allowances
by their number). The upload limit is different: it counts rows in the database
(`store.users.upload_attempts_since`), as uploads are few and must be counted exactly.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import anyio
import anyio.to_thread
from starlette.requests import HTTPConnection

from arena_platform.api.errors import ApiError
from arena_platform.settings import Settings

Params = ParamSpec("Params")
Result = TypeVar("Result")
_SWEEP_AT_KEYS = 10_000  # past this many keys, those idle for a whole window are forgotten


def client_address(request: HTTPConnection) -> str:
    """The key of an anonymous client: its IP address as the server sees it (behind a proxy, the
    proxy's, unless the server is told to trust its forwarding headers)."""
    return request.client.host if request.client else "unknown"


class RateLimiter:
    """At most `limit` hits per `window_seconds` per key, over a sliding window.

    Not thread-safe: call it from the event loop (async routes). Memory: at most `limit` times per
    key, and keys idle for a window are dropped once there are many.
    """

    def __init__(self, *, limit: int, window_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window_seconds = window_seconds
        self._clock = clock
        self._hits: dict[Hashable, deque[float]] = {}

    def hit(self, key: Hashable) -> float:
        """Count a hit for `key` and return 0; or, when `key` has used its allowance, count nothing
        and return the seconds until its oldest hit leaves the window (> 0)."""
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

    def check(self, key: Hashable, *, what: str) -> None:
        """`hit(key)`, raising 429 `rate_limited` (with Retry-After, whole seconds) when refused;
        `what` names the allowance in the sentence, e.g. "predictions per minute from one address"."""
        wait = self.hit(key)
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise ApiError(
                429,
                "rate_limited",
                f"at most {self.limit} {what} are allowed; try again in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )

    def _forget_idle(self, now: float) -> None:
        idle = [key for key, hits in self._hits.items() if not hits or hits[-1] <= now - self.window_seconds]
        for key in idle:
            del self._hits[key]


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

    @classmethod
    def of(cls, settings: Settings) -> RateLimits:
        return cls(
            predict_by_address=RateLimiter(limit=settings.predicts_per_minute, window_seconds=60),
            predict_by_owner=RateLimiter(limit=settings.predicts_per_minute_per_token, window_seconds=60),
            accounts_by_address=RateLimiter(limit=settings.accounts_per_hour, window_seconds=3600),
            human_games_by_address=RateLimiter(limit=settings.human_games_per_hour, window_seconds=3600),
            human_moves_by_address=RateLimiter(limit=settings.human_moves_per_minute, window_seconds=60),
        )
