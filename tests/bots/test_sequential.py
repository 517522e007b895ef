"""Search of simultaneous-move games through their sequential view (seed 001): the searcher first,
the opponent second, the state advancing once both chose, conflicts in the searcher's favour."""

from __future__ import annotations

import numpy as np
import pytest

from arena_bots.evaluators import Evaluation, NetworkEvaluator, RolloutEvaluator
from arena_bots.match import MatchSetup, Request, play_many
from arena_bots.mcts import SearchConfig, choose_action, search
from arena_bots.players import MctsPlayer, RandomPlayer
from arena_bots.runtime import InProcessSession
from arena_bots.sequential import Sequential, sequential
from arena_games.api import Game, GameSpec
from arena_games.registry import get_game
from arena_games.spring2021 import rules

SPRING = get_game("spring2021")
WAIT = (rules.WAIT_ACTION,)


class CountingUniform:
    """Uniform priors and value 0; records the rows of each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def evaluate(self, game, states, players, legal=None, rngs=None) -> Evaluation:
        self.calls.append(len(states))
        return Evaluation(legal / legal.sum(axis=1, keepdims=True), np.zeros(len(states)))


def _dare() -> Game:
    """One simultaneous throw. The searcher's action 0 (dare) wins +1 unless the opponent answers
    0 too (-1); action 1 (fold) scores 0 whatever the reply. States: () before, (a, b) after."""

    def returns(state):
        if not state:
            return (0.0, 0.0)
        score = 0.0 if state[0] == 1 else (-1.0 if state[1] == 0 else 1.0)
        return (score, -score)

    return Game(
        spec=GameSpec(
            name="dare",
            version=1,
            title="dare",
            num_players=2,
            inputs={"none": (1,)},
            heads={"throw": 2},
            max_length=1,
            simultaneous=True,
        ),
        init=lambda seed, config: (),
        to_move=lambda state: () if state else (0, 1),
        legal_masks=lambda state, player: (np.ones(2, dtype=bool),),
        step=lambda state, joint: (joint[0][0], joint[1][0]),
        returns=returns,
        end_reason=lambda state: "thrown" if state else "",
        encode=lambda state, player: {"none": np.zeros(1, dtype=np.float32)},
        render=repr,
        view=lambda state: {},
        to_dict=lambda state: {"throws": list(state)},
        from_dict=lambda data: tuple(data["throws"]),
        opening=lambda seed, config: (),
    )


def test_a_frame_of_both_players_is_two_plies_the_searcher_first():
    start = SPRING.init(3, None)
    view = sequential(SPRING)
    for searcher in (0, 1):
        root = Sequential(start, searcher)
        assert view.to_move(root) == (searcher,)
        chosen = view.step(root, [WAIT])
        assert chosen.state is start  # nothing happens before both chose
        assert view.to_move(chosen) == (1 - searcher,)
        assert (
            view.encode(chosen, 1 - searcher)["obs"].tolist()
            == SPRING.encode(start, 1 - searcher)["obs"].tolist()
        )
        after = view.step(chosen, [WAIT])
        assert after == Sequential(SPRING.step(start, [WAIT, WAIT]), searcher)


def test_a_player_alone_in_a_frame_plays_it_in_one_ply():
    start = SPRING.init(3, None)
    waited = SPRING.step(start, [WAIT, next_legal_growth(start, 1)])  # player 0 waits for the day
    assert SPRING.to_move(waited) == (1,)
    view = sequential(SPRING)
    root = Sequential(waited, 1)
    assert view.to_move(root) == (1,)
    assert view.step(root, [WAIT]).state == SPRING.step(waited, [WAIT])


def next_legal_growth(state, player: int) -> tuple[int]:
    legal = np.flatnonzero(SPRING.legal_masks(state, player)[0])
    return (int(legal[0]),)


def test_the_opponent_answers_the_searchers_choice_so_a_dare_is_not_taken():
    game = _dare()
    request = Request((), 0, np.random.default_rng(0))
    (result,) = search(game, RolloutEvaluator(), [request], SearchConfig(rule="uct", simulations=200))
    assert choose_action(result, 0.0, np.random.default_rng(0)) == 1  # folding is safe
    assert result.value == pytest.approx(0.0, abs=0.1)


def test_both_seats_searches_share_each_rounds_evaluation():
    start = SPRING.init(5, None)
    evaluator = CountingUniform()
    requests = [Request(start, seat, np.random.default_rng(seat)) for seat in (0, 1)]
    results = search(SPRING, evaluator, requests, SearchConfig(simulations=6))
    assert evaluator.calls == [2] * 7  # the roots, then one batch of both trees' leaves per round
    for seat, result in enumerate(results):
        assert not result.fault
        assert set(result.actions.tolist()) == set(
            np.flatnonzero(SPRING.legal_masks(start, seat)[0]).tolist()
        )
        assert result.simulations == 6


def test_the_alphazero_player_plays_whole_games_of_spring_2021(onnx_bot):
    network = NetworkEvaluator(InProcessSession(onnx_bot("spring2021", seed=1)), SPRING)
    player = MctsPlayer(network, simulations=8)
    results = play_many(
        SPRING, [MatchSetup(players=(player, RandomPlayer()), seed=seed) for seed in range(2)]
    )
    for result in results:
        assert result.forfeit is None
        assert SPRING.is_over(result.final_state)
        searched = [step.insights[0] for step in result.replay.steps if step.insights and step.insights[0]]
        assert searched, "the search's insight goes into the replay"
