"""Worker liveness: every process that plays pairings or trains sessions beats into the database
(ARCHITECTURE §5, fishtest's heartbeats).

A process beats under a name of its own, "<host>/<pid>/<token>" (the token tells apart processes
that reuse a host name and pid, as containers restarted under docker-compose do), in `workerbeat`
every `heartbeat_seconds`, from its first claim until it stops; each of its claims is owned by
"<name>/<claim token>". A process silent for more than `DEATH_BEATS` heartbeats is dead, wherever
the sweeper runs: its pairings and sessions are taken back at once, without waiting for their
leases to lapse. The sweeper judges silence only once it has reached the database at every sweep
for that long itself (`arena_workers.sweeper`): after a database outage every worker is silent for
a while, and none of them is dead.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterable

from sqlalchemy import Engine

from arena_platform.db import session
from arena_platform.store import training

log = logging.getLogger(__name__)

DEATH_BEATS = 2  # heartbeats of silence after which a worker process is dead


class ProcessBeat:
    """This process's heartbeat: `start` beats once (raising if the database cannot take it: claim
    nothing then) and then every `interval_s` from a daemon thread; `stop` removes the record."""

    def __init__(self, engine: Engine, interval_s: float) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self.name = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Beats now and from then on; does nothing once started."""
        with self._lock:
            if self._thread is not None:
                return
            self._beat_once()
            self._thread = threading.Thread(target=self._beat, name="arena-process-beat", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join()
        try:
            with session(self._engine) as db:
                training.forget_worker(db, name=self.name)
        except Exception as error:  # the sweeper forgets it once it is long silent
            log.warning("could not remove the beat of process %s: %s", self.name, error)

    def _beat_once(self) -> None:
        with session(self._engine) as db:
            training.beat_worker(db, name=self.name, queues="")

    def _beat(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self._beat_once()
            except Exception as error:  # the database is away: tried again at the next beat
                log.warning("heartbeat of process %s skipped: %s", self.name, error)


def claim_owner(process: str) -> str:
    """A new lease owner for a claim by the process named `process`."""
    return f"{process}/{uuid.uuid4().hex[:12]}"


def owners_of(owners: Iterable[str], processes: set[str]) -> list[str]:
    """The lease owners among `owners` whose claims were made by one of `processes`."""
    return [owner for owner in owners if owner.rpartition("/")[0] in processes]
