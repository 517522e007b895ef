"""A new version's SPRT against its previous version: started on upload, counted as pairings are
recorded, booked first by scheduling (arena_platform.sprt is the statistics; SprtTest the row).

The unit of evidence is a pair: games 2k and 2k+1 of a pairing, one opening with seats swapped. A
pair's points are the new version's (0 to 2 by 0.5). The verdict is frozen once a bound is crossed,
and the old version is retired then; until then both versions play and keep their ratings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, or_
from sqlmodel import Session, col, select

from arena_platform.models import Bot, SprtTest, utc_now
from arena_platform.settings import Settings
from arena_platform.sprt import Model, SprtResult, pentanomial_from_points, sprt, wald_bounds

RUNNING, STOPPED = "running", "stopped"  # and the verdicts "H1" (better), "H0" (not better)
RETIRED = "retired"
COUNT_COLUMNS = ("pairs_0", "pairs_05", "pairs_1", "pairs_15", "pairs_2")  # by the new version's points


@dataclass(frozen=True)
class SprtParameters:
    """The hypotheses (in the model's unit: nElo for "normalized") and error rates of a new test."""

    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: Model = "normalized"

    @classmethod
    def from_settings(cls, settings: Settings) -> SprtParameters:
        return cls(
            elo0=settings.sprt_elo0,
            elo1=settings.sprt_elo1,
            alpha=settings.sprt_alpha,
            beta=settings.sprt_beta,
        )


DEFAULT_PARAMETERS = SprtParameters.from_settings(Settings())


def start_test(session: Session, *, new_bot: Bot, old_bot: Bot, parameters: SprtParameters) -> SprtTest:
    """A running test of `new_bot` against `old_bot` (both flushed), its parameters frozen. Flushes."""
    lower, upper = wald_bounds(parameters.alpha, parameters.beta)
    test = SprtTest(
        ladder_id=new_bot.ladder_id,
        new_bot_id=new_bot.id,
        old_bot_id=old_bot.id,
        lower=lower,
        upper=upper,
        elo0=parameters.elo0,
        elo1=parameters.elo1,
        alpha=parameters.alpha,
        beta=parameters.beta,
        model=parameters.model,
    )
    session.add(test)
    session.flush()
    return test


def stop_tests_of(session: Session, *, bot_ids: Sequence[int]) -> None:
    """Ends without a verdict the running tests of the bots `bot_ids` (as either version): they
    were retired, by their owner or by a newer upload. Flushes."""
    tests = session.exec(
        select(SprtTest).where(
            col(SprtTest.status) == RUNNING,
            or_(col(SprtTest.old_bot_id).in_(bot_ids), col(SprtTest.new_bot_id).in_(bot_ids)),
        )
    )
    for test in tests:
        test.status, test.finished_at = STOPPED, utc_now()
        session.add(test)
    session.flush()


def counts(test: SprtTest) -> tuple[int, int, int, int, int]:
    """The test's pentanomial: pairs by the new version's points 0, 0.5, 1, 1.5, 2."""
    return tuple(getattr(test, column) for column in COUNT_COLUMNS)


def result(test: SprtTest) -> SprtResult:
    """The test's statistics from its counts and frozen parameters."""
    return sprt(
        counts(test), elo0=test.elo0, elo1=test.elo1, alpha=test.alpha, beta=test.beta, model=test.model
    )


def pair_points(games: Sequence, *, new_bot_id: int) -> list[float]:
    """The new version's points in each seat-swapped pair (games 2k and 2k+1, by index) of `games`
    (PlayedGame or GameRecord: index, first_bot_id, score for the first seat). A trailing odd game
    (no partner) counts nothing."""
    by_index = sorted(games, key=lambda game: game.index)
    points = [game.score if game.first_bot_id == new_bot_id else 1.0 - game.score for game in by_index]
    return [points[k] + points[k + 1] for k in range(0, len(points) - 1, 2)]


def add_pairing(session: Session, *, bot_a_id: int, bot_b_id: int, games: Sequence) -> SprtTest | None:
    """Adds a recorded pairing's pairs to the running test between its two bots, if any; on a verdict
    freezes it and retires the old version. Part of the caller's transaction (no commit): the test
    row is locked first, so concurrent recordings of one test add up."""
    test = session.exec(
        select(SprtTest)
        .where(
            col(SprtTest.status) == RUNNING,
            or_(
                and_(col(SprtTest.new_bot_id) == bot_a_id, col(SprtTest.old_bot_id) == bot_b_id),
                and_(col(SprtTest.new_bot_id) == bot_b_id, col(SprtTest.old_bot_id) == bot_a_id),
            ),
        )
        .with_for_update()
    ).first()
    if test is None:
        return None
    added = pentanomial_from_points(pair_points(games, new_bot_id=test.new_bot_id))
    for column, number in zip(COUNT_COLUMNS, added, strict=True):
        setattr(test, column, getattr(test, column) + number)
    state = result(test)
    test.llr = state.llr
    if state.verdict != "continue":
        test.status, test.finished_at = state.verdict, utc_now()
        old = session.get(Bot, test.old_bot_id)
        old.status = RETIRED
        session.add(old)
    session.add(test)
    return test


def running_tests(session: Session, *, ladder_id: int) -> list[SprtTest]:
    """The ladder's running tests whose two versions are both active, oldest first."""
    new, old = Bot.__table__.alias("new"), Bot.__table__.alias("old")
    statement = (
        select(SprtTest)
        .join(new, new.c.id == SprtTest.new_bot_id)
        .join(old, old.c.id == SprtTest.old_bot_id)
        .where(
            col(SprtTest.ladder_id) == ladder_id,
            col(SprtTest.status) == RUNNING,
            new.c.status == "active",
            old.c.status == "active",
        )
        .order_by(SprtTest.id)
    )
    return list(session.exec(statement))


def find_test(session: Session, *, new_bot_id: int) -> SprtTest | None:
    """The test where `new_bot_id` is the new version, if any."""
    return session.exec(select(SprtTest).where(col(SprtTest.new_bot_id) == new_bot_id)).first()
