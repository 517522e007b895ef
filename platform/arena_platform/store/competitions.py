"""Competitions (issue 26 items 1, 2): a game version, an entry window, per-user limits and a
final, with the entrants rated on the competition's own ladder by the open ladders' scheduling,
workers and rating fit (store.ladders.add_competition_ladder).

The rules:
- Only an organiser (`User.organiser`) creates a competition; its terms are checked here, each
  refusal a CompetitionRefused subclass naming the rule (its `status` and `code` are the API's).
- Its phase (`phase`, the one rule every view and the results read): upcoming before `opens_at`,
  open until `deadline`, closed from then until its final starts (store.finals), final while the
  final runs, finished once it has ended.
- An entry is an upload into the competition or a copy of one of the user's bots of the same
  game and version (a new bot on the competition's ladder on the same model blob). Each is an
  Entry row recorded when its request arrives (`begin_entry`), before any validation; THAT time
  decides: an entry started before the deadline is entered once its validation passes, however
  late that is; one started at or after it is refused (409 `deadline_passed`), and so is one
  started before `opens_at` (409 `not_open`).
- Per user and competition: at most `uploads_per_day` entries started in any 24 hours (uploads and
  copies alike; a refused model counts, as for the upload rate limit), counted when the entry
  begins; and at most `max_active_bots` bot names active on its ladder (a new version of an active
  bot is no new bot), counted when the bot is recorded. Both counts run after the user's row is
  locked (store.users.lock_user), so no two concurrent entries pass a cap together.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, Field
from sqlalchemy import func
from sqlmodel import Session, col, select

from arena_bots.manifest import Manifest
from arena_games.registry import GAMES
from arena_platform.models import Bot, Competition, CompetitionFinal, Entry, Ladder, User
from arena_platform.store import bots
from arena_platform.store.ladders import (
    add_competition_ladder,
    hidden_ranking_ladders,
    house_bots,
    ranking_hidden,
)
from arena_platform.store.leagues import league_sizes
from arena_platform.store.reads import BotRef, UtcDatetime, as_utc
from arena_platform.store.refusals import BotNotFound, NotYourBot, Refused, WrongGame, WrongVersion
from arena_platform.store.sprt_tests import SprtParameters
from arena_platform.store.users import insert_counted, lock_user

DAY = timedelta(days=1)  # the window of `uploads_per_day`
UPCOMING, OPEN, CLOSED, FINAL, FINISHED = "upcoming", "open", "closed", "final", "finished"
UPLOAD, COPY = "upload", "copy"

# The ranges of a competition's terms (inclusive).
SIMULATIONS = (1, 1600)  # the ladder's network evaluations per move
MAX_ACTIVE_BOTS = (1, 50)
UPLOADS_PER_DAY = (1, 500)
FINAL_PAIRS = (1, 100)  # seat-swapped pairs per pair of entrants
FINAL_SECONDS = (60, 30 * 86_400)
FINAL_CONFIDENCE = (0.6, 0.999)  # what "settled" asks of every adjacent pair of the ranking
MAX_LEAGUES = 8


class FinalTerms(BaseModel):
    """The final: `pairs` seat-swapped pairs per pair of entrants, or a time budget of `seconds`
    with a stopping rule (`stop`): "budget" plays until the time is spent, "settled" stops sooner
    once every adjacent pair of the ranking is ordered with probability `confidence` or more."""

    pairs: int | None = Field(default=None, description="pairs per pair of entrants (or give seconds)")
    seconds: int | None = Field(default=None, description="the final's time budget (or give pairs)")
    stop: Literal["budget", "settled"] | None = Field(default=None, description="with seconds")
    confidence: float | None = Field(default=None, description="with stop=settled, e.g. 0.95")

    def summary(self) -> str:
        """The final in words: "4 pairs per pair of entrants", "600 s, stopping rule budget",
        "3600 s, stopping rule settled at 0.95"."""
        if self.pairs is not None:
            return f"{self.pairs} pairs per pair of entrants"
        rule = f"{self.seconds} s, stopping rule {self.stop}"
        return rule if self.confidence is None else f"{rule} at {self.confidence}"


class League(BaseModel):
    name: str = Field(max_length=32)
    boss: str = Field(max_length=64, description="a house bot of the game, which a bot must beat to rise")


class CompetitionTerms(BaseModel):
    """What an organiser asks for (checked by `create_competition`)."""

    game: str = Field(max_length=32, description="the game, played at its current version")
    title: str = Field(max_length=120)
    description: str = Field(default="", max_length=4000)
    opens_at: AwareDatetime = Field(description="entries are taken from then (ISO 8601 with a zone)")
    deadline: AwareDatetime = Field(description="entries started from then are refused")
    max_active_bots: int = Field(default=3, description="bot names a user may have active in it")
    uploads_per_day: int = Field(default=5, description="entries a user may start in any 24 hours")
    simulations: int | None = Field(default=None, description="its ladder's budget; the server's default")
    final: FinalTerms = Field(default_factory=lambda: FinalTerms(pairs=4))
    leagues: list[League] | None = Field(
        default=None, description="the lowest first, each boss a different house bot (store.leagues)"
    )
    hidden_ranking: bool = Field(
        default=False,
        description="its ladder's ratings shown to nobody: the final's result is the first ranking",
    )


class CompetitionView(BaseModel):
    id: int
    title: str
    description: str
    organiser: str
    game: str
    game_version: int
    ladder_id: int  # its entrants' ratings: /api/v1/ladders/{ladder_id}/leaderboard
    ladder: str
    simulations: int
    opens_at: UtcDatetime
    deadline: UtcDatetime
    phase: str  # upcoming | open | closed | final | finished (`phase`), by the server's clock
    max_active_bots: int
    uploads_per_day: int
    final: FinalTerms
    leagues: list[League] | None
    hidden_ranking: bool  # the term: its ranking is hidden until its final is finished
    ranking_hidden: bool  # hidden now (the term, until the final is finished): its ladder's
    # leaderboard answers 403 `ranking_hidden` (check_ranking_shown)
    league_sizes: list[int] | None  # entrants in each league, lowest first: /competitions/{id}/leagues
    entrants: int  # users with a bot on its ladder
    bots: int  # entered bots, every version
    created_at: UtcDatetime


class CompetitionRefused(Refused):
    """A request about a competition that may not be granted (or BotNotFound, NotYourBot,
    WrongGame, WrongVersion)."""

    code = "invalid_competition"


class NotOrganiser(CompetitionRefused):
    status, code = 403, "not_organiser"


class UnknownGame(CompetitionRefused):
    code = "unknown_game"


class OutOfRange(CompetitionRefused):
    code = "out_of_range"


class BadSchedule(CompetitionRefused):
    code = "bad_schedule"


class BadFinal(CompetitionRefused):
    code = "invalid_final"


class BadLeagues(CompetitionRefused):
    code = "invalid_leagues"


class CompetitionNotFound(CompetitionRefused):
    status, code = 404, "not_found"


class NotOpen(CompetitionRefused):
    status, code = 409, "not_open"


class DeadlinePassed(CompetitionRefused):
    status, code = 409, "deadline_passed"


class DailyEntriesReached(CompetitionRefused):
    status, code = 429, "uploads_per_day_reached"


class ActiveBotsReached(CompetitionRefused):
    status, code = 409, "active_bots_reached"


class BudgetNotValidated(CompetitionRefused):
    code = "budget_not_validated"


class EntryNameTaken(CompetitionRefused):
    status, code = 409, "name_taken"  # or "name_reserved", as store.bots says


class RankingHidden(CompetitionRefused):
    status, code = 403, "ranking_hidden"


# --- Creation ------------------------------------------------------------------------------------


def create_competition(
    session: Session, *, organiser: User, terms: CompetitionTerms, default_simulations: int, now: datetime
) -> Competition:
    """The new competition with its ladder (and the game's house bots), once `terms` pass the
    checks; CompetitionRefused otherwise. Flushes; the caller commits."""
    if not organiser.organiser:
        raise NotOrganiser(f"{organiser.name} is not an organiser: only organisers create competitions")
    if terms.game not in GAMES:
        raise UnknownGame(f"unknown game {terms.game!r}; games: {', '.join(sorted(GAMES))}")
    simulations = default_simulations if terms.simulations is None else terms.simulations
    _in_range("simulations", simulations, SIMULATIONS)
    _in_range("max_active_bots", terms.max_active_bots, MAX_ACTIVE_BOTS)
    _in_range("uploads_per_day", terms.uploads_per_day, UPLOADS_PER_DAY)
    _check_schedule(terms, now)
    _check_final(terms.final)
    _check_leagues(terms.game, terms.leagues)
    final = terms.final
    competition = Competition(
        organiser_id=organiser.id,
        title=terms.title,
        description=terms.description,
        opens_at=terms.opens_at,
        deadline=terms.deadline,
        max_active_bots=terms.max_active_bots,
        uploads_per_day=terms.uploads_per_day,
        final_pairs=final.pairs,
        final_seconds=final.seconds,
        final_stop=final.stop,
        final_confidence=final.confidence,
        leagues=None if terms.leagues is None else [league.model_dump() for league in terms.leagues],
        hidden_ranking=terms.hidden_ranking,
    )
    session.add(competition)
    session.flush()
    add_competition_ladder(
        session,
        competition_id=competition.id,
        game=terms.game,
        simulations=simulations,
        seed=secrets.randbelow(2**31),  # unknown to entrants: they cannot prepare for its openings
    )
    return competition


def _in_range(name: str, value: float, bounds: tuple[float, float]) -> None:
    low, high = bounds
    if not low <= value <= high:
        raise OutOfRange(f"{name} must be {low} to {high}, not {value}")


def _check_schedule(terms: CompetitionTerms, now: datetime) -> None:
    if terms.deadline <= terms.opens_at:
        raise BadSchedule(
            f"the deadline ({terms.deadline.isoformat()}) must come after the opening "
            f"({terms.opens_at.isoformat()})"
        )
    if terms.deadline <= now:
        raise BadSchedule(f"the deadline ({terms.deadline.isoformat()}) has passed already")


def _check_final(final: FinalTerms) -> None:
    if (final.pairs is None) == (final.seconds is None):
        raise BadFinal("the final is either pairs per pair of entrants or a time budget in seconds: give one")
    if final.pairs is not None:
        if final.stop is not None or final.confidence is not None:
            raise BadFinal(
                "a final of fixed pairs has no stopping rule: give stop and confidence with seconds"
            )
        _in_range("final.pairs", final.pairs, FINAL_PAIRS)
        return
    _in_range("final.seconds", final.seconds, FINAL_SECONDS)
    if final.stop is None:
        raise BadFinal('a timed final needs its stopping rule: stop is "budget" or "settled"')
    if (final.stop == "settled") != (final.confidence is not None):
        raise BadFinal('confidence goes with stop="settled", and only with it')
    if final.confidence is not None:
        _in_range("final.confidence", final.confidence, FINAL_CONFIDENCE)


def _check_leagues(game: str, leagues: list[League] | None) -> None:
    if leagues is None:
        return
    if not 1 <= len(leagues) <= MAX_LEAGUES:
        raise BadLeagues(f"a competition has 1 to {MAX_LEAGUES} leagues, not {len(leagues)}")
    names = [league.name for league in leagues]
    if len(set(names)) != len(names) or not all(name.strip() for name in names):
        raise BadLeagues("each league needs a name of its own")
    if len({league.boss for league in leagues}) != len(leagues):
        raise BadLeagues("each league needs a boss of its own: a boss plays in its league only")
    bosses = house_bots(game)
    for league in leagues:
        if league.boss not in bosses:
            raise BadLeagues(
                f"league {league.name!r}: its boss is a house bot of {game}: {', '.join(bosses)}"
            )


# --- Reads ---------------------------------------------------------------------------------------


def phase(competition: Competition, final: CompetitionFinal | None, now: datetime) -> str:
    """The competition's phase `now` (the module's rules); `final` is its final's row, None before
    the final starts."""
    if final is not None:
        return FINAL if final.finished_at is None else FINISHED
    if now < as_utc(competition.opens_at):
        return UPCOMING
    return OPEN if now < as_utc(competition.deadline) else CLOSED


def get_competition(session: Session, *, competition_id: int, now: datetime) -> CompetitionView | None:
    found = _views(session, _query().where(col(Competition.id) == competition_id), now)
    return found[0] if found else None


def list_competitions(session: Session, *, now: datetime, limit: int, offset: int) -> list[CompetitionView]:
    """Newest first."""
    return _views(session, _query().order_by(col(Competition.id).desc()).limit(limit).offset(offset), now)


def in_listing_order(views: list[CompetitionView]) -> list[CompetitionView]:
    """`views` as the competitions page lists them: the open ones (the nearest deadline first),
    then the upcoming ones (the nearest opening first), then those past their deadline (closed,
    in their final or finished: the latest deadline first)."""
    rank = {OPEN: 0, UPCOMING: 1, CLOSED: 2, FINAL: 2, FINISHED: 2}

    def key(view: CompetitionView) -> tuple[int, float]:
        moment = view.opens_at if view.phase == UPCOMING else view.deadline
        return rank[view.phase], -moment.timestamp() if rank[view.phase] == 2 else moment.timestamp()

    return sorted(views, key=key)


def _query() -> Any:
    return (
        select(Competition, Ladder, User.name, CompetitionFinal)
        .join(Ladder, col(Ladder.competition_id) == Competition.id)
        .join(User, col(User.id) == Competition.organiser_id)
        .outerjoin(CompetitionFinal, col(CompetitionFinal.competition_id) == Competition.id)
    )


def _views(session: Session, statement: Any, now: datetime) -> list[CompetitionView]:
    rows: Sequence = session.exec(statement).all()
    ladder_ids = [row[1].id for row in rows]
    counts = {
        ladder_id: (entrants, entered)
        for ladder_id, entrants, entered in session.exec(
            select(Bot.ladder_id, func.count(func.distinct(Bot.owner_id)), func.count())
            .where(col(Bot.ladder_id).in_(ladder_ids), col(Bot.owner_id).is_not(None))
            .group_by(Bot.ladder_id)
        )
    }
    hidden = hidden_ranking_ladders(session, ladder_ids=ladder_ids)
    return [
        _view(
            competition,
            ladder,
            organiser,
            counts.get(ladder.id, (0, 0)),
            league_sizes(session, competition=competition, ladder=ladder),
            phase=phase(competition, final, now),
            ranking_hidden=ladder.id in hidden,
        )
        for competition, ladder, organiser, final in rows
    ]


def _view(
    competition: Competition,
    ladder: Ladder,
    organiser: str,
    counts: tuple[int, int],
    sizes: list[int] | None,
    *,
    phase: str,
    ranking_hidden: bool,
) -> CompetitionView:
    return CompetitionView(
        id=competition.id,
        title=competition.title,
        description=competition.description,
        organiser=organiser,
        game=ladder.game,
        game_version=ladder.game_version,
        ladder_id=ladder.id,
        ladder=ladder.name,
        simulations=ladder.simulations,
        opens_at=competition.opens_at,
        deadline=competition.deadline,
        phase=phase,
        max_active_bots=competition.max_active_bots,
        uploads_per_day=competition.uploads_per_day,
        final=FinalTerms(
            pairs=competition.final_pairs,
            seconds=competition.final_seconds,
            stop=competition.final_stop,
            confidence=competition.final_confidence,
        ),
        leagues=competition.leagues,
        hidden_ranking=competition.hidden_ranking,
        ranking_hidden=ranking_hidden,
        league_sizes=sizes,
        entrants=counts[0],
        bots=counts[1],
        created_at=competition.created_at,
    )


class EntrantView(BaseModel):
    """One bot entered into a competition (each version is an entry of its own)."""

    bot: BotRef
    author: str
    status: str  # the bot's: active, or retired by a newer version or its owner
    kind: str  # upload | copy
    entered_at: UtcDatetime  # when its entry's request arrived (the time the deadline was read by)


def list_entrants(session: Session, *, competition_id: int) -> list[EntrantView]:
    """The competition's entered bots, in the order their entries started."""
    rows = session.exec(
        select(Entry, Bot, User.name)
        .join(Bot, col(Bot.id) == Entry.bot_id)
        .join(User, col(User.id) == Entry.user_id)
        .where(col(Entry.competition_id) == competition_id)
        .order_by(col(Entry.started_at), col(Entry.id))
    ).all()
    return [
        EntrantView(
            bot=BotRef(id=bot.id, name=bot.name, version=bot.version),
            author=author,
            status=bot.status,
            kind=entry.kind,
            entered_at=entry.started_at,
        )
        for entry, bot, author in rows
    ]


def check_ranking_shown(session: Session, *, ladder: Ladder) -> None:
    """RankingHidden when `ladder` is the ladder of a competition whose ranking is hidden: its
    ratings and ranks, and its final's provisional ranking, are then shown to nobody until its final
    is finished (store.ladders.hidden_ranking_ladders: the final's result is the first ranking). Its
    games stay public, as every game is."""
    if ranking_hidden(session, ladder=ladder):
        competition = session.get(Competition, ladder.competition_id)
        raise RankingHidden(
            f"the ranking of competition {competition.id} ({competition.title}) is hidden until the "
            f"final is finished"
        )


# --- Entries -------------------------------------------------------------------------------------


def competition_ladder(session: Session, *, competition_id: int) -> tuple[Competition, Ladder]:
    """The competition and its ladder; CompetitionNotFound when there is none."""
    found = session.exec(
        select(Competition, Ladder)
        .join(Ladder, col(Ladder.competition_id) == Competition.id)
        .where(col(Competition.id) == competition_id)
    ).first()
    if found is None:
        raise CompetitionNotFound(f"competition {competition_id} does not exist")
    return found[0], found[1]


def begin_entry(
    session: Session, *, competition: Competition, user_id: int, kind: str, now: datetime
) -> Entry:
    """The user's new entry, started `now` (the request's arrival), once the competition is open
    then and the user has an entry of the day left; the refusal otherwise (the caller rolls back:
    a refused entry counts nothing). Flushes; the caller commits."""
    if now < as_utc(competition.opens_at):
        raise NotOpen(f"the competition opens at {as_utc(competition.opens_at).isoformat()}")
    if now >= as_utc(competition.deadline):
        raise DeadlinePassed(
            f"the competition's deadline passed at {as_utc(competition.deadline).isoformat()}: "
            f"it takes no new entries or versions"
        )
    entry = Entry(competition_id=competition.id, user_id=user_id, kind=kind, started_at=now)
    insert_counted(session, entry)
    started = session.exec(
        select(Entry.started_at)
        .where(
            col(Entry.competition_id) == competition.id,
            col(Entry.user_id) == user_id,
            col(Entry.started_at) > now - DAY,
        )
        .order_by(Entry.started_at)
    ).all()
    limit = competition.uploads_per_day
    if len(started) > limit:  # the newest is this one
        wait = max(1, int((as_utc(started[len(started) - 1 - limit]) + DAY - now).total_seconds()) + 1)
        refusal = DailyEntriesReached(
            f"this competition takes {limit} entries per user per day; try again in {wait} s"
        )
        refusal.retry_after = wait
        raise refusal
    return entry


def enter_bot(
    session: Session,
    *,
    entry: Entry,
    competition: Competition,
    ladder: Ladder,
    manifest: Manifest,
    report: dict,
    model_sha256: str,
    sprt: SprtParameters,
) -> Bot:
    """The entry's bot on the competition's ladder (store.bots.create_network_bot: a name the user
    has there makes its next version), once the user's active bots allow it; the refusal
    otherwise. No clock here: the entry's start decided the deadline. Flushes; the caller commits."""
    lock_user(session, user_id=entry.user_id)
    mine = (col(Bot.ladder_id) == ladder.id, col(Bot.owner_id) == entry.user_id, col(Bot.status) == "active")
    names = session.exec(select(func.count(func.distinct(func.lower(Bot.name)))).where(*mine)).one()
    renewed = session.exec(
        select(Bot.id).where(*mine, func.lower(Bot.name) == func.lower(manifest.name))
    ).first()
    if renewed is None and names >= competition.max_active_bots:
        raise ActiveBotsReached(
            f"you have {names} bots active in this competition, the most it allows: enter a new "
            f"version of one of them, or retire one first"
        )
    try:
        bot = bots.create_network_bot(
            session,
            ladder_id=ladder.id,
            owner_id=entry.user_id,
            manifest=manifest,
            report=report,
            model_sha256=model_sha256,
            sprt=sprt,
        )
    except bots.NameTaken as error:  # or NameReserved
        refusal = EntryNameTaken(f"{error}: choose another name")
        refusal.code = error.code
        raise refusal from None
    entry.bot_id = bot.id
    session.add(entry)
    session.flush()
    return bot


def copy_bot(
    session: Session,
    *,
    entry: Entry,
    competition: Competition,
    ladder: Ladder,
    bot_id: int,
    sprt: SprtParameters,
) -> Bot:
    """The user's bot `bot_id` entered as the entry's bot: a new bot on the competition's ladder on
    the same model blob, manifest and validation report; the refusal when the bot is not theirs,
    plays another game or version, or was validated at a smaller budget than the competition's."""
    source = session.get(Bot, bot_id)
    if source is None:
        raise BotNotFound(f"bot {bot_id} does not exist")
    if source.owner_id != entry.user_id or source.model_sha256 is None:
        raise NotYourBot(f"bot {bot_id} is not one of your bots: enter one of yours")
    home = session.get(Ladder, source.ladder_id)
    if home.game != ladder.game:
        raise WrongGame(f"bot {bot_id} plays {home.game}; this competition plays {ladder.game}")
    if home.game_version != ladder.game_version:
        raise WrongVersion(
            f"bot {bot_id} plays {home.game} v{home.game_version}; "
            f"this competition plays v{ladder.game_version}"
        )
    if home.simulations < ladder.simulations:
        raise BudgetNotValidated(
            f"bot {bot_id} was validated at {home.simulations} simulations per move and this competition "
            f"plays {ladder.simulations}: upload it into the competition instead"
        )
    return enter_bot(
        session,
        entry=entry,
        competition=competition,
        ladder=ladder,
        manifest=Manifest(**source.manifest),
        report=source.report,
        model_sha256=source.model_sha256,
        sprt=sprt,
    )


def forget_entry(session: Session, *, entry_id: int) -> None:
    """Uncounts an entry the platform failed (not the uploader): it costs the user nothing. The
    caller commits."""
    entry = session.get(Entry, entry_id)
    if entry is not None and entry.bot_id is None:
        session.delete(entry)
        session.flush()
