"""Bobail's compiled kernels against the reference rules and encoder, bit for bit (ARCHITECTURE
"Compiled core").

On 10,000+ positions (uniformly random games under four configs, games of the zoo's nets, and the
rarer lines of `bobail_positions`): legal masks, every field of `to_dict` after each step, returns,
end reasons (every one reached) and the network inputs of both players; random playouts against
`Game.random_playouts` draw for draw.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bobail_positions import NO_PAWN_MOVE_LINE, cramped_game, play
from kernel_checks import add_random_games, assert_playouts_draw_for_draw

from arena_bots.match import Request
from arena_bots.players import SamplePlayer
from arena_bots.runtime import InProcessSession
from arena_games.bobail import GAME, encoding, kernels, rules

CONFIGS = ({}, {"repetitions": 2}, {"max_turns": 6}, {"repetitions": 0, "max_turns": 40})
POSITIONS = 10_000
CRAMPED_GAMES = 24  # under {"repetitions": 2}: some box the bobail in, some repeat
ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "bobail"
ZOO_GAMES = 20  # between the zoo's final and early AlphaZero nets, each half-move drawn from the policy


def zoo_positions(games: int) -> tuple[list[rules.BobailState], list[int]]:
    """Each running position of `games` games between the zoo's nets and the action played from it."""
    nets = [SamplePlayer(InProcessSession(ZOO / f"az-bobail-{name}.onnx")) for name in ("final", "early")]
    states, actions = [], []
    for seed in range(games):
        rng, state = np.random.default_rng(seed), rules.init(seed)
        while not state.ending:
            (decision,) = nets[(state.player + seed) % 2].decide(GAME, [Request(state, state.player, rng)])
            states.append(state)
            actions.append(decision.action[0])
            state = rules.step(state, [decision.action])
    return states, actions


def random_positions(count: int) -> tuple[list[rules.BobailState], list[int]]:
    """At least `count` running positions and the action played from each: the line that ends by
    "no pawn move", cramped games, zoo games, and uniformly random games by the reference rules
    under CONFIGS."""
    states = [play(NO_PAWN_MOVE_LINE[:half_move]) for half_move in range(len(NO_PAWN_MOVE_LINE))]
    actions = [rules.move_to_action(s, *move) for s, move in zip(states, NO_PAWN_MOVE_LINE, strict=True)]
    for seed in range(CRAMPED_GAMES):
        for state, action in cramped_game(seed, {"repetitions": 2}):
            states.append(state)
            actions.append(action)
    zoo_states, zoo_actions = zoo_positions(ZOO_GAMES)
    states += zoo_states
    actions += zoo_actions
    add_random_games(
        GAME, lambda seed: rules.init(seed, CONFIGS[seed % len(CONFIGS)]), count, states, actions
    )
    return states, actions


@pytest.fixture(scope="module")
def positions() -> tuple[list[rules.BobailState], list[int]]:
    return random_positions(POSITIONS)


def test_the_arrays_round_trip_every_reference_state(positions):
    states, _ = positions
    for state in states[::10]:
        assert rules.to_dict(kernels.to_state(*kernels.from_state(state))) == rules.to_dict(state)


def test_legal_masks_and_movers_equal_the_reference(positions):
    states, _ = positions
    histories, infos = kernels.pack(states)
    expected = np.stack([rules.legal_masks(state, state.player)[0] for state in states])
    assert np.array_equal(kernels.legal_mask_batch(histories, infos), expected)
    assert [kernels.to_move(info) for info in infos] == [rules.to_move(state)[0] for state in states]


def test_steps_returns_and_end_reasons_equal_the_reference(positions):
    states, actions = positions
    histories, infos = kernels.pack(states)
    kernels.step_batch(histories, infos, np.array(actions))
    reasons = set()
    for row, (state, action) in enumerate(zip(states, actions, strict=True)):
        expected = rules.step(state, [(action,)])
        got = kernels.to_state(histories[row], infos[row])
        # to_dict is the config and the history as text: compared as data, and as text now and then
        assert (got.config, got.history) == (expected.config, expected.history), f"position {row}"
        assert row % 50 or rules.to_dict(got) == rules.to_dict(expected)
        assert kernels.returns_of(infos[row]) == rules.returns(expected)
        assert kernels.end_reason(infos[row]) == rules.end_reason(expected)
        assert kernels.to_move(infos[row]) == (rules.to_move(expected) or (-1,))[0]
        reasons.add(expected.ending)
    assert {reason.split(" ", 1)[-1] if "repetition" in reason else reason for reason in reasons} == {
        "",
        "bobail reached player 1's home row",
        "bobail reached player 2's home row",
        "no pawn move",
        "bobail boxed in",
        "repetition",
        "turn cap",
    }


def test_encodings_equal_the_reference_for_both_players(positions):
    states, _ = positions
    histories, infos = kernels.pack(states)
    for player in (0, 1):
        expected = np.stack([encoding.encode(state, player)["board"] for state in states])
        got = kernels.encode_batch(histories, infos, np.full(len(states), player))
        assert got.dtype == np.float32
        assert np.array_equal(got, expected)


def test_playouts_equal_the_reference_playouts_draw_for_draw(positions):
    states, _ = positions
    starts = [rules.init(0, config) for config in CONFIGS] + states[::53]
    seeds = [*range(len(starts)), 99, 99]  # the last two states draw from one generator, in state order
    starts += starts[:2]
    assert_playouts_draw_for_draw(kernels.playouts, GAME.random_playouts, starts, seeds)


def test_batched_playouts_return_what_one_at_a_time_returns(positions):
    states, _ = positions
    starts = states[::211]
    histories, infos = kernels.pack(starts)
    words = np.stack([kernels.pcg64.state_of(np.random.default_rng(seed)) for seed in range(len(starts))])
    batched = kernels.playout_returns(histories, infos, words, np.arange(len(starts)))
    expected = kernels.playouts(starts, [np.random.default_rng(seed) for seed in range(len(starts))])
    assert np.array_equal(batched, expected)
