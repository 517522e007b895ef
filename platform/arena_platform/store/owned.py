"""A user's own bots in one read, for GET /me/bots and the "My bots" page: each bot (a name on a
ladder) with its versions and their state: active or retired, rating, SPRT, pairings in flight;
and the games people played against them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import groupby

from pydantic import BaseModel
from sqlalchemy import or_
from sqlmodel import Session, col, select

from arena_platform.models import Bot, HumanGame, Ladder, Pairing, Rating
from arena_platform.store.ladders import hidden_ranking_ladders
from arena_platform.store.pairings import QUEUED, RUNNING
from arena_platform.store.reads import RatingView, SprtView, UtcDatetime, sprt_test


class OwnedVersion(BaseModel):
    """One version of a bot of yours and its state."""

    id: int
    version: int
    status: str  # active | retired
    player: str
    checkpoint: bool  # a training session's checkpoint, not an upload
    created_at: UtcDatetime
    rating: RatingView | None  # None before its first refit, or while hidden
    rating_hidden: bool  # its competition hides its ranking until the final: no rating shown
    sprt: SprtView | None  # its test against the previous version (a later version has one)
    running: int  # its pairings being played
    queued: int  # its pairings waiting for a worker


class OwnedBot(BaseModel):
    """A bot of yours: a name on a ladder, with its versions newest first."""

    name: str
    ladder_id: int
    ladder: str
    game: str
    versions: list[OwnedVersion]


def owned_bots(session: Session, *, owner_id: int) -> list[OwnedBot]:
    """The user's bots by ladder, then name; each with its versions, newest first."""
    rows = session.exec(
        select(Bot, Ladder, Rating)
        .join(Ladder, Ladder.id == Bot.ladder_id)
        .outerjoin(Rating, (Rating.bot_id == Bot.id) & (Rating.ladder_id == Bot.ladder_id))
        .where(col(Bot.owner_id) == owner_id)
        .order_by(col(Bot.ladder_id), col(Bot.name), col(Bot.version).desc())
    ).all()
    in_flight = _pairings_in_flight(session, [bot.id for bot, _, _ in rows])
    hidden = hidden_ranking_ladders(session, ladder_ids={bot.ladder_id for bot, _, _ in rows})
    return [
        OwnedBot(
            name=name,
            ladder_id=ladder.id,
            ladder=ladder.name,
            game=ladder.game,
            versions=[
                _version(session, bot, rating, in_flight, hidden=ladder.id in hidden)
                for bot, _, rating in versions
            ],
        )
        for (name, ladder), versions in _by_bot(rows)
    ]


def human_games_against(session: Session, *, owner_id: int, limit: int) -> Sequence[tuple[HumanGame, Bot]]:
    """The latest games people played against the user's bots, newest first, with the bot played."""
    statement = (
        select(HumanGame, Bot)
        .join(Bot, Bot.id == HumanGame.bot_id)
        .where(col(Bot.owner_id) == owner_id)
        .order_by(col(HumanGame.created_at).desc(), col(HumanGame.id).desc())
        .limit(limit)
    )
    return session.exec(statement).all()


def _by_bot(rows: Sequence[tuple[Bot, Ladder, Rating | None]]):
    """The rows (sorted by ladder and name) grouped by bot: ((name, ladder), its rows)."""
    return ((key, list(group)) for key, group in groupby(rows, key=lambda row: (row[0].name, row[1])))


def _pairings_in_flight(session: Session, bot_ids: list[int]) -> Counter[tuple[int, str]]:
    """(bot id, running | queued) -> how many of the bots' pairings are in that state."""
    statement = select(Pairing.bot_a_id, Pairing.bot_b_id, Pairing.status).where(
        col(Pairing.status).in_((RUNNING, QUEUED)),
        or_(col(Pairing.bot_a_id).in_(bot_ids), col(Pairing.bot_b_id).in_(bot_ids)),
    )
    counts: Counter[tuple[int, str]] = Counter()
    theirs = set(bot_ids)
    for bot_a, bot_b, status in session.exec(statement):
        counts.update((bot, status) for bot in (bot_a, bot_b) if bot in theirs)
    return counts


def _version(
    session: Session, bot: Bot, rating: Rating | None, in_flight: Counter[tuple[int, str]], *, hidden: bool
) -> OwnedVersion:
    return OwnedVersion(
        id=bot.id,
        version=bot.version,
        status=bot.status,
        player=bot.player,
        checkpoint=bot.checkpoint,
        created_at=bot.created_at,
        rating=None if rating is None or hidden else RatingView.model_validate(rating, from_attributes=True),
        rating_hidden=hidden,
        sprt=sprt_test(session, bot_id=bot.id) if bot.version > 1 else None,  # a first version has none
        running=in_flight[bot.id, RUNNING],
        queued=in_flight[bot.id, QUEUED],
    )
