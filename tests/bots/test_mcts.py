"""The tree search on toy games with known answers (ARCHITECTURE habit 9), then its contracts."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pytest

from arena_bots.evaluators import (
    Evaluation,
    EvaluationFault,
    NetworkEvaluator,
    RolloutEvaluator,
    masked_softmax,
)
from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, SearchResult, choose_action, describe, search
from arena_games.api import Game, GameSpec


@dataclass(frozen=True)
class Move:
    """An explicit tree node where `player` picks action i to reach children[i]."""

    player: int
    children: tuple[str, ...]


@dataclass(frozen=True)
class End:
    """A finished game: player 0 gets `score`, player 1 gets -score."""

    score: float


Tree = Mapping[str, Move | End]


def tree_game(tree: Tree, width: int = 4) -> Game:
    """A Game over an explicit tree; states are node names, "root" starts."""
    names = list(tree)

    def to_move(state: str) -> tuple[int, ...]:
        node = tree[state]
        if isinstance(node, End):
            return ()
        return (node.player,)

    def legal_masks(state: str, player: int) -> tuple[np.ndarray, ...]:
        mask = np.zeros(width, dtype=bool)
        mask[: len(tree[state].children)] = True
        return (mask,)

    def step(state: str, joint: Sequence[tuple[int, ...]]) -> str:
        return tree[state].children[joint[0][0]]

    def returns(state: str) -> tuple[float, ...]:
        node = tree[state]
        return (node.score, -node.score) if isinstance(node, End) else (0.0, 0.0)

    def encode(state: str, player: int) -> dict[str, np.ndarray]:
        return {"node": np.eye(len(names), dtype=np.float32)[names.index(state)]}

    spec = GameSpec(
        name="toy",
        version=1,
        title="toy tree",
        num_players=2,
        inputs={"node": (len(names),)},
        heads={"move": width},
        max_length=10_000,
    )
    return Game(
        spec=spec,
        init=lambda seed, config: "root",
        to_move=to_move,
        legal_masks=legal_masks,
        step=step,
        returns=returns,
        end_reason=lambda state: "end" if isinstance(tree[state], End) else "",
        encode=encode,
        render=str,
        view=lambda state: {},
        to_dict=lambda state: {"node": state},
        from_dict=lambda data: data["node"],
        opening=lambda seed, config: (),
    )


# Player 0's bait (action 0) looks good to random play (3 of player 1's 4 replies lose) but player
# 1 refutes it; the quiet move (action 1) draws.
TRAP: Tree = {
    "root": Move(0, ("bait", "quiet")),
    "bait": Move(1, ("w1", "w2", "w3", "refute")),
    "quiet": Move(1, ("d1", "d2")),
    "w1": End(1.0),
    "w2": End(1.0),
    "w3": End(1.0),
    "refute": End(-1.0),
    "d1": End(0.0),
    "d2": End(0.0),
}

# Player 0 moves twice in a row after action 0 and can then win; after action 1, player 1 wins. A
# back-up that flips the sign at every level would see action 0 as a loss.
TWICE: Tree = {
    "root": Move(0, ("again", "handover")),
    "again": Move(0, ("lose", "win")),
    "handover": Move(1, ("draw", "lose")),
    "win": End(1.0),
    "lose": End(-1.0),
    "draw": End(0.0),
}


class UniformEvaluator:
    """Uniform priors (or `favour` on action 0) and value 0 for every unfinished position."""

    def __init__(self, favour: float = 0.0) -> None:
        self.favour = favour
        self.calls: list[int] = []

    def evaluate(self, game, states, players, legal=None, rngs=None) -> Evaluation:
        self.calls.append(len(states))
        priors = legal / legal.sum(axis=1, keepdims=True)
        priors[:, 0] += self.favour
        return Evaluation(priors / priors.sum(axis=1, keepdims=True), np.zeros(len(states)))


class LinearBackend:
    """A fake network: policy and value are fixed random linear maps of the one-hot input."""

    def __init__(self, inputs: int, width: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.policy, self.value = rng.normal(size=(inputs, width)), rng.normal(size=inputs)
        self.batches: list[int] = []

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        planes = inputs["node"]
        self.batches.append(len(planes))
        return {"policy": planes @ self.policy, "value": np.tanh(planes @ self.value)[:, None]}


def requests_for(game: Game, states: Sequence, seed: int = 0) -> list[Request]:
    return [
        Request(state, game.to_move(state)[0], np.random.default_rng((seed, i)))
        for i, state in enumerate(states)
    ]


def best_action(game: Game, evaluator, config: SearchConfig, state: str = "root") -> int:
    (result,) = search(game, evaluator, requests_for(game, [state]), config)
    assert not result.fault
    return choose_action(result, 0.0, np.random.default_rng(0))


def random_tree(seed: int, depth: int = 4, branching: int = 3) -> tuple[Tree, int]:
    """A random tree whose players to move are random (so one often moves twice) and its minimax
    best root action for player 0, regenerated until that action is better by at least 0.5."""
    rng = np.random.default_rng(seed)
    while True:
        tree: dict[str, Move | End] = {}
        grow_tree(tree, "root", depth, branching, rng)
        if tree["root"].player != 0:
            continue
        values = sorted((minimax(tree, child), i) for i, child in enumerate(tree["root"].children))
        if values[-1][0] - values[-2][0] >= 0.5:
            return tree, values[-1][1]


def grow_tree(tree: dict[str, Move | End], name: str, depth: int, branching: int, rng) -> None:
    """Adds a random subtree of `depth` levels at `name`, depth first."""
    if depth == 0:
        tree[name] = End(float(rng.integers(-1, 2)))
        return
    tree[name] = Move(int(rng.integers(2)), tuple(f"{name}.{i}" for i in range(branching)))
    for child in tree[name].children:
        grow_tree(tree, child, depth - 1, branching, rng)


def minimax(tree: Tree, name: str) -> float:
    node = tree[name]
    if isinstance(node, End):
        return node.score
    values = [minimax(tree, child) for child in node.children]
    return max(values) if node.player == 0 else min(values)


@pytest.mark.parametrize("rule", ["puct", "uct"])
def test_avoids_the_bait(rule: str) -> None:
    game = tree_game(TRAP)
    evaluator = UniformEvaluator(favour=2.0) if rule == "puct" else RolloutEvaluator()
    assert best_action(game, evaluator, SearchConfig(simulations=300, rule=rule)) == 1


@pytest.mark.parametrize("rule", ["puct", "uct"])
def test_a_player_moving_twice_keeps_its_point_of_view(rule: str) -> None:
    game = tree_game(TWICE)
    evaluator = UniformEvaluator() if rule == "puct" else RolloutEvaluator()
    config = SearchConfig(simulations=200, rule=rule)
    assert best_action(game, evaluator, config) == 0
    assert best_action(game, evaluator, config, state="again") == 1


@pytest.mark.parametrize("leaves", [1, 4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_converges_to_minimax_on_random_trees(seed: int, leaves: int) -> None:
    tree, best = random_tree(seed)
    game = tree_game(tree, width=3)
    puct = SearchConfig(simulations=600, leaves_per_round=leaves)
    uct = SearchConfig(simulations=1500, rule="uct", leaves_per_round=leaves)
    assert best_action(game, UniformEvaluator(), puct) == best
    assert best_action(game, RolloutEvaluator(), uct) == best


def test_virtual_loss_grows_the_batch_and_keeps_the_count() -> None:
    tree, _ = random_tree(5)
    game = tree_game(tree, width=3)
    evaluator = UniformEvaluator()
    config = SearchConfig(simulations=50, leaves_per_round=8)
    results = search(game, evaluator, requests_for(game, ["root", "root.1"]), config)
    assert [result.visits.sum() for result in results] == [50, 50]  # collisions count as visits
    # the roots, then each root's 3 children (its 5 other descents meet them pending), then more
    assert evaluator.calls[:2] == [2, 6]
    assert max(evaluator.calls) > 6
    assert len(evaluator.calls) <= 1 + 7  # ceil(50 / 8) rounds; one with only finished games needs none


def test_root_value_is_the_minimax_value_for_the_mover() -> None:
    game = tree_game(TRAP)
    (result,) = search(game, UniformEvaluator(), requests_for(game, ["bait"]), SearchConfig(simulations=400))
    assert result.value > 0.9  # player 1 to move refutes the bait: +1 for player 1


@pytest.mark.parametrize("leaves", [1, 4])
def test_batched_searches_match_one_at_a_time(leaves: int) -> None:
    """A worker batches the searches of several pairings (with virtual loss, as the AlphaZero player
    searches): each tree still searches as it would alone, so a pairing plays the same in any batch."""
    tree, _ = random_tree(7)
    game = tree_game(tree, width=3)
    states = ["root", "root.0", "root.1", "root.2.0"]
    backend = LinearBackend(len(tree), 3)
    evaluator = NetworkEvaluator(backend, game)
    config = SearchConfig(simulations=60, dirichlet_fraction=0.25, leaves_per_round=leaves)
    together = search(game, evaluator, requests_for(game, states), config)
    if leaves == 1:
        assert max(backend.batches) == len(states)  # one call per round for all trees
    else:
        assert len(states) < max(backend.batches) <= leaves * len(states)
    for index, _state in enumerate(states):
        request = requests_for(game, states)[index]
        (alone,) = search(game, evaluator, [request], config)
        np.testing.assert_array_equal(alone.visits, together[index].visits)
        assert alone.value == together[index].value


def test_one_evaluator_call_per_round() -> None:
    game = tree_game(TRAP)
    evaluator = UniformEvaluator()
    search(game, evaluator, requests_for(game, ["root", "root"]), SearchConfig(simulations=3))
    # the roots, then per round one batch of the trees' new leaves: "bait", "quiet", then a
    # finished game, which needs no evaluation
    assert evaluator.calls == [2, 2, 2]


def test_deep_chain_needs_no_recursion() -> None:
    depth = 250
    chain: dict[str, Move | End] = {"root": Move(0, ("n1",))}
    chain.update({f"n{i}": Move(i % 2, (f"n{i + 1}",)) for i in range(1, depth)})
    chain[f"n{depth}"] = End(1.0)
    game = tree_game(chain, width=1)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)  # far below the tree's depth
    try:
        (result,) = search(
            game, UniformEvaluator(), requests_for(game, ["root"]), SearchConfig(simulations=depth)
        )
    finally:
        sys.setrecursionlimit(limit)
    assert result.visits.tolist() == [depth]
    assert result.value > 0  # the end was reached and backed up through every level


def test_simulations_are_counted_and_every_visit_is_a_descent() -> None:
    game = tree_game(TRAP)
    (result,) = search(game, UniformEvaluator(), requests_for(game, ["root"]), SearchConfig(simulations=37))
    assert result.visits.sum() == 37
    assert result.simulations == 37


def test_insight_is_json_safe_and_best_first() -> None:
    game = tree_game(TRAP)
    (result,) = search(game, UniformEvaluator(favour=1.0), requests_for(game, ["bait"]), SearchConfig(100))
    insight = json.loads(json.dumps(describe(result)))
    assert set(insight) == {"value", "top", "simulations"}
    shares = [move["share"] for move in insight["top"]]
    assert shares == sorted(shares, reverse=True)
    assert insight["top"][0]["action"] == [3]  # the refutation
    assert abs(sum(move["prior"] for move in insight["top"]) - 1) < 1e-3
    assert len(describe(result, top=2)["top"]) == 2


def test_temperature_samples_by_visits() -> None:
    result = SearchResult(
        actions=np.array([4, 7, 9]),
        visits=np.array([10.0, 30.0, 0.0]),
        priors=np.ones(3) / 3,
        action_values=np.array([0.5, 0.1, 0.0]),
        ending_returns=np.zeros(3),
        value=0,
        simulations=40,
    )
    rng = np.random.default_rng(1)
    picks = [choose_action(result, 1.0, rng) for _ in range(2000)]
    assert 9 not in picks
    assert 0.68 < picks.count(7) / len(picks) < 0.82
    cold = [choose_action(result, 0.25, rng) for _ in range(200)]
    assert cold.count(7) > 190  # (3/4)^4 against (1/4)^4


def test_the_move_is_a_found_win_then_most_visits_then_prior_then_mean_value() -> None:
    # A UCT search with fewer simulations than moves visits each move it tries once (Pente's 361
    # points at the ladder's 100): the move whose playout went best is played, not the first tried.
    result = SearchResult(
        actions=np.array([4, 7, 9, 2]),
        visits=np.array([1.0, 1.0, 1.0, 0.0]),
        priors=np.ones(4) / 4,
        action_values=np.array([-1.0, 1.0, -1.0, 0.0]),
        ending_returns=np.zeros(4),
        value=0,
        simulations=3,
    )
    assert choose_action(result, 0.0, np.random.default_rng(0)) == 7
    favoured = replace(result, priors=np.array([0.4, 0.1, 0.4, 0.1]))
    assert choose_action(favoured, 0.0, np.random.default_rng(0)) == 4  # the prior comes first
    winning = replace(result, ending_returns=np.array([0.0, 0.0, 1.0, 0.0]))
    assert choose_action(winning, 0.0, np.random.default_rng(0)) == 9  # a win found beats a lucky playout
    losing = replace(result, visits=np.array([5.0, 1.0, 1.0, 0.0]), ending_returns=np.array([-1.0, 0, 0, 0]))
    assert choose_action(losing, 0.0, np.random.default_rng(0)) == 7  # a loss found is avoided


def test_root_noise_changes_the_search_but_not_the_reported_priors() -> None:
    game = tree_game(TRAP)
    requests = requests_for(game, ["bait"])
    config = SearchConfig(simulations=8, dirichlet_fraction=0.5, dirichlet_alpha=0.3)
    (plain,) = search(game, UniformEvaluator(), requests, SearchConfig(simulations=8))
    (noisy,) = search(game, UniformEvaluator(), requests, config)
    np.testing.assert_allclose(noisy.priors, plain.priors)
    assert noisy.visits.tolist() != plain.visits.tolist()


class FaultyEvaluator(UniformEvaluator):
    """Fails the rows holding `bad_state` (or the whole batch when `crash`)."""

    def __init__(self, bad_state: str = "", crash: bool = False) -> None:
        super().__init__()
        self.bad_state, self.crash = bad_state, crash

    def evaluate(self, game, states, players, legal=None, rngs=None) -> Evaluation:
        if self.crash:
            raise RuntimeError("model host died")
        rows = [i for i, state in enumerate(states) if state == self.bad_state]
        if rows:
            raise EvaluationFault("non-finite outputs", rows)
        return super().evaluate(game, states, players, legal, rngs)


def test_a_fault_stops_only_the_search_that_met_it() -> None:
    game = tree_game(TWICE)
    requests = requests_for(game, ["again", "handover"])
    good, bad = search(game, FaultyEvaluator(bad_state="handover"), requests, SearchConfig(simulations=20))
    assert not good.fault
    assert good.visits.sum() == 20
    assert bad.fault == "non-finite outputs"
    assert bad.actions.size == 0


def test_a_fault_deep_in_the_tree_fails_that_search() -> None:
    tree, _ = random_tree(3)
    game = tree_game(tree, width=3)
    (result,) = search(
        game, FaultyEvaluator(bad_state="root.1"), requests_for(game, ["root"]), SearchConfig(50)
    )
    assert result.fault == "non-finite outputs"


def test_a_crashing_model_fails_every_search() -> None:
    game = tree_game(TRAP)
    results = search(game, FaultyEvaluator(crash=True), requests_for(game, ["root", "bait"]), SearchConfig(5))
    assert [result.fault for result in results] == ["RuntimeError: model host died"] * 2


def test_network_evaluator_masks_and_maps_values() -> None:
    game = tree_game(TRAP)

    class Fixed:
        def run(self, inputs):
            n = len(inputs["node"])
            return {"policy": np.tile([5.0, 0.0, 0.0, 0.0], (n, 1)), "value": np.full(n, 0.75, np.float32)}

    priors, values = NetworkEvaluator(Fixed(), game, value="sigmoid").evaluate(game, ["quiet"], [1])
    assert priors.tolist()[0][2:] == [0.0, 0.0]  # "quiet" has two legal actions
    assert priors[0, 0] > 0.99
    assert abs(priors.sum() - 1) < 1e-9
    assert values.tolist() == [0.5]


def test_network_evaluator_names_non_finite_rows() -> None:
    game = tree_game(TRAP)

    class HalfBroken:
        def run(self, inputs):
            n = len(inputs["node"])
            return {"policy": np.zeros((n, 4)), "value": np.array([0.0, np.nan][:n])}

    with pytest.raises(EvaluationFault) as caught:
        NetworkEvaluator(HalfBroken(), game).evaluate(game, ["root", "bait"], [0, 1])
    assert caught.value.rows == (1,)


def test_masked_softmax_flags_rows_without_a_distribution() -> None:
    legal = np.array([[True, True, False]] * 4)
    logits = np.array([[1.0, -np.inf, np.nan], [np.nan, 0, 0], [np.inf, 0, 0], [-np.inf, -np.inf, 0]])
    probabilities, broken = masked_softmax(logits, legal)
    assert broken.tolist() == [False, True, True, True]
    assert probabilities[0].tolist() == [1.0, 0.0, 0.0]  # -inf on a legal action: never, not broken
    cold, _ = masked_softmax(np.array([[0.0, np.log(2.0), 9.0]]), legal[:1], temperature=0.5)
    np.testing.assert_allclose(cold, [[0.2, 0.8, 0.0]])


def test_rollout_evaluator_averages_playouts_per_leaf() -> None:
    game = tree_game(TRAP)
    rng = np.random.default_rng(0)
    priors, values = RolloutEvaluator(playouts_per_leaf=400).evaluate(game, ["bait"], [1], rngs=[rng])
    assert priors.tolist() == [[0.25] * 4]
    assert -0.7 < values[0] < -0.3  # player 1 wins 1 in 4 random replies: expected -0.5


def test_only_two_player_zero_sum_games_with_one_head_are_searched() -> None:
    game = tree_game(TRAP)
    two_heads = replace(game, spec=replace(game.spec, heads={"a": 2, "b": 2}))
    with pytest.raises(ValueError, match="one action head"):
        search(two_heads, UniformEvaluator(), [Request("root", 0, np.random.default_rng(0))], SearchConfig())


def test_a_request_for_a_player_not_to_move_is_refused() -> None:
    game = tree_game(TRAP)
    with pytest.raises(ValueError, match="to_move"):
        search(game, UniformEvaluator(), [Request("bait", 0, np.random.default_rng(0))], SearchConfig())
