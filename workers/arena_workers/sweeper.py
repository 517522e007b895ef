"""The sweeper: what a sweep takes back and sends (`sweep`), and its clock, a sweep every heartbeat
run where time is kept (`Sweeper`, ARCHITECTURE §5).

The sweep is no message on the play queue: there it waited behind the matches of busy workers and
expired unseen (requeues came 60-89 s after a 15 s lease lapsed). It runs here instead, straight
against the database, in `arena beat` (one per deployment), in a process of its own beside
`arena worker --beat`, and in a thread of the embedded worker; it only enqueues what it finds. The
first sweep runs at start, so that work a stopped deployment gave back resumes at once.

Dead workers are found by their heartbeats (`arena_workers.liveness`), so wherever the sweeper runs:
from the moment it has reached the database at every sweep for `DEATH_BEATS` heartbeats, a sweep
takes back at once the pairings and sessions of every process silent that long. (Right after it
starts, or after the database was away, every worker may be silent without being dead; until then
only lapsed leases come back.)
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading
import time
from datetime import timedelta

from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, session
from arena_platform.models import utc_now
from arena_platform.queue import TRAIN_SESSION
from arena_platform.settings import Settings
from arena_platform.store.finals import unfinished_finals
from arena_platform.store.live import drop_stale
from arena_platform.store.pairings import (
    Sweep,
    forget_silent_workers,
    running_owners,
    silent_workers,
    sweep_pairings,
)
from arena_platform.store.ratings import stale_ladders
from arena_platform.store.scheduling import stalled_ladders
from arena_platform.store.training import (
    drop_ended_states,
    holds_state,
    running_session_owners,
    sweep_sessions,
)
from arena_workers.context import WorkerContext
from arena_workers.ladders import refit, schedule_ladder, send_pairings
from arena_workers.liveness import DEATH_BEATS, owners_of

log = logging.getLogger(__name__)


def sweep(context: WorkerContext, *, resend_all_queued: bool = False, detect_deaths: bool = False) -> Sweep:
    """The sweeper: takes back the pairings of dead workers (with `detect_deaths`: those of processes
    silent for `DEATH_BEATS` heartbeats, see `arena_workers.liveness`) and of lapsed leases, fails
    those out of attempts, and sends what has no message out, and what is probably lost (past its
    redelivery deadline while nothing waits in the broker's queue; every queued pairing with
    `resend_all_queued`, after the broker lost its messages), in blocks (`send_pairings`). It
    refits the ladders whose ratings miss games and books a round for the ladders with nothing in
    flight and for the competitions' unfinished finals (their start, their next round: store.finals;
    a finished final's ladder books nothing more), itself: behind the matches in the queue, those
    messages waited minutes (a busy ladder left the others unrated). So a ladder is refitted at
    least once a heartbeat. Training sessions likewise: a dead or silent worker's session, or one
    whose message may be lost, is sent again (store.training.sweep_sessions); finished and
    cancelled sessions' resume points are deleted, and so are the games in progress of claims that
    no longer hold their pairing (store.live).

    What a sweep takes back is committed before it is sent; what could not be sent (the broker is
    away) has no message out, and the next sweep sends it."""
    settings = context.settings
    resend_overdue, waiting = _waiting(context)
    with session(context.engine) as db:
        now = utc_now()
        silence = timedelta(seconds=DEATH_BEATS * settings.heartbeat_seconds)
        dead = silent_workers(db, since=now - silence) if detect_deaths else set()
        swept = sweep_pairings(
            db,
            dead_owners=owners_of(running_owners(db), dead),
            max_attempts=settings.max_attempts,
            resend_overdue=resend_overdue,
            waiting=waiting,
            resend_all_queued=resend_all_queued,
        )
        stale, stalled = stale_ladders(db), stalled_ladders(db)
        closed, finals = unfinished_finals(db, now=context.clock())  # competitions' time
        sessions = sweep_sessions(
            db,
            lease_seconds=settings.lease_seconds,
            resend_all_queued=resend_all_queued,
            dead_owners=owners_of(running_session_owners(db), dead),
        )
        ended_states = drop_ended_states(db)
        drop_stale(db, now=now)
        forget_silent_workers(db, before=now - timedelta(seconds=settings.lease_seconds))
    if swept.requeued or swept.failed or swept.resent:
        log.warning("sweep: requeued %s, failed %s, resent %s", swept.requeued, swept.failed, swept.resent)
    for session_id in sessions:
        context.enqueue(TRAIN_SESSION, session_id)
    for state_sha256 in ended_states:
        discard_state(context, state_sha256)
    send_pairings(context, swept.to_send)
    for ladder_id in stale:
        refit(context, ladder_id)
    schedule_ladder(context, *sorted((set(stalled) - closed) | finals))
    return swept


def _waiting(context: WorkerContext) -> tuple[bool, set[int]]:
    """Whether to resend the queued pairings past their redelivery deadline, and which of them not
    to resend: those a message waiting in the broker's queue names (behind others, not lost). When
    the broker cannot tell, all are resent; when it cannot be read, none (nothing can be sent)."""
    try:
        waiting = context.waiting_pairings() if context.waiting_pairings else None
    except Exception as error:
        log.warning("the broker's queue cannot be read: %s", error)
        return False, set()
    return True, waiting or set()


def discard_state(context: WorkerContext, state_sha256: str | None) -> None:
    """Deletes a training session's resume point from the blob store unless a session holds it: the
    one a save superseded, the one a save with a lost lease could not record, an ended session's.
    A blob left behind (the worker died before this, or the store refused) costs space, never a
    resume."""
    if state_sha256 is None:
        return
    try:
        with session(context.engine) as db:
            held = holds_state(db, state_sha256=state_sha256)
        if not held:
            context.blobs.delete(state_sha256)
    except Exception as error:  # a blob left behind costs space only
        log.warning("resume point %s not deleted: %s", state_sha256, error)


class Sweeper:
    """Sweeps with `context` every `interval_s` seconds, from `run_forever` or a daemon thread
    (`start`/`stop`). A sweep that fails (the database or the broker is away) is logged and tried
    again at the next tick. Dead workers are looked for once the sweeps have succeeded without a
    break for `DEATH_BEATS` heartbeats (see the module's docstring)."""

    def __init__(self, context: WorkerContext, interval_s: float, *, resend_all_first: bool = False) -> None:
        self._context = context
        self._interval_s = interval_s
        self._resend_all = resend_all_first  # the broker lost its messages: resend every queued pairing
        self._reached_since: float | None = None  # monotonic time of the first of the unbroken successes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.run_forever, name="arena-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def run_forever(self) -> None:
        while True:
            self.sweep_once()
            if self._stop.wait(self._interval_s):
                return

    def sweep_once(self) -> None:
        started = time.monotonic()
        reached_since = started if self._reached_since is None else self._reached_since
        watched = DEATH_BEATS * self._context.settings.heartbeat_seconds
        try:
            sweep(
                self._context,
                resend_all_queued=self._resend_all,
                detect_deaths=started - reached_since >= watched,
            )
            self._resend_all = False
            self._reached_since = reached_since
        except Exception:  # the next tick tries again; the database is the truth, nothing is lost
            self._reached_since = None
            log.exception("sweep failed; trying again in %s s", self._interval_s)


def sweep_forever(settings: Settings) -> None:
    """`arena beat`: sweeps every `settings.heartbeat_seconds` until the process is stopped."""
    from arena_workers.celery_app import create_celery_app  # the app only sends: no worker is started

    app = create_celery_app(settings)
    context = WorkerContext(
        settings=settings,
        engine=make_engine(settings.resolved_database_url),
        blobs=BlobStore(settings.resolved_blob_url),
        enqueue=app.enqueue,
        waiting_pairings=app.waiting_pairings,
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C reaches the whole process group
        Sweeper(context, settings.heartbeat_seconds).run_forever()


def start_sweeper_process(settings: Settings) -> multiprocessing.process.BaseProcess:
    """`sweep_forever` in a fresh daemon process (spawned, not forked: a worker's main process must
    not share database connections with the pool children it forks)."""
    process = multiprocessing.get_context("spawn").Process(
        target=sweep_forever, args=(settings,), name="arena-sweeper", daemon=True
    )
    process.start()
    return process
