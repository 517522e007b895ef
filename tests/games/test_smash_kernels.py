"""Smash the Code's compiled kernels against the reference rules and encoder, bit for bit
(ARCHITECTURE "Compiled core").

On 10,000+ positions of uniformly random games (three configs, wells 6 and 3 wide): legal masks,
every field of `to_dict` after each turn, returns, end reasons (every one reached: the turn limit,
either player blocked, both at once) and the network inputs of both players; random playouts
against `playouts.playouts` draw for draw, on its looped and its batched path.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_checks import assert_playouts_draw_for_draw

from arena_games.smash import encoding, kernels, playouts, rules

CONFIGS = ({}, {"NUISANCE_OFFSET": True}, {"TURN_LIMIT": 20})
WIDTHS = (6, 6, 6, 6, 3)  # by seed: most games the contest's width, some narrow (blocked sooner)
POSITIONS = 10_000

# by well width: running positions, the joint placement played from each and the state it led to
Positions = dict[int, tuple[list[rules.SmashState], list[tuple[int, int]], list[rules.SmashState]]]


def random_positions(count: int) -> Positions:
    """At least `count` running positions of uniformly random games by the reference rules, the
    joint placement played from each and the reference's next state, by well width."""
    rng = np.random.default_rng(2024)
    positions: Positions = {width: ([], [], []) for width in set(WIDTHS)}
    seed, total = 0, 0
    while total < count:
        width = WIDTHS[seed % len(WIDTHS)]
        state = rules.init(seed, CONFIGS[seed % len(CONFIGS)], width=width)
        seed += 1
        states, actions, nexts = positions[width]
        while not state.is_over:
            joint = tuple(int(rng.choice(np.flatnonzero(rules.legal_masks(state, p)[0]))) for p in (0, 1))
            states.append(state)
            actions.append(joint)
            state = rules.step(state, [(joint[0],), (joint[1],)])
            nexts.append(state)
            total += 1
    return positions


@pytest.fixture(scope="module")
def positions() -> Positions:
    return random_positions(POSITIONS)


def test_the_arrays_round_trip_every_reference_state(positions):
    for states, _, _ in positions.values():
        for state in states[::10]:
            assert kernels.to_state(*kernels.from_state(state)) == state


def test_legal_masks_and_movers_equal_the_reference(positions):
    for states, _, _ in positions.values():
        wells, _, infos = kernels.pack(states)
        for player in (0, 1):
            expected = np.stack([rules.legal_masks(state, player)[0] for state in states])
            assert np.array_equal(kernels.legal_mask_batch(wells, infos, player), expected)
        assert all(kernels.to_move(info) == 2 for info in infos)


def test_steps_returns_and_end_reasons_equal_the_reference(positions):
    reasons = set()
    for states, actions, nexts in positions.values():
        wells, pairs, infos = kernels.pack(states)
        kernels.step_batch(wells, pairs, infos, np.array(actions))
        for row, expected in enumerate(nexts):
            got = kernels.to_state(wells[row], pairs[row], infos[row])
            # every field of to_dict, compared as data, and as to_dict's text now and then
            assert got == expected, f"position {row}"
            assert row % 50 or rules.to_dict(got) == rules.to_dict(expected)
            assert kernels.returns_of(infos[row]) == rules.returns(expected)
            assert kernels.end_reason(infos[row]) == rules.end_reason(expected)
            assert kernels.to_move(infos[row]) == len(rules.to_move(expected))
            reasons.add(kernels.end_code(infos[row]) if not all(expected.losses) else "both blocked")
    assert reasons == {kernels.RUNNING, kernels.TURN_LIMIT_REACHED, kernels.BLOCKED, "both blocked"}


def test_the_positions_hold_chains_skulls_and_offsetting(positions):
    """The positions reach what the kernels must get right: chains of several steps, skulls, and
    unsent points cancelled by offsetting."""
    states = [state for width_states, _, _ in positions.values() for state in width_states]
    assert max(max(state.chains) for state in states) >= 3
    assert any(rules.SKULL in column for state in states for well in state.wells for column in well)
    assert any(
        state.config.nuisance_offset and min(state.unsent) == 0 < max(state.unsent) for state in states
    )


def test_encodings_equal_the_reference_for_both_players(positions):
    for states, _, _ in positions.values():
        wells, pairs, infos = kernels.pack(states)
        for player in (0, 1):
            got = kernels.encode_batch(wells, pairs, infos, np.full(len(states), player))
            expected = [encoding.encode(state, player) for state in states]
            for name, planes in zip(("own", "opponent", "pieces"), got, strict=True):
                assert planes.dtype == np.float32
                assert np.array_equal(planes, np.stack([inputs[name] for inputs in expected])), name


@pytest.mark.parametrize("games", [3, playouts.LOOPED_BELOW + 4], ids=["looped", "batched"])
def test_playouts_equal_the_reference_playouts_draw_for_draw(positions, games):
    """Both paths of `playouts.playouts` (a few games are looped, more batched), finished games and
    a generator shared by two states included."""
    states, _, nexts = positions[6]
    over = nexts[-1]  # a finished game
    starts = [rules.init(7, config) for config in CONFIGS] + states[:: len(states) // games] + [over]
    starts = starts[:games]
    seeds = [*range(games - 2), 99, 99]  # the last two states draw from one generator
    assert_playouts_draw_for_draw(kernels.playouts, playouts.playouts, starts, seeds)
