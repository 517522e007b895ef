"""Seat-swapped pairs of games from seeded openings (fishtest's paired games, ARCHITECTURE §4).

The one definition of which games two bots play, shared by the server's runner and `arena play`,
so a local result is the ladder's: game k starts from the opening of seed `seed + k // 2`, and the
seats are swapped when k is odd (the first bot has the first seat in game 0).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from arena_bots.match import MatchSetup, Player
from arena_games.api import Game

Key = TypeVar("Key", bound=Hashable)


def paired_setups(
    game: Game,
    pair: tuple[Key, Key],
    players: Mapping[Key, Player],
    *,
    seed: int,
    count: int,
    meta: Callable[[int, tuple[Key, Key]], Mapping[str, Any]] = lambda index, seats: {},
) -> list[MatchSetup]:
    """The `count` games between the bots `pair` (keys of `players`), game k as the module says.

    `meta(k, seats)` is game k's replay metadata, `seats` the pair's keys in seat order.
    """
    setups = []
    for index in range(count):
        game_seed = seed + index // 2
        seats = pair[::-1] if index % 2 else pair
        setups.append(
            MatchSetup(
                players=tuple(players[key] for key in seats),
                seed=game_seed,
                opening=game.opening(game_seed, None),
                meta=meta(index, seats),
            )
        )
    return setups


def first_seat_score(returns: Sequence[float]) -> float:
    """1 if the first seat's return beats the second's, 0 if it is beaten, 0.5 for a draw."""
    first, second = returns
    return 1.0 if first > second else 0.0 if first < second else 0.5
