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
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform import cli
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.store import bots, users
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


@pytest.fixture
def spring_bots(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> SpringBots:
    with session(engine) as db:
        ladder = ensure_ladder(db, game="spring2021", simulations=8)
        owner, _ = users.create_user(db, name="sprout")
        network = {
            player: bots.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=Manifest(
                    game="spring2021", game_version=GAME.spec.version, name=player, player=player
                ),
                report={},
                model_sha256=blobs.put(onnx_bot("spring2021", seed=index)),
            ).id
            for index, player in enumerate(("greedy", "sample", "mcts"))
        }
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        db.commit()
    return SpringBots(**network, random=house["random"], uct=house["uct"])


def _middle() -> tuple[list[list[list[int]]], Any]:
    """The joint actions of a random game's first MIDDLE_STEPS steps, and the state they reach."""
    steps = play(GAME, [RandomPlayer(), RandomPlayer()], seed=SEED).replay.steps[:MIDDLE_STEPS]
    actions = [[list(action) for action in step.actions] for step in steps]
    state = GAME.init(SEED, None)
    for joint in actions:
        state = GAME.step(state, [tuple(action) for action in joint])
    return actions, state


@pytest.mark.parametrize("player", ["greedy", "sample", "random", "mcts", "uct"])
def test_predict_answers_for_each_seat_from_actions_and_from_a_state(client, spring_bots, player):
    actions, state = _middle()
    bot_id = getattr(spring_bots, player)
    for seat in GAME.to_move(state):
        position = {"bot_id": bot_id, "seed": SEED, "player": seat}
        from_actions = client.post("/api/v1/predict", json={**position, "actions": actions})
        from_state = client.post("/api/v1/predict", json={**position, "state": GAME.to_dict(state)})
        assert from_actions.status_code == from_state.status_code == 200, from_actions.text
        answer = from_actions.json()
        assert (answer["game"], answer["player"]) == ("spring2021", seat)
        assert from_state.json()["action"] == answer["action"]  # the same position, the same seed
        assert GAME.legal_masks(state, seat)[0][answer["action"][0]]
        if player != "random":  # network bots explain themselves with their policy's top moves
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
    broken = []
    for what, change in changes:
        data = {**good, **change}
        broken.append((what, {key: value for key, value in data.items() if value is not None}))
    return broken


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
    for fields, code in cases:
        response = client.post("/api/v1/predict", json={"bot_id": spring_bots.greedy, **fields})
        assert (response.status_code, response.json()["code"]) == (422, code), (fields, response.text)


@pytest.mark.parametrize("player", ["greedy", "sample", "mcts"])
def test_bot_check_of_a_spring_bot(onnx_bot, tmp_path, capsys, player):
    path = tmp_path / f"{player}.onnx"
    path.write_bytes(onnx_bot("spring2021", metadata={"name": f"spring-{player}", "player": player}))
    assert cli.main(["bot", "check", str(path), "--game", "spring2021"]) == 0
    report = capsys.readouterr().out
    assert report.startswith("bot check: OK")
    assert "runtime" in report  # the smoke test ran the model on positions of random games
    assert "warning" not in report
