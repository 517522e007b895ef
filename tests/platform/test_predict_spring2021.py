"""/predict and `arena bot check` on Spring 2021, a simultaneous-move game: network bots that play
without search (greedy, sample) answer for either seat, from actions or from a state, and pass the
check; bots that search get a 4xx or a rejection while tree search cannot run on simultaneous
moves; malformed states get a 4xx, never a crash."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from predict_checks import (
    assert_422s,
    assert_bot_check_passes,
    broken_states,
    network_bots,
    predict_for_each_seat,
    random_position,
)
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.store.ladders import ensure_ladder

GAME = get_game("spring2021")
SEED = 4
WAIT = 37  # the action index of WAIT (37 cells come first)
MIDDLE_STEPS = 12  # steps played before the position asked about


@dataclass(frozen=True)
class SpringBots:
    greedy: int
    sample: int
    mcts: int
    random: int  # house bots
    uct: int
    gardener: int


@pytest.fixture
def spring_bots(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> SpringBots:
    with session(engine) as db:
        ladder = ensure_ladder(db, game="spring2021", simulations=8)
        network = network_bots(db, blobs, ladder, onnx_bot, ("greedy", "sample", "mcts"))
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        db.commit()
    return SpringBots(**network, random=house["random"], uct=house["uct"], gardener=house["gardener"])


def _middle() -> tuple[list[list[list[int]]], Any]:
    """The joint actions of a random game's first MIDDLE_STEPS steps, and the state they reach."""
    return random_position(GAME, SEED, MIDDLE_STEPS)


@pytest.mark.parametrize("player", ["greedy", "sample", "random", "mcts", "uct", "gardener"])
def test_predict_answers_for_each_seat_from_actions_and_from_a_state(client, spring_bots, player):
    for answer in predict_for_each_seat(client, GAME, getattr(spring_bots, player), SEED, _middle()):
        if player not in ("random", "gardener"):  # the others explain themselves with their top moves
            assert answer["insight"]["top"][0]["share"] > 0


def _bad_states() -> list[tuple[str, Any]]:
    """(what is wrong, a state dict) pairs, each one field of a real state broken."""
    _, state = _middle()
    good = GAME.to_dict(state)
    tree = good["trees"][0]
    changes: list[tuple[str, dict[str, Any]]] = [
        ("a key missing", {"day": None}),
        ("an unknown key", {"extra": 1}),
        ("a day past the game", {"day": 99}),
        ("a negative nutrient count", {"nutrients": -1}),
        ("a richness out of range", {"richness": [7] * 37}),
        ("too few cells", {"shadows": [0] * 36}),
        ("a tree off the board", {"trees": [{**tree, "cell": 37}]}),
        ("a tree of size 4", {"trees": [{**tree, "size": 4}]}),
        ("a third player's tree", {"trees": [{**tree, "owner": 2}]}),
        ("two trees on a cell", {"trees": [tree, tree]}),
        ("trees that are no list", {"trees": "AB"}),
        ("waiting that is no pair of booleans", {"waiting": [0, 1]}),
        ("both waiting on a running day", {"waiting": [True, True]}),
        ("a log of numbers", {"log": [[1, 2]]}),
        ("a config that is no dict", {"config": []}),
        ("an unknown config key", {"config": {**good["config"], "no_such_key": 1}}),
        ("a string for the sun", {"sun": "plenty"}),
    ]
    return broken_states(good, changes)


@pytest.mark.parametrize(("what", "state"), _bad_states(), ids=[what for what, _ in _bad_states()])
def test_a_malformed_spring_state_is_a_clear_422(client, spring_bots, what, state):
    response = client.post("/api/v1/predict", json={"bot_id": spring_bots.greedy, "state": state})
    assert response.status_code == 422, (what, response.text)
    assert response.json()["code"] == "bad_state"
    assert "spring2021" in response.json()["detail"]


def test_bad_spring_positions_and_seats_are_clear_422s(client, spring_bots):
    start = GAME.init(SEED, None)
    (first_mask,), (second_mask,) = (GAME.legal_masks(start, seat) for seat in (0, 1))
    illegal = int(np.flatnonzero(~first_mask)[0])
    growing = int(np.flatnonzero(second_mask[:WAIT])[0])
    waiting_state = GAME.step(start, [(WAIT,), (growing,)])  # player 1 waits, player 2 still acts
    over = play(GAME, [RandomPlayer(), RandomPlayer()], seed=SEED).final_state
    cases = [
        ({"actions": [[[WAIT]]]}, "illegal_action"),  # one action where both players move
        ({"actions": [[[illegal], [WAIT]]]}, "illegal_action"),
        ({"actions": [[[WAIT], [WAIT, 0]]]}, "illegal_action"),  # two indices for a one-head game
        ({"state": GAME.to_dict(waiting_state), "player": 0}, "not_to_move"),  # player 1 waited
        ({"state": GAME.to_dict(over)}, "game_over"),
        ({"config": {"MAX_ROUNDS": 0}}, "bad_config"),
    ]
    assert_422s(client, spring_bots.greedy, cases)


@pytest.mark.parametrize("player", ["greedy", "sample", "mcts"])
def test_bot_check_of_a_spring_bot(onnx_bot, tmp_path, capsys, player):
    metadata = {"name": f"spring2021-{player}", "player": player}
    assert_bot_check_passes(onnx_bot("spring2021", metadata=metadata), "spring2021", tmp_path, capsys)
