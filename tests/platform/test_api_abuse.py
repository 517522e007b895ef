"""The API against a hostile client (issue 23, items 10 and 13-17): bodies bounded per route before
they are parsed, limits checked first and shared, forwarding headers believed only from trusted
proxies, uploads counted atomically (and not when the platform failed them), tokens authenticated
before a body is read, slow connections closed, tokens capped and listed."""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from redis import Redis
from sqlmodel import func, select

from arena_bots.validation import validate
from arena_games.registry import get_game
from arena_platform import cli
from arena_platform.api.errors import MAX_PROBLEMS
from arena_platform.api.routes import bots as bot_routes
from arena_platform.api.server import uvicorn_config
from arena_platform.db import session
from arena_platform.models import UploadAttempt


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _unknown_keys(count: int) -> bytes:
    return json.dumps({f"key{index:07d}": 0 for index in range(count)}).encode()


def _upload(base: str, token: str, model: bytes = b"garbage") -> httpx.Response:
    files = {"model": ("bot.onnx", model)}
    form = {"game": "bobail", "name": "a", "player": "greedy"}
    return httpx.post(f"{base}/api/v1/bots", files=files, data=form, headers=_auth(token), timeout=60)


def _attempts(engine) -> int:
    with session(engine) as db:
        return db.exec(select(func.count()).select_from(UploadAttempt)).one()


# --- 10: bodies bounded before they are parsed, a few problems named, limits first ----------------


@pytest.mark.parametrize("path", ["/api/v1/users", "/api/v1/predict", "/api/v1/bots/1/human-games"])
def test_a_json_body_over_its_routes_cap_is_413_before_it_is_parsed(client, path):
    hostile = _unknown_keys(200_000)  # 3.6 MB: seconds of CPU and a 13 MB answer, once
    started = time.process_time()
    response = client.post(path, content=hostile, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()["code"]) == (413, "payload_too_large")
    assert "65,536 bytes" in response.json()["detail"]
    assert time.process_time() - started < 0.5


def test_a_malformed_body_names_a_few_problems_and_echoes_none_of_its_input(client):
    hostile = _unknown_keys(3_000)  # under the cap: every key is a problem
    response = client.post("/api/v1/users", content=hostile, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()["code"]) == (422, "invalid_request")
    assert len(response.json()["errors"]) == MAX_PROBLEMS
    assert "(and 3,000 more problems)" in response.json()["detail"]  # name is missing, too
    assert len(response.content) < 3_000
    long_key = json.dumps({"name": "x", "k" * 50_000: 1}).encode()
    answer = client.post("/api/v1/users", content=long_key, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422
    assert len(answer.content) < 1_000  # the key is not echoed whole


def test_rate_limits_are_checked_before_the_body_is_validated(make_app, seeded):
    malformed = _unknown_keys(1_000)
    json_body = {"Content-Type": "application/json"}
    with TestClient(make_app(accounts_per_hour=1, predicts_per_minute=1, human_games_per_hour=1)) as client:
        for path, good in (
            ("/api/v1/users", {"name": "carol"}),
            ("/api/v1/predict", {"bot_id": seeded.random}),
            (f"/api/v1/bots/{seeded.random}/human-games", {}),
        ):
            assert client.post(path, json=good).status_code in (200, 201)
            refused = client.post(path, content=malformed, headers=json_body)
            assert (refused.status_code, refused.json()["code"]) == (429, "rate_limited"), path


# --- 16: a token checked before the body is read; slow connections closed --------------------------


def _head_answer(base: str, head: str, timeout: float = 5.0) -> str:
    """Sends a request's head only (no body) and returns the status line of the answer."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=timeout) as raw:
        raw.sendall(head.encode())
        return raw.recv(65536).decode().split("\r\n", 1)[0]


def test_an_upload_with_a_bad_token_is_refused_before_its_body_is_read(live_server, engine):
    base = live_server()
    head = (
        f"POST /api/v1/bots HTTP/1.1\r\nHost: {urlsplit(base).netloc}\r\nAuthorization: Bearer nonsense\r\n"
        f"Content-Length: {30 * 1024 * 1024}\r\nContent-Type: multipart/form-data; boundary=x\r\n\r\n"
    )
    assert _head_answer(base, head) == "HTTP/1.1 401 Unauthorized"  # not a wait for 30 MB
    assert _attempts(engine) == 0


def test_a_slow_or_idle_connection_is_closed(make_app, serving, settings):
    timeouts = dataclasses.replace(settings, header_timeout_seconds=1, keep_alive_seconds=1)
    with serving(uvicorn_config(make_app(), timeouts)) as base:
        address = urlsplit(base)
        names = ("silent", "slow", "kept_alive")
        connections = {name: socket.create_connection((address.hostname, address.port)) for name in names}
        request = f"GET /api/v1/health HTTP/1.1\r\nHost: {address.netloc}\r\n\r\n"
        connections["kept_alive"].sendall(request.encode())
        assert connections["kept_alive"].recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        connections["slow"].sendall(b"GET /api/v1/health HTTP/1.1\r\n")
        closed: dict[str, float] = {}
        while len(closed) < len(names) and time.monotonic() - started < 10:
            for name, connection in connections.items():
                if name not in closed and _closed(connection, drip=name == "slow"):
                    closed[name] = time.monotonic() - started
        for connection in connections.values():
            connection.close()
    assert sorted(closed) == sorted(names)
    assert max(closed.values()) < 5  # 1 s is allowed (never closed before, but for the kept-alive one)


def _closed(connection: socket.socket, *, drip: bool) -> bool:
    """Whether the server closed `connection`, waiting a quarter second for it; with `drip`, sends
    a header line first (a slow client: never a whole head)."""
    connection.settimeout(0.25)
    try:
        if drip:
            connection.sendall(b"X-Drip: 1\r\n")
        return connection.recv(65536) == b""
    except TimeoutError:
        return False
    except OSError:  # reset by the server
        return True


# --- 14: forwarded addresses from trusted proxies only; limits shared through Redis -------------


def test_forwarded_addresses_are_believed_only_from_trusted_proxies(make_app, serving, settings):
    def accounts(trusted_proxies: str) -> list[int]:
        served = dataclasses.replace(settings, accounts_per_hour=1, trusted_proxies=trusted_proxies)
        with serving(uvicorn_config(make_app(accounts_per_hour=1), served)) as base:
            return [
                httpx.post(
                    f"{base}/api/v1/users",
                    json={"name": f"{trusted_proxies or 'direct'}-{index}"},
                    headers={"X-Forwarded-For": f"203.0.113.{index}"},
                ).status_code
                for index in range(3)
            ]

    assert accounts("") == [201, 429, 429]  # one client, whatever it claims
    assert accounts("127.0.0.1") == [201, 201, 201]  # a proxy's clients, each its own address


def test_rate_limits_are_shared_by_the_api_processes_on_one_redis(make_app, redis_url):
    Redis.from_url(redis_url).flushdb()  # the counts of the other database's run
    shared = {"broker_url": redis_url, "accounts_per_hour": 2}
    with TestClient(make_app(**shared)) as first, TestClient(make_app(**shared)) as second:
        statuses = [
            api.post("/api/v1/users", json={"name": f"user{index}"}).status_code
            for index, api in enumerate((first, second, first, second))
        ]
    assert statuses == [201, 201, 429, 429]


def test_without_redis_the_limits_are_counted_in_the_process(make_app, caplog):
    unreachable = "redis://127.0.0.1:9/0"  # the discard port: nothing listens
    with (
        caplog.at_level(logging.WARNING),
        TestClient(make_app(broker_url=unreachable, accounts_per_hour=1)) as api,
    ):
        statuses = [api.post("/api/v1/users", json={"name": f"u{index}"}).status_code for index in range(2)]
    assert statuses == [201, 429]
    assert "counted in this process" in caplog.text


# --- 15: the upload limit is one atomic step ------------------------------------------------------


def test_concurrent_uploads_to_two_api_processes_never_pass_the_limit(live_server, new_user, engine):
    token = new_user("mallory")
    servers = [live_server(uploads_per_hour=5), live_server(uploads_per_hour=5)]
    start = threading.Barrier(40)

    def upload(index: int) -> int:
        start.wait()
        return _upload(servers[index % 2], token).status_code

    with ThreadPoolExecutor(max_workers=40) as threads:
        statuses = list(threads.map(upload, range(40)))
    assert statuses.count(422) == 5  # refused models count: garbage is no ONNX
    assert statuses.count(429) == 35
    assert _attempts(engine) == 5


# --- 13: a refusal the platform caused costs no upload ---------------------------------------


def test_a_refusal_the_platform_caused_costs_no_upload(live_server, new_user, engine, monkeypatch):
    token = new_user("alice")
    base = live_server(uploads_per_hour=2)
    refused = validate(b"garbage", get_game("bobail"))
    broken = dataclasses.replace(refused, code="internal_error", platform_fault=True)
    monkeypatch.setattr(bot_routes, "validate", lambda *args, **kwargs: broken)
    assert [_upload(base, token).json()["code"] for _ in range(3)] == ["internal_error"] * 3

    def blob_store_down(*args, **kwargs):
        raise OSError("the blob store is unreachable")

    monkeypatch.setattr(
        bot_routes, "validate", lambda *args, **kwargs: dataclasses.replace(broken, ok=True, code="")
    )
    monkeypatch.setattr(bot_routes, "_insert_bot", blob_store_down)
    assert [_upload(base, token).status_code for _ in range(3)] == [500] * 3
    assert _attempts(engine) == 0
    monkeypatch.undo()
    assert [_upload(base, token).json()["code"] for _ in range(3)] == ["not_onnx", "not_onnx", "rate_limited"]


# --- 17: tokens capped per user and listed without their secrets --------------------------------


def test_tokens_are_capped_per_user_and_listed_without_secrets(make_app, new_user):
    first = new_user("alice")
    with TestClient(make_app(tokens_per_user=3)) as client:
        issued = [
            client.post("/api/v1/tokens", json={"name": f"laptop {n}"}, headers=_auth(first)) for n in (1, 2)
        ]
        assert [answer.status_code for answer in issued] == [201, 201]
        refused = client.post("/api/v1/tokens", headers=_auth(first))
        assert (refused.status_code, refused.json()["code"]) == (409, "too_many_tokens")
        listed = client.get("/api/v1/tokens", headers=_auth(first)).json()
        assert [token["name"] for token in listed] == [None, "laptop 1", "laptop 2"]
        assert listed[0]["last_used_at"] is not None  # the token of these requests
        assert listed[1]["last_used_at"] is None
        assert set(listed[0]) == {"token_id", "name", "created_at", "last_used_at"}
        secrets = [first] + [answer.json()["token"] for answer in issued]
        assert not any(secret in json.dumps(listed) for secret in secrets)
        revoked = client.delete(f"/api/v1/tokens/{listed[1]['token_id']}", headers=_auth(first))
        assert revoked.status_code == 204
        assert client.post("/api/v1/tokens", headers=_auth(first)).status_code == 201
        bad_name = client.post("/api/v1/tokens", json={"name": "tab\there"}, headers=_auth(first))
        assert bad_name.status_code == 422


def test_the_cli_lists_tokens(live_server, new_user, capsys):
    base = live_server()
    token = new_user("alice")
    assert cli.main(["user", "tokens", "--url", base, "--token", token]) == 0
    out = capsys.readouterr().out
    header, row = out.strip().splitlines()
    assert header.split() == ["id", "created", "last", "used", "name"]
    assert " UTC " in row
    assert token not in out


def test_tokens_issued_and_revoked_in_a_loop_are_limited_per_hour(make_app, new_user):
    token = new_user("alice")
    with TestClient(make_app(tokens_per_hour=2)) as client:
        statuses = []
        for _ in range(3):
            issued = client.post("/api/v1/tokens", headers=_auth(token))
            statuses.append(issued.status_code)
            if issued.status_code == 201:
                client.delete(f"/api/v1/tokens/{issued.json()['token_id']}", headers=_auth(token))
    assert statuses == [201, 201, 429]
