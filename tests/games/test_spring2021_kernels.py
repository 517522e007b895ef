"""Spring 2021's compiled kernels against the reference rules and encoder, bit for bit
(ARCHITECTURE "Compiled core").

On 10,000+ positions (444 of 6 games between the zoo's AlphaZero nets, the rest of uniformly random
games and of games against the `gardener` house bot under four configs, a third of those frames
played as a search's, `step_favouring`): legal masks, every field of `to_dict` after each frame,
returns, end reasons (every one the frames reach), the players to move and the network inputs of
both players; random playouts against `playouts.playouts` draw for draw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from kernel_checks import assert_playouts_draw_for_draw

from arena_bots.match import Request
from arena_bots.players import SamplePlayer
from arena_bots.runtime import InProcessSession
from arena_games import pcg64
from arena_games.spring2021 import GAME, encoding, kernels, playouts, rules
from arena_games.spring2021.gardener import gardener_action

CONFIGS = (
    {},
    {"MAX_ROUNDS": 2},  # short games: many end 0 to 0 and go to the tie-break
    {"STARTING_SUN": 40, "STARTING_NUTRIENTS_LUSH": 3, "MAX_ROUNDS": 12},  # rich: many conflicts
    {"MAX_EMPTY_CELLS": 0, "STARTING_SUN": 7},
)
POSITIONS = 10_000
NOBODY = -1
ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "spring2021"
ZOO_GAMES = 6  # between the zoo's final and early AlphaZero nets, each action drawn from the policy


@dataclasses.dataclass(frozen=True)
class Position:
    state: rules.SpringState
    actions: tuple[int, int]  # per player, -1 for one not to move
    favoured: int  # NOBODY for `step`, else the player `step_favouring` favours


def play(position: Position) -> rules.SpringState:
    joint = [(action,) for action in position.actions if action >= 0]
    if position.favoured == NOBODY:
        return rules.step(position.state, joint)
    return rules.step_favouring(position.state, joint, position.favoured)


Choose = Callable[[rules.SpringState, int], int]  # (state, player) -> that player's action


def random_positions(count: int) -> list[Position]:
    """At least `count` running positions and the frame played from each: the zoo's games, then games
    under CONFIGS of uniformly random players, or of one against the gardener (seed % 3 == 1: both
    gardeners)."""
    rng = np.random.default_rng(2021)
    positions = zoo_positions(ZOO_GAMES)
    seed = 0
    while len(positions) < count:
        choose = random_or_gardener(rng, {0: (), 1: (0, 1), 2: (1,)}[seed % 3])
        start = rules.init(seed, CONFIGS[seed % len(CONFIGS)])
        positions += played_game(start, choose, (NOBODY, 0, 1)[seed % 3])
        seed += 1
    return positions


def random_or_gardener(rng: np.random.Generator, gardeners: tuple[int, ...]) -> Choose:
    """The gardener's action for the players in `gardeners`, a uniformly random one for the others."""

    def choose(state: rules.SpringState, player: int) -> int:
        if player in gardeners:
            return gardener_action(state, player)
        return int(rng.choice(list(rules.action_commands(state, player))))

    return choose


def zoo_positions(games: int) -> list[Position]:
    """The positions of `games` games between the zoo's final and early nets, frames as `step`'s."""
    nets = [SamplePlayer(InProcessSession(ZOO / f"az-spring2021-{name}.onnx")) for name in ("final", "early")]
    positions = []
    for seed in range(games):
        seats = (nets[seed % 2], nets[1 - seed % 2])
        positions += played_game(rules.init(seed), sampled(seats, np.random.default_rng(seed)), NOBODY)
    return positions


def sampled(seats: tuple[SamplePlayer, SamplePlayer], rng: np.random.Generator) -> Choose:
    """Each player's action drawn from the policy of its seat's net."""

    def choose(state: rules.SpringState, player: int) -> int:
        (decision,) = seats[player].decide(GAME, [Request(state, player, rng)])
        return decision.action[0]

    return choose


def played_game(state: rules.SpringState, choose: Choose, favoured: int) -> list[Position]:
    """The positions of the game from `state` in which `choose(state, player)` picks each action."""
    positions = []
    while players := rules.to_move(state):
        actions = [-1, -1]
        for player in players:
            actions[player] = choose(state, player)
        positions.append(Position(state, (actions[0], actions[1]), favoured))
        state = play(positions[-1])
    return positions


@pytest.fixture(scope="module")
def positions() -> list[Position]:
    return random_positions(POSITIONS)


def test_the_arrays_round_trip_every_reference_state(positions):
    for position in positions[::10]:
        assert kernels.to_state(*kernels.from_state(position.state)) == position.state


def test_legal_masks_and_movers_equal_the_reference(positions):
    states = [position.state for position in positions]
    boards, infos = kernels.pack(states)
    expected = np.stack([[rules.legal_masks(state, player)[0] for player in (0, 1)] for state in states])
    assert np.array_equal(kernels.legal_mask_batch(boards, infos), expected)
    movers = [sum(1 << player for player in rules.to_move(state)) for state in states]
    assert [kernels.to_move(info) for info in infos] == movers


def test_frames_returns_and_end_reasons_equal_the_reference(positions):
    boards, infos = kernels.pack([position.state for position in positions])
    plain = np.flatnonzero([position.favoured == NOBODY for position in positions])
    stepped_boards, stepped_infos = boards[plain], infos[plain]
    kernels.step_batch(stepped_boards, stepped_infos, np.array([p.actions for p in positions])[plain])
    boards[plain], infos[plain] = stepped_boards, stepped_infos
    codes, logged = set(), set()
    for row, position in enumerate(positions):
        board, info = boards[row], infos[row]
        if position.favoured != NOBODY:
            kernels.step_favouring(board, info, *position.actions, position.favoured)
        expected = play(position)
        assert rules.to_dict(kernels.to_state(board, info)) == rules.to_dict(expected), f"position {row}"
        assert kernels.returns_of(board, info) == rules.returns(expected)
        assert kernels.end_reason(board, info) == rules.end_reason(expected)
        assert kernels.to_move(info) == sum(1 << player for player in rules.to_move(expected))
        codes.add(kernels.end_code(info))
        logged.update(f"{text.split()[0]}{text.endswith('(conflict)')}" for text in expected.log[-1] if text)
    assert codes == {kernels.RUNNING, kernels.LAST_DAY, kernels.TIE_BREAK}
    assert logged == {"WAITFalse", "GROWFalse", "COMPLETEFalse", "SEEDFalse", "SEEDTrue"}


def test_the_batch_steps_row_by_row_as_one_game_steps(positions):
    starts = positions[:200]
    boards, infos = kernels.pack([position.state for position in starts])
    kernels.step_batch(boards, infos, np.array([position.actions for position in starts]))
    for row, position in enumerate(starts):
        board, info = kernels.from_state(position.state)
        kernels.step(board, info, *position.actions)
        assert np.array_equal(board, boards[row])
        assert np.array_equal(info, infos[row])


def test_a_deactivated_players_end_equals_the_reference():
    """Only `step_commands` deactivates; the arrays refuse its log's text but keep the rest."""
    state = rules.step_commands(rules.init(3), ["GROW 99", "SEED x"])
    with pytest.raises(ValueError, match="no command the arrays can hold"):
        kernels.from_state(state)
    quiet = dataclasses.replace(state, log=())
    board, info = kernels.from_state(quiet)
    assert kernels.end_code(info) == kernels.DEACTIVATED
    assert kernels.end_reason(board, info) == rules.end_reason(quiet)
    assert kernels.returns_of(board, info) == rules.returns(quiet) == (1.0, -1.0)
    assert kernels.to_move(info) == 0


def test_a_log_longer_than_a_day_is_refused():
    state = rules.init(0)
    with pytest.raises(ValueError, match="cannot be played on"):
        kernels.from_state(dataclasses.replace(state, log=(("WAIT", ""),) * kernels.LOG_FRAMES))


def test_encodings_equal_the_reference_for_both_players(positions):
    states = [position.state for position in positions]
    ended = [play(position) for position in positions[:: len(positions) // 50]]
    boards, infos = kernels.pack(states + ended)
    for player in (0, 1):
        expected = np.stack([encoding.encode(state, player)["obs"] for state in states + ended])
        got = kernels.encode_batch(boards, infos, np.full(len(states + ended), player))
        assert got.dtype == np.float32
        assert np.array_equal(got, expected)


def test_playouts_equal_the_reference_playouts_draw_for_draw(positions):
    starts = [rules.init(0, config) for config in CONFIGS] + [p.state for p in positions[::97]]
    starts += starts[:2]  # the last two share one generator, drawn from in state order
    seeds = [*range(len(starts) - 2), 99, 99]
    assert_playouts_draw_for_draw(kernels.playouts, playouts.playouts, starts, seeds)


def test_batched_playouts_return_what_one_at_a_time_returns(positions):
    starts = [position.state for position in positions[::211]]
    boards, infos = kernels.pack(starts)
    words = np.stack([pcg64.state_of(np.random.default_rng(seed)) for seed in range(len(starts))])
    batched = kernels.playout_returns(boards, infos, words, np.arange(len(starts)))
    expected = kernels.playouts(starts, [np.random.default_rng(seed) for seed in range(len(starts))])
    assert np.array_equal(batched, expected)


def reference_playout(state: rules.SpringState, rng: np.random.Generator) -> tuple[rules.SpringState, int]:
    """The final state and the frames of `playouts.playouts`' game from `state`, drawn as it draws."""
    draws: list[float] = []
    frames = 0
    while players := rules.to_move(state):
        joint = []
        for player in players:
            legal = list(rules.action_commands(state, player))
            draws = draws or rng.random(playouts.DRAW_BLOCK).tolist()
            joint.append((legal[min(int(draws.pop() * len(legal)), len(legal) - 1)],))
        state, frames = rules.step(state, joint), frames + 1
    return state, frames


def test_a_random_playout_counts_its_frames_and_ends_where_the_reference_ends():
    for seed, config in enumerate(CONFIGS):
        start = rules.init(seed, config)
        expected, frames = reference_playout(start, np.random.default_rng(seed))
        board, info = kernels.from_state(start)
        words = pcg64.state_of(np.random.default_rng(seed))
        draws, legal = np.empty(playouts.DRAW_BLOCK), np.empty(rules.NUM_ACTIONS, dtype=bool)
        assert kernels.random_playout(board, info, words, draws, legal) == frames
        assert kernels.to_state(board, info) == expected
