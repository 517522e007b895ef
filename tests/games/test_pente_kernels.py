"""Pente's compiled kernels against the reference rules and encoder, bit for bit (ARCHITECTURE
"Compiled core").

On 10,000+ positions of random games (three configs, and games that fill the board) and games of
the zoo's nets: legal masks, every field of `to_dict` after each step, returns, end reasons and the
network inputs of both players (finished games' too); random playouts against the NumPy playouts
draw for draw; the PCG64 replica against NumPy's generator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kernel_checks import add_random_games, assert_playouts_draw_for_draw, assert_refuses_a_shared_generator
from pente_positions import last_empty_point_state, near_full_state

from arena_bots.match import Request
from arena_bots.players import SamplePlayer
from arena_bots.runtime import InProcessSession
from arena_games import pcg64
from arena_games.pente import GAME, encoding, kernels, playouts, rules
from arena_games.pente.tables import NUM_POINTS

CONFIGS = ({}, {"first_move_center": False, "tournament_rule": False}, {"ply_cap": 40})
POSITIONS = 10_000
ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "pente"
ZOO_GAMES = 6  # between the zoo's final and early AlphaZero nets, each move drawn from the policy


def zoo_positions(games: int) -> tuple[list[rules.PenteState], list[int]]:
    """Each running position of `games` games between the zoo's nets and the move played from it."""
    nets = [SamplePlayer(InProcessSession(ZOO / f"az-pente-{name}.onnx")) for name in ("final", "early")]
    states, moves = [], []
    for seed in range(games):
        rng, state = np.random.default_rng(seed), rules.init(seed)
        while not state.end:
            player = state.ply % 2
            (decision,) = nets[(player + seed) % 2].decide(GAME, [Request(state, player, rng)])
            states.append(state)
            moves.append(decision.action[0])
            state = rules.step(state, [decision.action])
    return states, moves


def random_positions(count: int) -> tuple[list[rules.PenteState], list[int]]:
    """At least `count` running positions and the move played from each: zoo games, then uniformly
    random games by the reference rules from the start under CONFIGS and from near-full boards."""
    states, moves = zoo_positions(ZOO_GAMES)
    states.append(last_empty_point_state())
    moves.append(0)
    add_random_games(GAME, first_state, count, states, moves)
    return states, moves


def first_state(seed: int) -> rules.PenteState:
    """Game `seed`'s start: a near-full board for every fourth, else a new game under CONFIGS."""
    return near_full_state(seed, 4 + seed % 20) if seed % 4 == 3 else rules.init(seed, CONFIGS[seed % 4])


@pytest.fixture(scope="module")
def positions() -> tuple[list[rules.PenteState], list[int]]:
    return random_positions(POSITIONS)


def test_the_arrays_round_trip_every_reference_state(positions):
    states, _ = positions
    for state in states[::10]:
        assert kernels.to_state(*kernels.from_state(state)) == state


def test_legal_masks_equal_the_reference(positions):
    states, _ = positions
    boards, infos = kernels.pack(states)
    expected = np.stack([rules.legal_masks(state, state.ply % 2)[0] for state in states])
    assert np.array_equal(kernels.legal_mask_batch(boards, infos), expected)


def test_steps_returns_and_end_reasons_equal_the_reference(positions):
    states, moves = positions
    boards, infos = kernels.pack(states)
    kernels.step_batch(boards, infos, np.array(moves))
    reasons = set()
    for row, (state, move) in enumerate(zip(states, moves, strict=True)):
        expected = rules.step(state, [(move,)])
        got = kernels.to_state(boards[row], infos[row])
        assert rules.to_dict(got) == rules.to_dict(expected), f"position {row}, move {move}"
        assert kernels.returns_of(infos[row]) == rules.returns(expected)
        assert rules.end_reason(got) == rules.end_reason(expected)
        reasons.add(expected.end)
    assert reasons == {"", *rules.END_REASONS}  # every way a game ends was stepped into


def test_encodings_of_both_players_equal_the_reference(positions):
    states, moves = positions
    boards, infos = kernels.pack(states)
    after_boards, after_infos = boards.copy(), infos.copy()
    kernels.step_batch(after_boards, after_infos, np.array(moves))
    finished = np.flatnonzero(after_infos[:, kernels.END] != playouts.RUNNING)
    # the finished games too (to_state gives the reference's state: the step test above)
    ended = [kernels.to_state(after_boards[row], after_infos[row]) for row in finished]
    boards = np.concatenate([boards, after_boards[finished]])
    infos = np.concatenate([infos, after_infos[finished]])
    for player in (0, 1):
        expected = [encoding.encode(state, player) for state in states + ended]
        planes, captures = kernels.encode_batch(boards, infos, np.full(len(infos), player))
        assert planes.dtype == captures.dtype == np.float32
        assert np.array_equal(planes, np.stack([inputs["board"] for inputs in expected]))
        assert np.array_equal(captures, np.stack([inputs["captures"] for inputs in expected]))


def test_finished_games_have_no_legal_move_and_keep_their_returns():
    state = last_empty_point_state()
    board, info = kernels.from_state(state)
    assert kernels.step(board, info, 0) == playouts.BOARD_FULL_CODE
    mask = np.ones(NUM_POINTS, dtype=bool)
    assert kernels.legal_mask(board, info, mask) == 0
    assert not mask.any()
    assert kernels.returns_of(info) == (0.0, 0.0)
    assert kernels.to_state(board, info) == rules.step(state, [(0,)])


def test_playouts_equal_the_numpy_playouts_draw_for_draw(positions):
    states, _ = positions
    starts = [rules.init(0, config) for config in CONFIGS] + states[::97] + [near_full_state(5, 12)]
    assert_playouts_draw_for_draw(kernels.playouts, playouts.playouts, starts, range(len(starts)))


def test_compiled_playouts_refuse_a_shared_generator():
    assert_refuses_a_shared_generator(kernels.playouts, rules.init())


def test_pcg64_draws_are_numpys():
    rng = np.random.default_rng(7)
    rng.integers(5)  # leaves NumPy's buffered half-word set
    state = pcg64.state_of(rng)
    assert [pcg64.next_uint64(state) for _ in range(100)] == rng.bit_generator.random_raw(100).tolist()
    assert [pcg64.next_double(state) for _ in range(100)] == rng.random(100).tolist()
    for bound in (1, 2, 7, 361, 3_000_000_000, 2**32 - 2):  # large bounds reach the rejection loop
        assert [pcg64.bounded(state, bound) for _ in range(200)] == [
            int(rng.integers(bound)) for _ in range(200)
        ]
    assert pcg64.state_of(rng).tolist() == state.tolist()
    restored = np.random.default_rng(0)
    pcg64.restore(restored, state)
    assert restored.bit_generator.state == rng.bit_generator.state


def test_pcg64_refuses_other_bit_generators():
    with pytest.raises(ValueError, match="PCG64 only"):
        pcg64.state_of(np.random.Generator(np.random.MT19937(0)))
