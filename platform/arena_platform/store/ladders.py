"""Ladders (one game version with one compute budget) and the house bots that anchor them.

An open ladder (`competition_id` None) is the one ladder of its game version at its budget: the
ladder uploads, training checkpoints and the demo join (`ensure_ladder`, `find_ladder`). A
competition's ladder (`add_competition_ladder`) is found through its competition only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from arena_games.registry import get_game
from arena_platform.models import Bot, Competition, CompetitionFinal, Ladder

# The house bots of a ladder, by game: they need no upload and anchor the rating scale (their mean
# rating is pinned). A house bot's name is its player kind (`arena_bots.loading.house_player`):
# `uct` searches with the ladder's budget, with random rollouts as its values; tree search plays
# one action head only, so a game of several heads (CSB's angle and thrust per pod) gets its own
# heuristic house bot instead; Smash, Spring 2021 and Pente add their heuristic bots to UCT. Other games
# get DEFAULT_HOUSE_BOTS.
DEFAULT_HOUSE_BOTS = ("random", "uct")
HOUSE_BOTS: dict[str, tuple[str, ...]] = {
    "csb": ("random", "racer"),
    "smash": ("random", "uct", "chain", "lookahead"),
    "pente": ("random", "uct", "threats"),
    "spring2021": ("random", "uct", "gardener"),
}


_OPEN = col(Ladder.competition_id).is_(None)  # an open ladder, no competition's


def house_bots(game: str) -> tuple[str, ...]:
    """The house bots (names, which are their player kinds) of every ladder of `game`."""
    return HOUSE_BOTS.get(game, DEFAULT_HOUSE_BOTS)


def ladder_name(game: str, version: int, simulations: int) -> str:
    return f"{game}-v{version}-{simulations}"


def ensure_ladder(session: Session, *, game: str, simulations: int, seed: int = 0) -> Ladder:
    """The open ladder of the current version of `game` at `simulations` per move, with its house bots.

    Creates the ladder when missing, and adds the game's house bots it lacks (a ladder made before
    a house bot joined its game gets it too); flushes them, so they have ids; the caller commits.
    """
    version = get_game(game).spec.version
    ladder = session.exec(
        select(Ladder).where(
            Ladder.game == game, Ladder.game_version == version, Ladder.simulations == simulations, _OPEN
        )
    ).first()
    if ladder is None:
        return _new_ladder(
            session, Ladder(game=game, game_version=version, simulations=simulations, seed=seed)
        )
    _add_missing_house_bots(session, ladder)
    return ladder


def add_competition_ladder(
    session: Session, *, competition_id: int, game: str, simulations: int, seed: int
) -> Ladder:
    """The new ladder of competition `competition_id` on the current version of `game`, with the
    game's house bots: they anchor its rating scale as on the open ladders (0 is their mean), so a
    competition's ratings read like the open ladder's. Flushes; the caller commits."""
    version = get_game(game).spec.version
    ladder = Ladder(
        game=game, game_version=version, simulations=simulations, seed=seed, competition_id=competition_id
    )
    return _new_ladder(session, ladder)


def _new_ladder(session: Session, ladder: Ladder) -> Ladder:
    """`ladder` named (`ladder_name`, and its competition's id after it), added and flushed, with
    its house bots."""
    ladder.name = ladder_name(ladder.game, ladder.game_version, ladder.simulations)
    if ladder.competition_id is not None:
        ladder.name += f"-c{ladder.competition_id}"
    session.add(ladder)
    session.flush()
    _add_missing_house_bots(session, ladder)
    return ladder


def _add_missing_house_bots(session: Session, ladder: Ladder) -> None:
    """Add to `ladder` each house bot of its game that no bot on it is named after. A name an
    upload took before its house bot existed stays the uploader's: that ladder goes without it.
    Each insert is its own savepoint, so a concurrent transaction that added the same house bot
    first (the unique (ladder, name, version) guard) costs nothing but that insert."""
    taken = set(session.exec(select(Bot.name).where(Bot.ladder_id == ladder.id)))
    for name in house_bots(ladder.game):
        if name not in taken:
            with contextlib.suppress(IntegrityError), session.begin_nested():
                session.add(Bot(ladder_id=ladder.id, name=name, kind="house", player=name))


def list_ladders(session: Session) -> list[Ladder]:
    """Every ladder: the open ones first, then the competitions' (each by id)."""
    return list(session.exec(select(Ladder).order_by(col(Ladder.competition_id).is_not(None), Ladder.id)))


def hidden_ranking_ladders(session: Session, *, ladder_ids: Iterable[int]) -> set[int]:
    """Those of `ladder_ids` whose competition hides its ranking until its final is finished (the
    final's result is the first ranking): their bots' ratings are shown to nobody until then
    (store.competitions.check_ranking_shown)."""
    return set(
        session.exec(
            select(Ladder.id)
            .join(Competition, col(Competition.id) == Ladder.competition_id)
            .outerjoin(CompetitionFinal, col(CompetitionFinal.competition_id) == Competition.id)
            .where(
                col(Ladder.id).in_(list(ladder_ids)),
                col(Competition.hidden_ranking),
                col(CompetitionFinal.finished_at).is_(None),
            )
        )
    )


def ranking_hidden(session: Session, *, ladder: Ladder) -> bool:
    """Whether `ladder`'s ratings are hidden now (`hidden_ranking_ladders` for one ladder); an open
    ladder's never are, which costs no query."""
    return ladder.competition_id is not None and bool(hidden_ranking_ladders(session, ladder_ids=[ladder.id]))


def get_ladder(session: Session, *, ladder_id: int) -> Ladder | None:
    return session.get(Ladder, ladder_id)


def find_ladder(session: Session, *, game: str, simulations: int | None = None) -> Ladder | None:
    """The open ladder of the current version of `game` (the one at `simulations` when given)."""
    version = get_game(game).spec.version
    query = select(Ladder).where(Ladder.game == game, Ladder.game_version == version, _OPEN)
    if simulations is not None:
        query = query.where(Ladder.simulations == simulations)
    return session.exec(query.order_by(Ladder.id)).first()
