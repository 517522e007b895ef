"""Checks the compiled kernels' differential tests (tests/games/test_*_kernels.py) share: random
positions by a game's reference rules, and a kernel's playouts against the reference's, draw for
draw."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from arena_games.api import Game

Playouts = Callable[[Sequence[Any], Sequence[np.random.Generator]], np.ndarray]  # (states, rngs) -> (n, 2)


def add_random_games(
    game: Game, first_state: Callable[[int], Any], count: int, states: list, actions: list[int]
) -> None:
    """Appends to `states` every running position of uniformly random games (`Game.random_action`,
    one generator seeded 2024 for all) from first_state(0), first_state(1), ..., and to `actions`
    the action played from each (a one-head, one-mover game's), until `states` holds `count`."""
    rng = np.random.default_rng(2024)
    seed = 0
    while len(states) < count:
        state = first_state(seed)
        seed += 1
        while players := game.to_move(state):
            (action,) = game.random_action(state, players[0], rng)
            states.append(state)
            actions.append(action)
            state = game.step(state, [(action,)])


def twin_generators(seeds: Sequence[int]) -> list[np.random.Generator]:
    """Row i's generator, seeded seeds[i]: rows of one seed share one generator."""
    by_seed = {seed: np.random.default_rng(seed) for seed in seeds}
    return [by_seed[seed] for seed in seeds]


def assert_playouts_draw_for_draw(
    compiled: Playouts, reference: Playouts, starts: Sequence[Any], seeds: Sequence[int]
) -> None:
    """`compiled` returns what `reference` returns from `starts`, each given `twin_generators(seeds)`,
    and leaves every generator in the state the reference leaves its twin."""
    reference_rngs, compiled_rngs = twin_generators(seeds), twin_generators(seeds)
    expected = reference(starts, reference_rngs)
    assert np.array_equal(compiled(starts, compiled_rngs), expected)
    for reference_rng, compiled_rng in zip(reference_rngs, compiled_rngs, strict=True):
        assert compiled_rng.bit_generator.state == reference_rng.bit_generator.state


def assert_refuses_a_shared_generator(compiled: Playouts, start: Any) -> None:
    """`compiled` refuses two states drawing from one generator (kernels that draw in blocks)."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="distinct generator"):
        compiled([start] * 2, [rng, rng])
