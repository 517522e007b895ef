"""The in-process worker of the embedded default (`make demo`): the same tasks, no servers (ARCHITECTURE §5).

A Celery worker with the solo pool runs in a daemon thread on the in-memory broker (`memory://`,
shared by every Celery app of the process, so the API's client reaches it), as measured in §8:
without heartbeats, mingle and gossip, and without touching stdout or the root logger. A second
daemon thread stands in for Celery beat and sends `arena.sweep` every heartbeat. The API and this
worker share one engine and one blob store. Tasks run one at a time, and Celery's time limits do
not apply (the solo pool cannot enforce them).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import Engine

from arena_platform.blobs import BlobStore
from arena_platform.settings import Settings
from arena_workers.celery_app import ArenaCelery, create_celery_app
from arena_workers.runner import SWEEP, WorkerContext

log = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 30.0  # how long `stop` waits for the running task to finish


class EmbeddedWorker:
    """Start with `start()` (or `with`), send work with `enqueue`, end with `stop()`."""

    def __init__(self, settings: Settings, *, engine: Engine, blobs: BlobStore) -> None:
        if not settings.embedded_worker:
            raise ValueError(f"the embedded worker runs on the in-memory broker, not {settings.broker_url}")
        self.context = WorkerContext(settings=settings, engine=engine, blobs=blobs, enqueue=self.enqueue)
        self.app: ArenaCelery = create_celery_app(settings, context=self.context)
        self.app.conf.worker_hijack_root_logger = False
        self._sweep_interval = settings.heartbeat_seconds
        self._worker: Any = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    def start(self) -> EmbeddedWorker:
        self._worker = self.app.Worker(
            pool="solo",
            concurrency=1,
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            quiet=True,
            loglevel="WARNING",
        )
        self._threads = [
            threading.Thread(target=self._worker.start, name="arena-embedded-worker", daemon=True),
            threading.Thread(target=self._send_sweeps, name="arena-embedded-sweeper", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def enqueue(self, task_name: str, *args: Any) -> None:
        """Sends a task to this worker (the `arena_platform.queue.Enqueue` shape)."""
        self.app.enqueue(task_name, *args)

    def stop(self) -> None:
        """Lets the running task finish, stops both threads and closes the model hosts."""
        self._stopping.set()
        if self._worker is not None:
            self._worker.stop(in_sighandler=False)
        for thread in self._threads:
            thread.join(STOP_TIMEOUT_SECONDS)
            if thread.is_alive():
                log.warning("%s did not stop within %s s", thread.name, STOP_TIMEOUT_SECONDS)
        self.context.close()

    def __enter__(self) -> EmbeddedWorker:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _send_sweeps(self) -> None:
        while not self._stopping.wait(self._sweep_interval):
            self.enqueue(SWEEP)
