"""Read models of the public views: bots, leaderboards, games, results per opponent, rating history.

The rating and game tables are written by the workers (results, refits); this module only reads
them, joined with bots and owners, into pydantic models that the API returns as they are. The
leaderboard reads the rows the database keeps ready for it (LeaderboardRow, LadderProgress).
Scores are for the first seat of a game: 1 win, 0.5 draw, 0 loss.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel
from sqlalchemy import case, func, literal, or_, union_all
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from arena_platform.db import plain_rows
from arena_platform.models import (
    Bot,
    GameRecord,
    LadderProgress,
    LeaderboardRow,
    Pairing,
    RatingHistory,
    SprtTest,
    User,
)
from arena_platform.sprt import Model, Verdict
from arena_platform.store.pairings import FAILED, QUEUED, RUNNING, unrated_pairings
from arena_platform.store.sprt_tests import result as sprt_result

GameResult = Literal["win", "draw", "loss"]  # from one bot's point of view


def as_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC time: SQLite hands back the stored UTC times without their zone."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]


class BotRef(BaseModel):
    id: int
    name: str
    version: int


class RatingView(BaseModel):
    """A bot's current rating: Elo, its 95% interval [low, high], and its record."""

    rating: float
    low: float
    high: float
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    updated_at: UtcDatetime


class BotSummary(BaseModel):
    id: int
    ladder_id: int
    ladder: str
    game: str
    name: str
    version: int
    author: str | None  # None for house bots
    kind: str  # house | network
    player: str
    status: str
    checkpoint: bool  # a training session's checkpoint, not an upload
    model_sha256: str | None
    created_at: UtcDatetime


class SprtView(BaseModel):
    """A new version's SPRT against its previous version (arena_platform.sprt.SprtResult's fields).

    `status` is the stored state: "running", the frozen verdict "H1" (better) or "H0" (not better),
    or "stopped" (a version was retired first, by its owner or a newer upload). `verdict` is the statistic's
    reading of the counts ("continue" while undecided). LLR and bounds in nats; elo0, elo1 and nelo
    in the model's unit; elo, elo_low and elo_high (95% interval) in logistic Elo, None before the
    first pair. `pentanomial`: pairs scoring 0, 0.5, 1, 1.5, 2 points for the new version.
    """

    new_bot: BotRef
    old_bot: BotRef
    status: Literal["running", "H1", "H0", "stopped"]
    started_at: UtcDatetime
    finished_at: UtcDatetime | None
    llr: float
    lower_bound: float
    upper_bound: float
    verdict: Verdict
    pentanomial: list[int]
    pairs: int
    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: Model
    elo: float | None
    elo_low: float | None
    elo_high: float | None
    nelo: float | None


class LadderPace(BaseModel):
    """How fast a ladder's pairings finish lately: `finished` pairings (done or failed) over the last
    `minutes` (store.bookings.PACE_WINDOW, or the ladder's age when younger, at least a minute);
    `per_minute` is their ratio (0: none finished)."""

    finished: int
    minutes: float
    per_minute: float


class BookedPairing(BaseModel):
    """One of a bot's pairings that a worker is playing (running) or is yet to take (queued)."""

    id: int
    opponent: BotRef
    status: Literal["queued", "running"]
    booked_at: UtcDatetime
    challenge_id: int | None = None  # a challenge's pairing; None: the ladder's own


class BotQueue(BaseModel):
    """What is booked for a bot and when it plays (store.bookings): its pairings being played and
    waiting, the first few listed (running first, then queued in queue order); `ahead`: how many
    pairings of its ladder a worker takes before its next queued one (None: none is queued);
    `starts_in_minutes`: when that one is expected to start, `ahead` over the ladder's pace (None:
    none is queued, or no pairing of the ladder finished lately)."""

    running: int
    queued: int
    booked: list[BookedPairing]
    ahead: int | None
    starts_in_minutes: float | None
    pace: LadderPace


class PairingProgress(BaseModel):
    """Pairings per state (the states of `arena_platform.store.pairings`)."""

    queued: int = 0
    running: int = 0
    done: int = 0
    failed: int = 0


class ChallengeSummary(BaseModel):
    """A challenge (store.challenges): `pairs` seat-swapped pairs of `bot` (its owner, `user`,
    asked) against `opponent` on one ladder, at its budget. `status` is "open" while a pairing is
    queued or running, then "finished" (at `finished_at`: its last pairing's end). The results are
    `bot`'s: games won, drawn and lost; `pentanomial`, the pairs by its points (0, 0.5, 1, 1.5, 2);
    `elo` its logistic Elo advantage over `opponent` from the pairs' mean score, with the 95%
    interval [elo_low, elo_high] (arena_platform.sprt.elo_estimate); None before the first pair."""

    id: int
    ladder_id: int
    ladder: str
    game: str
    simulations: int  # the ladder's budget, which the games are played at
    user: str
    bot: BotRef
    opponent: BotRef
    opponent_author: str | None  # None for a house bot
    pairs: int
    rated: bool  # its games enter the ladder's rating fit
    created_at: UtcDatetime
    status: Literal["open", "finished"]
    finished_at: UtcDatetime | None
    progress: PairingProgress  # its pairings by state
    games: int
    wins: int
    draws: int
    losses: int
    pentanomial: list[int]
    elo: float | None
    elo_low: float | None
    elo_high: float | None


class BotDetail(BotSummary):
    manifest: dict[str, Any]
    report: dict[str, Any]  # the validation report of the upload ({} for house bots)
    rating: RatingView | None  # None before its first refit, or while hidden
    rating_hidden: bool = False  # its competition hides its ranking until the final: no rating shown
    sprt: SprtView | None = None  # the test where this bot is the new version, if any
    queue: BotQueue
    challenges: list[ChallengeSummary] = []  # the latest ones it plays in, either side, newest first


class LeaderboardEntry(BaseModel):
    """One active bot of a ladder; unrated bots (no games yet) come last, without a rank."""

    rank: int | None
    bot_id: int
    name: str
    version: int
    author: str | None
    house: bool
    player: str
    checkpoint: bool  # a training session's checkpoint
    rating: float | None
    low: float | None
    high: float | None
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool


_ENTRY_KEYS = tuple(LeaderboardEntry.model_fields)  # in the order they serialise: the rank first
_ENTRY_COLUMNS = _ENTRY_KEYS[1:]  # what a LeaderboardRow gives: all but the rank
_LIVE_STATES = (QUEUED, RUNNING, FAILED)  # the pairing states counted per read (done is kept)


class GameSummary(BaseModel):
    id: int
    ladder_id: int
    pairing_id: int
    index: int  # 0: the pairing's first bot has the first seat; 1: seats swapped
    first: BotRef
    second: BotRef
    score: float  # the first seat's
    end_reason: str
    forfeit_seat: int | None
    steps: int
    replay_sha256: str
    created_at: UtcDatetime


class OpponentResult(BaseModel):
    opponent: BotRef
    author: str | None
    games: int
    wins: int
    draws: int
    losses: int
    score: float  # the bot's mean score against this opponent


class RatingPoint(BaseModel):
    rating: float
    low: float
    high: float
    games: int
    recorded_at: UtcDatetime


def leaderboard(session: Session, *, ladder_id: int) -> list[LeaderboardEntry]:
    """The active bots of the ladder, best rating first, ranked; unrated bots last, by age."""
    entries = leaderboard_entries(session, ladder_id=ladder_id)
    return [LeaderboardEntry.model_validate(entry) for entry in entries]


def leaderboard_entries(session: Session, *, ladder_id: int) -> list[dict[str, Any]]:
    """`leaderboard`'s entries as plain dicts of LeaderboardEntry's fields, in its order, ready to
    serialise: the API sends them without building a model per bot (a thousand cost ~5 ms a read).

    One scan of the ladder's LeaderboardRow rows, which the database keeps ready (models.py).
    """
    unrated = col(LeaderboardRow.rating).is_(None)
    rows = plain_rows(
        session,
        select(*(getattr(LeaderboardRow, name) for name in _ENTRY_COLUMNS))
        .where(col(LeaderboardRow.ladder_id) == ladder_id, col(LeaderboardRow.status) == "active")
        .order_by(unrated, col(LeaderboardRow.rating).desc(), col(LeaderboardRow.bot_id)),
    )
    ranks = itertools.count(1)
    entries = [dict(zip(_ENTRY_KEYS, (None, *row), strict=True)) for row in rows]
    for entry in entries:
        entry["rank"] = None if entry["rating"] is None else next(ranks)
        for flag in ("house", "checkpoint", "provisional"):  # SQLite: 0/1
            entry[flag] = bool(entry[flag])
    return entries


def pairing_progress(session: Session, *, ladder_id: int) -> PairingProgress:
    """How many pairings of the ladder are in each state: done from LadderProgress (kept by the
    database), the others (a few each) counted from the pairing table's (ladder_id, status) index."""
    live = (
        select(Pairing.status, func.count())
        .where(col(Pairing.ladder_id) == ladder_id, col(Pairing.status).in_(_LIVE_STATES))
        .group_by(Pairing.status)
    )
    done = select(literal("done"), LadderProgress.done).where(col(LadderProgress.ladder_id) == ladder_id)
    return PairingProgress.model_validate(dict(session.exec(union_all(live, done)).all()))


def list_games(
    session: Session,
    *,
    ladder_id: int | None = None,
    bot_id: int | None = None,
    result: GameResult | None = None,
    reason: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[GameSummary]:
    """Finished games, newest first, optionally of one ladder and one bot.

    `result` is from `bot_id`'s point of view ("draw" alone is allowed; "win" and "loss" need a
    bot, ValueError otherwise); `reason` keeps games whose end reason contains it (any case).
    """
    query = game_query()
    if ladder_id is not None:
        query = query.where(GameRecord.ladder_id == ladder_id)
    if bot_id is not None:
        query = query.where(or_(GameRecord.first_bot_id == bot_id, GameRecord.second_bot_id == bot_id))
    if result is not None:
        query = query.where(_result_condition(result, bot_id))
    if reason:
        query = query.where(col(GameRecord.end_reason).icontains(reason, autoescape=True))
    rows = session.exec(query.order_by(col(GameRecord.id).desc()).offset(offset).limit(limit))
    return [game_summary(*row) for row in rows]


def get_game(session: Session, *, game_id: int) -> GameSummary | None:
    """One game with its replay's blob key; None when unknown."""
    row = session.exec(game_query().where(GameRecord.id == game_id)).first()
    return None if row is None else game_summary(*row)


def results_by_opponent(session: Session, *, bot_id: int) -> list[OpponentResult]:
    """The bot's record against each opponent it met in rated games, most games first (an unrated
    challenge's games show on the challenge's page, not here)."""
    rated = col(GameRecord.pairing_id).not_in(unrated_pairings())
    as_first = select(GameRecord.second_bot_id.label("opponent_id"), GameRecord.score.label("points")).where(
        GameRecord.first_bot_id == bot_id, rated
    )
    as_second = select(
        GameRecord.first_bot_id.label("opponent_id"), (1 - GameRecord.score).label("points")
    ).where(GameRecord.second_bot_id == bot_id, rated)
    games = union_all(as_first, as_second).subquery()
    record = (
        select(
            games.c.opponent_id,
            func.count().label("games"),
            func.sum(case((games.c.points == 1, 1), else_=0)).label("wins"),
            func.sum(case((games.c.points == 0.5, 1), else_=0)).label("draws"),
            func.sum(games.c.points).label("points"),
        )
        .group_by(games.c.opponent_id)
        .subquery()
    )
    rows = session.exec(
        select(Bot, User.name, record.c.games, record.c.wins, record.c.draws, record.c.points)
        .join(record, record.c.opponent_id == Bot.id)
        .outerjoin(User, User.id == Bot.owner_id)
        .order_by(record.c.games.desc(), Bot.id)
    )
    return [
        OpponentResult(
            opponent=_ref(bot),
            author=author,
            games=games_played,
            wins=wins,
            draws=draws,
            losses=games_played - wins - draws,
            score=float(points) / games_played,
        )
        for bot, author, games_played, wins, draws, points in rows
    ]


def rating_history(session: Session, *, bot_id: int) -> list[RatingPoint]:
    """The bot's rating after each refit that rated it, oldest first."""
    rows = session.exec(
        select(RatingHistory)
        .where(RatingHistory.bot_id == bot_id)
        .order_by(RatingHistory.recorded_at, RatingHistory.id)
    )
    return [RatingPoint.model_validate(row, from_attributes=True) for row in rows]


def sprt_test(session: Session, *, bot_id: int) -> SprtView | None:
    """The test where `bot_id` is the new version; None when it has none."""
    new, old = aliased(Bot), aliased(Bot)
    row = session.exec(
        select(SprtTest, new, old)
        .join(new, new.id == SprtTest.new_bot_id)
        .join(old, old.id == SprtTest.old_bot_id)
        .where(SprtTest.new_bot_id == bot_id)
    ).first()
    if row is None:
        return None
    test, new_bot, old_bot = row
    return SprtView(
        new_bot=_ref(new_bot),
        old_bot=_ref(old_bot),
        status=test.status,
        started_at=test.started_at,
        finished_at=test.finished_at,
        **sprt_result(test).to_dict(),
    )


def game_query() -> Any:
    first, second = aliased(Bot), aliased(Bot)
    return (
        select(GameRecord, first, second)
        .join(first, first.id == GameRecord.first_bot_id)
        .join(second, second.id == GameRecord.second_bot_id)
    )


def game_summary(game: GameRecord, first: Bot, second: Bot) -> GameSummary:
    return GameSummary(
        id=game.id,
        ladder_id=game.ladder_id,
        pairing_id=game.pairing_id,
        index=game.index,
        first=_ref(first),
        second=_ref(second),
        score=game.score,
        end_reason=game.end_reason,
        forfeit_seat=game.forfeit_seat,
        steps=game.steps,
        replay_sha256=game.replay_sha256,
        created_at=game.created_at,
    )


def _result_condition(result: GameResult, bot_id: int | None) -> Any:
    if result == "draw":
        return GameRecord.score == 0.5
    if bot_id is None:
        raise ValueError(f"the result {result!r} is from one bot's point of view: name the bot")
    first_score = 1.0 if result == "win" else 0.0
    return or_(
        (GameRecord.first_bot_id == bot_id) & (GameRecord.score == first_score),
        (GameRecord.second_bot_id == bot_id) & (GameRecord.score == 1.0 - first_score),
    )


def _ref(bot: Bot) -> BotRef:
    return BotRef(id=bot.id, name=bot.name, version=bot.version)
