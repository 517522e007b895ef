"""The REST API end to end on SQLite and PostgreSQL: uploads, auth, reads, predict, client, CLI."""

from __future__ import annotations

import dataclasses
import gc
import gzip
import json

import numpy as np
import pytest
from celery import Celery
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.host import ModelFault
from arena_bots.manifest import Manifest
from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform import cli
from arena_platform.api.hosts import HostCache
from arena_platform.api.routes import bots as bot_routes
from arena_platform.blobs import BlobStore
from arena_platform.client import ArenaClient, ArenaClientError
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.queue import PLAY_PAIRINGS, SCHEDULE_LADDER, celery_enqueue
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _upload(client: TestClient, token: str, model: bytes, **form: str):
    return client.post("/api/v1/bots", files={"model": ("bot.onnx", model)}, data=form, headers=_auth(token))


def test_an_accepted_upload_is_stored_entered_on_its_ladder_and_scheduled(
    client, new_user, onnx_bot, blobs: BlobStore, enqueued
):
    token = new_user("alice")
    response = _upload(client, token, onnx_bot(), game="bobail", name="tiny", player="mcts", simulations="50")
    assert response.status_code == 201, response.text
    bot = response.json()
    assert (bot["name"], bot["version"], bot["author"], bot["status"], bot["kind"]) == (
        "tiny", 1, "alice", "active", "network",
    )  # fmt: skip
    assert (bot["game"], bot["ladder"], bot["player"]) == ("bobail", "bobail-v1-100", "mcts")
    assert bot["manifest"]["simulations"] == 50
    assert bot["manifest"]["game_version"] == 1  # the game's current version fills in
    assert bot["report"]["ok"]
    assert "runtime" in bot["report"]["checks"]
    assert blobs.exists(bot["model_sha256"])  # the sanitized model
    board = client.get(f"/api/v1/ladders/{bot['ladder_id']}/leaderboard").json()
    assert [(entry["name"], entry["house"]) for entry in board["entries"]] == [
        ("random", True), ("uct", True), ("tiny", False),
    ]  # fmt: skip
    assert enqueued
    assert {name for name, _ in enqueued} == {PLAY_PAIRINGS}  # booked at once, not behind the queue
    assert client.get(f"/api/v1/bots/{bot['id']}").json()["report"] == bot["report"]


def test_the_manifest_can_travel_in_the_file_and_a_reupload_is_a_new_version(client, new_user, onnx_bot):
    token = new_user("alice")
    model = onnx_bot(metadata={"game": "bobail", "game_version": "1", "name": "meta", "player": "greedy"})
    first = _upload(client, token, model, game="bobail").json()
    assert (first["name"], first["player"]) == ("meta", "greedy")
    second = _upload(client, token, onnx_bot(seed=1), game="bobail", name="meta", player="sample")
    assert second.status_code == 201
    assert (second.json()["version"], second.json()["player"]) == (2, "sample")
    assert client.get(f"/api/v1/bots/{first['id']}").json()["status"] == "active"  # until the SPRT ends
    taken = _upload(client, new_user("bob"), model, game="bobail")
    assert (taken.status_code, taken.json()["code"]) == (409, "name_taken")


def test_a_rejected_model_gets_422_with_the_report_and_nothing_is_stored(
    client, new_user, hostile_bot, blobs: BlobStore, enqueued
):
    response = _upload(client, new_user("mallory"), hostile_bot, game="bobail", name="evil", player="greedy")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == body["report"]["code"] == "custom_domain"
    assert body["detail"] == body["report"]["message"]
    assert not body["report"]["ok"]
    assert client.get("/api/v1/bots").json() == []
    assert enqueued == []
    assert not blobs.fs.find(blobs.root)


@pytest.mark.parametrize(
    ("game", "model_game", "metadata", "code"),
    [
        ("chess", "bobail", {}, "unknown_game"),
        ("bobail", "pente", {}, "inputs_mismatch"),  # a pente network offered to bobail
        ("bobail", "bobail", {"game": "pente"}, "wrong_game"),  # the file names another game
        ("bobail", "bobail", {"game_version": "7"}, "game_version_mismatch"),
    ],
)
def test_a_bot_for_another_game_is_refused(client, new_user, onnx_bot, game, model_game, metadata, code):
    response = _upload(
        client,
        new_user("alice"),
        onnx_bot(model_game, metadata=metadata),
        game=game,
        name="x",
        player="greedy",
    )
    assert (response.status_code, response.json()["code"]) == (422, code)


def test_uploads_are_rate_limited_per_user(make_app, new_user, onnx_bot, monkeypatch):
    token = new_user("alice")
    with TestClient(make_app(uploads_per_hour=1)) as client:
        assert (
            _upload(client, token, onnx_bot(), game="bobail", name="one", player="greedy").status_code == 201
        )
        validated = []
        monkeypatch.setattr(bot_routes, "validate", lambda *args, **kwargs: validated.append(args))
        refused = _upload(client, token, onnx_bot(), game="bobail", name="two", player="greedy")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limited"
        assert 3590 <= int(refused.headers["Retry-After"]) <= 3600
        assert validated == []  # refused before validation
        monkeypatch.undo()
        assert (
            _upload(
                client, new_user("bob"), onnx_bot(), game="bobail", name="three", player="greedy"
            ).status_code
            == 201
        )


def test_writes_need_a_valid_token(client, engine: Engine, new_user, onnx_bot, seeded):
    model = onnx_bot()
    missing = client.post("/api/v1/bots", files={"model": ("b.onnx", model)}, data={"game": "bobail"})
    assert (missing.status_code, missing.json()["code"]) == (401, "unauthorized")
    assert missing.headers["WWW-Authenticate"] == "Bearer"
    wrong = _upload(client, "arena_not-a-token", model, game="bobail")
    assert (wrong.status_code, wrong.json()["code"]) == (401, "bad_token")
    basic = client.delete(f"/api/v1/bots/{seeded.alpha}", headers={"Authorization": "Basic YTpi"})
    assert basic.status_code == 401
    with session(engine) as db:
        users.revoke_token(db, token=seeded.alice_token)
        db.commit()
    revoked = client.delete(f"/api/v1/bots/{seeded.alpha}", headers=_auth(seeded.alice_token))
    assert (revoked.status_code, revoked.json()["code"]) == (401, "bad_token")


def test_only_the_owner_retires_a_bot(client, new_user, seeded):
    alice, carol = _auth(seeded.alice_token), _auth(new_user("carol"))
    for bot_id, headers in ((seeded.alpha, carol), (seeded.random, alice)):
        response = client.delete(f"/api/v1/bots/{bot_id}", headers=headers)
        assert (response.status_code, response.json()["code"]) == (403, "not_owner")
    assert client.delete("/api/v1/bots/999999", headers=alice).status_code == 404
    retired = client.delete(f"/api/v1/bots/{seeded.alpha}", headers=alice)
    assert (retired.status_code, retired.json()["status"]) == (200, "retired")
    names = [
        entry["name"]
        for entry in client.get(f"/api/v1/ladders/{seeded.ladder_id}/leaderboard").json()["entries"]
    ]
    assert "alpha" not in names


def test_leaderboard_and_ladders(client, seeded):
    ladders = client.get("/api/v1/ladders").json()
    assert [(ladder["id"], ladder["name"], ladder["simulations"]) for ladder in ladders] == [
        (seeded.ladder_id, "bobail-v1-16", 16)
    ]
    board = client.get(f"/api/v1/ladders/{seeded.ladder_id}/leaderboard").json()
    assert board["ladder"]["game"] == "bobail"
    assert board["progress"] == {"queued": 2, "running": 1, "done": 4, "failed": 1}
    top = board["entries"][0]
    assert top == {
        "rank": 1, "bot_id": seeded.alpha, "name": "alpha", "version": 1, "author": "alice", "house": False,
        "player": "greedy", "checkpoint": False, "rating": 150.0, "low": 70.0, "high": 230.0, "games": 4,
        "wins": 2, "draws": 1, "losses": 1, "provisional": True,
    }  # fmt: skip
    assert [entry["rank"] for entry in board["entries"]] == [1, 2, 3, None]


def test_the_leaderboard_is_gzipped_for_clients_that_accept_it_and_plain_for_the_others(client, seeded):
    url = f"/api/v1/ladders/{seeded.ladder_id}/leaderboard"
    plain = client.get(url, headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200
    assert "content-encoding" not in plain.headers
    assert plain.headers["content-type"] == "application/json"
    with client.stream("GET", url, headers={"Accept-Encoding": "gzip, deflate"}) as zipped:
        assert zipped.headers["content-encoding"] == "gzip"
        raw = b"".join(zipped.iter_raw())  # the bytes as sent, not decoded by the client
    assert int(zipped.headers["content-length"]) == len(raw) < len(plain.content)
    assert gzip.decompress(raw) == plain.content
    for response in (plain, zipped):
        assert response.headers["vary"] == "Accept-Encoding"
        assert response.headers["etag"] == plain.headers["etag"]  # one representation, two encodings


def test_the_leaderboard_answers_304_while_the_clients_etag_is_current(client, seeded):
    url = f"/api/v1/ladders/{seeded.ladder_id}/leaderboard"
    first = client.get(url)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"  # reuse only after asking: it changes each refit
    unchanged = client.get(url, headers={"If-None-Match": etag})
    assert (unchanged.status_code, unchanged.content, unchanged.headers["etag"]) == (304, b"", etag)
    assert client.get(url, headers={"If-None-Match": 'W/"other"'}).status_code == 200
    retired = client.delete(f"/api/v1/bots/{seeded.alpha}", headers=_auth(seeded.alice_token))
    assert retired.status_code == 200  # a write of this process: the cached leaderboard is dropped
    changed = client.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag
    assert "alpha" not in [entry["name"] for entry in changed.json()["entries"]]


def test_a_running_app_keeps_its_startup_objects_out_of_the_collectors_sight(make_app):
    assert gc.get_freeze_count() == 0
    with TestClient(make_app()):
        assert gc.get_freeze_count() > 0  # full collections skip them: no ~0.1 s pauses under load
    assert gc.get_freeze_count() == 0  # given back at shutdown: nothing outlives the app


def test_bot_reads(client, seeded):
    listed = client.get("/api/v1/bots", params={"ladder": seeded.ladder_id, "owner": "alice"}).json()
    assert [bot["name"] for bot in listed] == ["alpha"]
    assert len(client.get("/api/v1/bots", params={"status": "active", "limit": 2}).json()) == 2
    detail = client.get(f"/api/v1/bots/{seeded.alpha}").json()
    assert detail["rating"]["rating"] == 150.0
    assert detail["manifest"]["player"] == "greedy"
    assert detail["created_at"].endswith("Z")
    games = client.get(f"/api/v1/bots/{seeded.alpha}/games", params={"result": "loss"}).json()
    assert [game["id"] for game in games] == [seeded.games[3]]
    opponents = client.get(f"/api/v1/bots/{seeded.alpha}/opponents").json()
    assert {row["opponent"]["name"]: row["score"] for row in opponents} == {"random": 1.0, "beta": 0.25}
    history = client.get(f"/api/v1/bots/{seeded.alpha}/history").json()
    assert [point["rating"] for point in history] == [40.0, 120.0, 150.0]


def test_game_reads_with_replays(client, seeded, blobs: BlobStore):
    newest = client.get("/api/v1/games", params={"ladder": seeded.ladder_id, "limit": 1}).json()
    assert [game["id"] for game in newest] == [seeded.games[3]]
    forfeits = client.get(
        "/api/v1/games", params={"reason": "forfeit", "bot": seeded.beta, "result": "win"}
    ).json()
    assert [game["id"] for game in forfeits] == [seeded.games[3]]
    assert [g["id"] for g in client.get("/api/v1/games", params={"result": "draw"}).json()] == [
        seeded.games[2]
    ]
    unclear = client.get("/api/v1/games", params={"result": "win"})
    assert (unclear.status_code, unclear.json()["code"]) == (422, "invalid_request")
    game = client.get(f"/api/v1/games/{seeded.games[0]}").json()
    assert (game["first"]["name"], game["second"]["name"], game["score"]) == ("alpha", "random", 1.0)
    assert game["replay"]["game"] == "bobail"
    assert len(game["replay"]["steps"]) == game["steps"]
    raw = client.get(f"/api/v1/games/{seeded.games[0]}/replay")
    assert raw.headers["content-type"] == "application/json"
    assert raw.content == blobs.get(game["replay_sha256"])


@pytest.mark.parametrize("bot", ["alpha", "beta", "random", "uct"])
def test_predict_on_bobail_for_network_and_house_bots(client, seeded, bot):
    game = get_game("bobail")
    opening = game.opening(3, None)
    response = client.post(
        "/api/v1/predict",
        json={
            "bot_id": getattr(seeded, bot),
            "seed": 3,
            "actions": [[list(a) for a in joint] for joint in opening],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    state = game.init(3, None)
    for joint in opening:
        state = game.step(state, joint)
    assert body["player"] == game.to_move(state)[0]
    assert game.legal_masks(state, body["player"])[0][body["action"][0]]
    if bot in ("beta", "uct"):  # search bots explain themselves
        assert body["insight"]["simulations"] == 16
        assert body["insight"]["top"][0]["action"] == body["action"]
    elif bot == "alpha":
        assert body["insight"]["top"][0]["share"] > 0


def test_predict_on_pente_from_actions_and_from_a_state(client, engine: Engine, blobs: BlobStore, onnx_bot):
    game = get_game("pente")
    with session(engine) as db:
        ladder = ensure_ladder(db, game="pente", simulations=8)
        owner, _ = users.create_user(db, name="penny")
        network = bots.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=owner.id,
            manifest=Manifest(game="pente", game_version=1, name="tiny", player="mcts"),
            report={},
            model_sha256=blobs.put(onnx_bot(game="pente")),
        )
        uct = db.exec(select(Bot).where(Bot.ladder_id == ladder.id, Bot.name == "uct")).one()
        db.commit()
    played = play(game, [RandomPlayer(), RandomPlayer()], seed=5)
    middle = [list(map(list, step.actions)) for step in played.replay.steps[:6]]
    state = game.init(5, None)
    for joint in middle:
        state = game.step(state, [tuple(action) for action in joint])
    for bot_id in (network.id, uct.id):
        from_actions = client.post("/api/v1/predict", json={"bot_id": bot_id, "seed": 5, "actions": middle})
        from_state = client.post(
            "/api/v1/predict", json={"bot_id": bot_id, "seed": 5, "state": game.to_dict(state)}
        )
        assert from_actions.status_code == from_state.status_code == 200, from_actions.text
        assert (
            from_actions.json()["action"] == from_state.json()["action"]
        )  # the same position, the same seed
        assert game.legal_masks(state, from_actions.json()["player"])[0][from_actions.json()["action"][0]]
        assert from_actions.json()["insight"]["simulations"] == 8


def test_predict_refuses_positions_that_are_not(client, seeded):
    game = get_game("bobail")
    finished = play(game, [RandomPlayer(), RandomPlayer()], seed=1).final_state
    bot = seeded.random
    cases = [
        ({"actions": [[[0]], [[0]]]}, "illegal_action"),
        ({"actions": [[[0, 0]]]}, "illegal_action"),
        ({"state": {"board": "nonsense"}}, "bad_state"),
        ({"state": game.to_dict(finished)}, "game_over"),
        ({"config": {"no_such_key": 1}}, "bad_config"),
        ({"player": 1}, "not_to_move"),
        ({"actions": [], "state": game.to_dict(finished)}, "invalid_request"),
    ]
    for fields, code in cases:
        response = client.post("/api/v1/predict", json={"bot_id": bot, **fields})
        assert (response.status_code, response.json()["code"]) == (422, code), fields
    unknown = client.post("/api/v1/predict", json={"bot_id": 999999})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


def test_the_python_client(client, new_user, onnx_bot, seeded, tmp_path):
    path = tmp_path / "tiny.onnx"
    path.write_bytes(onnx_bot())
    arena = ArenaClient(token=new_user("dora"), http=client)
    bot = arena.upload(path, "bobail", "dora-bot", player="greedy")
    assert (bot["name"], bot["player"]) == ("dora-bot", "greedy")
    assert arena.bot(bot["id"])["author"] == "dora"
    assert arena.leaderboard(seeded.ladder_id)["entries"][0]["name"] == "alpha"
    assert arena.game(seeded.games[0])["replay"]["game"] == "bobail"
    assert arena.predict(seeded.alpha, actions=[])["player"] == 0
    with pytest.raises(ArenaClientError) as refused:
        arena.predict(seeded.alpha, actions=[[[0]], [[0]]])
    assert (refused.value.status, refused.value.code) == (422, "illegal_action")
    with pytest.raises(ArenaClientError) as missing:
        arena.upload(tmp_path / "missing.onnx", "bobail", "x")
    assert (missing.value.status, missing.value.code) == (0, "unreadable_file")


def test_cli_creates_users_and_uploads(engine: Engine, live_server, onnx_bot, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ARENA_DATABASE_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    assert cli.main(["user", "create", "erin"]) == 0
    token = capsys.readouterr().out.strip()
    with session(engine) as db:
        assert users.user_for_token(db, token=token).name == "erin"
    assert cli.main(["user", "create", "erin"]) == 2
    assert "taken" in capsys.readouterr().err
    path = tmp_path / "bot.onnx"
    path.write_bytes(onnx_bot())
    url = live_server()
    monkeypatch.setenv("ARENA_TOKEN", token)
    monkeypatch.setenv("ARENA_PORT", url.rsplit(":", 1)[1])  # where the server is, with no --url
    assert cli.main(["upload", str(path), "--game", "bobail", "--name", "cli-bot", "--player", "greedy"]) == 0
    assert "'cli-bot' version 1" in capsys.readouterr().out
    path.write_bytes(onnx_bot(seed=1))
    assert cli.main(["upload", str(path), "--game", "bobail", "--name", "cli-bot", "--player", "greedy"]) == 0
    second = capsys.readouterr().out
    assert "'cli-bot' version 2" in second
    assert "an SPRT against version 1" in second
    path.write_bytes(b"not a model")
    assert cli.main(["upload", str(path), "--game", "bobail", "--name", "bad", "--url", url]) == 2
    error = capsys.readouterr().err
    assert "not_onnx" in error
    assert len(error.strip().splitlines()) == 1


def test_the_api_is_documented_by_openapi(client):
    assert client.get("/docs").status_code == 200
    spec = client.get("/api/v1/openapi.json").json()
    assert "/api/v1/predict" in spec["paths"]
    upload = spec["paths"]["/api/v1/bots"]["post"]
    assert set(upload["responses"]) >= {"201", "401", "413", "422", "429"}
    assert json.dumps(spec["components"]["schemas"]["ErrorBody"]["required"]) == '["detail", "code"]'


def test_a_broker_failure_does_not_fail_an_accepted_upload(make_app, new_user, onnx_bot, caplog):
    def unreachable(task_name: str, *args) -> None:
        raise ConnectionError("broker down")

    app = make_app()
    app.state.services = dataclasses.replace(app.state.services, enqueue=unreachable)
    with TestClient(app) as client:
        response = _upload(client, new_user("alice"), onnx_bot(), game="bobail", name="x", player="greedy")
    assert response.status_code == 201
    assert f"could not book and send a round of ladder {response.json()['ladder_id']}" in caplog.text


def test_the_celery_client_sends_tasks_by_name():
    """Through kombu's in-memory transport, shared by every Celery app of the process (as the embedded
    worker receives it); messages other tests left in the queue are skipped."""
    celery_enqueue("memory://")(SCHEDULE_LADDER, 7)
    with Celery(broker="memory://", set_as_current=False).connection_for_read() as connection:
        queue = connection.SimpleQueue("celery")
        while True:
            message = queue.get(timeout=5)
            message.ack()
            if message.headers["task"] == SCHEDULE_LADDER and message.decode()[0] == [
                7
            ]:  # (args, kwargs, embed)
                break


def test_predict_hosts_are_cached_per_model_and_the_least_recent_is_closed(blobs: BlobStore, onnx_bot):
    first, second = blobs.put(onnx_bot(seed=1)), blobs.put(onnx_bot(seed=2))
    cache = HostCache(blobs.get, capacity=1)
    try:
        with cache.lease(first) as host:
            kept = host
        with cache.lease(first) as host:
            assert host is kept
        with cache.lease(second) as host:
            assert host is not kept
        with pytest.raises(ModelFault, match="closed"):
            kept.run({"board": np.zeros((1, 43, 5, 5), np.float32)})
        cache.discard(second)
        with cache.lease(second) as fresh:
            assert fresh is not host
    finally:
        cache.close()
    with pytest.raises(ModelFault):
        fresh.run({"board": np.zeros((1, 43, 5, 5), np.float32)})


def test_predict_reports_a_model_that_faults(client, engine: Engine, blobs: BlobStore):
    """A bobail network whose policy is sqrt(-(|x| + 1)): NaN on every position."""
    board = helper.make_tensor_value_info("board", TensorProto.FLOAT, ["batch", 43, 5, 5])
    policy = helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", 200])
    weights = [
        numpy_helper.from_array(np.ones((43 * 25, 200), np.float32), "w"),
        numpy_helper.from_array(np.ones(200, np.float32), "one"),
    ]
    nodes = [
        helper.make_node("Flatten", ["board"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w"], ["logits"]),
        helper.make_node("Abs", ["logits"], ["size"]),
        helper.make_node("Add", ["size", "one"], ["positive"]),
        helper.make_node("Neg", ["positive"], ["negative"]),
        helper.make_node("Sqrt", ["negative"], ["policy"]),
    ]
    graph = helper.make_graph(nodes, "nan", [board], [policy], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=8)
        owner, _ = users.create_user(db, name="nan")
        bot = bots.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=owner.id,
            manifest=Manifest(game="bobail", game_version=1, name="nan", player="greedy"),
            report={},
            model_sha256=blobs.put(model.SerializeToString()),
        )
        db.commit()
    for _ in range(2):  # the faulted host was discarded: the second call starts a fresh one
        response = client.post("/api/v1/predict", json={"bot_id": bot.id})
        assert (response.status_code, response.json()["code"]) == (422, "model_fault")
        assert "NaN" in response.json()["detail"]
