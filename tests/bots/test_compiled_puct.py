"""The compiled PUCT against the reference search (`mcts.search`, rule "puct", a network evaluator):
with a deterministic network the same visits, priors and root values, lockstep and virtual loss
alike, the same faults for rows the network fails, so the AlphaZero player plays the same moves on
both cores (ARENA_CORE) on Bobail."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_compiled_uct import late_state, random_state

from arena_bots import compiled_puct
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, search
from arena_bots.players import MctsPlayer
from arena_games.bobail import GAME as BOBAIL


class LinearNetwork:
    """A deterministic stand-in for a model: policy logits and a tanh value, linear in the input
    planes; a row equal to `broken` (one position's input) gets a NaN value (a model's fault)."""

    def __init__(self, seed: int, broken: np.ndarray | None = None) -> None:
        rng = np.random.default_rng(seed)
        features = int(np.prod(BOBAIL.spec.inputs["board"]))
        self.policy = rng.normal(0, 0.3, (features, BOBAIL.spec.heads["move"])).astype(np.float32)
        self.value = rng.normal(0, 0.05, features).astype(np.float32)
        self.broken = broken
        self.calls: list[int] = []  # batch size per call

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        flat = inputs["board"].reshape(len(inputs["board"]), -1)
        self.calls.append(len(flat))
        values = np.tanh(flat @ self.value)
        if self.broken is not None:
            values[(flat == self.broken.reshape(-1)).all(axis=1)] = np.nan
        return {"policy": flat @ self.policy, "value": values}


def requests(states: list[Any], seed: int) -> list[Request]:
    return [
        Request(state, BOBAIL.to_move(state)[0], np.random.default_rng((seed, i)))
        for i, state in enumerate(states)
    ]


def assert_same(compiled: list, reference: list) -> None:
    for ours, theirs in zip(compiled, reference, strict=True):
        assert ours.fault == theirs.fault
        np.testing.assert_array_equal(ours.actions, theirs.actions)
        np.testing.assert_array_equal(ours.visits, theirs.visits)
        np.testing.assert_array_equal(ours.priors, theirs.priors)
        assert ours.value == theirs.value


POSITIONS = [random_state(seed, plies, BOBAIL) for seed, plies in [(1, 0), (2, 7), (3, 20), (4, 41)]] + [
    late_state(seed, left) for seed, left in [(5, 3), (6, 8), (7, 1)]
]
RUNNING = [state for state in POSITIONS if not BOBAIL.is_over(state)]


@pytest.mark.parametrize("leaves", [1, 4, 8])
@pytest.mark.parametrize("fpu_reduction", [0.0, 0.25])
def test_visits_equal_the_reference_search(leaves: int, fpu_reduction: float) -> None:
    states = RUNNING
    config = SearchConfig(simulations=120, leaves_per_round=leaves, fpu_reduction=fpu_reduction)
    evaluator = NetworkEvaluator(LinearNetwork(leaves), BOBAIL)
    compiled = compiled_puct.search(BOBAIL, evaluator, requests(states, 0), config)
    reference = search(BOBAIL, evaluator, requests(states, 0), config)
    assert_same(compiled, reference)
    assert all(result.visits.sum() == 120 for result in compiled)


def test_one_model_call_per_round_as_the_reference() -> None:
    states = RUNNING[:3]
    config = SearchConfig(simulations=40, leaves_per_round=4)
    calls = []
    for run in (compiled_puct.search, search):
        network = LinearNetwork(0)
        run(BOBAIL, NetworkEvaluator(network, BOBAIL), requests(states, 1), config)
        calls.append(network.calls)
    assert calls[0] == calls[1]
    assert len(calls[0]) == 1 + 40 // 4


def test_rows_the_network_fails_fail_their_search_alone() -> None:
    states = RUNNING[:4]
    broken = BOBAIL.encode(states[1], BOBAIL.to_move(states[1])[0])["board"]
    config = SearchConfig(simulations=60, leaves_per_round=4)
    evaluator = NetworkEvaluator(LinearNetwork(3, broken), BOBAIL)
    compiled = compiled_puct.search(BOBAIL, evaluator, requests(states, 2), config)
    assert_same(compiled, search(BOBAIL, evaluator, requests(states, 2), config))
    assert compiled[1].fault
    assert not compiled[0].fault
    assert not compiled[2].fault


def test_the_alphazero_player_searches_in_the_compiled_tree_on_the_compiled_core(monkeypatch) -> None:
    evaluator = NetworkEvaluator(LinearNetwork(4), BOBAIL)
    decisions = {
        core: MctsPlayer(evaluator, simulations=50, core=core).decide(BOBAIL, requests(RUNNING[:3], 5))
        for core in ("reference", "compiled")
    }
    assert decisions["reference"] == decisions["compiled"]
    monkeypatch.setattr(compiled_puct, "search", lambda *args: pytest.fail("searched in the compiled tree"))
    MctsPlayer(evaluator, simulations=5, core="reference").decide(BOBAIL, requests(RUNNING[:1], 6))
    with pytest.raises(pytest.fail.Exception):
        MctsPlayer(evaluator, simulations=5, core="compiled").decide(BOBAIL, requests(RUNNING[:1], 6))
