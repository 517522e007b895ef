"""Smash the Code's kernel game (the match loop's engine on the compiled core) against the reference
game, function by function, on positions of whole games: the same masks, steps (every `to_dict`
field), returns, end reasons, inputs, playouts, house bots' views and errors."""

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

from arena_games.smash import GAME, kernel_game, playouts, rules
from arena_games.smash.kernel_game import GAME as KERNEL_GAME

GAMES = 10  # games from their starts, played to the end: about 600 positions


@pytest.fixture(scope="module")
def games() -> list[list[tuple[rules.SmashState, kernel_game.Wells]]]:
    """Per game, every position (reference state, kernel position) from its start, both played on
    their own engine: uniformly random placements (the wells fill: blocked endings), in every other
    game the lowest legal one for seat 0 (a tall column: it loses sooner) and short games under a
    turn limit with offsetting (the limit reached)."""
    configs = [
        {"TURN_LIMIT": 30, "NUISANCE_OFFSET": True} if seed % 3 == 2 else None for seed in range(GAMES)
    ]
    return play_twins(GAME, KERNEL_GAME, configs, joint_of)


def joint_of(seed: int, rng: np.random.Generator, state: rules.SmashState) -> list:
    """Random placements; the lowest legal one for seat 0 in games of odd seeds."""
    joint = [GAME.random_action(state, player, rng) for player in (0, 1)]
    if seed % 2:
        joint[0] = (int(np.flatnonzero(GAME.legal_masks(state, 0)[0])[0]),)
    return joint


def test_every_position_and_view_equal_the_reference(games):
    for positions in games:
        assert_positions_alike(GAME, KERNEL_GAME, kernel_game.to_reference, positions)
    assert_shown_alike(GAME, KERNEL_GAME, kernel_game.to_reference, *games[1][20])  # shown or stored


def test_every_ending_is_reached(games):
    endings = {"no room" in GAME.end_reason(positions[-1][0]) for positions in games}
    assert endings == {True, False}  # blocked wells and turn limits


def test_inputs_playouts_and_the_house_bots_view_equal_the_reference(games):
    pairs = [pair for played in games for pair in played[::7] if GAME.to_move(pair[0])]
    states, positions = [state for state, _ in pairs], [position for _, position in pairs]
    players = [index % 2 for index in range(len(pairs))]
    got = KERNEL_GAME.encode_many(positions, players)
    for name in GAME.spec.inputs:  # the reference encodes one state at a time
        rows = [GAME.encode(state, seat)[name] for state, seat in zip(states, players, strict=True)]
        expected = np.stack(rows)
        assert np.array_equal(got[name].view(np.int32), expected.view(np.int32)), name
    for name, planes in KERNEL_GAME.encode(positions[1], 1).items():
        assert np.array_equal(planes, GAME.encode(states[1], 1)[name])
    assert_playouts_alike(GAME, KERNEL_GAME, states, positions)
    wells, next_pairs = kernel_game.movers_wells_and_pairs(positions, players)
    for row, (state, player) in enumerate(zip(states, players, strict=True)):
        assert np.array_equal(wells[row], playouts.well_array(state.wells[player], state.config.width))
        assert next_pairs[row].tolist() == [list(pair) for pair in state.pairs[state.turn : state.turn + 2]]


def test_a_bad_joint_action_is_refused_as_the_reference_refuses_it(games):
    state, position = games[0][3]
    full = next(
        (state, placement)
        for state, _ in games[0]
        if GAME.to_move(state)
        for placement in np.flatnonzero(~GAME.legal_masks(state, 1)[0]).tolist()
    )
    bad = {
        "malformed": (state, [(1, 2), (3,)]),
        "one player": (state, [(1,)]),
        "a bool": (state, [(True,), (3,)]),
        "out of range": (state, [(1,), (22,)]),
        "negative": (state, [(-1,), (3,)]),
        "a full column": (full[0], [(0,), (full[1],)]),
        "over": (games[0][-1][0], [(1,), (3,)]),
    }
    assert_refused_alike(GAME, KERNEL_GAME, kernel_game.from_reference, bad)
    assert_refuses_a_third_player(KERNEL_GAME, position)


def test_a_step_leaves_the_position_it_started_from_unchanged(games):
    _, position = games[2][5]
    legal = [int(np.flatnonzero(KERNEL_GAME.legal_masks(position, player)[0])[0]) for player in (0, 1)]
    assert_a_step_keeps_its_position(KERNEL_GAME, position, [(legal[0],), (legal[1],)])
