"""The explicit registry of games: names map to `Game` records, nothing is discovered."""

from __future__ import annotations

from arena_games import bobail, csb, pente, smash, spring2021
from arena_games.api import Game, GameError

GAMES: dict[str, Game] = {
    game.spec.name: game for game in (bobail.GAME, csb.GAME, pente.GAME, smash.GAME, spring2021.GAME)
}


class UnknownGame(GameError):
    """A game name that is not registered."""


def get_game(name: str) -> Game:
    """The registered game called `name`; UnknownGame names the ones that exist."""
    try:
        return GAMES[name]
    except KeyError:
        raise UnknownGame(f"unknown game {name!r} (known games: {', '.join(sorted(GAMES))})") from None
