"""Scheduling rounds: the ladder's tables as `arena_platform.scheduling` sees them, and its pairings booked.

Only the ladder's own pairings count here (LADDERS_OWN): a challenge's are booked by its user.

Bots are named by their id as a string there, and ordered by id (creation order). A failed pairing
(its workers went silent on every attempt) does not count as played: the pair is booked again, so
no game is silently dropped. Only a pair that failed `QUARANTINE_FAILURES` times counts its failed
pairings as played, so that a pairing that kills every worker cannot stall a ladder for ever.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Sequence
from datetime import datetime

import numpy as np
from sqlalchemy import Engine, func
from sqlmodel import Session, col, select

from arena_games.registry import get_game
from arena_platform.db import plain_rows
from arena_platform.db import session as open_session
from arena_platform.models import Bot, Competition, Ladder, Pairing, utc_now
from arena_platform.queue import PLAY_PAIRINGS, Enqueue
from arena_platform.scheduling import LadderBot, LadderState, next_pairings, task_groups
from arena_platform.scheduling import Pairing as ChosenPairing
from arena_platform.store.finals import advance_final
from arena_platform.store.leagues import ladder_leagues
from arena_platform.store.pairings import (
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    create_pairings,
    task_size,
)
from arena_platform.store.ratings import lock_ladder, rating_estimates
from arena_platform.store.reads import as_utc
from arena_platform.store.sprt_tests import running_tests

IN_FLIGHT_STATUSES = (QUEUED, RUNNING)
QUARANTINE_FAILURES = 3  # failed pairings of one pair (each after max_attempts silent workers)
SCHEDULE_ROUND = 32  # pairings booked at most per scheduling round (the in-flight cap binds first)
# The ladder's own pairings: a challenge's (store.challenges) are outside its schedule, neither a
# pair's debt paid nor in-flight room taken, rated or not.
LADDERS_OWN = col(Pairing.challenge_id).is_(None)


def book_rounds(
    engine: Engine,
    enqueue: Enqueue,
    ladder_ids: Sequence[int],
    *,
    redelivery_seconds: int,
    now: datetime | None = None,
) -> list[int]:
    """Books each ladder's next round (`schedule_round`) and sends its play messages; their ids.

    A ladder's messages carry its `task_size` (a slow ladder's one pairing each), and the ladders'
    messages are sent in turn (one of each, then the next of each): on a busy queue no ladder's
    first games wait behind another ladder's whole round, nor a worker's turn behind more than
    about TASK_SECONDS of another ladder's play. Called where a bot arrives (an upload, a
    checkpoint), so that its urgent pairings are booked at once, not behind the queue's messages,
    by the workers after each task, and by the sweeper for a ladder with nothing in flight.
    A competition's ladder past its deadline books its final's rounds instead (`schedule_round`).
    """
    booked, messages = [], []
    for ladder_id in ladder_ids:
        with open_session(engine) as db:
            pairings = schedule_round(
                db, ladder_id=ladder_id, count=SCHEDULE_ROUND, redelivery_seconds=redelivery_seconds, now=now
            )
            booked += [pairing.id for pairing in pairings]
            messages.append(task_messages(pairings, task_size(db, ladder_id=ladder_id)))
    for turn in itertools.zip_longest(*messages):
        for message in turn:
            if message is not None:
                enqueue(PLAY_PAIRINGS, message)
    return booked


def schedule_round(
    session: Session, *, ladder_id: int, count: int, redelivery_seconds: int, now: datetime | None = None
) -> list[Pairing]:
    """Books up to `count` pairings chosen by `next_pairings` as queued; returns them. Commits.

    A competition's ladder schedules until the competition's deadline (`now`, the clock by default);
    from then on its rounds are its final's (store.finals.advance_final), whatever `count`.

    A ladder of a game version this process does not play (retired by a version bump, or not yet
    known to it) books nothing, its final neither: no worker of this code could play its pairings.

    The ladder's running SPRTs (new version against the previous one) are its priority pairs: a
    new version's first games are its test, until the verdict. Those pairings, and the introduction
    of a bot that joined after the ladder's first pairing (a new upload, version or checkpoint), are
    urgent: the next task of any worker plays them (`store.pairings.most_urgent`).

    The ladder row stays locked while the round reads and books, so concurrent rounds of one ladder
    cannot overbook a bot. The random generator is seeded by the ladder's seed and the number of
    pairings booked so far: the same tables give the same round.
    """
    ladder = lock_ladder(session, ladder_id=ladder_id)
    if ladder.game_version != get_game(ladder.game).spec.version:
        session.commit()  # releases the lock
        return []
    now = now or utc_now()
    competition = None if ladder.competition_id is None else session.get(Competition, ladder.competition_id)
    if competition is not None and now >= as_utc(competition.deadline):
        pairings = advance_final(
            session, ladder=ladder, competition=competition, now=now, redelivery_seconds=redelivery_seconds
        )
        session.commit()
        return pairings
    newcomers = _newcomers(session, ladder_id=ladder.id)
    state = ladder_state(session, ladder=ladder, newcomers=newcomers)
    booked = sum(state.played.values()) + sum(state.in_flight.values())
    rng = np.random.default_rng([ladder.seed % 2**32, booked])
    tests = running_tests(session, ladder_id=ladder.id)
    priority = [(str(test.new_bot_id), str(test.old_bot_id)) for test in tests]
    chosen = next_pairings(state, count, rng, priority=priority)
    pairs = [(int(pairing.first), int(pairing.second)) for pairing in chosen]
    urgent = {index for index, pairing in enumerate(chosen) if _urgent(pairing, pairs[index], newcomers)}
    pairings = create_pairings(
        session, ladder=ladder, pairs=pairs, redelivery_seconds=redelivery_seconds, urgent=urgent
    )
    session.commit()
    return pairings


def _urgent(pairing: ChosenPairing, bots: tuple[int, int], newcomers: set[int]) -> bool:
    """Whether a booked pairing is urgent: a running SPRT's, or a newcomer's introduction."""
    return pairing.reason == "priority" or (pairing.reason == "introduction" and bool(newcomers & set(bots)))


def _newcomers(session: Session, *, ladder_id: int) -> set[int]:
    """The active bots that joined `ladder_id` after its first pairing was booked."""
    first = (
        select(func.min(Pairing.created_at))
        .where(col(Pairing.ladder_id) == ladder_id, LADDERS_OWN)
        .scalar_subquery()
    )
    statement = select(Bot.id).where(
        col(Bot.ladder_id) == ladder_id, col(Bot.status) == "active", col(Bot.created_at) > first
    )
    return set(session.exec(statement).all())


def task_messages(pairings: Sequence[Pairing], size: int) -> list[list[int]]:
    """The ids of a round's `pairings` as task messages of at most `size`, pairings that share a
    bot together (`arena_platform.scheduling.task_groups`)."""
    pairs = [(str(pairing.bot_a_id), str(pairing.bot_b_id)) for pairing in pairings]
    return [[pairings[index].id for index in group] for group in task_groups(pairs, size)]


def ladder_state(session: Session, *, ladder: Ladder, newcomers: Collection[int] = ()) -> LadderState:
    """The scheduler's snapshot of `ladder`: active bots (`newcomers` among them marked so; on a
    competition's ladder with leagues, those that play in one, with their league), pairings played
    and in flight, ratings."""
    leagues = ladder_leagues(session, ladder=ladder)
    bots = [
        bot
        for bot in session.exec(
            select(Bot).where(col(Bot.ladder_id) == ladder.id, col(Bot.status) == "active").order_by(Bot.id)
        )
        if leagues is None or bot.id in leagues
    ]
    statement = (
        select(Pairing.bot_a_id, Pairing.bot_b_id, Pairing.status, func.count())
        .where(col(Pairing.ladder_id) == ladder.id, LADDERS_OWN)
        .group_by(Pairing.bot_a_id, Pairing.bot_b_id, Pairing.status)
    )
    played: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    in_flight: Counter[tuple[str, str]] = Counter()
    tally_of = {DONE: played, FAILED: failed, QUEUED: in_flight, RUNNING: in_flight}
    for bot_a, bot_b, status, number in plain_rows(session, statement):  # ~10^5 pairs on a big ladder
        tally_of[status][str(bot_a), str(bot_b)] += number
    played.update({pair: number for pair, number in failed.items() if number >= QUARANTINE_FAILURES})
    return LadderState(
        bots=tuple(
            LadderBot(
                name=str(bot.id),
                is_house=bot.kind == "house",
                created=bot.id,
                newcomer=bot.id in newcomers,
                league=None if leagues is None else leagues[bot.id],
            )
            for bot in bots
        ),
        played=played,
        in_flight=in_flight,
        ratings={
            str(bot): estimate for bot, estimate in rating_estimates(session, ladder_id=ladder.id).items()
        },
    )


def stalled_ladders(session: Session) -> list[int]:
    """Ladders that have played but have nothing of their own queued or running: a scheduling
    message was lost (a challenge in flight does not hide it)."""
    started = select(Pairing.ladder_id).where(LADDERS_OWN).distinct()
    busy = (
        select(Pairing.ladder_id).where(LADDERS_OWN, col(Pairing.status).in_(IN_FLIGHT_STATUSES)).distinct()
    )
    return sorted(set(session.exec(started).all()) - set(session.exec(busy).all()))
