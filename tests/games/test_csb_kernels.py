"""Coders Strike Back's compiled kernels against the reference physics, rules, encoder and playouts,
bit for bit (ARCHITECTURE "Compiled core").

On 10,000+ positions of races between the house racer and uniformly random heads in every seating,
and races near the turn cap: every field of `to_dict` after each turn (the floats compared as bits,
so -0.0 is not 0.0), masks, returns, end reasons (every ending reached, with bounces, shields and
boosts on the way) and both players' inputs; random playouts against `playouts.playouts` draw for draw.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from arena_games import ufunc_loops
from arena_games.csb import GAME, encoding, kernels, physics, playouts, rules
from arena_games.csb.playouts import racer_actions

SEATINGS = (("racer", "racer"), ("random", "random"), ("racer", "random"), ("random", "racer"))
POSITIONS = 10_000
NEAR_CAP = 40  # racer races moved to this many turns before the cap


def joint_action(state: rules.CsbState, policy: str, player: int, rng: np.random.Generator) -> tuple:
    if policy == "racer":
        return tuple(racer_actions(rules.to_races([state]), player)[0].tolist())
    return GAME.random_action(state, player, rng)


class Positions(NamedTuple):
    states: list[rules.CsbState]  # running races
    joints: list[list[tuple]]  # the joint action played from each
    afters: list[rules.CsbState]  # the reference's state after it


def race_positions(count: int) -> Positions:
    """At least `count` positions: races under SEATINGS (1 to 3 laps), and racer races whose turn is
    moved near the cap."""
    rng = np.random.default_rng(2024)
    found = Positions([], [], [])

    def play(state: rules.CsbState, policies: tuple[str, str]) -> None:
        while not state.is_over:
            joint = [joint_action(state, policies[player], player, rng) for player in (0, 1)]
            found.states.append(state)
            found.joints.append(joint)
            state = GAME.step(state, joint)
            found.afters.append(state)

    for seed in range(8):
        start = rules.init(100 + seed, {"laps": 1})
        play(dataclasses.replace(start, turn=physics.MAX_TURNS - NEAR_CAP), SEATINGS[0])
    seed = 0
    while len(found.states) < count:
        play(rules.init(seed, {"laps": 1 + seed % 3}), SEATINGS[seed % len(SEATINGS)])
        seed += 1
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


def test_playouts_equal_the_numpy_playouts_draw_for_draw(positions):
    starts = [rules.init(seed, {"laps": 1}) for seed in range(4)] + positions.states[::211]
    reference_rngs = [np.random.default_rng(seed) for seed in range(len(starts))]
    compiled_rngs = [np.random.default_rng(seed) for seed in range(len(starts))]
    expected = playouts.playouts(starts, reference_rngs)
    assert np.array_equal(kernels.playouts(starts, compiled_rngs), expected)
    for reference, compiled in zip(reference_rngs, compiled_rngs, strict=True):
        assert compiled.bit_generator.state == reference.bit_generator.state


def test_compiled_playouts_refuse_a_shared_generator():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="distinct generator"):
        kernels.playouts([rules.init(0)] * 2, [rng, rng])


def test_numpys_arctan2_loop_is_numpys_arctan2():
    rng = np.random.default_rng(5)
    y, x = rng.uniform(-2e4, 2e4, (2, 2000))
    loop, data = ufunc_loops.binary_loop(np.arctan2)
    frame = ufunc_loops.new_frame()
    got = [ufunc_loops.call(loop, data, frame, a, b) for a, b in zip(y, x, strict=True)]
    assert np.array_equal(bits(np.array(got)), bits(np.arctan2(y, x)))
    with pytest.raises(ValueError, match="no dd->d loop"):
        ufunc_loops.binary_loop(np.invert)
