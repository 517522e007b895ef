"""Checks the compiled kernels' differential tests (tests/games/test_*_kernels.py) share: random
positions by a game's reference rules, and a kernel's playouts against the reference's, draw for
draw; and the kernel games' (tests/games/test_*_kernel_game.py): playouts, refusals and what is
shown or stored, against the reference game's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from arena_games.api import Game, GameError, IllegalAction

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


# --- kernel games (tests/games/test_*_kernel_game.py) -------------------------------------------------


def assert_playouts_alike(
    reference: Game, kernel: Game, states: Sequence[Any], positions: Sequence[Any]
) -> None:
    """The kernel game's random playouts of `positions` return what the reference's return of the
    same `states` and leave the generators alike: distinct PCG64 generators, one shared by all and
    generators of another kind (where a kernel game cannot reproduce the draws: the reference's)."""
    count = len(states)
    kinds = [
        lambda: [np.random.default_rng(seed) for seed in range(count)],
        lambda: [np.random.default_rng(7)] * count,
        lambda: [np.random.Generator(np.random.MT19937(seed)) for seed in range(count)],
    ]
    for make in kinds:
        kernel_rngs, reference_rngs = make(), make()
        got = kernel.random_playouts(positions, kernel_rngs)
        assert np.array_equal(got, reference.random_playouts(states, reference_rngs))
        assert [rng.random() for rng in kernel_rngs] == [rng.random() for rng in reference_rngs]


def assert_refused_alike(
    reference: Game, kernel: Game, from_reference: Callable[[Any], Any], bad: Mapping[str, tuple[Any, Any]]
) -> None:
    """Each bad (reference state, joint action) of `bad` is refused by the kernel game (from the
    state's kernel position) with the reference's IllegalAction and message."""
    for name, (state, joint) in bad.items():
        with pytest.raises(IllegalAction) as expected:
            reference.step(state, joint)
        with pytest.raises(IllegalAction) as got:
            kernel.step(from_reference(state), joint)
        assert str(got.value) == str(expected.value), name


def assert_shown_alike(
    reference: Game, kernel: Game, to_reference: Callable[[Any], Any], state: Any, position: Any
) -> None:
    """What is shown or stored of the kernel `position` is the reference's of `state` (its twin): its
    dict (and back), text, view; the openings are the reference's."""
    assert kernel.to_dict(position) == reference.to_dict(state)
    stored = reference.to_dict(state)
    assert reference.to_dict(to_reference(kernel.from_dict(stored))) == stored
    assert kernel.render(position) == reference.render(state)
    assert kernel.view(position) == reference.view(state)
    assert kernel.opening(3, None) == reference.opening(3, None)


def play_twins(
    reference: Game,
    kernel: Game,
    configs: Sequence[Any],
    joint_of: Callable[[int, np.random.Generator, Any], list],
) -> list[list[tuple[Any, Any]]]:
    """Per seed i, every position (reference state, kernel state) of a game from init(i, configs[i])
    to its end, each engine stepping its own state with the joint action joint_of(i, rng, reference
    state), rng a generator seeded i."""
    games = []
    for seed, config in enumerate(configs):
        rng = np.random.default_rng(seed)
        state, position = reference.init(seed, config), kernel.init(seed, config)
        positions = [(state, position)]
        while reference.to_move(state):
            joint = joint_of(seed, rng, state)
            state, position = reference.step(state, joint), kernel.step(position, joint)
            positions.append((state, position))
        games.append(positions)
    return games


def assert_positions_alike(
    reference: Game, kernel: Game, to_reference: Callable[[Any], Any], positions: Sequence[tuple[Any, Any]]
) -> None:
    """Each kernel state of `positions` is its reference twin (`to_reference`), with the same
    players to move, returns, end reason and legal masks of both players; the last is over."""
    for state, position in positions:
        assert to_reference(position) == state
        assert kernel.to_move(position) == reference.to_move(state)
        assert kernel.returns(position) == reference.returns(state)
        assert kernel.end_reason(position) == reference.end_reason(state)
        for player in (0, 1):
            (got,), (expected,) = kernel.legal_masks(position, player), reference.legal_masks(state, player)
            assert np.array_equal(got, expected)
    assert reference.is_over(positions[-1][0])  # the game ran to its end


def assert_refuses_a_third_player(kernel: Game, position: Any) -> None:
    """The kernel game of a two-player game names the problem when asked for player 2's inputs or
    masks (GameError, not an index error)."""
    with pytest.raises(GameError, match="one player"):
        kernel.encode_many([position], [2])
    with pytest.raises(GameError, match="0 or 1"):
        kernel.legal_masks(position, 2)


def assert_a_step_keeps_its_position(kernel: Game, position: Any, joint: Sequence[Any]) -> None:
    """Stepping `position` (a dataclass of arrays) by the legal `joint` leaves its arrays as they
    were: a kernel game's states are never changed once made."""
    before = dataclasses.astuple(position)  # copies of the arrays
    kernel.step(position, joint)
    assert all(
        np.array_equal(now, then) for now, then in zip(dataclasses.astuple(position), before, strict=True)
    )
