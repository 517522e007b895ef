"""A competition's final on its ladder (issue 26 items 3, 7; ARCHITECTURE §10): started once the
deadline has passed, booked round by round, ranked from its games, finished; and what it reads.

The rules (the pure parts are `arena_platform.finals`):
- Start: at the first scheduling round of the competition's ladder (a worker's after its games, or
  the sweeper's, every heartbeat) at or after `deadline + FINAL_GRACE`. The grace lets an upload
  that began before the deadline finish its validation and enter (store.competitions decides
  entries by their start); one still validating after it joins the ladder but not the final.
  Its entrants are frozen then: the ladder's active bots that have an owner. House bots are left
  out: they are the platform's reference players, anchors of the ladder's scale, not contestants,
  and the final's ranking needs no anchor. A seed is drawn and stored with them; together with the
  competition's terms they fix the schedule (`finals.schedule`). Fewer than two entrants: the final
  finishes at once, with nothing to play.
- The ladder's own scheduling stops at the deadline: from then on its rounds are the final's
  (store.scheduling hands them here). When the final starts, the ladder's own pairings still
  queued are withdrawn (failed, saying so), so that the final does not wait behind them; those
  running are played out, and challenges are left alone. Final pairings are the ladder's pairings with a
  `final_number` and the schedule's seed; they are sent, claimed, leased, given back and swept as
  every pairing is (store.pairings).
- Rounds: nothing more is booked while a final pairing is queued or running. Once all are
  finished, the final's games are ranked (`finals.rank_final`, the final's games only) and the
  next round is booked, or the final finishes:
  * `final_pairs` terms: the round robin at `final_pairs` pairings per pair of entrants, then
    `finals.extra_round` for unsettled neighbours, up to its cap (DEFAULT_EXTRA_ROUNDS);
  * `final_seconds` terms: the round robin one pairing per pair at a time, another round while
    the budget lasts: wall-clock time from the final's start, read when a round has finished (a
    round started inside the budget is played out, so a final may overrun it by one round). With
    `final_stop` "settled" it finishes sooner, once every adjacent pair of the ranking has
    P(stronger) of `final_confidence` or more.
- A failed pairing (out of attempts, store.pairings) is finished without games: the final goes on
  without them, and its progress counts them. Booking it again would replay the same seed and
  fail the same way.
- Finished: `finished_at` is stored; the ranking is never stored, but recomputed from the games,
  which are keyed by their place in the schedule (`final_game_id`), so it is the same every time.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, update
from sqlmodel import Session, col, select

from arena_platform.blobs import BlobStore
from arena_platform.finals.export import ranking_rows, replay_file_name
from arena_platform.finals.ranking import FinalRanking, rank_final
from arena_platform.finals.schedule import FinalPairing, FinalPlan, extra_round, round_robin
from arena_platform.models import Bot, Competition, CompetitionFinal, GameRecord, Ladder, Pairing, User
from arena_platform.ratings import GameResult
from arena_platform.store.competitions import phase
from arena_platform.store.ladders import ranking_hidden
from arena_platform.store.pairings import DONE, FAILED, QUEUED, RUNNING, create_pairings
from arena_platform.store.reads import UtcDatetime, as_utc

FINAL_GRACE = timedelta(minutes=10)  # after the deadline, before the entrants are frozen
OF_THE_FINAL = col(Pairing.final_number).is_not(None)
WITHDRAWN = "withdrawn unplayed: the competition's final started"


class FinalProgress(BaseModel):
    booked: int  # the final's pairings booked so far
    done: int
    failed: int  # out of attempts: finished without games
    in_flight: int  # queued or running
    rounds: int  # rounds booked (the round robin's, then extra or budget rounds)


class FinalResults(BaseModel):
    """A competition's results: its phase, its final's progress, and its ranking once the final
    has games (finals.export's rows), provisional until the final is finished."""

    competition_id: int
    phase: str  # upcoming | open | closed | final | finished
    entrants: list[int]  # the final's, frozen at its start; [] before
    seed: int | None
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    progress: FinalProgress
    provisional: bool  # the ranking may still change: the final is not finished
    # a competition with a hidden ranking shows none until its final is finished (its games stay
    # public): then `ranking` is None (store.competitions.check_ranking_shown)
    ranking_hidden: bool
    ranking: list[dict[str, Any]] | None  # None until a final game is played, or while hidden


# --- Running the final ----------------------------------------------------------------------------


def advance_final(
    session: Session, *, ladder: Ladder, competition: Competition, now: datetime, redelivery_seconds: int
) -> list[Pairing]:
    """The final's next pairings, booked (the module's rules): its start, its next round, or none
    (too early, pairings in flight, finished; a final with nothing more to play is marked
    finished). The caller holds `ladder`'s lock (store.ratings.lock_ladder), commits, then sends
    them. Flushes."""
    final = session.get(CompetitionFinal, competition.id)
    if final is None:
        if now < as_utc(competition.deadline) + FINAL_GRACE:
            return []
        final = _start(session, ladder=ladder, competition=competition, now=now)
        _withdraw_ladder_pairings(session, ladder_id=ladder.id, now=now)
        if len(final.entrants) < 2:
            final.finished_at = now
            return []
        return _book(session, ladder, round_robin(_plan(competition, final)), redelivery_seconds)
    if final.finished_at is not None or _in_flight(session, ladder_id=ladder.id):
        return []
    scheduled = scheduled_pairings(session, ladder_id=ladder.id)
    ranking = rank_final(final_results(session, ladder_id=ladder.id), final.entrants)
    following = _next_round(competition, final, scheduled, ranking, now)
    if not following:
        final.finished_at = now
        session.add(final)
        session.flush()
        return []
    return _book(session, ladder, following, redelivery_seconds)


def _start(session: Session, *, ladder: Ladder, competition: Competition, now: datetime) -> CompetitionFinal:
    entrants = session.exec(
        select(Bot.id)
        .where(col(Bot.ladder_id) == ladder.id, col(Bot.status) == "active", col(Bot.owner_id).is_not(None))
        .order_by(Bot.id)
    ).all()
    final = CompetitionFinal(
        competition_id=competition.id,
        seed=secrets.randbelow(2**31),  # unknown to entrants until the final starts
        entrants=list(entrants),
        started_at=now,
    )
    session.add(final)
    session.flush()
    return final


def _withdraw_ladder_pairings(session: Session, *, ladder_id: int, now: datetime) -> None:
    """Fails the ladder's own pairings still queued (booked before the deadline): they would hold
    the workers ahead of the final, for a schedule that has stopped. A running one is played out."""
    session.exec(
        update(Pairing)
        .where(
            col(Pairing.ladder_id) == ladder_id,
            col(Pairing.status) == QUEUED,
            col(Pairing.challenge_id).is_(None),
            col(Pairing.final_number).is_(None),
        )
        .values(status=FAILED, finished_at=now, lease_expires_at=None, error=WITHDRAWN)
    )


def _plan(competition: Competition, final: CompetitionFinal) -> FinalPlan:
    """The final's plan: a timed final's round robin is one pairing per pair, repeated by
    `_next_round`, without extra rounds."""
    if competition.final_pairs is None:
        return FinalPlan(
            entrants=tuple(final.entrants), pairs_per_pair=1, seed=final.seed, max_extra_rounds=0
        )
    return FinalPlan(entrants=tuple(final.entrants), pairs_per_pair=competition.final_pairs, seed=final.seed)


def _next_round(
    competition: Competition,
    final: CompetitionFinal,
    scheduled: Sequence[FinalPairing],
    ranking: FinalRanking,
    now: datetime,
) -> list[FinalPairing]:
    """The round after `scheduled` (all finished), ranked by `ranking`; [] when the final is over."""
    plan = _plan(competition, final)
    if competition.final_seconds is None:
        return extra_round(plan, scheduled, ranking)
    if competition.final_stop == "settled" and _settled(ranking, competition.final_confidence):
        return []
    if now >= as_utc(final.started_at) + timedelta(seconds=competition.final_seconds):
        return []
    rounds = max(pairing.round for pairing in scheduled) + 1
    longer = dataclasses.replace(plan, pairs_per_pair=rounds + 1)
    return [pairing for pairing in round_robin(longer) if pairing.round == rounds]


def _settled(ranking: FinalRanking, confidence: float) -> bool:
    """Whether every adjacent pair of `ranking` is ordered with probability `confidence` or more."""
    return all(
        row.stronger_than_next is not None and row.stronger_than_next >= confidence
        for row in ranking.rows[:-1]
    )


def _book(
    session: Session, ladder: Ladder, schedule: Sequence[FinalPairing], redelivery_seconds: int
) -> list[Pairing]:
    """The `schedule`'s pairings booked on `ladder` with the schedule's numbers, rounds and seeds."""
    pairs = [(pairing.bot_a, pairing.bot_b) for pairing in schedule]
    booked = create_pairings(session, ladder=ladder, pairs=pairs, redelivery_seconds=redelivery_seconds)
    for pairing, planned in zip(booked, schedule, strict=True):
        pairing.seed = planned.seed
        pairing.final_number = planned.number
        pairing.final_round = planned.round
    session.flush()
    return booked


def _in_flight(session: Session, *, ladder_id: int) -> bool:
    pending = col(Pairing.status).in_((QUEUED, RUNNING))
    found = select(Pairing.id).where(col(Pairing.ladder_id) == ladder_id, OF_THE_FINAL, pending).limit(1)
    return session.exec(found).first() is not None


def unfinished_finals(session: Session, *, now: datetime) -> tuple[set[int], set[int]]:
    """(the ladders of the competitions past their deadline, those of them whose final is not
    finished): the sweeper books the latter's rounds, and no ladder round for the others."""
    closed = session.exec(
        select(Ladder.id, CompetitionFinal.finished_at, Competition.deadline)
        .join(Competition, col(Competition.id) == Ladder.competition_id)
        .outerjoin(CompetitionFinal, col(CompetitionFinal.competition_id) == Competition.id)
    ).all()
    past = {(ladder_id, finished) for ladder_id, finished, deadline in closed if now >= as_utc(deadline)}
    return {ladder_id for ladder_id, _ in past}, {
        ladder_id for ladder_id, finished in past if finished is None
    }


# --- Reading it -----------------------------------------------------------------------------------


def scheduled_pairings(session: Session, *, ladder_id: int) -> list[FinalPairing]:
    """The final's pairings booked on `ladder_id`, in schedule order."""
    rows = session.exec(
        select(Pairing)
        .where(col(Pairing.ladder_id) == ladder_id, OF_THE_FINAL)
        .order_by(Pairing.final_number)
    ).all()
    return [_planned(row) for row in rows]


def _planned(pairing: Pairing) -> FinalPairing:
    """A booked final pairing as the schedule lists it."""
    return FinalPairing(
        number=pairing.final_number,
        round=pairing.final_round,
        bot_a=pairing.bot_a_id,
        bot_b=pairing.bot_b_id,
        seed=pairing.seed,
    )


def final_game_id(number: int, index: int) -> str:
    """A final game's id for the fit: its pairing's place in the schedule and its index there, the
    same in every re-run (database ids are not)."""
    return f"{number:06d}-{index}"


def final_results(session: Session, *, ladder_id: int) -> list[GameResult]:
    """The results of the final's games on `ladder_id`, naming the bots str(id)."""
    rows = session.exec(
        select(
            Pairing.final_number,
            GameRecord.index,
            GameRecord.first_bot_id,
            GameRecord.second_bot_id,
            GameRecord.score,
        )
        .join(Pairing, col(Pairing.id) == GameRecord.pairing_id)
        .where(col(Pairing.ladder_id) == ladder_id, OF_THE_FINAL)
    ).all()
    return [
        GameResult(game_id=final_game_id(number, index), first=str(first), second=str(second), score=score)
        for number, index, first, second, score in rows
    ]


def final_ranking(session: Session, *, competition_id: int) -> tuple[FinalRanking, dict[int, str]] | None:
    """The final's ranking and its entrants' display names ("name vN (owner)"); None before its
    first game."""
    final, ladder = _final_and_ladder(session, competition_id)
    results = final_results(session, ladder_id=ladder.id) if final is not None else []
    if not results:
        return None
    return rank_final(results, final.entrants), entrant_names(session, bot_ids=final.entrants)


def entrant_names(session: Session, *, bot_ids: Sequence[int]) -> dict[int, str]:
    rows = session.exec(
        select(Bot.id, Bot.name, Bot.version, User.name)
        .join(User, col(User.id) == Bot.owner_id)
        .where(col(Bot.id).in_(list(bot_ids)))
    ).all()
    return {bot_id: f"{name} v{version} ({owner})" for bot_id, name, version, owner in rows}


def results(session: Session, *, competition: Competition, now: datetime) -> FinalResults:
    """The competition's results (FinalResults) as they stand `now`."""
    final, ladder = _final_and_ladder(session, competition.id)
    counts = dict(
        session.exec(
            select(Pairing.status, func.count())
            .where(col(Pairing.ladder_id) == ladder.id, OF_THE_FINAL)
            .group_by(Pairing.status)
        ).all()
    )
    rounds = session.exec(
        select(func.count(func.distinct(Pairing.final_round))).where(
            col(Pairing.ladder_id) == ladder.id, OF_THE_FINAL
        )
    ).one()
    progress = FinalProgress(
        booked=sum(counts.values()),
        done=counts.get(DONE, 0),
        failed=counts.get(FAILED, 0),
        in_flight=counts.get(QUEUED, 0) + counts.get(RUNNING, 0),
        rounds=rounds,
    )
    hidden = ranking_hidden(session, ladder=ladder)
    ranked = None if hidden else final_ranking(session, competition_id=competition.id)
    return FinalResults(
        competition_id=competition.id,
        phase=phase(competition, final, now),
        entrants=[] if final is None else final.entrants,
        seed=None if final is None else final.seed,
        started_at=None if final is None else final.started_at,
        finished_at=None if final is None else final.finished_at,
        progress=progress,
        provisional=final is None or final.finished_at is None,
        ranking_hidden=hidden,
        ranking=None if ranked is None else ranking_rows(*ranked),
    )


def final_replays(session: Session, blobs: BlobStore, *, competition_id: int) -> Iterator[tuple[str, bytes]]:
    """(file name, replay JSON) of every final game, in schedule order, read from `blobs` one at a
    time (for finals.export.write_replay_zip)."""
    _, ladder = _final_and_ladder(session, competition_id)
    rows = session.exec(
        select(Pairing, GameRecord.index, GameRecord.replay_sha256)
        .join(GameRecord, col(GameRecord.pairing_id) == Pairing.id)
        .where(col(Pairing.ladder_id) == ladder.id, OF_THE_FINAL)
        .order_by(Pairing.final_number, GameRecord.index)
    ).all()
    for pairing, index, sha256 in rows:
        yield replay_file_name(_planned(pairing), index), blobs.get(sha256)


def _final_and_ladder(session: Session, competition_id: int) -> tuple[CompetitionFinal | None, Ladder]:
    ladder = session.exec(select(Ladder).where(col(Ladder.competition_id) == competition_id)).one()
    return session.get(CompetitionFinal, competition_id), ladder
