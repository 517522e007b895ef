"""The Celery tasks: thin shims over the runner, the ladders' upkeep, the sweeper and training, all
made by one decorator (ARCHITECTURE §7).

Every task takes ids only, is acknowledged late, and is safe to run twice or on two workers at once
(the database decides). Contracts:

  arena.schedule_ladder(ladder_id...) books each ladder's next pairings and sends them (the
                                     ladders' messages in turn); returns their ids
  arena.play_pairing(pairing_id)     claims, plays and records one pairing, then enqueues a refit and
                                     the next scheduling round; a pairing that is done, failed or held
                                     under a live lease elsewhere is left alone
  arena.play_pairings(pairing_ids)   the same for several pairings, played as one batch; while
                                     urgent pairings wait (a newcomer's, a running SPRT's) and none
                                     of these is one, it plays those instead and sends these again
  arena.refit(ladder_id)             refits the ladder's ratings unless they cover all its games
  arena.train_session(session_id)    trains a training session for one time slice (the `training`
                                     queue; arena_workers.training), then sends it again if it
                                     has more to do; a session held elsewhere is left alone
  arena.sweep()                      re-sends pairings whose lease lapsed and queued ones with no
                                     message out or whose message is lost; refits stale ladders and
                                     books rounds for stalled ones. The sweeper (arena_workers.sweeper)
                                     runs the same every heartbeat itself, and also takes back dead
                                     workers' pairings by their heartbeats (which needs its watch);
                                     this task is for a sweep on demand.

`arena_task` only records a body; `register_tasks` binds every body to an app with the shared
options. A body takes the process's `WorkerContext` first. Known errors (a missing row, a game or
blob problem, a deployment mismatch) become `TaskFailed`: one log line, no traceback, message acked.
A lost database (a restart, a network cut) is retryable: the task is sent again after a back-off
that doubles from 1 s to a minute, for up to `DATABASE_RETRIES` times, so no message is dropped
while the database comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery, Task

from arena_games.api import GameError
from arena_platform.blobs import CorruptBlob
from arena_platform.queue import PLAY_PAIRINGS, SCHEDULE_LADDER, TRAIN_SESSION
from arena_workers import ladders, runner, sweeper, training
from arena_workers.context import PLAY_PAIRING, REFIT, SWEEP, WorkerContext, is_database_lost

log = logging.getLogger(__name__)

# LookupError covers PairingNotFound, LadderNotFound and BlobNotFound.
KNOWN_ERRORS = (LookupError, GameError, CorruptBlob, runner.RunnerError)
DATABASE_RETRIES = 30  # with back-offs of at most a minute: the database may be gone ~25 minutes
MAX_BACKOFF_SECONDS = 60

Body = Callable[..., Any]  # (context, *ids) -> a JSON-safe summary
TASKS: dict[str, Body] = {}


class TaskFailed(Exception):
    """A task failed for a known reason; Celery logs it as expected, without a traceback."""


def arena_task(name: str) -> Callable[[Body], Body]:
    """Records `body` as the task called `name`; `register_tasks` binds it to an app."""

    def record(body: Body) -> Body:
        if name in TASKS:
            raise ValueError(f"task {name} is defined twice")
        TASKS[name] = body
        return body

    return record


def register_tasks(app: Celery, context_of: Callable[[Celery], WorkerContext]) -> None:
    """Binds every recorded task to `app`; `context_of(app)` gives the context its bodies run with."""
    for name, body in TASKS.items():
        app.task(name=name, bind=True, shared=False, throws=(TaskFailed,), ignore_result=True)(
            _shim(name, body, context_of)
        )


def _shim(name: str, body: Body, context_of: Callable[[Celery], WorkerContext]) -> Callable[..., Any]:
    def run(task: Task, *args: Any) -> Any:
        try:
            return body(context_of(task.app), *args)
        except KNOWN_ERRORS as error:
            log.warning("%s%s failed: %s: %s", name, args, type(error).__name__, error)
            raise TaskFailed(f"{type(error).__name__}: {error}") from None
        except Exception as error:
            if not is_database_lost(error):
                raise
            if task.request.retries >= DATABASE_RETRIES:
                log.error(
                    "%s%s: the database stayed unreachable through %s retries", name, args, DATABASE_RETRIES
                )
                raise
            countdown = min(2**task.request.retries, MAX_BACKOFF_SECONDS)
            log.warning("%s%s: the database is unreachable, retrying in %s s", name, args, countdown)
            raise task.retry(exc=error, countdown=countdown, max_retries=DATABASE_RETRIES) from None

    run.__name__ = run.__qualname__ = body.__name__
    return run


@arena_task(SCHEDULE_LADDER)
def schedule_ladder(context: WorkerContext, *ladder_ids: int) -> list[int]:
    return ladders.schedule_ladder(context, *ladder_ids)


@arena_task(PLAY_PAIRING)
def play_pairing(context: WorkerContext, pairing_id: int) -> list[list[Any]]:
    return _statuses(runner.play_task(context, [pairing_id]))


@arena_task(PLAY_PAIRINGS)
def play_pairings(context: WorkerContext, pairing_ids: list[int]) -> list[list[Any]]:
    return _statuses(runner.play_task(context, pairing_ids))


@arena_task(REFIT)
def refit(context: WorkerContext, ladder_id: int) -> bool:
    return ladders.refit(context, ladder_id)


@arena_task(SWEEP)
def sweep(context: WorkerContext) -> dict[str, list[int]]:
    swept = sweeper.sweep(context)
    return {"requeued": swept.requeued, "failed": swept.failed, "resent": swept.resent}


@arena_task(TRAIN_SESSION)
def train_session(context: WorkerContext, session_id: int) -> str:
    return training.train_session(context, session_id)


def _statuses(outcomes: list[runner.PairingOutcome]) -> list[list[Any]]:
    return [[outcome.pairing_id, outcome.status] for outcome in outcomes]
