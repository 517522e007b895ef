"""Pente's kernel game (the match loop's engine on the compiled core) against the reference game,
function by function, on positions of whole games: the same masks, steps (every `to_dict` field),
returns, end reasons, inputs, playouts and errors."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import (
    assert_a_step_keeps_its_position,
    assert_playouts_alike,
    assert_positions_alike,
    assert_refused_alike,
    assert_shown_alike,
    play_twins,
)

from arena_games.api import GameError
from arena_games.kernel_games import Position
from arena_games.pente import GAME, kernel_game, rules
from arena_games.pente.kernel_game import GAME as KERNEL_GAME
from arena_games.pente.tables import EMPTY, OPENING_BANS, TOURNAMENT_BAN

GAMES = 6  # games from their starts, played to the end: about 1,000 positions


@pytest.fixture(scope="module")
def games() -> list[list[tuple[rules.PenteState, Position]]]:
    """Per game, every position (reference state, kernel position) from its start, both played on
    their own engine by uniformly random moves: the default rules, free openings in every other
    game, a ply cap of 40 in every third (a drawn ending)."""
    configs = [
        {
            "first_move_center": seed % 2 == 0,
            "tournament_rule": seed % 2 == 0,
            "ply_cap": 40 if seed % 3 == 2 else 377,
        }
        for seed in range(GAMES)
    ]
    return play_twins(GAME, KERNEL_GAME, configs, joint_of)


def joint_of(seed: int, rng: np.random.Generator, state: rules.PenteState) -> list:
    """A uniformly random move of the player to move."""
    return [GAME.random_action(state, GAME.to_move(state)[0], rng)]


def test_every_position_and_view_equal_the_reference(games):
    for positions in games:
        assert_positions_alike(GAME, KERNEL_GAME, kernel_game.to_reference, positions)
        for state, position in positions[::10]:
            assert np.array_equal(KERNEL_GAME.legal_masks(position, 2)[0], GAME.legal_masks(state, 2)[0])
    endings = {GAME.end_reason(positions[-1][0]) for positions in games}
    assert {rules.PLY_CAP, rules.FIVE_IN_A_ROW} <= endings, endings
    assert_shown_alike(GAME, KERNEL_GAME, kernel_game.to_reference, *games[1][30])  # shown or stored


def test_inputs_and_playouts_equal_the_reference(games):
    pairs = [pair for played in games for pair in played[::13] if GAME.to_move(pair[0])]
    states, positions = [state for state, _ in pairs], [position for _, position in pairs]
    players = [index % 2 for index in range(len(pairs))]
    got = KERNEL_GAME.encode_many(positions, players)
    for name in GAME.spec.inputs:  # the reference encodes one state at a time
        rows = [GAME.encode(state, seat)[name] for state, seat in zip(states, players, strict=True)]
        assert np.array_equal(got[name].view(np.int32), np.stack(rows).view(np.int32)), name
    assert_playouts_alike(GAME, KERNEL_GAME, states, positions)
    with pytest.raises(GameError, match="one player"):
        KERNEL_GAME.encode_many(positions[:1], [2])


def test_a_bad_move_is_refused_as_the_reference_refuses_it(games):
    start, state, second = games[0][0][0], games[0][5][0], games[0][2][0]
    occupied = int(np.flatnonzero(np.frombuffer(state.board, dtype=np.int8))[0])
    banned = OPENING_BANS[TOURNAMENT_BAN] & (np.frombuffer(second.board, dtype=np.int8) == EMPTY)
    bad = {
        "malformed": (state, [(1, 2)]),
        "two movers": (state, [(1,), (2,)]),
        "a float": (state, [(1.0,)]),
        "off the board": (state, [(361,)]),
        "occupied": (state, [(occupied,)]),
        "off the centre first": (start, [(0,)]),
        "too near the centre second": (second, [(int(np.flatnonzero(banned)[0]),)]),
        "over": (games[0][-1][0], [(0,)]),
    }
    assert_refused_alike(GAME, KERNEL_GAME, kernel_game.from_reference, bad)


def test_a_step_leaves_the_position_it_started_from_unchanged(games):
    state, position = games[2][5]
    (mask,) = GAME.legal_masks(state, GAME.to_move(state)[0])
    assert_a_step_keeps_its_position(KERNEL_GAME, position, [(int(np.flatnonzero(mask)[0]),)])
