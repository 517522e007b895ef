"""The players: house bots, search players, greedy and sampling over fake and real backends."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from arena_bots.evaluators import NetworkEvaluator
from arena_bots.loading import house_player
from arena_bots.match import MatchSetup, Request, play, play_many
from arena_bots.players import (
    SEARCH_LEAVES,
    ChainPlayer,
    GreedyPlayer,
    LookaheadPlayer,
    MctsPlayer,
    RacerPlayer,
    RandomPlayer,
    SamplePlayer,
    UctPlayer,
)
from arena_bots.runtime import InProcessSession
from arena_games.api import Game, GameSpec

LEGAL = {"angle": [True, True, False, True], "thrust": [False, True, True]}


def pick_game(heads: Sequence[str] = ("angle",)) -> Game:
    """Four moves, players alternating, with the fixed legal masks LEGAL of the given heads."""
    masks = tuple(np.array(LEGAL[head]) for head in heads)
    spec = GameSpec(
        name="pick",
        version=1,
        title="pick",
        num_players=2,
        inputs={"moves": (1,)},
        heads={head: len(LEGAL[head]) for head in heads},
        max_length=4,
    )
    return Game(
        spec=spec,
        init=lambda seed, config: 0,
        to_move=lambda state: (state % 2,) if state < 4 else (),
        legal_masks=lambda state, player: masks,
        step=lambda state, joint: state + 1,
        returns=lambda state: (0.0, 0.0),
        end_reason=lambda state: "done" if state == 4 else "",
        encode=lambda state, player: {"moves": np.array([state], dtype=np.float32)},
        render=str,
        view=lambda state: {},
        to_dict=lambda state: {"moves": state},
        from_dict=lambda data: data["moves"],
        opening=lambda seed, config: (),
    )


class FixedBackend:
    """Returns the same outputs for every row; `broken_rows` get NaN; `error` is raised instead."""

    def __init__(self, outputs: Mapping[str, Sequence[float]], broken_rows=(), error=None) -> None:
        self.outputs, self.broken_rows, self.error = outputs, broken_rows, error
        self.calls, self.rows = 0, 0

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        rows = len(next(iter(inputs.values())))
        self.rows += rows
        result = {
            name: np.tile(np.asarray(values, dtype=np.float32), (rows, 1))
            for name, values in self.outputs.items()
        }
        for array in result.values():
            array[list(self.broken_rows)] = np.nan
        return result


def requests_for(game: Game, count: int, seed: int = 0) -> list[Request]:
    state = game.init(seed, None)
    return [Request(state, 0, np.random.default_rng((seed, i))) for i in range(count)]


def test_random_player_plays_legal_moves_drawn_from_the_request() -> None:
    game = pick_game(("angle", "thrust"))
    first = RandomPlayer().decide(game, requests_for(game, 50))
    again = RandomPlayer().decide(game, requests_for(game, 50))
    assert [d.action for d in first] == [d.action for d in again]
    assert {d.action[0] for d in first} == {0, 1, 3}
    assert {d.action[1] for d in first} == {1, 2}


def test_greedy_takes_the_best_legal_action() -> None:
    game = pick_game()
    backend = FixedBackend({"policy": [0.0, 1.0, 9.0, 2.0]})  # the favourite, 2, is illegal
    decisions = GreedyPlayer(backend).decide(game, requests_for(game, 3))
    assert backend.calls == 1
    assert [d.action for d in decisions] == [(3,)] * 3
    top = decisions[0].insight["top"]
    assert [move["action"] for move in top] == [[3], [1], [0]]
    assert abs(sum(move["share"] for move in top) - 1) < 1e-3
    assert not any("q" in move for move in top)  # probabilities, not action values


def test_greedy_dqn_takes_the_argmax_of_each_head() -> None:
    game = pick_game(("angle", "thrust"))
    backend = FixedBackend({"q_angle": [0.5, 0.2, 3.0, 0.1], "q_thrust": [7.0, -1.0, 1.0]})
    (decision,) = GreedyPlayer(backend, head_kind="q").decide(game, requests_for(game, 1))
    assert decision.action == (0, 2)
    top = json.loads(json.dumps(decision.insight))["top"]
    assert top[0]["action"] == [0, 2]
    assert len(top) == 6
    assert top[0]["share"] >= top[1]["share"]
    angles, thrusts = [0.5, 0.2, 3.0, 0.1], [7.0, -1.0, 1.0]
    for move in top:  # each move's Q-value: the mean of its heads' values
        angle, thrust = move["action"]
        assert move["q"] == round((angles[angle] + thrusts[thrust]) / 2, 3)


def test_greedy_dqn_plays_csb_four_heads_per_seat_both_seats_in_one_call() -> None:
    """CSB's action is 4 heads (angle, thrust per pod), both seats act each turn; a spent BOOST is masked."""
    game = registered_game("csb")
    q_values = {f"q_{head}": np.arange(size, dtype=np.float32) for head, size in game.spec.heads.items()}
    for head in ("q_thrust0", "q_thrust1"):
        q_values[head][-2] = 100.0  # BOOST is the favourite; SHIELD (last) the runner-up
    backend = FixedBackend(q_values)
    player = GreedyPlayer(backend, head_kind="q")
    state = game.init(4, None)
    requests = [Request(state, seat, np.random.default_rng(seat)) for seat in (0, 1)]
    assert [d.action for d in player.decide(game, requests)] == [(36, 50, 36, 50)] * 2
    boosted = game.step(state, [(18, 50, 18, 0), (18, 0, 18, 0)])  # player 0's first pod boosts
    decisions = player.decide(game, [Request(boosted, seat, np.random.default_rng(seat)) for seat in (0, 1)])
    assert [d.action for d in decisions] == [(36, 51, 36, 50), (36, 50, 36, 50)]
    assert backend.calls == 2


def test_the_racer_house_bot_beats_random_at_csb_and_plays_nothing_else() -> None:
    game = registered_game("csb")
    racer = house_player("racer", simulations=1)
    assert isinstance(racer, RacerPlayer)
    for seats, winner in (((racer, RandomPlayer()), 0), ((RandomPlayer(), racer), 1)):
        result = play(game, seats, seed=11)
        assert result.forfeit is None
        assert result.returns[winner] == 1.0
    with pytest.raises(ValueError, match="plays csb only"):
        racer.decide(registered_game("bobail"), requests_for(registered_game("bobail"), 1))


def test_sample_follows_the_softmax_at_its_temperature() -> None:
    game = pick_game()
    backend = FixedBackend({"policy": [0.0, math.log(3.0), 50.0, 0.0]})  # legal odds 1 : 3 : 1
    warm = SamplePlayer(backend).decide(game, requests_for(game, 3000))
    shares = np.bincount([d.action[0] for d in warm], minlength=4) / 3000
    np.testing.assert_allclose(shares, [0.2, 0.6, 0.0, 0.2], atol=0.03)
    cold = SamplePlayer(backend, temperature=0.2).decide(game, requests_for(game, 500))
    assert sum(d.action == (1,) for d in cold) > 480  # odds 1 : 243 : 1


def test_a_failing_backend_faults_every_request() -> None:
    game = pick_game()
    host = pytest.importorskip("arena_bots.host", reason="the model host is not written yet")
    error = host.ModelFault("timeout", "the model took longer than 10 s")
    for player in (GreedyPlayer(FixedBackend({}, error=error)), SamplePlayer(FixedBackend({}, error=error))):
        decisions = player.decide(game, requests_for(game, 2))
        assert [d.action for d in decisions] == [None, None]
        assert all("timeout" in d.fault for d in decisions)


def test_non_finite_outputs_fault_only_their_request() -> None:
    game = pick_game()
    backend = FixedBackend({"policy": [0.0, 1.0, 0.0, 2.0]}, broken_rows=[1])
    decisions = GreedyPlayer(backend).decide(game, requests_for(game, 3))
    assert [d.action for d in decisions] == [(3,), None, (3,)]
    assert "non-finite" in decisions[1].fault


def test_a_missing_output_is_a_fault_not_an_exception() -> None:
    game = pick_game()
    (decision,) = GreedyPlayer(FixedBackend({"logits": [0.0] * 4})).decide(game, requests_for(game, 1))
    assert decision.action is None
    assert "no output 'policy'" in decision.fault


def test_mcts_player_answers_every_request_with_an_insight() -> None:
    game = pick_game()
    backend = FixedBackend({"policy": [0.0, 1.0, 0.0, 2.0], "value": [0.0]})
    player = MctsPlayer(NetworkEvaluator(backend, game), simulations=12)
    decisions = player.decide(game, requests_for(game, 4))
    assert backend.calls <= 13  # the roots, then one batch per round
    for decision in decisions:
        assert decision.action in {(0,), (1,), (3,)}
        insight = json.loads(json.dumps(decision.insight))
        assert insight["simulations"] == 12
        assert insight["top"][0]["action"] == list(decision.action)


def test_mcts_player_sends_several_positions_of_one_game_per_model_call() -> None:
    """A worker's task holds a few games per bot, so each search adds SEARCH_LEAVES leaves per round
    (virtual loss): its model calls carry several positions even for one game, the budget exact."""
    game = registered_game("bobail")
    backend = FixedBackend({"policy": [0.0] * 200, "value": [0.0]})
    player = MctsPlayer(NetworkEvaluator(backend, game), simulations=40)
    [decision] = player.decide(game, requests_for(game, 1))
    assert decision.insight["simulations"] == 40
    assert SEARCH_LEAVES >= 4
    assert backend.calls <= 1 + 40 // SEARCH_LEAVES  # the root, then one call per round
    assert backend.rows / backend.calls > 2


def test_mcts_player_turns_model_faults_into_decision_faults() -> None:
    game = pick_game()
    player = MctsPlayer(NetworkEvaluator(FixedBackend({}, error=OSError("host gone")), game), simulations=5)
    decisions = player.decide(game, requests_for(game, 2))
    assert [d.fault for d in decisions] == ["OSError: host gone"] * 2


def test_mcts_player_with_temperature_samples_from_the_request() -> None:
    game = pick_game()
    backend = FixedBackend({"policy": [0.0, 0.0, 0.0, 0.0], "value": [0.0]})
    player = MctsPlayer(NetworkEvaluator(backend, game), simulations=30, temperature=1.0)
    actions = {d.action for d in player.decide(game, requests_for(game, 40))}
    assert actions == {(0,), (1,), (3,)}


def registered_game(name: str) -> Game:
    try:
        registry = importlib.import_module("arena_games.registry")
    except ImportError as error:
        pytest.skip(f"arena_games.registry does not import yet: {error}")
    return registry.get_game(name)


def search_insights(steps: Sequence) -> list[dict]:
    """The insights of a replay's steps that have one (the random player's moves have none)."""
    return [insight for step in steps for insight in step.insights if insight]


@pytest.mark.parametrize(("name", "simulations"), [("bobail", 40), ("pente", 6)])
def test_uct_plays_a_whole_game_against_random(name: str, simulations: int) -> None:
    game = registered_game(name)
    result = play(game, [UctPlayer(simulations=simulations), RandomPlayer()], seed=3)
    assert result.forfeit is None
    assert result.end_reason
    insights = search_insights(result.replay.steps)
    assert insights
    assert all(insight["simulations"] == simulations for insight in insights)


@pytest.mark.parametrize(("name", "simulations"), [("bobail", 30), ("pente", 10)])
@pytest.mark.parametrize(("playouts_per_leaf", "leaves_per_round"), [(1, 1), (2, 3)])
def test_uct_decides_the_same_alone_and_searched_with_other_positions(
    name: str, simulations: int, playouts_per_leaf: int, leaves_per_round: int
) -> None:
    """A worker may batch any games together, or replay one alone after a crash: same moves."""
    game = registered_game(name)
    states = []
    for seed in range(3):
        state = game.init(seed, None)
        for joint in game.opening(seed, None):
            state = game.step(state, joint)
        states.append(state)

    def request(index: int, seed: int = 0) -> Request:
        state = states[index]
        return Request(state, game.to_move(state)[0], np.random.default_rng((seed, index)))

    uct = UctPlayer(
        simulations=simulations, playouts_per_leaf=playouts_per_leaf, leaves_per_round=leaves_per_round
    )
    others = [request(index, seed=1) for index in range(len(states))]
    together = uct.decide(game, [*others, *(request(index) for index in reversed(range(len(states))))])
    for index in range(len(states)):
        (alone,) = uct.decide(game, [request(index)])
        assert alone.action is not None
        assert alone == together[-1 - index]


def test_uct_beats_random_at_bobail() -> None:
    game = registered_game("bobail")
    uct, random = UctPlayer(simulations=100), RandomPlayer()
    setups = [
        MatchSetup(players=seats, seed=seed) for seed in range(2) for seats in ((uct, random), (random, uct))
    ]
    results = play_many(game, setups)
    wins = sum(
        result.returns[setup.players.index(uct)] > 0 for setup, result in zip(setups, results, strict=True)
    )
    assert wins >= 3


def tiny_network(game: Game, seed: int = 0) -> bytes:
    """An ONNX model of the network contract: every input flattened, one linear layer to the
    policy logits and one to a tanh value."""
    rng = np.random.default_rng(seed)
    features = sum(math.prod(shape) for shape in game.spec.inputs.values())
    (actions,) = game.spec.heads.values()
    flatten = [helper.make_node("Flatten", [name], [f"{name}_flat"], axis=1) for name in game.spec.inputs]
    nodes = [
        *flatten,
        helper.make_node("Concat", [node.output[0] for node in flatten], ["features"], axis=1),
        helper.make_node("MatMul", ["features", "policy_weights"], ["policy"]),
        helper.make_node("MatMul", ["features", "value_weights"], ["value_raw"]),
        helper.make_node("Tanh", ["value_raw"], ["value"]),
    ]
    weights = [
        numpy_helper.from_array(rng.normal(0, 0.1, (features, actions)).astype(np.float32), "policy_weights"),
        numpy_helper.from_array(rng.normal(0, 0.1, (features, 1)).astype(np.float32), "value_weights"),
    ]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *shape])
        for name, shape in game.spec.inputs.items()
    ]
    outputs = [
        helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", actions]),
        helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1]),
    ]
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.parametrize(("name", "simulations"), [("bobail", 24), ("pente", 8)])
def test_mcts_with_a_hosted_network_plays_a_pairing(name: str, simulations: int) -> None:
    game = registered_game(name)
    host = pytest.importorskip("arena_bots.host", reason="the model host is not written yet")
    with host.ModelHost(tiny_network(game)) as backend:
        mcts = MctsPlayer(NetworkEvaluator(backend, game), simulations=simulations)
        random = RandomPlayer()
        setups = [MatchSetup(players=(mcts, random), seed=5), MatchSetup(players=(random, mcts), seed=5)]
        results = play_many(game, setups)
    for seat, result in enumerate(results):
        assert result.forfeit is None
        assert result.end_reason
        insights = search_insights(result.replay.steps)
        assert insights, f"mcts in seat {seat}"
        assert all(-1 <= insight["value"] <= 1 for insight in insights)


# --- Smash the Code's chain builder ---------------------------------------------------------------


def smash_state(rows: Sequence[str], pair: tuple[int, int]) -> Any:
    """Turn 0 of Smash with player 0's well given by its lowest rows (top first) and this pair."""
    smash_rules = importlib.import_module("arena_games.smash.rules")
    start = smash_rules.init(0)
    well = smash_rules.well_from_rows(["......"] * (12 - len(rows)) + list(rows), 6)
    return dataclasses.replace(start, pairs=(pair, *start.pairs[1:]), wells=(well, start.wells[1]))


def test_the_chain_bot_fires_a_ready_three_step_chain() -> None:
    smash = registered_game("smash")
    state = smash_state([".3....", ".3....", "41....", "12....", "12....", "12.3.."], (2, 3))
    (decision,) = ChainPlayer().decide(smash, [Request(state, 0, np.random.default_rng(0))])
    assert decision.action == (7,)  # column 2, B on top (placement 5 + 2): 1000 points


def test_the_chain_bot_beats_random_and_plays_only_smash() -> None:
    smash = registered_game("smash")
    chain = house_player("chain", simulations=1)
    results = play_many(
        smash,
        [MatchSetup(players=seats, seed=4) for seats in ((chain, RandomPlayer()), (RandomPlayer(), chain))],
    )
    assert [result.returns for result in results] == [(1.0, -1.0), (-1.0, 1.0)]
    (refused,) = chain.decide(registered_game("bobail"), requests_for(registered_game("bobail"), 1))
    assert refused.fault == "the chain house bot plays only Smash the Code"


def test_the_chain_bot_values_nothing_when_no_well_has_room() -> None:
    smash_batch = importlib.import_module("arena_games.smash.playouts")
    full = np.ones((2, 12, 6), dtype=np.int8)  # two wells filled to the top
    pairs = np.array([[1, 2], [3, 4]])
    for values in (ChainPlayer().values_many(full, pairs), LookaheadPlayer().values_many(full, pairs, pairs)):
        assert values.shape == (2, len(smash_batch.legal(full)[0]))
        assert np.all(values == -np.inf)


def test_the_lookahead_bot_adds_the_best_chain_value_of_the_next_pair() -> None:
    smash_batch = importlib.import_module("arena_games.smash.playouts")
    wells = np.full((1, 12, 6), smash_batch.EMPTY, dtype=np.int8)
    wells[0, :3, :2] = [[1, 2], [1, 2], [3, 3]]  # row 0 the bottom
    pair, next_pair = np.array([[1, 2]]), np.array([[3, 1]])
    lookahead = LookaheadPlayer(next_weight=0.5, keep=5)
    values = lookahead.values_many(wells, pair, next_pair)
    first = ChainPlayer().values_many(wells, pair)
    looked = np.flatnonzero(np.isfinite(values[0]))
    assert set(looked) == set(np.argsort(-first[0], kind="stable")[:5])  # the chain bot's top five
    for action in looked:
        placed = wells.copy()
        points, _ = smash_batch.resolve_many(placed, smash_batch.place_many(placed, pair, np.array([action])))
        after = ChainPlayer().values_many(placed, next_pair).max()
        assert values[0, action] == pytest.approx(points[0] + 0.5 * after)


def test_the_lookahead_bot_beats_the_chain_bot_and_plays_only_smash() -> None:
    smash = registered_game("smash")
    lookahead, chain = (
        house_player("lookahead", simulations=1, game="smash"),
        house_player("chain", simulations=1),
    )
    results = play_many(
        smash, [MatchSetup(players=seats, seed=3) for seats in ((lookahead, chain), (chain, lookahead))]
    )
    assert [result.returns for result in results] == [(1.0, -1.0), (-1.0, 1.0)]
    (refused,) = lookahead.decide(registered_game("bobail"), requests_for(registered_game("bobail"), 1))
    assert refused.fault == "the lookahead house bot plays only Smash the Code"
    with pytest.raises(ValueError, match="plays smash only"):
        house_player("lookahead", simulations=1, game="pente")


def test_the_gardener_beats_random_and_plays_only_spring() -> None:
    spring = registered_game("spring2021")
    gardener = house_player("gardener", simulations=1, game="spring2021")
    setups = [
        MatchSetup(players=seats, seed=3)
        for seats in ((gardener, RandomPlayer()), (RandomPlayer(), gardener))
    ]
    assert [result.returns for result in play_many(spring, setups)] == [(1.0, -1.0), (-1.0, 1.0)]
    (refused,) = gardener.decide(registered_game("bobail"), requests_for(registered_game("bobail"), 1))
    assert refused.fault == "the gardener house bot plays only Spring 2021"


def test_the_threats_bot_beats_random_and_uct_and_plays_only_pente() -> None:
    pente = registered_game("pente")
    threats = house_player("threats", simulations=1, game="pente")
    setups = [
        MatchSetup(players=seats, seed=seed)
        for seed in (3, 4)
        for seats in ((threats, RandomPlayer()), (UctPlayer(simulations=30), threats))
    ]
    results = play_many(pente, setups)
    assert all(result.forfeit is None for result in results)
    assert [result.returns for result in results] == [(1.0, -1.0), (-1.0, 1.0)] * 2
    (refused,) = threats.decide(registered_game("bobail"), requests_for(registered_game("bobail"), 1))
    assert refused.fault == "the threats house bot plays only Pente"
    with pytest.raises(ValueError, match="plays pente only"):
        house_player("threats", simulations=1, game="smash")


def test_uct_searches_smash_simultaneously_to_the_turn_limit() -> None:
    smash = registered_game("smash")
    result = play(smash, [UctPlayer(simulations=8), ChainPlayer()], seed=2, config={"TURN_LIMIT": 4})
    assert result.forfeit is None
    assert "turn limit 4 reached" in result.end_reason
    assert all(insight["simulations"] == 8 for insight in search_insights(result.replay.steps))


def test_network_players_search_greedy_and_sample_at_smash() -> None:
    smash = registered_game("smash")
    session = InProcessSession(tiny_network(smash), threads=1)
    mcts = MctsPlayer(NetworkEvaluator(session, smash), simulations=8)
    setups = [
        MatchSetup(players=(mcts, GreedyPlayer(session)), seed=1, config={"TURN_LIMIT": 5}),
        MatchSetup(players=(SamplePlayer(session), ChainPlayer()), seed=2, config={"TURN_LIMIT": 5}),
    ]
    for result in play_many(smash, setups):
        assert result.forfeit is None
        assert result.end_reason
