"""The sweeper's clock: `runner.sweep` every heartbeat, run where time is kept (ARCHITECTURE §5).

The sweep is no message on the play queue: there it waited behind the matches of busy workers and
expired unseen (requeues came 60-89 s after a 15 s lease lapsed). It runs here instead, straight
against the database, in `arena beat` (one per deployment), in a process of its own beside
`arena worker --beat`, and in a thread of the embedded worker; it only enqueues what it finds. The
first sweep runs at start, so that work a stopped deployment gave back resumes at once.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading

from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine
from arena_platform.settings import Settings
from arena_workers.runner import WorkerContext, sweep

log = logging.getLogger(__name__)


class Sweeper:
    """Sweeps with `context` every `interval_s` seconds, from `run_forever` or a daemon thread
    (`start`/`stop`). A sweep that fails (the database or the broker is away) is logged and tried
    again at the next tick."""

    def __init__(self, context: WorkerContext, interval_s: float, *, resend_all_first: bool = False) -> None:
        self._context = context
        self._interval_s = interval_s
        self._resend_all = resend_all_first  # the broker lost its messages: resend every queued pairing
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
        try:
            sweep(self._context, resend_all_queued=self._resend_all)
            self._resend_all = False
        except Exception:  # the next tick tries again; the database is the truth, nothing is lost
            log.exception("sweep failed; trying again in %s s", self._interval_s)


def sweep_forever(settings: Settings) -> None:
    """`arena beat`: sweeps every `settings.heartbeat_seconds` until the process is stopped."""
    from arena_workers.celery_app import create_celery_app  # the app only sends: no worker is started

    context = WorkerContext(
        settings=settings,
        engine=make_engine(settings.resolved_database_url),
        blobs=BlobStore(settings.resolved_blob_url),
        enqueue=create_celery_app(settings).enqueue,
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
