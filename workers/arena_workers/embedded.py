"""The in-process worker of the embedded default (`make demo`): the same tasks, no servers (ARCHITECTURE §5).

A Celery worker runs in a daemon thread on the in-memory broker (`memory://`, shared by every Celery
app of the process, so the API's client reaches it), as measured in §8: without heartbeats, mingle
and gossip, and without touching stdout or the root logger. A second daemon thread sweeps every
heartbeat (`arena_workers.sweeper`); its first sweep resends every queued pairing, since the
in-memory broker lost the messages of the last run. The API and this worker share one engine and
one blob store. With one process (`arena serve`'s default) the worker's pool is solo: tasks run one
at a time, in this process. With `processes` above one (`arena demo`: one per core) its pool is as
many threads, and play messages are played in as many spawned child processes
(`arena_workers.processes`), on the database and blob store the settings name. Celery's time
limits do not apply (neither pool can enforce them). Where PyTorch (the `train` extra) is installed, the
worker consumes the `training` queue too, and beats as a training worker: a session then trains in
slices (`Settings.training_slice_seconds`) between which the matches queued meanwhile are played.
(Two workers in one process do not work: Celery traces a process's tasks through one app, and one
app consumes one selection of queues.)

Stopping (Ctrl-C of `arena serve` or `arena demo`) gives the pairings being played back at the
next round of their batch, unscored and without using an attempt, then closes the model hosts.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

from celery.exceptions import SecurityWarning
from sqlalchemy import Engine

from arena_bots.warm import warm_up_or_log
from arena_platform.blobs import BlobStore
from arena_platform.models import utc_now
from arena_platform.queue import DEFAULT_QUEUE, TRAINING_QUEUE
from arena_platform.settings import Settings
from arena_workers.celery_app import ArenaCelery, create_celery_app
from arena_workers.context import WorkerContext
from arena_workers.processes import PlayProcesses
from arena_workers.sweeper import Sweeper
from arena_workers.training import WorkerBeater, training_available

log = logging.getLogger(__name__)

STOP_TIMEOUT_SECONDS = 30.0  # how long `stop` waits for the running task to give its pairings back


class EmbeddedWorker:
    """Start with `start()` (or `with`), send work with `enqueue`, end with `stop()`."""

    def __init__(
        self,
        settings: Settings,
        *,
        engine: Engine,
        blobs: BlobStore,
        processes: int = 1,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """`clock`: the time competitions are read by (`WorkerContext.clock`; a test's, as the API's)."""
        if not settings.embedded_worker:
            raise ValueError(f"the embedded worker runs on the in-memory broker, not {settings.broker_url}")
        if processes < 1:
            raise ValueError(f"the embedded worker plays in at least one process, not {processes}")
        self.context = WorkerContext(
            settings=settings,
            engine=engine,
            blobs=blobs,
            enqueue=self.enqueue,
            waiting_pairings=self.waiting_pairings,
            clock=clock,
        )
        self._processes = processes
        self._players: PlayProcesses | None = None  # started with the worker when processes > 1
        self.app: ArenaCelery = create_celery_app(settings, context=self.context)
        self.app.conf.worker_hijack_root_logger = False
        self._queues = [DEFAULT_QUEUE]
        self._beater: WorkerBeater | None = None
        if training_available():
            self._queues.append(TRAINING_QUEUE)
            self._beater = WorkerBeater(settings, engine, TRAINING_QUEUE)
        self._sweeper = Sweeper(self.context, settings.heartbeat_seconds, resend_all_first=True)
        self._worker: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> EmbeddedWorker:
        """Starts the worker and the sweeper; once only (a second worker would play beside the first
        on the same model hosts, which serve one caller at a time)."""
        if self._thread is not None:
            raise RuntimeError("this embedded worker is already started")
        if self._processes > 1:
            self._players = PlayProcesses(self.context.settings, self._processes, self.enqueue)
            self.context.play_elsewhere = self._players.play
        with warnings.catch_warnings():  # as root (a container): the broker carries JSON, never pickles
            warnings.simplefilter("ignore", SecurityWarning)
            self._worker = self.app.Worker(
                pool="solo" if self._players is None else "threads",
                concurrency=self._processes,
                queues=self._queues,
                without_heartbeat=True,
                without_mingle=True,
                without_gossip=True,
                quiet=True,
                loglevel="WARNING",
            )
        self._thread = threading.Thread(target=self._warm_and_run, name="arena-embedded-worker", daemon=True)
        self._thread.start()
        if self._beater is not None:
            self._beater.start()
        self._sweeper.start()
        return self

    def _warm_and_run(self) -> None:
        """The worker's thread: the games' kernels compiled or loaded (`arena_bots.warm`), then the
        worker, so that no first move waits for them; not the worker if `stop` came meanwhile."""
        warm_up_or_log()
        if not self.context.stopping.is_set():
            self._worker.start()

    def enqueue(self, task_name: str, *args: Any) -> None:
        """Sends a task to this worker (the `arena_platform.queue.Enqueue` shape)."""
        self.app.enqueue(task_name, *args)

    def waiting_pairings(self) -> set[int] | None:
        """The pairings named by the messages waiting in this worker's play queue."""
        return self.app.waiting_pairings()

    def stop(self) -> None:
        """Stops the batches being played (their pairings go back to the queue), both threads, the
        play processes, and then the model hosts."""
        self.context.stopping.set()
        if self._players is not None:
            self._players.stopping.set()
        self._sweeper.stop()
        if self._beater is not None:
            self._beater.stop()
        if self._worker is not None:
            self._worker.stop(in_sighandler=False)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_SECONDS)
            if self._thread.is_alive():
                log.warning("%s did not stop within %s s", self._thread.name, STOP_TIMEOUT_SECONDS)
        if self._players is not None:
            self._players.close()
        self.context.close()

    def __enter__(self) -> EmbeddedWorker:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
