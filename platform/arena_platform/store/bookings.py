"""Where a bot stands in its ladder's queue: what is booked for it, how many pairings are ahead of
its next one, and the ladder's measured pace, which turns a place in the queue into minutes.

Read only. The pace is what the workers achieved lately on this ladder (pairings finished per
minute), not a model of the workers: it follows their number, the ladder's cost per pairing and
the other ladders sharing them without knowing any of these.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, func, literal, or_
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from arena_platform.models import Bot, Ladder, Pairing, utc_now
from arena_platform.store.pairings import QUEUED, RUNNING
from arena_platform.store.reads import BookedPairing, BotQueue, BotRef, LadderPace, as_utc

PACE_WINDOW = timedelta(minutes=10)  # the pace counts the pairings finished this long before now
SHORTEST_PACE_SPAN = timedelta(minutes=1)  # a younger ladder's pace is counted over a minute
BOOKED_LISTED = 10  # a bot's booked pairings listed at most (all are counted)


def ladder_pace(session: Session, *, ladder: Ladder, now: datetime | None = None) -> LadderPace:
    """The ladder's pairings finished (done or failed) in the last PACE_WINDOW, per minute; over its
    age instead when it is younger (but at least SHORTEST_PACE_SPAN), so that a new ladder's pace
    shows from its first finished pairing. Counted on the (ladder_id, finished_at) index."""
    now = now or utc_now()
    span = min(PACE_WINDOW, max(SHORTEST_PACE_SPAN, now - as_utc(ladder.created_at)))
    statement = select(func.count()).where(
        col(Pairing.ladder_id) == ladder.id, col(Pairing.finished_at) >= now - span
    )
    finished = session.exec(statement).one()
    minutes = span.total_seconds() / 60
    return LadderPace(finished=finished, minutes=minutes, per_minute=finished / minutes)


# The order in which workers take a ladder's queued pairings, which `pairings_ahead` counts in:
# urgent ones first (a newcomer's introduction, a running SPRT's pairs: the next task any worker
# takes plays them, store.pairings.most_urgent), oldest first; then booking order (the pairing id:
# a ladder's task messages go out in the order its pairings were booked, and the broker hands them
# out first in, first out). Where scheduling changes the order, these two are the ones to follow it.
QUEUE_ORDER = (col(Pairing.urgent).desc(), col(Pairing.id))


def pairings_ahead(session: Session, *, pairing: Pairing) -> int:
    """How many queued pairings of `pairing`'s ladder the workers take before it (QUEUE_ORDER)."""
    same_rank = col(Pairing.urgent) == pairing.urgent
    before = col(Pairing.urgent) if not pairing.urgent else literal(False)
    statement = select(func.count()).where(
        col(Pairing.ladder_id) == pairing.ladder_id,
        col(Pairing.status) == QUEUED,
        or_(before, and_(same_rank, col(Pairing.id) < pairing.id)),
    )
    return session.exec(statement).one()


def bot_queue(session: Session, *, bot: Bot, ladder: Ladder) -> BotQueue:
    """What is booked for `bot` on its `ladder` (a BotQueue): its running and queued pairings, the
    first BOOKED_LISTED of them (running first, then the queue's order), the pairings ahead of its
    next queued one and when that one is expected to start at the ladder's pace."""
    opponent = aliased(Bot)
    theirs = or_(col(Pairing.bot_a_id) == bot.id, col(Pairing.bot_b_id) == bot.id)
    other_id = func.coalesce(func.nullif(Pairing.bot_a_id, bot.id), Pairing.bot_b_id)
    pending = col(Pairing.status).in_((RUNNING, QUEUED))
    rows = session.exec(
        select(Pairing, opponent)
        .join(opponent, opponent.id == other_id)
        .where(col(Pairing.ladder_id) == ladder.id, pending, theirs)
        .order_by(col(Pairing.status) == QUEUED, *QUEUE_ORDER)
    ).all()
    queued = [pairing for pairing, _ in rows if pairing.status == QUEUED]
    pace = ladder_pace(session, ladder=ladder)
    ahead = pairings_ahead(session, pairing=queued[0]) if queued else None
    return BotQueue(
        running=len(rows) - len(queued),
        queued=len(queued),
        booked=[_booked(pairing, other) for pairing, other in rows[:BOOKED_LISTED]],
        ahead=ahead,
        starts_in_minutes=None if ahead is None or not pace.per_minute else ahead / pace.per_minute,
        pace=pace,
    )


def _booked(pairing: Pairing, opponent: Bot) -> BookedPairing:
    return BookedPairing(
        id=pairing.id,
        opponent=BotRef(id=opponent.id, name=opponent.name, version=opponent.version),
        status=pairing.status,
        booked_at=pairing.created_at,
        challenge_id=pairing.challenge_id,
    )
