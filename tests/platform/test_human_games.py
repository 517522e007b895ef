"""Games against people over the API: a whole game played move by move, the bot's search shown,
the game stored and replayable but never rated, and every refusal with its status and code."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func
from sqlmodel import select

from arena_bots.host import ModelFault, ModelHost
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, HumanGame, PairCount, Rating
from arena_platform.store import bots
from arena_platform.store.ladders import ensure_ladder

KEY = "X-Play-Key"


def _start(client: TestClient, bot_id: int, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/v1/bots/{bot_id}/human-games", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _move(client: TestClient, game: dict[str, Any], key: str, action: list[int]) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/human-games/{game['id']}/moves",
        json={"action": action, "ply": game["ply"]},
        headers={KEY: key},
    )
    assert response.status_code == 200, response.text
    return response.json()


def _counts(engine: Engine) -> tuple[int, int, list[tuple[int, int]]]:
    with session(engine) as db:
        games = db.exec(select(func.count()).select_from(GameRecord)).one()
        pairs = db.exec(select(func.count()).select_from(PairCount)).one()
        ratings = [(rating.bot_id, rating.games) for rating in db.exec(select(Rating)).all()]
    return games, pairs, sorted(ratings)


def test_a_whole_game_against_a_bot_is_stored_replayable_and_never_rated(client, engine, seeded):
    before = _counts(engine)
    started = _start(client, seeded.random, seat=1, seed=5)
    key, game = started.pop("key"), started
    assert game["bot"]["id"] == seeded.random
    assert game["human_seat"] == 1
    assert game["ply"] == 1
    assert game["your_turn"]
    assert game["seats"][1] == {"name": "a person", "person": True}  # as the headers say
    while game["status"] == "playing":
        assert game["your_turn"]
        assert game["legal"][0]
        game = _move(client, game, key, [game["legal"][0][0]])
    assert game["end_reason"]
    assert game["human_score"] in (0.0, 0.5, 1.0)
    assert not game["your_turn"]
    assert game["legal"] == [[]]

    frames = client.get(f"/api/v1/human-games/{game['id']}/frames").json()
    assert len(frames["frames"]) == game["ply"] + 1
    assert frames["end_reason"] == game["end_reason"]
    with session(engine) as db:
        stored = Replay.from_dict(db.get(HumanGame, game["id"]).replay)
    assert len(replay_states(get_game("bobail"), stored)) == game["ply"] + 1  # it re-plays
    assert _counts(engine) == before  # no game, pair count or rating touched
    (listed,) = client.get(f"/api/v1/bots/{seeded.random}/human-games").json()
    assert (listed["id"], listed["status"], listed["ply"]) == (game["id"], "over", game["ply"])


def test_a_search_bot_answers_at_its_ladder_budget_and_shows_its_search(client, seeded):
    started = _start(client, seeded.beta, seed=2)
    key, game = started.pop("key"), started
    assert game["ply"] == 0
    assert game["your_turn"]
    assert game["last"] is None
    assert game["simulations"] == 16  # the seeded ladder's budget
    action = game["legal"][0][0]
    assert str(action) in game["view"]["moves"]  # every legal move is decoded for the board
    game = _move(client, game, key, [action])
    last = game["last"]  # the bot's reply: its position, its action and the search behind it
    assert game["ply"] == 3
    assert last["ply"] == 2
    assert last["actors"] == [1]
    insight = last["insights"][0]
    assert insight["simulations"] == 16
    assert insight["top"][0]["action"] == last["actions"][0]
    resigned = client.post(f"/api/v1/human-games/{game['id']}/resign", headers={KEY: key}).json()
    assert resigned["status"] == "over"
    assert resigned["human_score"] == 0.0
    assert resigned["end_reason"] == "player 1 resigns"


def test_refusals_have_a_status_a_code_and_change_nothing(client, seeded):
    started = _start(client, seeded.random, seed=1)
    key, game = started.pop("key"), started
    url = f"/api/v1/human-games/{game['id']}"
    illegal = next(a for a in range(200) if a not in game["legal"][0])

    def refused(path: str, body: Any = None, headers: Any = None) -> tuple[int, str]:
        response = client.post(url + path, json=body, headers=headers or {})
        return response.status_code, response.json()["code"]

    assert refused("/moves", {"action": [game["legal"][0][0]]}) == (401, "key_required")
    assert refused("/moves", {"action": [game["legal"][0][0]]}, {KEY: "not-the-key"}) == (403, "wrong_key")
    assert refused("/moves", {"action": [illegal]}, {KEY: key}) == (422, "illegal_action")
    assert refused("/moves", {"action": [0, 0]}, {KEY: key}) == (422, "illegal_action")
    assert refused("/moves", {"action": ["a"]}, {KEY: key}) == (422, "invalid_request")
    assert refused("/moves", {"action": [game["legal"][0][0]], "ply": 7}, {KEY: key}) == (409, "moved_on")
    assert client.get(url).json()["ply"] == 0  # none of it moved the game
    assert client.post(url + "/resign", headers={KEY: key}).status_code == 200
    assert refused("/resign", headers={KEY: key}) == (409, "game_over")
    assert refused("/moves", {"action": [game["legal"][0][0]]}, {KEY: key}) == (409, "game_over")
    assert client.get("/api/v1/human-games/99999").json()["code"] == "not_found"
    assert client.post("/api/v1/bots/99999/human-games", json={}).status_code == 404
    bad_seat = client.post(f"/api/v1/bots/{seeded.random}/human-games", json={"seat": 2})
    assert (bad_seat.status_code, bad_seat.json()["code"]) == (422, "bad_seat")


@pytest.mark.parametrize("limit", ["human_moves_per_minute", "human_games_per_hour"])
def test_a_client_is_limited_in_games_and_moves(make_app, seeded, limit):
    with TestClient(make_app(**{limit: 2})) as client:
        started = _start(client, seeded.random, seed=1)
        url = f"/api/v1/human-games/{started['id']}/moves"
        if limit == "human_moves_per_minute":  # starting counted as one move
            _move(client, started, started["key"], [started["legal"][0][0]])
            response = client.post(url, json={"action": [0]}, headers={KEY: started["key"]})
        else:
            _start(client, seeded.random)
            response = client.post(f"/api/v1/bots/{seeded.random}/human-games", json={})
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limited"
    assert int(response.headers["Retry-After"]) >= 1


def _failing_host_runs(monkeypatch, *blames: str) -> list[str]:
    """The next len(blames) model host calls fail with a host death blamed so; the blames left."""
    left = list(blames)
    run = ModelHost.run

    def failing(self, inputs):
        if left:
            raise ModelFault("host_died", "the model host was killed by SIGKILL", blame=left.pop(0))
        return run(self, inputs)

    monkeypatch.setattr(ModelHost, "run", failing)
    return left


def test_a_host_the_platform_lost_costs_the_bot_nothing(client, seeded, monkeypatch):
    started = _start(client, seeded.beta, seed=2)
    key, game = started.pop("key"), started
    _failing_host_runs(monkeypatch, "platform", "platform")  # the fresh host too: nothing is played
    response = client.post(
        f"/api/v1/human-games/{game['id']}/moves", json={"action": [game["legal"][0][0]]}, headers={KEY: key}
    )
    assert (response.status_code, response.json()["code"]) == (503, "platform_fault"), response.text
    assert client.get(f"/api/v1/human-games/{game['id']}").json()["ply"] == 0  # the move was not kept
    left = _failing_host_runs(monkeypatch, "platform")  # a fresh host answers: the game goes on
    game = _move(client, game, key, [game["legal"][0][0]])
    assert (left, game["status"], game["ply"]) == ([], "playing", 3)


def test_a_host_that_crashes_twice_on_one_position_is_the_bots_forfeit(client, seeded, monkeypatch):
    started = _start(client, seeded.beta, seed=2)
    key, game = started.pop("key"), started
    _failing_host_runs(monkeypatch, "unknown", "unknown")
    game = _move(client, game, key, [game["legal"][0][0]])
    assert (game["status"], game["forfeit_seat"], game["human_score"]) == ("over", 1, 1.0)
    assert "crashed a fresh host too" in game["end_reason"]


def test_retired_bots_and_games_people_do_not_play_are_refused(client, engine, seeded):
    with session(engine) as db:
        bots.retire_bot(db, bot=db.get(Bot, seeded.beta), user_id=db.get(Bot, seeded.beta).owner_id)
        csb = ensure_ladder(db, game="csb", simulations=16)
        csb_random = db.exec(select(Bot.id).where(Bot.ladder_id == csb.id, Bot.name == "random")).one()
        db.commit()
    retired = client.post(f"/api/v1/bots/{seeded.beta}/human-games", json={})
    assert (retired.status_code, retired.json()["code"]) == (409, "bot_retired")
    csb = client.post(f"/api/v1/bots/{csb_random}/human-games", json={})
    assert (csb.status_code, csb.json()["code"]) == (422, "not_offered")
    assert "angle" in csb.json()["detail"]
    assert "Play against this bot" not in client.get(f"/bots/{csb_random}").text  # as the page says
    assert "Play against this bot" not in client.get(f"/bots/{seeded.beta}").text
    assert "Play against this bot" in client.get(f"/bots/{seeded.alpha}").text
