"""Spring 2021's kernel game (the match loop's engine on the compiled core) against the reference
game, function by function, on positions of whole games: the same masks, frames (favoured ones
too), returns, end reasons, inputs, playouts, the gardener's moves and errors."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import (
    assert_a_step_keeps_its_position,
    assert_playouts_alike,
    assert_positions_alike,
    assert_refused_alike,
    assert_refuses_a_third_player,
    assert_shown_alike,
    play_twins,
)

from arena_games.kernel_games import Position
from arena_games.spring2021 import GAME, kernel_game, rules
from arena_games.spring2021.gardener import gardener_action
from arena_games.spring2021.kernel_game import GAME as KERNEL_GAME

GAMES = 6  # games from their starts, played to the end: about 1,000 positions


@pytest.fixture(scope="module")
def games() -> list[list[tuple[rules.SpringState, Position]]]:
    """Per game, every position (reference state, kernel position) from its start, both played on
    their own engine: uniformly random actions, in every other game the gardener's for seat 0 (its
    trees grow and complete), short games (8 days) in every third."""
    configs = [{"MAX_ROUNDS": 8} if seed % 3 == 2 else None for seed in range(GAMES)]
    return play_twins(GAME, KERNEL_GAME, configs, joint_of)


def joint_of(seed: int, rng: np.random.Generator, state: rules.SpringState) -> list:
    """Random actions; the gardener's for seat 0 in games of odd seeds."""
    players = GAME.to_move(state)
    joint = [GAME.random_action(state, player, rng) for player in players]
    if seed % 2 and players[0] == 0:
        joint[0] = (gardener_action(state, 0),)
    return joint


def test_every_position_gardener_move_and_view_equal_the_reference(games):
    for positions in games:
        assert_positions_alike(GAME, KERNEL_GAME, kernel_game.to_reference, positions)
        for state, position in positions[:-1]:
            for player in GAME.to_move(state):
                assert kernel_game.gardener_action(position, player) == gardener_action(state, player)
    assert_shown_alike(GAME, KERNEL_GAME, kernel_game.to_reference, *games[1][60])  # shown or stored


def test_a_favoured_frame_equals_the_reference(games):
    rng = np.random.default_rng(1)
    for state, position in games[0][1::9]:
        if players := GAME.to_move(state):
            joint = [GAME.random_action(state, player, rng) for player in players]
            for favoured in (0, 1):
                got = KERNEL_GAME.step_favouring(position, joint, favoured)
                assert kernel_game.to_reference(got) == GAME.step_favouring(state, joint, favoured)


def test_inputs_and_playouts_equal_the_reference(games):
    pairs = [pair for played in games for pair in played[::11] if GAME.to_move(pair[0])]
    states, positions = [state for state, _ in pairs], [position for _, position in pairs]
    players = [GAME.to_move(state)[0] for state in states]
    got = KERNEL_GAME.encode_many(positions, players)["obs"]
    expected = np.stack([GAME.encode(at, seat)["obs"] for at, seat in zip(states, players, strict=True)])
    assert np.array_equal(got.view(np.int32), expected.view(np.int32))
    assert np.array_equal(KERNEL_GAME.encode(positions[1], 1)["obs"], GAME.encode(states[1], 1)["obs"])
    assert_playouts_alike(GAME, KERNEL_GAME, states, positions)


def test_a_bad_joint_action_is_refused_as_the_reference_refuses_it(games):
    state, position = games[0][3]
    waiting = next(state for state, _ in games[0] if len(GAME.to_move(state)) == 1)
    illegal = next(action for action in range(rules.NUM_ACTIONS) if not GAME.legal_masks(state, 1)[0][action])
    bad = {
        "malformed": (state, [(1, 2), (37,)]),
        "one player short": (state, [(37,)]),
        "a bool": (state, [(True,), (37,)]),
        "not legal": (state, [(37,), (illegal,)]),
        "out of range": (state, [(37,), (38,)]),
        "a waiting player's": (waiting, [(37,), (37,)]),
        "over": (games[0][-1][0], [(37,), (37,)]),
    }
    assert_refused_alike(GAME, KERNEL_GAME, kernel_game.from_reference, bad)
    assert_refuses_a_third_player(KERNEL_GAME, position)


def test_a_step_leaves_the_position_it_started_from_unchanged(games):
    state, position = games[2][5]
    assert_a_step_keeps_its_position(KERNEL_GAME, position, [(rules.WAIT_ACTION,)] * len(GAME.to_move(state)))
