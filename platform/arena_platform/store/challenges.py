"""Challenges: a user's `pairs` seat-swapped pairs between their bot and another active bot of its
ladder (issue 26 item 5), booked as pairings that carry the challenge's id and played by the
workers like the ladder's own (the same claims, leases, give-backs and sweeps), at its budget.

The rules:
- The challenger's bot is theirs and active; the opponent is any other active bot (a house bot, a
  bot of anyone) of the same ladder: the same game, at the same version, at the same budget; and
  the ladder's game version is the one the workers play. 1 to `Limits.max_pairs` pairs.
- Per user: at most `Limits.open` challenges open (a pairing queued or running) and
  `Limits.per_day` started in any 24 hours. Both are counted in the transaction that adds the
  challenge, after the user's row is locked (store.users.insert_counted), so no two concurrent
  requests pass a cap together.
- A challenge on a competition's ladder is unrated: the competition rates its entrants by its own
  schedule only (an entrant could otherwise buy rating against chosen opponents).
- Unrated by default: an unrated challenge's games enter neither the ladder's pair counts (its
  rating fit, store.results) nor its SPRTs. A rated one's enter the pair counts as the ladder's
  own games do. Either way its pairings are outside the ladder's schedule (store.scheduling: they
  are no pair's debt paid or owed, and take no bot's in-flight room), and not urgent: they wait
  their turn in the ladder's queue. The ladder's progress and pace count them: the workers play them.
- A pairing that fails (store.pairings: out of attempts played alone) is not booked again, as the
  ladder's would be: the challenge finishes with the pairs it played, and says how many failed.
- The results are read from its pairings and games at each read (the database is the truth):
  W/D/L of the challenger's bot, the pentanomial of its pairs and the Elo difference with its 95%
  interval (arena_platform.sprt.elo_estimate, the SPRTs' figure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from arena_games.registry import GAMES
from arena_platform.models import Bot, Challenge, GameRecord, Ladder, Pairing, User, utc_now
from arena_platform.settings import Settings
from arena_platform.sprt import elo_estimate, pentanomial_from_points
from arena_platform.store.pairings import QUEUED, RUNNING, create_pairings
from arena_platform.store.reads import (
    BotRef,
    ChallengeSummary,
    GameSummary,
    PairingProgress,
    as_utc,
    game_query,
    game_summary,
)
from arena_platform.store.refusals import BotNotFound, NotYourBot, Refused, WrongGame, WrongVersion
from arena_platform.store.sprt_tests import pair_points
from arena_platform.store.users import insert_counted

DAY = timedelta(days=1)  # the window of `Limits.per_day`
OPEN, FINISHED = "open", "finished"
IN_FLIGHT = (QUEUED, RUNNING)


@dataclass(frozen=True)
class Limits:
    max_pairs: int  # pairs one challenge may ask for
    open: int  # a user's open challenges
    per_day: int  # challenges a user may start in 24 hours

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            max_pairs=settings.challenge_max_pairs,
            open=settings.challenges_open_per_user,
            per_day=settings.challenges_per_day,
        )


class ChallengeRefused(Refused):
    """A challenge that may not be made (or BotNotFound, NotYourBot, WrongGame, WrongVersion)."""

    code = "invalid_challenge"


class PairsOutOfRange(ChallengeRefused):
    code = "pairs_out_of_range"


class SameBot(ChallengeRefused):
    code = "same_bot"


class InactiveBot(ChallengeRefused):
    status, code = 409, "bot_retired"


class WrongBudget(ChallengeRefused):
    code = "wrong_ladder"


class RatedInCompetition(ChallengeRefused):
    status, code = 409, "competition_ladder"


class GameVersionRetired(ChallengeRefused):
    status, code = 409, "game_version_retired"


class TooManyOpen(ChallengeRefused):
    status, code = 429, "too_many_open_challenges"


class DailyLimitReached(ChallengeRefused):
    status, code = 429, "rate_limited"


def create_challenge(
    session: Session,
    *,
    user_id: int,
    bot_id: int,
    opponent_id: int,
    pairs: int,
    rated: bool,
    limits: Limits,
    redelivery_seconds: int,
    now: datetime | None = None,
) -> tuple[Challenge, list[Pairing]]:
    """The new challenge and its queued pairings (the challenger's bot is bot_a of each), once the
    module's rules allow it; a Refused naming the rule otherwise, and the caller
    rolls back: a refusal counts against no limit. Flushes; the caller commits, then sends the
    pairings' task messages (those it could not send, the sweep sends)."""
    if not 1 <= pairs <= limits.max_pairs:
        raise PairsOutOfRange(f"a challenge plays 1 to {limits.max_pairs} pairs, not {pairs}")
    bot, opponent = (_bot(session, bot_id=key) for key in (bot_id, opponent_id))
    if bot.owner_id != user_id:
        raise NotYourBot(f"bot {bot.id} belongs to someone else: challenge with one of your own bots")
    if bot.id == opponent.id:
        raise SameBot(f"bot {bot.id} cannot challenge itself: name another bot as the opponent")
    for side in (bot, opponent):
        if side.status != "active":
            raise InactiveBot(f"bot {side.id} is {side.status}: it plays no more games")
    ladder = _common_ladder(session, bot, opponent)
    if rated and ladder.competition_id is not None:
        raise RatedInCompetition(
            f"ladder {ladder.name} is competition {ladder.competition_id}'s: a challenge there is unrated"
        )
    challenge = Challenge(
        user_id=user_id,
        ladder_id=ladder.id,
        bot_id=bot.id,
        opponent_id=opponent.id,
        pairs=pairs,
        rated=rated,
        created_at=now or utc_now(),
    )
    insert_counted(session, challenge)
    _check_limits(session, challenge, limits)
    booked = create_pairings(
        session,
        ladder=ladder,
        pairs=[(bot.id, opponent.id)] * pairs,
        redelivery_seconds=redelivery_seconds,
        challenge_id=challenge.id,
    )
    return challenge, booked


def _bot(session: Session, *, bot_id: int) -> Bot:
    bot = session.get(Bot, bot_id)
    if bot is None:
        raise BotNotFound(f"bot {bot_id} does not exist")
    return bot


def _common_ladder(session: Session, bot: Bot, opponent: Bot) -> Ladder:
    """The ladder both bots play on, if the workers play its game version; else the refusal."""
    ladder, theirs = session.get(Ladder, bot.ladder_id), session.get(Ladder, opponent.ladder_id)
    if ladder.game != theirs.game:
        raise WrongGame(f"bot {bot.id} plays {ladder.game} and bot {opponent.id} plays {theirs.game}")
    if ladder.game_version != theirs.game_version:
        raise WrongVersion(
            f"bot {bot.id} plays {ladder.game} v{ladder.game_version} and bot {opponent.id} "
            f"v{theirs.game_version}: a challenge is played at one version"
        )
    if ladder.id != theirs.id:
        raise WrongBudget(
            f"bot {bot.id} is on ladder {ladder.name} and bot {opponent.id} on {theirs.name}: "
            f"a challenge is played on one ladder, at its budget"
        )
    served = GAMES.get(ladder.game)
    if served is None or served.spec.version != ladder.game_version:
        raise GameVersionRetired(f"{ladder.game} v{ladder.game_version} is no longer played")
    return ladder


def _check_limits(session: Session, challenge: Challenge, limits: Limits) -> None:
    """The user's caps, counted with `challenge` added and their row locked (see the module's doc)."""
    mine = col(Challenge.user_id) == challenge.user_id
    in_flight = col(Pairing.status).in_(IN_FLIGHT)
    open_ones = session.exec(
        select(func.count(func.distinct(Pairing.challenge_id)))
        .join(Challenge, col(Challenge.id) == Pairing.challenge_id)
        .where(mine, in_flight)
    ).one()
    if open_ones >= limits.open:
        raise TooManyOpen(
            f"you have {open_ones} challenges open, the most allowed: start another once one finishes"
        )
    since = as_utc(challenge.created_at) - DAY
    started = session.exec(
        select(Challenge.created_at)
        .where(mine, col(Challenge.created_at) > since)
        .order_by(Challenge.created_at)
    ).all()
    if len(started) > limits.per_day:  # the newest is this one
        frees_at = as_utc(started[len(started) - 1 - limits.per_day]) + DAY
        wait = max(1, int((frees_at - as_utc(challenge.created_at)).total_seconds()) + 1)
        refusal = DailyLimitReached(
            f"at most {limits.per_day} challenges per day are allowed; try again in {wait} s"
        )
        refusal.retry_after = wait
        raise refusal


def counts_in_ratings(session: Session, *, pairing: Pairing) -> bool:
    """Whether the pairing's games enter its ladder's pair counts: the ladder's own pairings' and a
    rated challenge's do."""
    if pairing.challenge_id is None:
        return True
    return session.get(Challenge, pairing.challenge_id).rated


# --- Reads ---------------------------------------------------------------------------------------


def get_challenge(session: Session, *, challenge_id: int) -> ChallengeSummary | None:
    found = summaries(session, challenges=session.exec(_query().where(Challenge.id == challenge_id)).all())
    return found[0] if found else None


def challenge_games(session: Session, *, challenge_id: int) -> list[GameSummary]:
    """The challenge's games in the order they were booked: by pairing, then index."""
    statement = (
        game_query()
        .join(Pairing, col(Pairing.id) == GameRecord.pairing_id)
        .where(col(Pairing.challenge_id) == challenge_id)
        .order_by(GameRecord.pairing_id, GameRecord.index)
    )
    return [game_summary(*row) for row in session.exec(statement)]


def challenges_of_bot(session: Session, *, bot_id: int, limit: int) -> list[ChallengeSummary]:
    """The latest `limit` challenges `bot_id` plays in, as the challenger's bot or the opponent,
    newest first."""
    statement = (
        _query()
        .where(or_(col(Challenge.bot_id) == bot_id, col(Challenge.opponent_id) == bot_id))
        .order_by(col(Challenge.id).desc())
        .limit(limit)
    )
    return summaries(session, challenges=session.exec(statement).all())


def _query() -> Any:
    bot, opponent, author = aliased(Bot), aliased(Bot), aliased(User)
    return (
        select(Challenge, Ladder, User.name, bot, opponent, author.name)
        .join(Ladder, col(Ladder.id) == Challenge.ladder_id)
        .join(User, col(User.id) == Challenge.user_id)
        .join(bot, bot.id == Challenge.bot_id)
        .join(opponent, opponent.id == Challenge.opponent_id)
        .outerjoin(author, author.id == opponent.owner_id)
    )


def summaries(session: Session, *, challenges: Sequence) -> list[ChallengeSummary]:
    """ChallengeSummary of each row of `_query`, in order: two reads for all of them (their
    pairings by state, and their games' outcomes)."""
    ids = [row[0].id for row in challenges]
    progress: dict[int, dict[str, int]] = defaultdict(dict)
    last_end: dict[int, datetime] = {}
    states = session.exec(
        select(Pairing.challenge_id, Pairing.status, func.count(), func.max(Pairing.finished_at))
        .where(col(Pairing.challenge_id).in_(ids))
        .group_by(Pairing.challenge_id, Pairing.status)
    )
    for challenge_id, status, number, finished in states:
        progress[challenge_id][status] = number
        if finished is not None:
            last_end[challenge_id] = max(last_end.get(challenge_id, as_utc(finished)), as_utc(finished))
    games: dict[int, dict[int, list]] = defaultdict(
        lambda: defaultdict(list)
    )  # challenge -> pairing -> games
    outcomes = session.exec(
        select(
            Pairing.challenge_id,
            GameRecord.pairing_id,
            GameRecord.index,
            GameRecord.first_bot_id,
            GameRecord.score,
        )
        .join(Pairing, col(Pairing.id) == GameRecord.pairing_id)
        .where(col(Pairing.challenge_id).in_(ids))
    )
    for row in outcomes:
        games[row.challenge_id][row.pairing_id].append(row)
    return [
        _summary(*row, PairingProgress(**progress[row[0].id]), last_end.get(row[0].id), games[row[0].id])
        for row in challenges
    ]


def _summary(
    challenge: Challenge,
    ladder: Ladder,
    user: str,
    bot: Bot,
    opponent: Bot,
    author: str | None,
    progress: PairingProgress,
    last_end: datetime | None,
    games: dict[int, list],
) -> ChallengeSummary:
    """The challenge's view from its pairings' states and its games by pairing (index, first_bot_id,
    score: the first seat's)."""
    played = [game for pairing in games.values() for game in pairing]
    points = [game.score if game.first_bot_id == bot.id else 1.0 - game.score for game in played]
    pentanomial = pentanomial_from_points(
        pair for pairing in games.values() for pair in pair_points(pairing, new_bot_id=bot.id)
    )
    estimate = elo_estimate(pentanomial)
    elo, low, high, _ = estimate if estimate is not None else (None, None, None, None)
    finished = progress.queued + progress.running == 0
    return ChallengeSummary(
        id=challenge.id,
        ladder_id=ladder.id,
        ladder=ladder.name,
        game=ladder.game,
        simulations=ladder.simulations,
        user=user,
        bot=BotRef(id=bot.id, name=bot.name, version=bot.version),
        opponent=BotRef(id=opponent.id, name=opponent.name, version=opponent.version),
        opponent_author=author,
        pairs=challenge.pairs,
        rated=challenge.rated,
        created_at=challenge.created_at,
        status=FINISHED if finished else OPEN,
        finished_at=last_end if finished else None,
        progress=progress,
        games=len(points),
        wins=points.count(1.0),
        draws=points.count(0.5),
        losses=points.count(0.0),
        pentanomial=list(pentanomial),
        elo=elo,
        elo_low=low,
        elo_high=high,
    )
