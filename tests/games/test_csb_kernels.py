"""Coders Strike Back's compiled kernels against the reference physics, rules, encoder and playouts,
bit for bit (ARCHITECTURE "Compiled core").

On 10,000+ positions of races between the house racer, uniformly random heads and the zoo's final
DQN net, and races near the turn cap: every field of `to_dict` after each turn (the floats compared
as bits, so -0.0 is not 0.0), masks, returns, end reasons (every ending reached, with bounces,
shields and boosts on the way), both players' inputs and the house racer's heads; random playouts
against `playouts.playouts` draw for draw.
"""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from kernel_checks import assert_playouts_draw_for_draw, assert_refuses_a_shared_generator

from arena_bots.match import Request
from arena_bots.players import GreedyPlayer
from arena_bots.runtime import InProcessSession
from arena_games import ufunc_loops
from arena_games.csb import GAME, encoding, kernels, physics, playouts, rules
from arena_games.csb.playouts import racer_actions

POLICIES = ("racer", "random", "zoo")  # the house racer, uniformly random heads, the zoo's final DQN net
SEATINGS = ((0, 0), (1, 1), (0, 1), (1, 0), (2, 0), (1, 2))  # policies of seats 0 and 1
RACES = 108  # under SEATINGS in turn, 1 to 3 laps: 10,000+ positions
ZOO_NET = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "csb" / "dqn-csb-final.onnx"
NEAR_CAP = 40  # and 8 racer races moved to this many turns before the cap
POSITIONS = 10_000


class Positions(NamedTuple):
    states: list[rules.CsbState]  # running races
    joints: list[list[list[int]]]  # the joint action played from each
    afters: list[rules.CsbState]  # the reference's state after it


def race_positions(count: int) -> Positions:
    """At least `count` positions, from races played in lockstep on the reference physics (a batch
    of races is `rules.step`'s arithmetic row by row; the turns test checks a sample against it)."""
    near_cap = [rules.init(100 + seed, {"laps": 1}) for seed in range(8)]
    starts = [dataclasses.replace(state, turn=physics.MAX_TURNS - NEAR_CAP) for state in near_cap]
    starts += [rules.init(seed, {"laps": 1 + seed % 3}) for seed in range(RACES)]
    seatings = np.array(
        [SEATINGS[0]] * len(near_cap) + [SEATINGS[seed % len(SEATINGS)] for seed in range(RACES)]
    )
    random_heads = playouts.RandomHeads([np.random.default_rng(race) for race in range(len(starts))])
    zoo, greedy = GreedyPlayer(InProcessSession(ZOO_NET), head_kind="q"), np.random.default_rng(0)
    races, ids, found = rules.to_races(starts), np.arange(len(starts)), Positions([], [], [])

    def states_now() -> list[rules.CsbState]:
        return [
            rules.from_races(races, row, starts[race].laps, starts[race].checkpoints)
            for row, race in enumerate(ids)
        ]

    def heads(states: list[rules.CsbState], player: int) -> np.ndarray:
        """(B, 4) `player`'s heads in each live race, by its seat's policy."""
        policy = seatings[ids, player]
        choices = np.stack([racer_actions(races, player), random_heads(races, player, ids)])
        chosen = choices[np.minimum(policy, 1), np.arange(ids.size)]
        zoo_rows = np.flatnonzero(policy == POLICIES.index("zoo"))
        requests = [Request(states[row], player, greedy) for row in zoo_rows]
        for row, decision in zip(zoo_rows, zoo.decide(GAME, requests), strict=True):
            chosen[row] = decision.action
        return chosen

    while ids.size:
        states = states_now()
        actions = np.stack([heads(states, player) for player in (0, 1)], axis=1)
        found.states.extend(states)
        found.joints.extend(actions.tolist())
        physics.play_turn(races, *rules.decode_actions(races, actions))
        found.afters.extend(states_now())
        running = races.winner < 0
        races, ids = races.take(running), ids[running]
    assert len(found.states) >= count
    return found


@pytest.fixture(scope="module")
def positions() -> Positions:
    return race_positions(POSITIONS)


def bits(array: np.ndarray) -> np.ndarray:
    """The array's floats as integers: equal bits, not just equal values."""
    return array.view(np.int64 if array.dtype == np.float64 else np.int32)


def test_the_arrays_round_trip_every_reference_state(positions):
    for state in positions.states[::10]:
        assert kernels.to_state(*(array[0] for array in kernels.pack([state]))) == state


def test_legal_masks_equal_the_reference(positions):
    states = positions.states
    infos = kernels.pack(states)[2]
    for player in (0, 1):
        expected = np.stack([np.concatenate(rules.legal_masks(state, player)) for state in states])
        assert np.array_equal(kernels.legal_mask_batch(infos, np.full(len(states), player)), expected)


def test_turns_returns_and_end_reasons_equal_the_reference(positions):
    motions, checkpoints, infos = kernels.pack(positions.states)
    kernels.step_batch(motions, checkpoints, infos, np.array(positions.joints, dtype=np.int64))
    expected = positions.afters
    for row in range(0, len(expected), 25):
        step = GAME.step(positions.states[row], positions.joints[row])
        assert rules.to_dict(step) == rules.to_dict(expected[row])
    assert np.array_equal(bits(motions), bits(kernels.pack(expected)[0]))
    endings, contacts = set(), 0
    for row, reference in enumerate(expected):
        got = kernels.to_state(motions[row], checkpoints[row], infos[row])
        assert rules.to_dict(got) == rules.to_dict(reference), f"position {row}"
        assert kernels.returns_of(infos[row]) == rules.returns(reference)
        assert rules.end_reason(got) == rules.end_reason(reference)
        endings.add(reference.ending)
        contacts += bool(reference.collisions)
    assert endings == {physics.RUNNING, physics.FINISHED, physics.TIMED_OUT, physics.TURN_CAP}
    assert contacts > 100
    assert infos[:, kernels.BOOSTED : kernels.BOOSTED + 4].any()
    assert (infos[:, kernels.SHIELD : kernels.SHIELD + 4] == physics.SHIELD_TURNS - 1).any()


def test_encodings_equal_the_reference_for_both_players(positions):
    states = positions.states
    motions, checkpoints, infos = kernels.pack(states)
    for player in (0, 1):
        seats = np.full(len(states), player)
        expected = encoding.encode_many(states, seats)["pods"]
        got = kernels.encode_batch(motions, checkpoints, infos, seats)
        assert got.dtype == np.float32
        assert np.array_equal(bits(got), bits(expected))


def test_the_house_racer_equals_the_reference_racer_for_both_players(positions):
    motions, checkpoints, infos = kernels.pack(positions.states)
    races = rules.to_races(positions.states)
    for player in (0, 1):
        expected = racer_actions(races, player)
        assert np.array_equal(
            kernels.racer_batch(motions, checkpoints, infos, np.full(len(infos), player)), expected
        )
        assert (expected[:, 1::2] == rules.BOOST_ACTION).any()  # boosts, slow-downs and full thrust met
        assert {0, rules.BOOST_ACTION - 1} <= set(expected[:, 1::2].ravel().tolist())


def test_playouts_equal_the_numpy_playouts_draw_for_draw(positions):
    starts = [rules.init(seed, {"laps": 1}) for seed in range(4)] + positions.states[::211]
    assert_playouts_draw_for_draw(kernels.playouts, playouts.playouts, starts, range(len(starts)))


def test_compiled_playouts_refuse_a_shared_generator():
    assert_refuses_a_shared_generator(kernels.playouts, rules.init(0))


def test_numpys_arctan2_loop_is_numpys_arctan2():
    rng = np.random.default_rng(5)
    y, x = rng.uniform(-2e4, 2e4, (2, 2000))
    loop, data = ufunc_loops.binary_loop(np.arctan2)
    frame = ufunc_loops.new_frame()
    got = [ufunc_loops.call(loop, data, frame, a, b) for a, b in zip(y, x, strict=True)]
    assert np.array_equal(bits(np.array(got)), bits(np.arctan2(y, x)))
    with pytest.raises(ValueError, match="no dd->d loop"):
        ufunc_loops.binary_loop(np.invert)


def test_an_unknown_ufunc_layout_is_refused_before_any_pointer_is_used(monkeypatch):
    class Shifted(ctypes.Structure):  # the head of another NumPy's ufunc, one int further on
        _fields_ = [("padding", ctypes.c_int), *ufunc_loops._UFuncObject._fields_]

    monkeypatch.setattr(ufunc_loops, "_UFuncObject", Shifted)
    with pytest.raises(RuntimeError, match="another layout"):
        ufunc_loops.binary_loop(np.arctan2)
