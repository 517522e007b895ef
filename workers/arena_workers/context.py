"""What the tasks of one worker process share, the names of the tasks they send, and which errors
are the platform's fault (ARCHITECTURE §4, §5).

A `WorkerContext` is made once per worker process (the Celery app's, the embedded worker's, a play
child's, the sweeper's) and handed to every plain function a task calls: the match runner
(`arena_workers.runner`), the sweeper, the ladders' upkeep (`arena_workers.ladders`) and training.
It owns this process's model hosts (`arena_workers.model_cache`) and its heartbeat
(`arena_workers.liveness`). A fault of the platform (`is_platform_fault`) costs a pairing nothing;
anything else raised while playing is charged to it (`arena_platform.store.pairings`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from arena_bots.match import PlatformFault
from arena_platform.blobs import BlobStore
from arena_platform.models import utc_now
from arena_platform.queue import Enqueue
from arena_platform.settings import Settings
from arena_workers.liveness import ProcessBeat
from arena_workers.model_cache import ModelCache

if TYPE_CHECKING:
    from arena_workers.runner import PairingOutcome

# Task names (the broker's vocabulary); arguments are ids only. PLAY_PAIRINGS: arena_platform.queue.
PLAY_PAIRING = "arena.play_pairing"  # (pairing_id)
REFIT = "arena.refit"  # (ladder_id)
SWEEP = "arena.sweep"  # ()


@dataclass
class WorkerContext:
    """What the tasks of one worker process share. `enqueue` sends a task by name with id arguments.

    `clock` is the time competitions' deadlines and finals are read by, as the API's
    (`api.deps.Services.clock`): a test's clock; leases and heartbeats keep the machine's time.
    `waiting_pairings` names the pairings of the messages waiting in the play queue (it answers
    None, or is None, where the broker cannot tell). `play_elsewhere`, where set, plays this
    process's play messages in other processes (the embedded worker's, `arena_workers.processes`);
    `play_task` uses it. `stopping` is set when the worker shuts down:
    the batch being played stops before its next round and gives its pairings back. `beat` is this
    process's heartbeat, started by its first claim (`new_owner`).
    """

    settings: Settings
    engine: Engine
    blobs: BlobStore
    enqueue: Enqueue
    waiting_pairings: Callable[[], set[int] | None] | None = None
    play_elsewhere: Callable[[list[int]], list[PairingOutcome]] | None = None
    clock: Callable[[], datetime] = utc_now
    models: ModelCache = field(init=False)
    beat: ProcessBeat = field(init=False)
    stopping: threading.Event = field(init=False, default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.models = ModelCache(self.blobs)
        self.beat = ProcessBeat(self.engine, self.settings.heartbeat_seconds)

    def check_running(self) -> None:
        """Raises PlatformFault once the worker is shutting down (called between rounds of play)."""
        if self.stopping.is_set():
            raise PlatformFault("the worker is shutting down")

    def close(self) -> None:
        """Closes the model hosts and stops the heartbeat; the engine and the blob store belong to
        whoever made them."""
        self.models.close()
        self.beat.stop()


def is_database_lost(error: BaseException) -> bool:
    """Whether `error` is the database going away (the platform's fault, retried), not a bug."""
    return isinstance(error, OperationalError | InterfaceError) or (
        isinstance(error, DBAPIError) and error.connection_invalidated
    )


def is_platform_fault(error: BaseException) -> bool:
    """Whether `error`, raised while playing, is the platform's doing: the database going away, or
    the process being made to exit (SystemExit, KeyboardInterrupt: a warm shutdown, Celery
    cancelling its tasks when the broker connection is lost), rather than a bug that a pairing may
    trigger."""
    return is_database_lost(error) or not isinstance(error, Exception)
