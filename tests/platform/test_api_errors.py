"""Errors: every one is `{"detail", "code"}`, bodies over the cap get 413 while they stream in, and
nothing a client sends produces a 500 (a seeded fuzz loop over every endpoint)."""

from __future__ import annotations

import json
import logging
import random
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import func, select

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform.api.routes import bots as bot_routes
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.store import bots
from arena_platform.store.ladders import ensure_ladder

CAP = 16 * 1024  # the body cap of the raw HTTP tests, in bytes
BOUNDARY = "arena-test-boundary"


def _assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert isinstance(body["code"], str)
    if code is not None:
        assert body["code"] == code
    return body


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/bots/999999",
        "/api/v1/bots/999999/games",
        "/api/v1/bots/999999/opponents",
        "/api/v1/bots/999999/history",
        "/api/v1/challenges/999999",
        "/api/v1/games/999999",
        "/api/v1/games/999999/replay",
        "/api/v1/ladders/999999/leaderboard",
        "/api/v1/nowhere",
    ],
)
def test_unknown_ids_and_routes_are_404(client, path):
    _assert_error(client.get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("GET", "/api/v1/bots/abc", {}),
        ("GET", "/api/v1/bots/0", {}),
        ("GET", "/api/v1/bots/99999999999999999999999999", {}),  # beyond any database integer
        ("GET", "/api/v1/games/-4/replay", {}),
        ("GET", "/api/v1/challenges/0", {}),
        ("GET", "/api/v1/bots", {"limit": 0}),
        ("GET", "/api/v1/bots", {"offset": 2**70}),
        ("GET", "/api/v1/bots", {"owner": "a\x00b"}),  # PostgreSQL text cannot hold NUL
        ("GET", "/api/v1/bots", {"status": "sleeping"}),
        ("GET", "/api/v1/games", {"result": "victory"}),
        ("GET", "/api/v1/games", {"reason": "x" * 500}),
    ],
)
def test_malformed_parameters_are_422(client, method, path, params):
    body = _assert_error(client.request(method, path, params=params), 422, "invalid_request")
    assert body["errors"][0]["loc"]


def test_wrong_methods_are_405(client):
    _assert_error(client.put("/api/v1/bots"), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"bot_id": 1', "application/json"),  # truncated JSON
        (b"\xff\xfe\x00garbage", "application/json"),  # not UTF-8
        (b'{"bot_id": 1}', "text/plain"),  # not declared as JSON
        (b'{"bot_id": "one"}', "application/json"),
        (b'{"bot_id": 1e400}', "application/json"),
        (b'{"bot_id": 1, "seed": 99999999999999999999999999}', "application/json"),
        (b'{"bot_id": 1, "actions": [[[-1]]]}', "application/json"),
        (b'{"bot_id": 1, "actions": "e2e4"}', "application/json"),
        (b'{"bot_id": 1, "colour": "white"}', "application/json"),  # unknown field
        (b"[" * 30_000 + b"]" * 30_000, "application/json"),  # nested past the parser's recursion limit
        (b"", "application/json"),
    ],
)
def test_malformed_predict_bodies_are_4xx(client, content, content_type):
    response = client.post("/api/v1/predict", content=content, headers={"Content-Type": content_type})
    assert response.status_code in (400, 422)
    _assert_error(response, response.status_code)


@pytest.mark.parametrize(
    ("form", "code"),
    [
        ({"game": "bobail", "simulations": "many"}, "invalid_request"),
        ({"game": "bobail", "simulations": "9" * 30}, "manifest_bad_value"),
        ({"game": "bobail", "c_puct": "nan"}, "manifest_bad_value"),
        ({"game": "bobail", "player": "human"}, "manifest_bad_value"),
        ({"game": "bobail", "name": "tab\there"}, "manifest_bad_value"),
        ({"name": "no game"}, "invalid_request"),
    ],
)
def test_malformed_upload_forms_are_422(client, new_user, onnx_bot, form, code):
    headers = {"Authorization": f"Bearer {new_user('alice')}"}
    form = {"player": "greedy", "name": "x", **form}
    response = client.post(
        "/api/v1/bots", files={"model": ("b.onnx", onnx_bot())}, data=form, headers=headers
    )
    _assert_error(response, 422, code)


def test_uploads_that_are_not_multipart_are_422(client, new_user):
    headers = {"Authorization": f"Bearer {new_user('alice')}"}
    _assert_error(
        client.post("/api/v1/bots", json={"game": "bobail"}, headers=headers), 422, "invalid_request"
    )
    missing_file = client.post("/api/v1/bots", data={"game": "bobail"}, headers=headers)
    _assert_error(missing_file, 422, "invalid_request")


@pytest.fixture
def capped_server(live_server, monkeypatch) -> tuple[str, list]:
    """A live server with a 16 KiB body cap (uploads and JSON); the list records every validation
    that ran."""
    validated = []
    real = bot_routes.validate
    monkeypatch.setattr(
        bot_routes, "validate", lambda *args, **kwargs: validated.append(args) or real(*args, **kwargs)
    )
    return live_server(max_upload_bytes=CAP, max_json_bytes=CAP), validated


def _nothing_stored(engine: Engine, blobs: BlobStore) -> bool:
    with session(engine) as db:
        bots = db.exec(select(func.count()).select_from(Bot)).one()
    return bots == 0 and not blobs.fs.find(blobs.root)


def _multipart_chunks(model_bytes: int, chunk: int = 4096):
    yield f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="game"\r\n\r\nbobail\r\n'.encode()
    yield f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="model"; filename="b.onnx"\r\n\r\n'.encode()
    for start in range(0, model_bytes, chunk):
        yield b"\0" * min(chunk, model_bytes - start)
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


def test_a_declared_length_over_the_cap_is_413_before_the_body_is_sent(
    capped_server, engine, blobs, new_user
):
    url, validated = capped_server
    address = urlsplit(url)
    request = (
        f"POST /api/v1/bots HTTP/1.1\r\nHost: {address.netloc}\r\n"
        f"Authorization: Bearer {new_user('alice')}\r\nContent-Length: 1000000000\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
    )
    with socket.create_connection((address.hostname, address.port), timeout=10) as raw:
        raw.sendall(request.encode())  # the headers only: the answer must not wait for a body
        answer = b"".join(iter(lambda: raw.recv(65536), b"")).decode()  # until the server closes
    assert answer.startswith("HTTP/1.1 413")
    assert '"code":"payload_too_large"' in answer
    also_httpx = httpx.post(f"{url}/api/v1/predict", content=b"x" * (CAP + 1))
    _assert_error(also_httpx, 413, "payload_too_large")
    assert validated == []
    assert _nothing_stored(engine, blobs)


def test_a_chunked_body_over_the_cap_is_413_while_it_streams(capped_server, engine, blobs, new_user):
    url, validated = capped_server
    headers = {
        "Authorization": f"Bearer {new_user('alice')}",
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
    }
    over = httpx.post(f"{url}/api/v1/bots", content=_multipart_chunks(CAP + 4096), headers=headers)
    assert "content-length" not in over.request.headers  # sent chunked
    _assert_error(over, 413, "payload_too_large")
    assert validated == []
    assert _nothing_stored(engine, blobs)
    under = httpx.post(f"{url}/api/v1/bots", content=_multipart_chunks(CAP // 2), headers=headers)
    _assert_error(under, 422, "not_onnx")  # under the cap, the body reaches validation
    assert len(validated) == 1


def test_a_bug_is_a_logged_500_with_the_error_body(make_app, caplog):
    app = make_app()

    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/api/v1/broken", broken)
    with caplog.at_level(logging.ERROR), TestClient(app, raise_server_exceptions=False) as client:
        _assert_error(client.get("/api/v1/broken"), 500, "internal_error")
    assert "a bug" in caplog.text


# --- The fuzz loop --------------------------------------------------------------------------------

_ODD_IDS = [
    "1",
    "2",
    "0",
    "-1",
    "2147483648",
    "9" * 40,
    "abc",
    "1.5",
    "1e3",
    "%00",
    "%FF",
    "\u00e9",
    " 1",
    "null",
]
_ODD_TEXT = [
    "",
    "win",
    "draw",
    "loss",
    "forfeit",
    "%",
    "_",
    "\x00",
    "\udcff",
    "\u202e",
    "a" * 300,
    "0",
    "-5",
    "true",
]
_PATHS = [
    ("GET", "/api/v1/bots/{id}"),
    ("GET", "/api/v1/bots/{id}/games"),
    ("GET", "/api/v1/bots/{id}/opponents"),
    ("GET", "/api/v1/bots/{id}/history"),
    ("DELETE", "/api/v1/bots/{id}"),
    ("GET", "/api/v1/bots"),
    ("GET", "/api/v1/games"),
    ("GET", "/api/v1/games/{id}"),
    ("GET", "/api/v1/games/{id}/replay"),
    ("GET", "/api/v1/ladders"),
    ("GET", "/api/v1/ladders/{id}/leaderboard"),
    ("GET", "/api/v1/health"),
    ("POST", "/api/v1/predict"),
    ("POST", "/api/v1/bots"),
]
_PARAMS = ["ladder", "bot", "owner", "status", "result", "reason", "limit", "offset"]


def _odd_json(rng: random.Random, depth: int = 0):
    """A random JSON value, biased towards the shapes predict expects."""
    choices = [
        lambda: rng.choice([None, True, False]),
        lambda: rng.choice([0, 1, -1, 2**31, 2**63, 10**30, rng.randrange(400)]),
        lambda: rng.choice([0.5, -0.0, 1e308, float("inf")]),
        lambda: rng.choice(_ODD_TEXT),
    ]
    if depth < 4:
        choices += [
            lambda: [_odd_json(rng, depth + 1) for _ in range(rng.randrange(4))],
            lambda: {
                rng.choice([*_ODD_TEXT, "board", "turn", "phase"]): _odd_json(rng, depth + 1)
                for _ in range(3)
            },
        ]
    return rng.choice(choices)()


def _mutated(rng: random.Random, value):
    """`value` (JSON) with one leaf replaced by an odd value, or one key or item dropped."""
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        if rng.random() < 0.2:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: _mutated(rng, value[key])}
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        if rng.random() < 0.2:
            return value[:index] + value[index + 1 :]
        return [*value[:index], _mutated(rng, value[index]), *value[index + 1 :]]
    if isinstance(value, str) and value and rng.random() < 0.5:
        index = rng.randrange(len(value))
        return value[:index] + rng.choice("x.0B1\u00e9 ") + value[index + 1 :]
    return _odd_json(rng, depth=3)


def _predict_body(rng: random.Random, bots: dict[int, str], positions: dict[str, list]) -> bytes:
    """Mostly real positions of the bot's game, mutated; sometimes anything."""
    bot_id = rng.choice(list(bots))
    body: dict = {"bot_id": rng.choice([bot_id] * 6 + [0, 999999, "1", None])}
    seed, actions, state = rng.choice(positions[bots[bot_id]])
    kind = rng.random()
    if kind < 0.35:
        body |= {"seed": seed, "actions": actions[: rng.randrange(len(actions) + 1)]}
        if rng.random() < 0.5 and body["actions"]:
            body["actions"] = _mutated(rng, body["actions"])
    elif kind < 0.7:
        body["state"] = _mutated(rng, state) if rng.random() < 0.8 else state
    else:
        body |= {
            field: _odd_json(rng) for field in rng.sample(["actions", "state", "seed", "config", "player"], 2)
        }
    return json.dumps(body).encode()


def _request(rng: random.Random, bots: dict[int, str], positions: dict[str, list], token: str) -> dict:
    method, template = rng.choice(_PATHS)
    path = template.replace("{id}", rng.choice([*map(str, bots), *_ODD_IDS]))
    params = {name: rng.choice(_ODD_TEXT + _ODD_IDS) for name in rng.sample(_PARAMS, rng.randrange(3))}
    headers = {"Authorization": rng.choice([f"Bearer {token}"] * 3 + ["Bearer nope", "Basic x", "Bearer"])}
    request = {"method": method, "url": path, "params": params, "headers": headers}
    if template == "/api/v1/predict":
        kind = rng.random()
        request["content"] = (
            _predict_body(rng, bots, positions) if kind < 0.9 else rng.randbytes(rng.randrange(64))
        )
        headers["Content-Type"] = rng.choice(
            ["application/json"] * 6 + ["text/plain", "application/x+json", ""]
        )
    elif template == "/api/v1/bots" and method == "POST":
        form = {
            key: rng.choice(_ODD_TEXT + _ODD_IDS)
            for key in rng.sample(["game", "name", "player", "c_puct"], 3)
        }
        if rng.random() < 0.5:
            form["game"] = "bobail"
        request["data"] = {key: value.encode("utf-8", "surrogateescape") for key, value in form.items()}
        request["files"] = {"model": ("m.onnx", rng.randbytes(rng.randrange(100)))}
    return request


def _positions(game_name: str) -> list:
    """(seed, joint actions, state dict) along two random games, as JSON."""
    game = get_game(game_name)
    found = []
    for seed in (1, 2):
        replay = play(game, [RandomPlayer(), RandomPlayer()], seed=seed).replay
        state, actions = game.init(seed, None), []
        for step in replay.steps[:40]:
            found.append((seed, list(actions), game.to_dict(state)))
            state = game.step(state, step.actions)
            actions.append([list(action) for action in step.actions])
    return found


def test_fuzzed_requests_never_produce_a_500(client, engine: Engine, seeded, new_user):
    with session(engine) as db:
        pente = ensure_ladder(db, game="pente", simulations=4)
        db.commit()
        pente_bots = {bot.id: "pente" for bot in bots.list_bots(db, ladder_id=pente.id)}
    on_bobail = [seeded.alpha, seeded.beta, seeded.random, seeded.uct]
    bot_games = dict.fromkeys(on_bobail, "bobail") | pente_bots
    positions = {name: _positions(name) for name in ("bobail", "pente")}
    rng = random.Random(20261122)
    token = new_user("fuzzer")
    statuses = set()
    for _ in range(300):
        request = _request(rng, bot_games, positions, token)
        try:
            response = client.request(**request)
        except UnicodeEncodeError:  # httpx refuses to send a URL it cannot encode
            continue
        assert response.status_code < 500, (request, response.text)
        if response.status_code >= 400:
            _assert_error(response, response.status_code)
        statuses.add(response.status_code)
    assert {200, 401, 404, 422} <= statuses
