"""A competition's leagues (issue 26 item 4), CodinGame style: `Competition.leagues` lists them from
the lowest up, each with a boss (a house bot of the competition's ladder).

The rules:
- Membership is derived, never stored: an entrant starts in the lowest league (0) and stands in
  the league of its last promotion (LeaguePromotion rows). A promotion belongs to the bot's name
  on the ladder, so a new version keeps its league (as on CodinGame: a resubmission stays where
  its author is) and plays its placement games there. A boss stands in its own league; a house
  bot that is no boss plays no league (it plays nothing on the competition's ladder).
- A bot plays only within its league: the ladder's scheduling reads `ladder_leagues`
  (store.scheduling) and pairs bots of one league only (arena_platform.scheduling); its
  introduction is to its league's boss and members.
- Promotion: at each refit of the competition's ladder (store.ratings.refit_ladder, in the
  refit's transaction, under its ladder lock), a bot of league i below the top is promoted to
  league i + 1 when it has played PLACEMENT_GAMES games in league i (games of pairings booked
  after it entered it) and P(its rating > its boss's) >= PROMOTION_LEVEL from the refit's fit
  (arena_platform.ratings.stronger_probabilities). One league per refit: the next one needs its
  own placement games. The top league's boss is a yardstick there, no gate: nobody rises above it.
- The ratings are the ladder's one fit over every game, so a promoted bot carries its rating up,
  and the leagues' scales are joined through the bots that rose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import func, or_
from sqlmodel import Session, col, select

from arena_platform.models import Bot, Competition, GameRecord, Ladder, LeaguePromotion, Pairing, Rating, User
from arena_platform.ratings import PairCounts, RatingTable, stronger_probabilities
from arena_platform.store.ladders import ranking_hidden
from arena_platform.store.reads import UtcDatetime

PROMOTION_LEVEL = 0.95  # P(bot > its league's boss) that promotes it: the one-sided 95% of the fit
PLACEMENT_GAMES = 20  # games a bot plays in its league before it may leave it (10 pairings)


@dataclass(frozen=True)
class Standing:
    """Where an active bot of a competition's ladder plays."""

    bot_id: int
    league: int  # index into Competition.leagues, 0 the lowest
    since: datetime | None  # when it (its name) entered that league; None: from the start
    boss: bool


def ladder_leagues(session: Session, *, ladder: Ladder) -> dict[int, int] | None:
    """bot id -> league, for the active bots of `ladder` that play in a league; None when the
    ladder has no leagues (an open ladder, or a competition without them): every bot plays."""
    competition = _competition_with_leagues(session, ladder)
    if competition is None:
        return None
    return {standing.bot_id: standing.league for standing in standings(session, competition, ladder)}


def standings(session: Session, competition: Competition, ladder: Ladder) -> list[Standing]:
    """The standing of every active bot of the competition's ladder that plays in a league (the
    module's rules), by bot id."""
    boss_league = {league["boss"]: index for index, league in enumerate(competition.leagues)}
    promoted = {
        name: (league, since)
        for name, league, since in session.exec(
            select(func.lower(Bot.name), func.max(LeaguePromotion.to_league), func.max(LeaguePromotion.at))
            .join(Bot, col(Bot.id) == LeaguePromotion.bot_id)
            .where(col(LeaguePromotion.competition_id) == competition.id)
            .group_by(func.lower(Bot.name))
        )
    }
    active = session.exec(
        select(Bot).where(col(Bot.ladder_id) == ladder.id, col(Bot.status) == "active").order_by(Bot.id)
    )
    placed = []
    for bot in active:
        if bot.kind == "house":
            if bot.name in boss_league:
                placed.append(Standing(bot.id, boss_league[bot.name], None, boss=True))
            continue
        league, since = promoted.get(bot.name.lower(), (0, None))
        placed.append(Standing(bot.id, league, since, boss=False))
    return placed


def promote(
    session: Session, *, ladder: Ladder, pairs: PairCounts, table: RatingTable, now: datetime
) -> list[LeaguePromotion]:
    """The promotions the refit's fit (`table`, of `pairs`; bots named str(id)) earns on `ladder`
    (the module's rules), added to the session; the caller commits with the refit."""
    competition = _competition_with_leagues(session, ladder)
    if competition is None:
        return []
    placed = standings(session, competition, ladder)
    bosses = {standing.league: str(standing.bot_id) for standing in placed if standing.boss}
    rated = {bot: rating for bot, (rating, _) in table.estimates().items()}  # Elo
    promotions = []
    for league in range(len(competition.leagues) - 1):  # the top league has no one to rise to
        boss = bosses.get(league)
        if boss not in rated:
            continue
        contenders = [
            standing
            for standing in placed
            if standing.league == league
            and not standing.boss
            and rated.get(str(standing.bot_id), -math.inf) > rated[boss]  # before the probability's fit
        ]
        games = {standing.bot_id: _placement_games(session, ladder.id, standing) for standing in contenders}
        placed_enough = [standing for standing in contenders if games[standing.bot_id] >= PLACEMENT_GAMES]
        probabilities = stronger_probabilities(
            pairs, table, [str(standing.bot_id) for standing in placed_enough], boss
        )
        for standing in placed_enough:
            probability = probabilities[str(standing.bot_id)]
            if probability is None or probability < PROMOTION_LEVEL:
                continue
            promotion = LeaguePromotion(
                competition_id=competition.id,
                bot_id=standing.bot_id,
                from_league=league,
                to_league=league + 1,
                at=now,
                evidence={
                    "probability": probability,
                    "rating": rated[str(standing.bot_id)],
                    "boss_rating": rated[boss],
                    "games": games[standing.bot_id],
                },
            )
            session.add(promotion)
            promotions.append(promotion)
    session.flush()
    return promotions


def _competition_with_leagues(session: Session, ladder: Ladder) -> Competition | None:
    if ladder.competition_id is None:
        return None
    competition = session.get(Competition, ladder.competition_id)
    return competition if competition.leagues else None


def _placement_games(session: Session, ladder_id: int, standing: Standing) -> int:
    """Games the bot has played in its league: those of the ladder's pairings booked after it
    entered it."""
    statement = (
        select(func.count())
        .select_from(GameRecord)
        .join(Pairing, col(Pairing.id) == GameRecord.pairing_id)
        .where(
            col(GameRecord.ladder_id) == ladder_id,
            col(Pairing.challenge_id).is_(None),  # the ladder's own games, no challenge's
            or_(
                col(GameRecord.first_bot_id) == standing.bot_id,
                col(GameRecord.second_bot_id) == standing.bot_id,
            ),
        )
    )
    if standing.since is not None:
        statement = statement.where(col(Pairing.created_at) > standing.since)
    return session.exec(statement).one()


# --- Reads ---------------------------------------------------------------------------------------


class LeagueBot(BaseModel):
    """A bot of a league, with its rating on the competition's ladder (Elo; None: unrated)."""

    bot_id: int
    name: str
    author: str | None  # None for a house bot
    version: int
    rating: float | None
    interval_low: float | None
    interval_high: float | None
    games: int  # on the competition's ladder, every league


class PromotionView(BaseModel):
    bot_id: int
    name: str
    from_league: str
    to_league: str
    at: UtcDatetime
    # P(bot > the boss it beat) when promoted, and the two ratings; None while the competition hides
    # its ranking (store.ladders.hidden_ranking_ladders)
    probability: float | None
    rating: float | None
    boss_rating: float | None
    games: int  # its placement games in the league it left


class LeagueView(BaseModel):
    name: str
    boss: LeagueBot
    members: list[LeagueBot]  # best rated first, unrated last
    promotions: list[PromotionView]  # out of this league (its boss beaten), newest first


class LeaguesView(BaseModel):
    competition_id: int
    ranking_hidden: bool  # the competition hides its ranking: no rating, interval or probability here
    promotion_level: float  # PROMOTION_LEVEL
    placement_games: int  # PLACEMENT_GAMES
    leagues: list[LeagueView]  # the lowest first


def league_sizes(session: Session, *, competition: Competition, ladder: Ladder) -> list[int] | None:
    """The number of entrants (active bots, not the boss) in each league, lowest first; None
    without leagues."""
    if not competition.leagues:
        return None
    sizes = [0] * len(competition.leagues)
    for standing in standings(session, competition, ladder):
        sizes[standing.league] += not standing.boss
    return sizes


def leagues_view(session: Session, *, competition: Competition, ladder: Ladder) -> LeaguesView | None:
    """Every league with its boss, members and promotions; None when the competition has none."""
    if not competition.leagues:
        return None
    placed = standings(session, competition, ladder)
    hidden = ranking_hidden(session, ladder=ladder)
    rows = _league_bots(session, ladder.id, [standing.bot_id for standing in placed], hidden)
    names = [league["name"] for league in competition.leagues]
    promotions = _promotions(session, competition.id, names, hidden)
    views = []
    for index, name in enumerate(names):
        here = [standing for standing in placed if standing.league == index]
        members = [rows[standing.bot_id] for standing in here if not standing.boss]
        members.sort(key=lambda bot: (bot.rating is None, -(bot.rating or 0.0), bot.bot_id))
        boss = next(rows[standing.bot_id] for standing in here if standing.boss)
        mine = [promotion for promotion in promotions if promotion.from_league == name]
        views.append(LeagueView(name=name, boss=boss, members=members, promotions=mine))
    return LeaguesView(
        competition_id=competition.id,
        ranking_hidden=hidden,
        promotion_level=PROMOTION_LEVEL,
        placement_games=PLACEMENT_GAMES,
        leagues=views,
    )


def _league_bots(
    session: Session, ladder_id: int, bot_ids: Sequence[int], hidden: bool
) -> dict[int, LeagueBot]:
    """The bots as the leagues show them; unrated (no rating, no games) when `hidden`."""
    rows = session.exec(
        select(Bot, User.name, Rating)
        .outerjoin(User, col(User.id) == Bot.owner_id)
        .outerjoin(Rating, (col(Rating.bot_id) == Bot.id) & (col(Rating.ladder_id) == ladder_id))
        .where(col(Bot.id).in_(list(bot_ids)))
    )
    if hidden:
        rows = [(bot, author, None) for bot, author, _ in rows]
    return {
        bot.id: LeagueBot(
            bot_id=bot.id,
            name=bot.name,
            author=author,
            version=bot.version,
            rating=None if rating is None else rating.rating,
            interval_low=None if rating is None else rating.low,
            interval_high=None if rating is None else rating.high,
            games=0 if rating is None else rating.games,
        )
        for bot, author, rating in rows
    }


def _promotions(session: Session, competition_id: int, names: list[str], hidden: bool) -> list[PromotionView]:
    """The competition's promotions, newest first; without their evidence's numbers when `hidden`
    (its games count stays)."""
    rows = session.exec(
        select(LeaguePromotion, Bot.name)
        .join(Bot, col(Bot.id) == LeaguePromotion.bot_id)
        .where(col(LeaguePromotion.competition_id) == competition_id)
        .order_by(col(LeaguePromotion.at).desc(), col(LeaguePromotion.id).desc())
    )
    return [
        PromotionView(
            bot_id=promotion.bot_id,
            name=name,
            from_league=names[promotion.from_league],
            to_league=names[promotion.to_league],
            at=promotion.at,
            probability=None if hidden else promotion.evidence["probability"],
            rating=None if hidden else promotion.evidence["rating"],
            boss_rating=None if hidden else promotion.evidence["boss_rating"],
            games=promotion.evidence["games"],
        )
        for promotion, name in rows
    ]
