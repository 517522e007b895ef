"""A ladder's upkeep, done by the tasks, the runner and the sweeper alike (ARCHITECTURE §5): its
next scheduling round booked and sent (`schedule_ladder`), queued pairings sent again in the
blocks scheduling would make (`send_pairings`), and its ratings refitted (`refit`).

Each writes to the database before it enqueues, so a message lost on the way costs a delay, never
work: the sweeper finds what has no message out and sends it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import col, select

from arena_platform.db import session
from arena_platform.models import Pairing
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.store.pairings import QUEUED, mark_sent, task_size
from arena_platform.store.ratings import refit_ladder
from arena_platform.store.scheduling import book_rounds, task_messages
from arena_workers.context import WorkerContext


def schedule_ladder(context: WorkerContext, *ladder_ids: int) -> list[int]:
    """Books each ladder's next pairings and sends them (store.scheduling.book_rounds); their ids."""
    return book_rounds(
        context.engine,
        context.enqueue,
        ladder_ids,
        redelivery_seconds=context.settings.lease_seconds,
        now=context.clock(),
    )


def refit(context: WorkerContext, ladder_id: int) -> bool:
    """Refits the ladder's ratings unless they already cover all its games; True if it refitted."""
    with session(context.engine) as db:
        return refit_ladder(db, ladder_id=ladder_id)


def send_pairings(context: WorkerContext, pairing_ids: Sequence[int]) -> None:
    """Sends those of `pairing_ids` still queued again in blocks of their ladder's `task_size` that
    share a bot, as scheduling does; an isolated pairing alone. Each block is marked sent once its
    message went out; if sending raises, the rest stay unsent for the next sweep."""
    queued = col(Pairing.id).in_(list(pairing_ids)), col(Pairing.status) == QUEUED
    blocks: list[list[int]] = []
    with session(context.engine) as db:
        pairings = db.exec(select(Pairing).where(*queued).order_by(Pairing.id)).all()
        for ladder_id in sorted({pairing.ladder_id for pairing in pairings}):
            batchable = [p for p in pairings if p.ladder_id == ladder_id and not p.isolated]
            blocks += task_messages(batchable, task_size(db, ladder_id=ladder_id))
    alone = [[pairing.id] for pairing in pairings if pairing.isolated]
    for message in blocks + alone:
        context.enqueue(PLAY_PAIRINGS, message)
        with session(context.engine) as db:
            mark_sent(db, pairing_ids=message, redelivery_seconds=context.settings.lease_seconds)
