"""Coders Strike Back's kernel game (the match loop's engine on the compiled core) against the
reference game, function by function, on positions of random races: the same masks, steps (every
`to_dict` field, floats as bits), returns, end reasons, inputs, playouts and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from kernel_checks import assert_playouts_alike, assert_refused_alike, assert_shown_alike

from arena_games.api import GameError
from arena_games.csb import GAME, kernel_game, physics, rules
from arena_games.csb.kernel_game import GAME as KERNEL_GAME
from arena_games.csb.playouts import racer_actions

RACES = 12  # races from their starts, 1 to 3 laps, played to the end: about 1,500 positions


@pytest.fixture(scope="module")
def races() -> list[list[tuple[rules.CsbState, kernel_game.Race]]]:
    """Per race, every position (reference state, race) from its start, both played on their own
    engine: uniformly random heads against random heads (they time out) or the house racer's
    (it finishes: in half the races it drives seat 0)."""
    played = []
    for seed in range(RACES):
        rng = np.random.default_rng(seed)
        state, race = GAME.init(seed, {"laps": 1 + seed % 3}), KERNEL_GAME.init(seed, {"laps": 1 + seed % 3})
        positions = [(state, race)]
        while GAME.to_move(state):
            joint = [GAME.random_action(state, player, rng) for player in (0, 1)]
            if seed % 2:
                joint[0] = tuple(racer_actions(rules.to_races([state]), 0)[0].tolist())
            state, race = GAME.step(state, joint), KERNEL_GAME.step(race, joint)
            positions.append((state, race))
        played.append(positions)
    return played


def exact(state: rules.CsbState) -> str:
    """The state's `to_dict` with the pods' coordinates, speeds and angles as their float's bits (so
    -0.0 is not 0.0; a start's integer coordinates are their floats, as on the kernels)."""
    floats = ("x", "y", "vx", "vy", "angle")
    pods = [{**pod, **{key: float(pod[key]).hex() for key in floats}} for pod in rules.to_dict(state)["pods"]]
    return json.dumps({**rules.to_dict(state), "pods": pods})


def test_every_position_of_a_race_equals_the_reference(races):
    for positions in races:
        for state, race in positions:
            assert exact(kernel_game.to_reference(race)) == exact(state)
            assert KERNEL_GAME.to_move(race) == GAME.to_move(state)
            assert KERNEL_GAME.returns(race) == GAME.returns(state)
            assert KERNEL_GAME.end_reason(race) == GAME.end_reason(state)
            for player in (0, 1, 2):
                for got, expected in zip(
                    KERNEL_GAME.legal_masks(race, player), GAME.legal_masks(state, player), strict=True
                ):
                    assert np.array_equal(got, expected)
        assert positions[-1][0].is_over  # every race ran to its end


def test_every_ending_is_reached(races):
    endings = {positions[-1][0].ending for positions in races}
    assert {physics.FINISHED, physics.TIMED_OUT} <= endings


def test_inputs_and_playouts_equal_the_reference(races):
    positions = [pair for played in races for pair in played[::25] if GAME.to_move(pair[0])]
    states, race_list = [state for state, _ in positions], [race for _, race in positions]
    players = [index % 2 for index in range(len(positions))]
    got, expected = (
        KERNEL_GAME.encode_many(race_list, players)["pods"],
        GAME.encode_many(states, players)["pods"],
    )
    assert np.array_equal(got.view(np.int32), expected.view(np.int32))
    assert np.array_equal(KERNEL_GAME.encode(race_list[1], 1)["pods"], GAME.encode(states[1], 1)["pods"])
    assert_playouts_alike(GAME, KERNEL_GAME, states, race_list)


def test_a_bad_joint_action_is_refused_as_the_reference_refuses_it(races):
    state, race = races[0][3]
    boosted = rules.step(state, [(18, 50, 18, 49), (18, 49, 18, 49)])
    bad = {
        "malformed": (state, [(18, 49, 18), (18, 49, 18, 49)]),
        "a bool": (state, [(True, 49, 18, 49), (18, 49, 18, 49)]),
        "out of range": (state, [(18, 52, 18, 49), (18, 49, 18, 49)]),
        "a second boost": (boosted, [(18, 50, 18, 49), (18, 49, 18, 49)]),
        "over": (races[0][-1][0], [(18, 49, 18, 49), (18, 49, 18, 49)]),
    }
    assert_refused_alike(GAME, KERNEL_GAME, kernel_game.from_reference, bad)
    with pytest.raises(GameError, match="one player"):
        KERNEL_GAME.encode_many([race], [2])


def test_what_is_shown_or_stored_is_the_references(races):
    state, race = races[1][40]
    assert_shown_alike(GAME, KERNEL_GAME, kernel_game.to_reference, state, race)
    assert exact(kernel_game.to_reference(KERNEL_GAME.from_dict(GAME.to_dict(state)))) == exact(state)


def test_a_step_leaves_the_race_it_started_from_unchanged(races):
    _, race = races[2][5]
    motion, info = race.motion.copy(), race.info.copy()
    KERNEL_GAME.step(race, [(0, 51, 36, 50), (18, 0, 18, 49)])
    assert np.array_equal(race.motion, motion)
    assert np.array_equal(race.info, info)
