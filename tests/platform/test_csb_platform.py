"""Coders Strike Back on the platform: a game of four action heads (angle and thrust per pod).

Its ladder's house bots are random and the racer (tree search plays one head only), a greedy or
sampling network bot uploads and answers /predict with each head's outputs in its insight, and a
searching bot is refused on upload with a reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_bots.match import play
from arena_bots.players import RacerPlayer
from arena_bots.validation import validate_static
from arena_games.registry import get_game
from arena_platform.blobs import BlobStore
from arena_platform.cli import serve
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.settings import Settings
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder

GAME = get_game("csb")
SEED = 5
MIDDLE_STEPS = 20


@pytest.mark.parametrize(
    ("game", "house"),
    [
        ("csb", {"random", "racer"}),
        ("smash", {"random", "uct", "chain", "lookahead"}),
        ("spring2021", {"random", "uct", "gardener"}),
        ("bobail", {"random", "uct"}),
    ],
)
def test_a_ladder_gets_the_house_bots_of_its_game(engine: Engine, game, house):
    with session(engine) as db:
        ladder = ensure_ladder(db, game=game, simulations=8)
        rows = db.exec(select(Bot).where(Bot.ladder_id == ladder.id)).all()
        db.commit()
    assert {(bot.name, bot.player, bot.kind) for bot in rows} == {(name, name, "house") for name in house}


def test_the_demo_ladder_of_a_game_without_zoo_bots_has_its_house_bots(
    engine: Engine, blobs: BlobStore, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(serve, "ZOO", tmp_path / "zoo")  # no csb folder at all
    running = serve.Services(Settings(data_dir=tmp_path), engine, blobs, lambda *_: None)
    ladder = serve.load_zoo_ladder(running, "csb")
    assert "no zoo bots for csb" in capsys.readouterr().out
    (tmp_path / "zoo" / "csb").mkdir(parents=True)  # an empty folder: the same
    assert serve.load_zoo_ladder(running, "csb").id == ladder.id
    assert "house bots only (random, racer)" in capsys.readouterr().out
    with session(engine) as db:
        names = {bot.name for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
    assert names == {"random", "racer"}
    assert "csb" in serve.DEMO_GAMES


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("player", ["greedy", "sample"])
def test_a_greedy_or_sampling_csb_bot_uploads(client, new_user, onnx_bot, player):
    response = client.post(
        "/api/v1/bots",
        files={"model": ("pod.onnx", onnx_bot("csb", metadata={"head": "q"}))},
        data={"game": "csb", "name": f"pod-{player}", "player": player, "head": "q"},
        headers=_auth(new_user("alice")),
    )
    assert response.status_code == 201, response.text


def test_a_searching_csb_bot_is_refused_with_the_reason(client, new_user, onnx_bot):
    response = client.post(
        "/api/v1/bots",
        files={"model": ("pod.onnx", onnx_bot("csb"))},
        data={"game": "csb", "name": "pod-search", "player": "mcts"},
        headers=_auth(new_user("alice")),
    )
    assert (response.status_code, response.json()["code"]) == (422, "player_unsupported")
    assert "4 action heads" in response.json()["detail"]
    assert "player=greedy" in response.json()["detail"]


def test_the_static_check_refuses_mcts_for_several_heads_only(onnx_bot):
    refused = validate_static(onnx_bot("csb"), GAME.spec, {"name": "a", "player": "mcts"})
    assert (refused.ok, refused.code) == (False, "player_unsupported")
    single = validate_static(onnx_bot("smash"), get_game("smash").spec, {"name": "b", "player": "mcts"})
    assert single.ok, single.message


@pytest.fixture
def csb_greedy(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> int:
    """A greedy DQN-style CSB bot (Q-value heads) on the CSB ladder; its id."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="csb", simulations=8)
        owner, _ = users.create_user(db, name="pilot")
        manifest = Manifest(game="csb", game_version=GAME.spec.version, name="pod", player="greedy", head="q")
        bot = bots.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=owner.id,
            manifest=manifest,
            report={},
            model_sha256=blobs.put(onnx_bot("csb", seed=3, metadata={"head": "q"})),
        )
        db.commit()
        return bot.id


def test_predict_answers_a_csb_greedy_bot_with_each_heads_q_values(client, csb_greedy):
    steps = play(GAME, [RacerPlayer(), RacerPlayer()], seed=SEED).replay.steps[:MIDDLE_STEPS]
    actions = [[list(action) for action in step.actions] for step in steps]
    state = GAME.init(SEED, None)
    for joint in actions:
        state = GAME.step(state, [tuple(action) for action in joint])
    for seat in (0, 1):
        position = {"bot_id": csb_greedy, "seed": SEED, "player": seat}
        from_actions = client.post("/api/v1/predict", json={**position, "actions": actions})
        from_state = client.post("/api/v1/predict", json={**position, "state": GAME.to_dict(state)})
        assert from_actions.status_code == from_state.status_code == 200, from_actions.text
        answer = from_actions.json()
        assert (answer["game"], answer["player"]) == ("csb", seat)
        assert from_state.json()["action"] == answer["action"]
        heads = answer["insight"]["heads"]
        assert heads["kind"] == "q"
        for index, (head, size) in enumerate(GAME.spec.heads.items()):
            values = heads[head]
            assert len(values) == size
            legal = [value for value in values if value is not None]
            assert values[answer["action"][index]] == max(legal)  # greedy: the best Q of each head


def test_predict_refuses_a_four_head_action_of_the_wrong_shape(client, csb_greedy):
    one_head = {"bot_id": csb_greedy, "seed": SEED, "actions": [[[18], [18]]]}
    response = client.post("/api/v1/predict", json=one_head)
    assert (response.status_code, response.json()["code"]) == (422, "illegal_action")
