"""The sweeper's clock: `runner.sweep` every heartbeat, run where time is kept (ARCHITECTURE §5).

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

from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine
from arena_platform.settings import Settings
from arena_workers.liveness import DEATH_BEATS
from arena_workers.runner import WorkerContext, sweep

log = logging.getLogger(__name__)


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
