"""The API's defences against a busy or careless client: rate limits that count every attempt,
a bounded and throttled predict, error bodies as documented, self-serve accounts and tokens."""

from __future__ import annotations

import jsonschema
from fastapi.testclient import TestClient

from arena_platform.api.routes import bots as bot_routes


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
        monkeypatch.setattr(bot_routes, "validate", lambda *args: validated.append(args))
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
