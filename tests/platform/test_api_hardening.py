"""The API's defences against a busy or careless client: rate limits that count every attempt,
a bounded and throttled predict, error bodies as documented, self-serve accounts and tokens."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import anyio
import httpx
import jsonschema
import pytest
from fastapi.testclient import TestClient

from arena_bots.manifest import Manifest
from arena_games.registry import GAMES
from arena_platform.api.errors import ApiError
from arena_platform.api.limits import ComputePool, RateLimiter
from arena_platform.api.routes import bots as bot_routes
from arena_platform.db import session
from arena_platform.models import Bot, Rating
from arena_platform.store import bots


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _upload(client: TestClient, token: str, model: bytes, **form: str):
    return client.post("/api/v1/bots", files={"model": ("bot.onnx", model)}, data=form, headers=_auth(token))


def _assert_documented(spec: dict, path: str, method: str, response) -> None:
    """`response`'s body matches the schema the OpenAPI document gives for its status."""
    documented = spec["paths"][path][method]["responses"][str(response.status_code)]
    schema = documented["content"]["application/json"]["schema"]
    jsonschema.validate(response.json(), {**schema, "components": spec["components"]})


def test_rejected_uploads_count_toward_the_upload_rate_limit(make_app, new_user, onnx_bot, monkeypatch):
    token = new_user("mallory")
    with TestClient(make_app(uploads_per_hour=3)) as client:
        rejected = [
            _upload(client, token, b"garbage", game="bobail", name="a", player="greedy"),  # not a model
            _upload(client, token, onnx_bot(), game="bobail", simulations="many"),  # a malformed form
            _upload(client, token, onnx_bot(), name="no game"),  # a missing field
        ]
        assert [response.status_code for response in rejected] == [422, 422, 422]
        validated = []
        monkeypatch.setattr(bot_routes, "validate", lambda *args, **kwargs: validated.append(args))
        refused = _upload(client, token, onnx_bot(), game="bobail", name="good", player="greedy")
        assert (refused.status_code, refused.json()["code"]) == (429, "rate_limited")
        assert int(refused.headers["Retry-After"]) > 3500
        assert validated == []


def test_upload_422_bodies_match_the_documented_schema(client, new_user, onnx_bot):
    spec = client.get("/api/v1/openapi.json").json()
    token = new_user("alice")
    for response in (
        _upload(client, token, b"garbage", game="bobail", name="a", player="greedy"),  # with a report
        _upload(client, token, onnx_bot(), game="bobail", simulations="many"),  # with errors
        _upload(client, token, onnx_bot(), game="chess", name="a", player="greedy"),  # neither
    ):
        assert response.status_code == 422
        _assert_documented(spec, "/api/v1/bots", "post", response)


def test_a_rate_limiter_allows_its_limit_per_key_over_a_sliding_window():
    now = [0.0]
    limiter = RateLimiter(limit=2, window_seconds=60, clock=lambda: now[0])

    def hits(*keys: str) -> list[float]:
        return [anyio.run(limiter.hit, key) for key in keys]

    assert hits("a", "a", "b") == [0, 0, 0]
    now[0] = 10.0
    assert hits("a") == [50.0]  # the first hit leaves the window at t=60
    now[0] = 60.0  # both hits of t=0 have left the window
    assert hits("a", "a") == [0, 0]
    now[0] = 69.5
    with pytest.raises(ApiError) as refused:
        anyio.run(partial(limiter.check, "a", what="things per minute"))
    assert (refused.value.status_code, refused.value.code) == (429, "rate_limited")
    assert refused.value.headers["Retry-After"] == "51"  # 50.5 s, in whole seconds


def test_the_compute_pool_runs_its_slots_queues_a_few_and_refuses_the_rest():
    release = threading.Event()
    pool = ComputePool(slots=1, max_waiting=1)

    async def scenario() -> list:
        async def call() -> object:
            try:
                return await pool.run_or_refuse(release.wait, 10)
            except ApiError as error:
                return (error.status_code, error.code, error.headers["Retry-After"])

        tasks = []
        for _ in range(3):
            tasks.append(asyncio.ensure_future(call()))
            await asyncio.sleep(0.05)  # each call finds the pool as the previous one left it
        assert pool.waiting() == 1
        release.set()
        return list(await asyncio.gather(*tasks))

    assert anyio.run(scenario) == [True, True, (503, "busy", "1")]


def _predict(base: str, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/predict", json=body, headers=headers or {}, timeout=60)


def test_many_concurrent_predicts_are_throttled_and_the_leaderboard_stays_answered(live_server, seeded):
    base = live_server(predicts_per_minute=20)
    body = {"bot_id": seeded.uct, "simulations": 400}  # random rollouts: a slow search
    leaderboard = f"{base}/api/v1/ladders/{seeded.ladder_id}/leaderboard"
    with ThreadPoolExecutor(max_workers=36) as threads:
        predictions = [threads.submit(_predict, base, body) for _ in range(32)]
        boards = [httpx.get(leaderboard, timeout=10).status_code for _ in range(20)]
        answers = [future.result() for future in predictions]
    assert boards == [200] * 20
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(429) == 12  # 20 a minute from one address
    assert set(statuses) <= {200, 429, 503}
    assert 200 in statuses
    for answer in answers:
        if answer.status_code in (429, 503):
            assert answer.json()["code"] == {429: "rate_limited", 503: "busy"}[answer.status_code]
            assert int(answer.headers["Retry-After"]) >= 1


def test_a_token_holder_is_counted_per_owner_not_per_address(live_server, seeded, new_user):
    base = live_server(predicts_per_minute=1, predicts_per_minute_per_token=2)
    body = {"bot_id": seeded.random}
    assert _predict(base, body).status_code == 200
    assert _predict(base, body).status_code == 429  # anonymous: spent
    alice = {"Authorization": f"Bearer {seeded.alice_token}"}
    assert [_predict(base, body, alice).status_code for _ in range(3)] == [200, 200, 429]
    bob = {"Authorization": f"Bearer {new_user('bob2')}"}
    assert _predict(base, body, bob).status_code == 200
    bad = _predict(base, body, {"Authorization": "Bearer nonsense"})
    assert (bad.status_code, bad.json()["code"]) == (401, "bad_token")


def test_predict_budget_is_bounded(make_app, seeded):
    with TestClient(make_app(predict_max_simulations=10)) as client:
        default = client.post("/api/v1/predict", json={"bot_id": seeded.uct})
        assert default.json()["simulations"] == 10  # the ladder's 16, lowered to the maximum
        assert default.json()["insight"]["simulations"] == 10
        fewer = client.post("/api/v1/predict", json={"bot_id": seeded.uct, "simulations": 4})
        assert fewer.json()["simulations"] == 4
        refused = client.post("/api/v1/predict", json={"bot_id": seeded.uct, "simulations": 11})
        assert (refused.status_code, refused.json()["code"]) == (422, "budget_too_large")


@pytest.mark.parametrize("field", [{"player": False}, {"bot_id": True}, {"seed": True}])
def test_predict_refuses_booleans_for_numbers(client, seeded, field):
    response = client.post("/api/v1/predict", json={"bot_id": seeded.random, **field})
    assert (response.status_code, response.json()["code"]) == (422, "invalid_request")


def test_the_openapi_description_carries_the_bot_contract_and_the_docs_are_local(client):
    description = client.get("/api/v1/openapi.json").json()["info"]["description"]
    assert "## A bot" in description
    for game in GAMES.values():
        assert f"`{game.spec.name}`, version {game.spec.version}" in description
        for name, shape in game.spec.inputs.items():
            assert f"| input | `{name}` | {' x '.join(map(str, shape))} |" in description
    page = client.get("/docs").text
    assert "cdn" not in page
    assert client.get("/docs/assets/swagger-ui-bundle.js").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/api/v1/bots", "GET, POST"),  # two routes share the path
        ("POST", "/api/v1/bots/1", "DELETE, GET"),
        ("GET", "/api/v1/predict", "POST"),
        ("DELETE", "/api/v1/ladders", "GET"),
    ],
)
def test_a_405_names_every_method_the_path_allows(client, method, path, allow):
    response = client.request(method, path)
    assert (response.status_code, response.json()["code"]) == (405, "method_not_allowed")
    assert response.headers["Allow"] == allow


def test_unknown_pages_get_the_html_404_page_and_unknown_api_paths_json(client):
    page = client.get("/no/such/page")
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "<h1>Not found</h1>" in page.text
    api = client.get("/api/v1/no/such/thing")
    assert (api.status_code, api.json()["code"]) == (404, "not_found")


def test_a_played_but_unrated_bot_does_not_say_it_has_no_games(client, engine, seeded):
    with session(engine) as db:
        db.delete(db.get(Rating, (seeded.ladder_id, seeded.alpha)))  # played, refit not yet run
        db.commit()
    played = client.get(f"/bots/{seeded.alpha}").text
    assert "no games yet" not in played
    assert "rated at the next refit" in played
    assert "no games yet" in client.get(f"/bots/{seeded.uct}").text  # queued pairings, no games


def test_a_retired_version_links_to_the_newest(client, engine, blobs, onnx_bot, seeded):
    with session(engine) as db:
        alpha = db.get(Bot, seeded.alpha)
        manifest = Manifest(game="bobail", game_version=1, name="alpha", player="mcts")
        newer = bots.create_network_bot(
            db,
            ladder_id=seeded.ladder_id,
            owner_id=alpha.owner_id,
            manifest=manifest,
            report={"ok": True, "code": "", "message": ""},
            model_sha256=blobs.put(onnx_bot(seed=9)),
        )
        db.commit()
        newer_id = newer.id
    retired = client.get(f"/bots/{seeded.alpha}").text
    assert f'<a href="/bots/{newer_id}">alpha v2</a>' in retired
    assert "This version is retired" not in client.get(f"/bots/{newer_id}").text
    assert "This version is retired" not in client.get(f"/bots/{seeded.beta}").text


def test_self_serve_accounts_get_a_token_once_and_can_revoke_tokens(client, onnx_bot):
    created = client.post("/api/v1/users", json={"name": "carol"})
    assert created.status_code == 201, created.text
    account = created.json()
    first = _auth(account["token"])
    assert account["name"] == "carol"
    second = client.post("/api/v1/tokens", headers=first).json()
    assert second["token"] != account["token"]
    upload = _upload(client, second["token"], onnx_bot(), game="bobail", name="c", player="greedy")
    assert upload.status_code == 201  # the new token writes
    assert client.delete(f"/api/v1/tokens/{second['token_id']}", headers=first).status_code == 204
    revoked = client.post("/api/v1/tokens", headers=_auth(second["token"]))
    assert (revoked.status_code, revoked.json()["code"]) == (401, "bad_token")
    again = client.delete(f"/api/v1/tokens/{second['token_id']}", headers=first)
    assert (again.status_code, again.json()["code"]) == (404, "not_found")
    assert client.delete("/api/v1/tokens/current", headers=first).status_code == 204
    assert client.post("/api/v1/tokens", headers=first).status_code == 401


def test_no_one_revokes_another_users_token(client, seeded):
    mine = client.post("/api/v1/users", json={"name": "dave"}).json()
    refused = client.delete(f"/api/v1/tokens/{mine['token_id']}", headers=_auth(seeded.alice_token))
    assert (refused.status_code, refused.json()["code"]) == (404, "not_found")
    assert client.post("/api/v1/tokens", headers=_auth(mine["token"])).status_code == 201


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "alice"}, 409, "name_taken"),
        ({"name": " padded "}, 422, "invalid_name"),
        ({"name": ""}, 422, "invalid_name"),
        ({"name": "x" * 65}, 422, "invalid_request"),
        ({"name": 7}, 422, "invalid_request"),
        ({}, 422, "invalid_request"),
    ],
)
def test_account_names_are_checked(client, seeded, body, status, code):
    response = client.post("/api/v1/users", json=body)
    assert (response.status_code, response.json()["code"]) == (status, code)


def test_accounts_are_rate_limited_per_address(make_app):
    with TestClient(make_app(accounts_per_hour=2)) as client:
        answers = [client.post("/api/v1/users", json={"name": f"u{n}"}) for n in range(3)]
        assert [answer.status_code for answer in answers] == [201, 201, 429]
        assert answers[2].json()["code"] == "rate_limited"
        assert int(answers[2].headers["Retry-After"]) > 3500
