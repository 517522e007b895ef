"""Bots: uploaded network bots and their versions, listing and retirement.

A bot's name is unique on its ladder regardless of case (`Bob-bot` and `bob-bot` are one name,
kept as first spelled) and belongs to whoever uploaded it first (house bots belong to nobody, so
their names are never free). A training session's bot name is its owner's on its game's ladders
from the session's start, before any checkpoint holds it, until the session finishes or is
cancelled (store.training). Uploading the same name again makes a new version. The newest
active version before it (the previous one) stays active and the new version starts an SPRT
against it (store.sprt_tests): the previous version retires when the test reaches its verdict.
Other active versions retire at once (a running test of one of them stops without a verdict). So
a ladder holds at most two active versions per name, and two only while a test runs.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from arena_bots.manifest import Manifest
from arena_platform.models import Bot, Ladder, Rating, TrainingSession, User
from arena_platform.store.bookings import bot_queue
from arena_platform.store.challenges import challenges_of_bot
from arena_platform.store.ladders import house_bots, ranking_hidden
from arena_platform.store.reads import BotDetail, BotRef, BotSummary, RatingView, sprt_test
from arena_platform.store.sprt_tests import (
    DEFAULT_PARAMETERS,
    RETIRED,
    SprtParameters,
    start_test,
    stop_tests_of,
)

LISTED_CHALLENGES = 20  # a bot's latest challenges its detail lists


class NameTaken(ValueError):
    """The bot name belongs to another owner (or a house bot) on this ladder, or is spelled otherwise."""

    code = "name_taken"  # the API's error code


class NameReserved(NameTaken):
    """The bot name is another user's training session's, for its checkpoints."""

    code = "name_reserved"


# The training session statuses that hold their bot name (store.training: every one but finished and
# cancelled, which make no more checkpoints).
RESERVING_STATUSES = ("queued", "running", "paused", "failed")


class NotOwner(PermissionError):
    """Only a bot's owner may change it."""


def create_network_bot(
    session: Session,
    *,
    ladder_id: int,
    owner_id: int,
    manifest: Manifest,
    report: dict,
    model_sha256: str,
    sprt: SprtParameters = DEFAULT_PARAMETERS,
    checkpoint: bool = False,
) -> Bot:
    """Record an accepted upload as the newest version of `manifest.name` on the ladder.

    `report` is the JSON-safe validation report; `model_sha256` the blob key of the (sanitized)
    model. A test with `sprt`'s parameters starts against the newest active version, which stays
    active; other active versions are retired (see the module's docstring). A training `checkpoint`
    plays no SPRT (its ladder rating measures it, store.training): the previous version stays
    active until the next checkpoint. Raises NameTaken (NameReserved) as check_name does.
    Flushes; the caller commits (two uploads racing for one version fail the unique (ladder,
    lower(name), version) guard).
    """
    ladder = session.get(Ladder, ladder_id)
    versions = check_name(
        session, game=ladder.game, ladder_id=ladder_id, name=manifest.name, owner_id=owner_id
    )
    active = [version for version in versions if version.status == "active"]
    previous, older = (active[0], active[1:]) if active else (None, [])
    for version in older:
        version.status = RETIRED
        session.add(version)
    stop_tests_of(session, bot_ids=[version.id for version in older])
    bot = Bot(
        ladder_id=ladder_id,
        owner_id=owner_id,
        name=manifest.name,
        version=versions[0].version + 1 if versions else 1,
        kind="network",
        player=manifest.player,
        model_sha256=model_sha256,
        manifest=manifest.to_dict(),
        report=report,
        checkpoint=checkpoint,
    )
    session.add(bot)
    session.flush()
    if previous is not None and not checkpoint:
        start_test(session, new_bot=bot, old_bot=previous, parameters=sprt)
    return bot


def check_name(session: Session, *, game: str, ladder_id: int | None, name: str, owner_id: int) -> list[Bot]:
    """The versions of the bot `name` on the ladder (newest first; none on a ladder not made yet,
    `ladder_id` None) when `owner_id` may make the next one. NameTaken when a version belongs to
    someone else or spells the name otherwise; NameReserved when a training session of another
    user holds it on `game`'s ladders. Names compare as the database's lower() folds them (SQLite
    folds ASCII letters only), as the unique index does."""
    same_name = func.lower(col(Bot.name)) == func.lower(name)
    versions = list(
        session.exec(
            select(Bot).where(Bot.ladder_id == ladder_id, same_name).order_by(col(Bot.version).desc())
        )
    )
    house = ladder_id is None and name.lower() in house_bots(game)  # a ladder is made with them
    if house or any(bot.owner_id != owner_id for bot in versions):
        raise NameTaken(f"the bot name {name!r} is taken on this ladder by someone else")
    if versions and versions[0].name != name:
        raise NameTaken(
            f"your bot is spelled {versions[0].name!r} on this ladder (names ignore case): "
            f"use that spelling for its next version, or another name"
        )
    reserving = select(TrainingSession.id).where(
        col(TrainingSession.game) == game,
        func.lower(col(TrainingSession.bot_name)) == func.lower(name),
        col(TrainingSession.owner_id) != owner_id,
        col(TrainingSession.status).in_(RESERVING_STATUSES),
    )
    if session.exec(reserving).first() is not None:
        raise NameReserved(
            f"the bot name {name!r} is reserved for the checkpoints of another user's training session"
        )
    return versions


def get_bot(session: Session, *, bot_id: int) -> Bot | None:
    return session.get(Bot, bot_id)


def list_bots(
    session: Session,
    *,
    ladder_id: int | None = None,
    owner: str | None = None,
    status: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[BotSummary]:
    """Bots, newest first, optionally of one ladder, one owner (by user name) and one status."""
    query = _bot_query()
    if ladder_id is not None:
        query = query.where(Bot.ladder_id == ladder_id)
    if owner is not None:
        query = query.where(User.name == owner)
    if status is not None:
        query = query.where(Bot.status == status)
    rows = session.exec(query.order_by(col(Bot.id).desc()).offset(offset).limit(limit))
    return [_bot_summary(*row) for row in rows]


def describe_bot(session: Session, *, bot_id: int) -> BotDetail | None:
    """The bot with its manifest, validation report, current rating, SPRT (where it is a new
    version), what is booked for it and its latest challenges; None when unknown."""
    row = session.exec(
        _bot_query()
        .add_columns(Rating)
        .outerjoin(Rating, (Rating.bot_id == Bot.id) & (Rating.ladder_id == Bot.ladder_id))
        .where(Bot.id == bot_id)
    ).first()
    if row is None:
        return None
    bot, ladder, author, rating = row
    hidden = ranking_hidden(session, ladder=ladder)
    return BotDetail(
        **_bot_summary(bot, ladder, author).model_dump(),
        manifest=bot.manifest,
        report=bot.report,
        rating=None if rating is None or hidden else RatingView.model_validate(rating, from_attributes=True),
        rating_hidden=hidden,
        sprt=sprt_test(session, bot_id=bot_id),
        queue=bot_queue(session, bot=bot, ladder=ladder),
        challenges=challenges_of_bot(session, bot_id=bot_id, limit=LISTED_CHALLENGES),
    )


def newest_version(session: Session, *, ladder_id: int, name: str) -> BotRef | None:
    """The newest version of the bot `name` on the ladder (what replaced its older versions)."""
    bot = session.exec(
        select(Bot).where(Bot.ladder_id == ladder_id, Bot.name == name).order_by(col(Bot.version).desc())
    ).first()
    return None if bot is None else BotRef(id=bot.id, name=bot.name, version=bot.version)


def retire_bot(session: Session, *, bot: Bot, user_id: int) -> Bot:
    """Retire `bot` (it plays no more pairings; a running SPRT of it stops without a verdict, and
    the other version stays as it is); idempotent. Raises NotOwner. The caller commits."""
    if bot.owner_id is None or bot.owner_id != user_id:
        raise NotOwner(f"bot {bot.id} belongs to someone else")
    bot.status = RETIRED
    session.add(bot)
    stop_tests_of(session, bot_ids=[bot.id])
    session.flush()
    return bot


def _bot_query() -> Any:
    return (
        select(Bot, Ladder, User.name)
        .join(Ladder, Ladder.id == Bot.ladder_id)
        .outerjoin(User, User.id == Bot.owner_id)
    )


def _bot_summary(bot: Bot, ladder: Ladder, author: str | None) -> BotSummary:
    return BotSummary(
        id=bot.id,
        ladder_id=bot.ladder_id,
        ladder=ladder.name,
        game=ladder.game,
        name=bot.name,
        version=bot.version,
        author=author,
        kind=bot.kind,
        player=bot.player,
        status=bot.status,
        checkpoint=bot.checkpoint,
        model_sha256=bot.model_sha256,
        created_at=bot.created_at,
    )


def find_active_bot_by_model(session: Session, *, ladder_id: int, model_sha256: str) -> Bot | None:
    """The active bot of the ladder that plays the model with this blob key, if any."""
    return session.exec(
        select(Bot).where(
            Bot.ladder_id == ladder_id, Bot.model_sha256 == model_sha256, Bot.status == "active"
        )
    ).first()
