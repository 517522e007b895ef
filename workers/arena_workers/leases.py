"""Claims and leases of pairings by a worker process (ARCHITECTURE §5).

A claim is a conditional update (`store.pairings.claim_pairing`): exactly one claimer wins, under a
lease owner made by `new_owner` (this process's heartbeat name and a fresh suffix, see
`arena_workers.liveness`). While the pairings play, `LeaseKeeper` renews their leases every
heartbeat; once they are recorded the leases end with them. Pairings not recorded are given back
with `release`, the failure charged to them or not; the sweeper sends them again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from arena_platform.db import session
from arena_platform.settings import Settings
from arena_platform.store.pairings import claim_pairing, release_pairing, renew_lease
from arena_workers.context import WorkerContext
from arena_workers.liveness import claim_owner

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews `owner`'s leases on `pairing_ids` every heartbeat from a daemon thread, while in a `with`.

    `lost` collects the pairings whose renewal found the lease gone (the sweeper re-queued it, or
    another worker claimed it after it lapsed); those are no longer renewed, nor are the ones passed
    to `finished` (before they are recorded: a renewal that finds one recorded has not lost it).
    A database error skips one beat: the lease outlives three of them.
    """

    def __init__(self, engine: Engine, pairing_ids: Sequence[int], owner: str, settings: Settings) -> None:
        self._engine = engine
        self._pairing_ids = list(pairing_ids)
        self._owner = owner
        self._lease_seconds = settings.lease_seconds
        self._interval = settings.heartbeat_seconds
        self.lost: set[int] = set()
        self._finished: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-keeper-{owner}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def finished(self, pairing_id: int) -> None:
        """Stops renewing the lease of a pairing about to be recorded (and so no longer running)."""
        self._finished.add(pairing_id)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            for pairing_id in [i for i in self._pairing_ids if i not in self.lost | self._finished]:
                try:
                    with session(self._engine) as db:
                        held = renew_lease(
                            db, pairing_id=pairing_id, owner=self._owner, lease_seconds=self._lease_seconds
                        )
                except SQLAlchemyError as error:
                    log.warning("heartbeat of pairing %s skipped: %s", pairing_id, error)
                    continue
                if not held and pairing_id not in self._finished:  # not recorded by us meanwhile
                    log.warning("pairing %s: lease lost", pairing_id)
                    self.lost.add(pairing_id)


def new_owner(context: WorkerContext) -> str:
    """A lease owner for a claim by this process, whose heartbeat it starts (liveness.ProcessBeat)."""
    context.beat.start()
    return claim_owner(context.beat.name)


def claim(context: WorkerContext, pairing_id: int, owner: str, *, alone: bool) -> bool:
    settings = context.settings
    with session(context.engine) as db:
        return claim_pairing(
            db,
            pairing_id=pairing_id,
            owner=owner,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
            alone=alone,
        )


def release(
    context: WorkerContext, pairing_ids: Sequence[int], owner: str, error: BaseException, *, charge: bool
) -> None:
    """Gives back the pairings still held, the failure charged or not (store.pairings.release_pairing);
    the next sweep sends them again."""
    message = f"{type(error).__name__}: {error}"
    with session(context.engine) as db:
        for pairing_id in pairing_ids:
            status = release_pairing(
                db,
                pairing_id=pairing_id,
                owner=owner,
                error=message,
                max_attempts=context.settings.max_attempts,
                charge=charge,
            )
            if status is not None:  # None: recorded before the error, or no longer ours
                log.warning("pairing %s given back (%s) after %s", pairing_id, status, message)
