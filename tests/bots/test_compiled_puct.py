"""The compiled PUCT against the reference search (`mcts.search`, rule "puct", a network evaluator):
with a deterministic network the same visits, priors and root values, lockstep and virtual loss
alike, the same faults for rows the network fails, so the AlphaZero player plays the same moves on
both cores (ARENA_CORE) on Bobail and Pente (two network inputs: its board planes and captures);
Spring 2021 and Smash (three inputs; skulls waiting and landing) as their sequential views, both
seats of a frame; root noise drawn as the reference draws it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from test_compiled_uct import SEQUENTIAL_STATES, late_state, random_state

from arena_bots import compiled_puct
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.match import MatchSetup, Request, play_many
from arena_bots.mcts import SearchConfig, search
from arena_bots.players import MctsPlayer
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.pente import GAME as PENTE
from arena_games.smash import GAME as SMASH
from arena_games.smash.rules import HEIGHT, SKULL, SmashState
from arena_games.spring2021 import GAME as SPRING2021
from arena_games.spring2021 import rules as spring_rules


class LinearNetwork:
    """A deterministic stand-in for a model of `game`: policy logits and a tanh value, linear in its
    inputs (all of them, flat, in the spec's order); a row equal to `broken` (one position's inputs,
    flat) gets a NaN value (a model's fault)."""

    def __init__(self, seed: int, game: Game = BOBAIL, broken: np.ndarray | None = None) -> None:
        rng = np.random.default_rng(seed)
        features = sum(int(np.prod(shape)) for shape in game.spec.inputs.values())
        scale = 1 / np.sqrt(features)  # logits and values of about 10 and 1.6 (standard deviations)
        (actions,) = game.spec.heads.values()
        self.policy = rng.normal(0, 10 * scale, (features, actions)).astype(np.float32)
        self.value = rng.normal(0, 1.6 * scale, features).astype(np.float32)
        self.broken = broken
        self.calls: list[int] = []  # batch size per call

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        flat = np.concatenate([planes.reshape(len(planes), -1) for planes in inputs.values()], axis=1)
        self.calls.append(len(flat))
        values = np.tanh(flat @ self.value)
        if self.broken is not None:
            values[(flat == self.broken.reshape(-1)).all(axis=1)] = np.nan
        return {"policy": flat @ self.policy, "value": values}


def requests(states: list[Any], seed: int, game: Game = BOBAIL) -> list[Request]:
    """One request per state and player to move: the first movers' in the states' order, then the
    second movers' of a simultaneous game's frames of two."""
    seats = [
        (state, player) for seat in (0, 1) for state in states for player in game.to_move(state)[seat:][:1]
    ]
    return [
        Request(state, player, np.random.default_rng((seed, i))) for i, (state, player) in enumerate(seats)
    ]


def assert_same(compiled: list, reference: list) -> None:
    for ours, theirs in zip(compiled, reference, strict=True):
        assert ours.fault == theirs.fault
        np.testing.assert_array_equal(ours.actions, theirs.actions)
        np.testing.assert_array_equal(ours.visits, theirs.visits)
        np.testing.assert_array_equal(ours.priors, theirs.priors)
        np.testing.assert_array_equal(ours.action_values, theirs.action_values)
        np.testing.assert_array_equal(ours.ending_returns, theirs.ending_returns)
        assert ours.value == theirs.value


def skull_state(seed: int, turns: int) -> SmashState:
    """Smash after `turns` random turns, a skull on top of every column of both wells with room
    for it, and 410 and 400 points unsent: a clear next to a skull takes it, and any clear sends a
    line of skulls (420 points)."""

    def topped(well: tuple) -> tuple:
        return tuple((*column, SKULL) if len(column) < HEIGHT else column for column in well)

    state = random_state(seed, turns, SMASH)
    return dataclasses.replace(state, wells=tuple(map(topped, state.wells)), unsent=(410, 400))


POSITIONS = {  # per game: positions near the start (the opening rules' bans), mid-game, near the end
    "bobail": [random_state(seed, plies, BOBAIL) for seed, plies in [(1, 0), (2, 7), (3, 20), (4, 41)]]
    + [late_state(seed, left) for seed, left in [(5, 3), (6, 8), (7, 1)]],
    "pente": [random_state(seed, plies, PENTE) for seed, plies in [(1, 0), (2, 1), (3, 2), (5, 160)]]
    + [late_state(seed, left, PENTE) for seed, left in [(8, 2), (9, 5), (10, 1)]],  # captures up to 4
    "spring2021": SEQUENTIAL_STATES["spring2021"],  # frames of one mover too; the last ones end soon
    "smash": SEQUENTIAL_STATES["smash"]  # the start, mid-game, two wells about to block
    + [skull_state(seed, turns) for seed, turns in [(4, 20), (9, 12), (11, 20)]],  # the last nearly full
}
RUNNING = {
    game.name: [state for state in POSITIONS[game.name] if not game.is_over(state)]
    for game in (BOBAIL, PENTE, SPRING2021, SMASH)
}
GAMES = [pytest.param(game, id=game.name) for game in (BOBAIL, PENTE, SPRING2021, SMASH)]


def flat_inputs(game: Game, state: Any) -> np.ndarray:
    """The state's network inputs for its player to move, flat, in the spec's order."""
    inputs = game.encode(state, game.to_move(state)[0])
    return np.concatenate([inputs[name].reshape(-1) for name in game.spec.inputs])


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("leaves", [1, 4, 8])
@pytest.mark.parametrize("fpu_reduction", [0.0, 0.25])
def test_visits_equal_the_reference_search(game: Game, leaves: int, fpu_reduction: float) -> None:
    states = RUNNING[game.name]
    config = SearchConfig(simulations=120, leaves_per_round=leaves, fpu_reduction=fpu_reduction)
    evaluator = NetworkEvaluator(LinearNetwork(leaves, game), game)
    compiled = compiled_puct.search(game, evaluator, requests(states, 0, game), config)
    reference = search(game, evaluator, requests(states, 0, game), config)
    assert_same(compiled, reference)
    assert all(result.visits.sum() == 120 for result in compiled)


def test_the_smash_positions_drop_and_clear_skulls_in_a_turn() -> None:
    def skulls(state: SmashState) -> list[int]:
        return [sum(column.count(SKULL) for column in well) for well in state.wells]

    for state in POSITIONS["smash"][-3:]:
        first, second = (np.flatnonzero(SMASH.legal_masks(state, player)[0]) for player in (0, 1))
        after = np.array([skulls(SMASH.step(state, [(a,), (b,)])) for a in first for b in second])
        assert (after > skulls(state)).any()
        assert (after < skulls(state)).any()


@pytest.mark.parametrize("leaves", [1, 4])
def test_root_noise_is_drawn_as_the_reference_draws_it(leaves: int) -> None:
    """Self-play's search: the same Dirichlet draws from each request's generator, so the same
    visits and the generators left in the same state; a root the network fails draws none."""
    states = RUNNING["bobail"]
    broken = BOBAIL.encode(states[2], BOBAIL.to_move(states[2])[0])["board"]
    config = SearchConfig(
        simulations=80, leaves_per_round=leaves, dirichlet_fraction=0.25, dirichlet_alpha=0.5
    )
    evaluator = NetworkEvaluator(LinearNetwork(7, BOBAIL, broken.reshape(-1)), BOBAIL)
    assert compiled_puct.supports(BOBAIL, evaluator, config)
    ours, theirs = requests(states, 8), requests(states, 8)
    compiled = compiled_puct.search(BOBAIL, evaluator, ours, config)
    assert_same(compiled, search(BOBAIL, evaluator, theirs, config))
    assert compiled[2].fault
    quiet = compiled_puct.search(
        BOBAIL, evaluator, requests(states, 8), SearchConfig(simulations=80, leaves_per_round=leaves)
    )
    assert any((a.visits != b.visits).any() for a, b in zip(compiled, quiet, strict=True) if not a.fault)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.rng.bit_generator.state == reference.rng.bit_generator.state


def seat_requests(game: Game, states: list[Any], seed: int) -> list[Request]:
    """A request per player to move in each state (both seats of a simultaneous frame)."""
    return [
        Request(state, player, np.random.default_rng((seed, i, player)))
        for i, state in enumerate(states)
        for player in game.to_move(state)
    ]


SIMULTANEOUS = [pytest.param(game, id=game.name) for game in (SPRING2021, SMASH)]


@pytest.mark.parametrize("game", SIMULTANEOUS)
@pytest.mark.parametrize("leaves", [1, 4])
@pytest.mark.parametrize("noise", [0.0, 0.25])
def test_simultaneous_searches_as_their_sequential_view_equal_the_reference(
    game: Game, leaves: int, noise: float
) -> None:
    states = RUNNING[game.name]
    config = SearchConfig(simulations=60, leaves_per_round=leaves, dirichlet_fraction=noise)
    evaluator = NetworkEvaluator(LinearNetwork(leaves, game), game)
    ours, theirs = seat_requests(game, states, 3), seat_requests(game, states, 3)
    assert compiled_puct.supports(game, evaluator, config)
    assert_same(compiled_puct.search(game, evaluator, ours, config), search(game, evaluator, theirs, config))
    assert len(ours) > len(states)  # frames where both seats search
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.rng.bit_generator.state == reference.rng.bit_generator.state


def test_one_model_call_per_round_as_the_reference() -> None:
    states = RUNNING["bobail"][:3]
    config = SearchConfig(simulations=40, leaves_per_round=4)
    calls = []
    for run in (compiled_puct.search, search):
        network = LinearNetwork(0)
        run(BOBAIL, NetworkEvaluator(network, BOBAIL), requests(states, 1), config)
        calls.append(network.calls)
    assert calls[0] == calls[1]
    assert len(calls[0]) == 1 + 40 // 4


@pytest.mark.parametrize("game", GAMES)
def test_rows_the_network_fails_fail_their_search_alone(game: Game) -> None:
    states = RUNNING[game.name][-4:]  # of different games: no search reaches another's position
    config = SearchConfig(simulations=60, leaves_per_round=4)
    evaluator = NetworkEvaluator(LinearNetwork(3, game, flat_inputs(game, states[1])), game)
    compiled = compiled_puct.search(game, evaluator, requests(states, 2, game), config)
    assert_same(compiled, search(game, evaluator, requests(states, 2, game), config))
    assert compiled[1].fault
    assert not compiled[0].fault
    assert not compiled[2].fault


@pytest.mark.parametrize("game", GAMES)
def test_the_alphazero_player_searches_in_the_compiled_tree_on_the_compiled_core(
    game: Game, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluator = NetworkEvaluator(LinearNetwork(4, game), game)
    states = RUNNING[game.name]
    decisions = {
        core: MctsPlayer(evaluator, simulations=50, core=core).decide(game, requests(states[:3], 5, game))
        for core in ("reference", "compiled")
    }
    assert decisions["reference"] == decisions["compiled"]
    monkeypatch.setattr(compiled_puct, "search", lambda *args: pytest.fail("searched in the compiled tree"))
    MctsPlayer(evaluator, simulations=5, core="reference").decide(game, requests(states[:1], 6, game))
    with pytest.raises(pytest.fail.Exception):
        MctsPlayer(evaluator, simulations=5, core="compiled").decide(game, requests(states[:1], 6, game))


@pytest.mark.parametrize(
    ("game", "config"),
    [(SPRING2021, {"MAX_ROUNDS": 6}), (SMASH, {"TURN_LIMIT": 8})],
    ids=["spring2021", "smash"],
)
def test_whole_simultaneous_games_replay_the_same_on_both_cores(
    game: Game, config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two short games in lockstep (6 days, 8 turns), AlphaZero against AlphaZero with different
    networks, every frame of both seats searched in the compiled tree on the compiled core."""
    compiled_calls = []
    compiled_search = compiled_puct.search
    monkeypatch.setattr(
        compiled_puct, "search", lambda *args: compiled_calls.append(1) or compiled_search(*args)
    )
    results = []
    for core in ("reference", "compiled"):
        players = tuple(
            MctsPlayer(NetworkEvaluator(LinearNetwork(seed, game), game), simulations=20, core=core)
            for seed in (8, 9)
        )
        setups = [MatchSetup(players=players, seed=seed, config=config) for seed in (1, 2)]
        results.append(play_many(game, setups))
    assert results[0] == results[1]
    assert all(result.end_reason for result in results[1])
    assert compiled_calls


def test_spring_positions_the_kernels_cannot_hold_are_searched_by_the_reference() -> None:
    """A Spring frame with a rejected command logs the referee's reason, which the arrays cannot
    hold: the compiled PUCT refuses it (ValueError), and the AlphaZero player searches it with the
    reference instead, with the same moves on both cores."""
    state = spring_rules.step_commands(SPRING2021.init(3, None), ["GROW 99", "WAIT"])
    evaluator = NetworkEvaluator(LinearNetwork(5, SPRING2021), SPRING2021)
    with pytest.raises(ValueError, match="no command the arrays can hold"):
        compiled_puct.search(SPRING2021, evaluator, requests([state], 7, SPRING2021), SearchConfig())
    decisions = [
        MctsPlayer(evaluator, simulations=20, core=core).decide(SPRING2021, requests([state], 7, SPRING2021))
        for core in ("reference", "compiled")
    ]
    assert decisions[0] == decisions[1]
