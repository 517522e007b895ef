"""The embedded worker's play processes: one per core, so that `make demo` plays as many pairings at
once as the machine has cores (ARCHITECTURE §5, §8: one single-threaded process per core).

The in-memory broker lives in the API's process, so the embedded worker's Celery consumer stays
there; with several processes it runs a pool of as many threads, and each play message's body
(`runner.play_task`) hands its pairing ids to a spawned child, which plays them with a
WorkerContext of its own (engine, blob store, model hosts, heartbeat) exactly as a worker process
does. What a child enqueues (refits, rounds, resent messages) travels back through a queue and is
sent by a thread here, as it happens. Shutting down reaches the children through one event, so the
batches they play stop before their next round and give their pairings back.

A child that dies (killed, crashed) takes nothing with it: its pairings are taken back by the
sweeper once its heartbeat stops, as any dead worker's are; its task fails with a RunnerError and
the next message gets a fresh set of children.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.util import Finalize
from typing import Any

from arena_bots.warm import warm_up_or_log
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine
from arena_platform.queue import Enqueue
from arena_platform.settings import Settings
from arena_workers.context import WorkerContext
from arena_workers.runner import PairingOutcome, RunnerError, play_pairings

log = logging.getLogger(__name__)

_CHILD: WorkerContext | None = None  # a child's context, made by `_start_child`


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class PlayProcesses:
    """`count` spawned processes that play task messages (`play`); `close` ends them."""

    def __init__(self, settings: Settings, count: int, enqueue: Enqueue) -> None:
        self._settings = settings
        self._count = count
        self._spawn = multiprocessing.get_context("spawn")
        self.stopping = self._spawn.Event()  # set: the children's batches give their pairings back
        self._outbox = self._spawn.Queue()  # (task name, *args) the children enqueue
        self._enqueue = enqueue
        self._lock = threading.Lock()
        self._executor = self._new_executor()
        self._forwarder = threading.Thread(target=self._forward, name="arena-play-outbox", daemon=True)
        self._forwarder.start()

    def play(self, pairing_ids: list[int]) -> list[PairingOutcome]:
        """Plays one message's pairings in a child (`runner.play_pairings`); its outcomes. Raises
        what the child raised, or RunnerError when the child died."""
        executor = self._executor
        try:
            return executor.submit(_play_in_child, pairing_ids).result()
        except BrokenProcessPool:
            with self._lock:
                if self._executor is executor:
                    self._executor = self._new_executor()
            raise RunnerError(f"the worker process playing pairings {pairing_ids} died") from None

    def close(self) -> None:
        """Stops the children's batches (their pairings go back to the queue), waits for them to
        exit (each closes its model hosts and heartbeat), then stops forwarding."""
        self.stopping.set()
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._outbox.put(None)
        self._forwarder.join()

    def _new_executor(self) -> ProcessPoolExecutor:
        """A pool whose children start now, each with a trivial call: a child spends seconds
        importing the workers' code, and spends them before the first message, not after it."""
        executor = ProcessPoolExecutor(
            self._count,
            mp_context=self._spawn,
            initializer=_start_child,
            initargs=(self._settings, self.stopping, self._outbox),
        )
        for _ in range(self._count):
            executor.submit(os.getpid)
        return executor

    def _forward(self) -> None:
        while (message := self._outbox.get()) is not None:
            try:
                self._enqueue(*message)
            except Exception as error:  # what could not be sent, the sweep sends
                log.warning("%s not sent: %s", message[0], error)


def _start_child(settings: Settings, stopping: Any, outbox: Any) -> None:
    """A child's start: its own context, enqueueing through `outbox`, stopping with `stopping`; the
    games' kernels loaded (`arena_bots.warm`: a spawned child starts with none), before any message."""
    global _CHILD
    warm_up_or_log()
    _CHILD = WorkerContext(
        settings=settings,
        engine=make_engine(settings.resolved_database_url),
        blobs=BlobStore(settings.resolved_blob_url),
        enqueue=lambda task_name, *args: outbox.put((task_name, *args)),
    )
    _CHILD.stopping = stopping  # a process-shared event: is_set, set, wait as threading's
    Finalize(_CHILD, _CHILD.close, exitpriority=10)  # model hosts and heartbeat end with the child


def _play_in_child(pairing_ids: list[int]) -> list[PairingOutcome]:
    assert _CHILD is not None, "a play process starts with _start_child"
    return play_pairings(_CHILD, pairing_ids)
