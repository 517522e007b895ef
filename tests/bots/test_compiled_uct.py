"""The compiled UCT against the reference search (`mcts.search`, rule "uct", random rollouts): the
same visits, root value and generator draws from the same seeds, so the `uct` house bot plays the
same games on both cores (ARENA_CORE)."""

from __future__ import annotations

import numpy as np
import pytest
from pente_positions import near_full_state

from arena_bots import compiled_uct
from arena_bots.core import selected_core
from arena_bots.evaluators import RolloutEvaluator
from arena_bots.match import MatchSetup, Request, play_many
from arena_bots.mcts import SearchConfig, search
from arena_bots.players import UctPlayer
from arena_games.bobail import GAME as BOBAIL
from arena_games.pente import GAME as PENTE
from arena_games.pente import rules


def random_state(seed: int, plies: int) -> rules.PenteState:
    """The position after `plies` uniformly random moves from the start (the game may end sooner)."""
    rng = np.random.default_rng(seed)
    state = rules.init()
    while state.ply < plies and not state.end:
        state = rules.step(state, [PENTE.random_action(state, state.ply % 2, rng)])
    return state


def requests_for(states: list[rules.PenteState], seed: int) -> list[Request]:
    return [
        Request(state, state.ply % 2, np.random.default_rng((seed, index)))
        for index, state in enumerate(states)
    ]


def assert_same_searches(states: list[rules.PenteState], config: SearchConfig, seed: int = 0) -> None:
    reference, compiled = requests_for(states, seed), requests_for(states, seed)
    expected = search(PENTE, RolloutEvaluator(), reference, config)
    assert compiled_uct.supports(PENTE, config, 1, compiled)
    for got, want in zip(compiled_uct.search(compiled, config), expected, strict=True):
        assert got.actions.tolist() == want.actions.tolist()
        assert got.visits.tolist() == want.visits.tolist()
        assert got.priors.tolist() == want.priors.tolist()
        assert (got.value, got.simulations) == (want.value, want.simulations)
    for after, want in zip(compiled, reference, strict=True):
        assert after.rng.bit_generator.state == want.rng.bit_generator.state


def test_the_opening_and_middle_game_searches_equal_the_reference():
    """Root and leaves under the opening rules (centre only, tournament rule) and a later position."""
    states = [rules.init(), random_state(1, 1), random_state(2, 2), random_state(3, 30)]
    assert_same_searches(states, SearchConfig(simulations=50, rule="uct", exploration=2.0))


def test_searches_that_revisit_children_equal_the_reference():
    """Near-full boards: more simulations than moves, so UCB1's scores (not only the unvisited-first
    order) choose, deep paths reach finished games, and their outcomes are backed up again."""
    states = [near_full_state(seed, empties) for seed, empties in ((0, 6), (1, 9), (2, 14))]
    assert_same_searches(states, SearchConfig(simulations=300, rule="uct", exploration=2.0), seed=4)
    assert_same_searches(states[:1], SearchConfig(simulations=200, rule="uct", exploration=0.5), seed=5)


def test_the_uct_bot_decides_alike_on_both_cores():
    states = [random_state(seed, 12) for seed in range(3)] + [near_full_state(3, 8)]
    decisions = []
    for core in ("reference", "compiled"):
        requests = requests_for(states, 7)
        decisions.append(UctPlayer(simulations=40, core=core).decide(PENTE, requests))
        decisions.append([request.rng.bit_generator.state for request in requests])
    assert decisions[0] == decisions[2]
    assert decisions[1] == decisions[3]


def test_whole_games_replay_the_same_on_both_cores():
    """Two games in lockstep, uct against uct, short by their ply cap (so are the rollouts)."""
    results = []
    for core in ("reference", "compiled"):
        players = (UctPlayer(simulations=30, core=core), UctPlayer(simulations=20, core=core))
        setups = [MatchSetup(players=players, seed=seed, config={"ply_cap": 14}) for seed in (1, 2)]
        results.append(play_many(PENTE, setups))
    assert results[0] == results[1]
    assert [(len(result.replay.steps), result.end_reason) for result in results[1]] == [(14, "ply cap")] * 2


def test_the_compiled_search_checks_the_player_to_move():
    state = random_state(0, 5)
    with pytest.raises(ValueError, match="player"):
        compiled_uct.search(
            [Request(state, 1 - state.ply % 2, np.random.default_rng(0))], SearchConfig(rule="uct")
        )


def test_searches_the_compiled_core_cannot_reproduce_go_to_the_reference():
    requests = requests_for([random_state(0, 5)], 0)
    uct = SearchConfig(rule="uct")
    assert compiled_uct.supports(PENTE, uct, 1, requests)
    assert not compiled_uct.supports(BOBAIL, uct, 1, requests)  # no kernels
    assert not compiled_uct.supports(PENTE, SearchConfig(rule="puct"), 1, requests)
    assert not compiled_uct.supports(PENTE, SearchConfig(rule="uct", leaves_per_round=2), 1, requests)
    assert not compiled_uct.supports(PENTE, uct, 2, requests)  # several playouts per leaf
    assert not compiled_uct.supports(PENTE, uct, 1, requests * 2)  # one generator for two searches
    mt19937 = [Request(requests[0].state, requests[0].player, np.random.Generator(np.random.MT19937(0)))]
    assert not compiled_uct.supports(PENTE, uct, 1, mt19937)


def test_arena_core_selects_the_core(monkeypatch):
    monkeypatch.delenv("ARENA_CORE", raising=False)
    assert selected_core() == "compiled"
    monkeypatch.setenv("ARENA_CORE", "reference")
    assert selected_core() == "reference"
    assert not UctPlayer().compiled
    assert UctPlayer(core="compiled").compiled
    monkeypatch.setenv("ARENA_CORE", "fast")
    with pytest.raises(ValueError, match=r"\(ARENA_CORE\) must be one of reference, compiled, got .fast."):
        UctPlayer()
