"""Challenges through the API, on SQLite and PostgreSQL (no worker: the enqueue is recorded, and
games are recorded as a worker records them): booking, reading, the bot page's list, every
refusal with its code, the per-user limits, and unrated games kept out of the ladder's ratings,
schedule and the bots' records against their opponents while rated ones count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update
from sqlmodel import col, select

from arena_bots.manifest import Manifest
from arena_platform import cli
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, PairCount, Pairing
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import fit_ladder
from arena_platform.store.results import PlayedGame, record_pairing, recount_pairs
from arena_platform.store.scheduling import ladder_state


@dataclass(frozen=True)
class Rivals:
    ladder_id: int
    alice: dict[str, str]  # her Authorization header
    bob: dict[str, str]
    mine: int  # alice's bot
    theirs: int  # bob's bot
    uct: int  # a house bot of the ladder


@pytest.fixture
def rivals(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> Rivals:
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=8)
        ids = {}
        for name in ("alice", "bob"):
            user, token = users.create_user(db, name=name)
            bot = bots.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=user.id,
                manifest=Manifest(game="bobail", game_version=1, name=f"{name}-bot", player="greedy"),
                report={},
                model_sha256=blobs.put(onnx_bot(seed=len(ids))),
            )
            ids[name] = ({"Authorization": f"Bearer {token}"}, bot.id)
        uct = db.exec(select(Bot.id).where(Bot.ladder_id == ladder.id, Bot.name == "uct")).one()
        db.commit()
        return Rivals(ladder.id, ids["alice"][0], ids["bob"][0], ids["alice"][1], ids["bob"][1], uct)


def _challenge(client: TestClient, rivals: Rivals, **body: object) -> dict:
    response = client.post(
        "/api/v1/challenges",
        json={"bot_id": rivals.mine, "opponent_id": rivals.theirs, **body},
        headers=rivals.alice,
    )
    assert response.status_code == 201, response.text
    return response.json()


def _finish(engine: Engine, challenge_id: int, scores: tuple[float, float] = (1.0, 0.5)) -> None:
    """Records every pairing of the challenge as a worker would: game 0 (bot_a first) and game 1
    (seats swapped) with these first-seat scores."""
    with session(engine) as db:
        pairings = db.exec(select(Pairing).where(Pairing.challenge_id == challenge_id)).all()
        for pairing in pairings:
            seats = ((pairing.bot_a_id, pairing.bot_b_id), (pairing.bot_b_id, pairing.bot_a_id))
            games = [
                PlayedGame(index, first, second, score, "status=done", None, 10, "0" * 64)
                for index, ((first, second), score) in enumerate(zip(seats, scores, strict=True))
            ]
            assert record_pairing(db, pairing=pairing, games=games)


def test_a_challenge_is_booked_sent_read_and_listed_on_both_bots(client, rivals, enqueued, engine):
    challenge = _challenge(client, rivals, pairs=6)
    assert (challenge["status"], challenge["rated"], challenge["pairs"]) == ("open", False, 6)
    assert challenge["progress"] == {"queued": 6, "running": 0, "done": 0, "failed": 0}
    assert (challenge["bot"]["id"], challenge["opponent"]["id"], challenge["opponent_author"]) == (
        rivals.mine,
        rivals.theirs,
        "bob",
    )
    assert challenge["elo"] is None
    assert challenge["game_list"] == []
    sent = [pairing_id for name, (ids,) in enqueued if name == PLAY_PAIRINGS for pairing_id in ids]
    with session(engine) as db:
        booked = db.exec(select(Pairing).where(Pairing.challenge_id == challenge["id"])).all()
        assert sorted(sent) == sorted(pairing.id for pairing in booked)
        assert {(p.bot_a_id, p.bot_b_id, p.urgent) for p in booked} == {(rivals.mine, rivals.theirs, False)}
    assert max(len(ids) for _, (ids,) in enqueued) == 1  # the ladder's task size: unmeasured yet

    opponent = client.get(f"/api/v1/bots/{rivals.theirs}").json()  # what bob sees of his bot
    assert [listed["id"] for listed in opponent["challenges"]] == [challenge["id"]]
    assert {pairing["challenge_id"] for pairing in opponent["queue"]["booked"]} == {challenge["id"]}

    _finish(engine, challenge["id"], scores=(1.0, 0.5))  # each pair: a win and a draw for alice's bot
    done = client.get(f"/api/v1/challenges/{challenge['id']}").json()
    assert (done["status"], done["games"], done["wins"], done["draws"], done["losses"]) == (
        "finished",
        12,
        6,
        6,
        0,
    )
    assert done["pentanomial"] == [0, 0, 0, 6, 0]
    assert done["finished_at"] is not None
    assert 0 < done["elo_low"] < done["elo"] < done["elo_high"]
    assert [(game["pairing_id"], game["index"]) for game in done["game_list"]] == [
        (pairing.id, index) for pairing in sorted(booked, key=lambda p: p.id) for index in (0, 1)
    ]
    assert client.get("/api/v1/challenges/99").json()["code"] == "not_found"
    assert client.get(f"/challenges/{challenge['id']}").status_code == 200  # its page (tests/web draws it)
    assert client.get("/challenges/99").status_code == 404


def test_every_refusal_has_its_code_and_reason(client, rivals, engine):
    with session(engine) as db:
        alice = users.get_user_by_name(db, name="alice")
        old = Ladder(
            name="bobail-v0-8", game="bobail", game_version=0, simulations=8, seed=0
        )  # a retired version's
        db.add(old)
        db.flush()
        ladder_of = {
            "game": ensure_ladder(db, game="pente", simulations=8).id,
            "version": old.id,
            "version-too": old.id,
            "budget": ensure_ladder(db, game="bobail", simulations=16).id,
            "retired": rivals.ladder_id,
        }
        elsewhere = {
            key: Bot(
                ladder_id=ladder_id,
                owner_id=alice.id,
                name=key,
                kind="house",
                player="random",
                status="retired" if key == "retired" else "active",
            )
            for key, ladder_id in ladder_of.items()
        }
        db.add_all(elsewhere.values())
        db.commit()
        elsewhere = {key: bot.id for key, bot in elsewhere.items()}

    def refused(body: dict, headers: dict | None = None) -> tuple[int, str, str]:
        request = {"bot_id": rivals.mine, "opponent_id": rivals.theirs} | body
        answer = client.post(
            "/api/v1/challenges", json=request, headers=rivals.alice if headers is None else headers
        )
        return answer.status_code, answer.json()["code"], answer.json()["detail"]

    assert refused({}, headers={})[:2] == (401, "unauthorized")
    assert refused({"opponent_id": 999})[:2] == (404, "not_found")
    assert refused({"bot_id": 999})[:2] == (404, "not_found")
    status, code, detail = refused({}, headers=rivals.bob)
    assert (status, code) == (403, "not_owner")
    assert "one of your own bots" in detail
    assert refused({"opponent_id": rivals.mine})[:2] == (422, "same_bot")
    assert refused({"opponent_id": elsewhere["retired"]})[:2] == (409, "bot_retired")
    assert refused({"opponent_id": elsewhere["game"]})[:2] == (422, "wrong_game")
    assert refused({"opponent_id": elsewhere["version"]})[:2] == (422, "wrong_version")
    status, code, detail = refused({"opponent_id": elsewhere["budget"]})
    assert (status, code) == (422, "wrong_ladder")
    assert "bobail-v1-16" in detail
    both_old = {"bot_id": elsewhere["version"], "opponent_id": elsewhere["version-too"]}
    assert refused(both_old)[:2] == (409, "game_version_retired")
    for pairs in (0, -3, 51):
        status, code, detail = refused({"pairs": pairs})
        assert (status, code) == (422, "pairs_out_of_range")
        assert "1 to 50 pairs" in detail
    assert refused({"pairs": "many"})[:2] == (422, "invalid_request")
    with session(engine) as db:
        assert db.exec(select(Pairing)).all() == []  # no refusal booked anything


def test_open_challenges_and_challenges_per_day_are_capped_per_user(make_app, rivals, engine):
    with TestClient(make_app(challenges_open_per_user=2, challenges_per_day=3)) as client:
        first, second = (_challenge(client, rivals, pairs=1) for _ in range(2))
        answer = client.post(
            "/api/v1/challenges",
            json={"bot_id": rivals.mine, "opponent_id": rivals.uct},
            headers=rivals.alice,
        )
        assert (answer.status_code, answer.json()["code"]) == (429, "too_many_open_challenges")
        assert "2 challenges open" in answer.json()["detail"]
        bob = client.post(  # another user's allowance is their own
            "/api/v1/challenges",
            json={"bot_id": rivals.theirs, "opponent_id": rivals.mine},
            headers=rivals.bob,
        )
        assert bob.status_code == 201
        _finish(engine, first["id"])
        _challenge(client, rivals, pairs=1)  # one finished: room for another (the refusal cost nothing)
        _finish(engine, second["id"])
        answer = client.post(
            "/api/v1/challenges",
            json={"bot_id": rivals.mine, "opponent_id": rivals.theirs},
            headers=rivals.alice,
        )
        assert (answer.status_code, answer.json()["code"]) == (429, "rate_limited")
        assert "at most 3 challenges per day" in answer.json()["detail"]
        assert 86_000 < int(answer.headers["Retry-After"]) <= 86_401


def test_unrated_games_stay_out_of_the_ratings_and_every_challenge_out_of_the_schedule(
    client, rivals, engine
):
    unrated = _challenge(client, rivals, pairs=2)
    rated = _challenge(client, rivals, pairs=1, rated=True, opponent_id=rivals.uct)
    _finish(engine, unrated["id"])
    _finish(engine, rated["id"])
    with session(engine) as db:
        counts = {(row.low_bot_id, row.high_bot_id): row for row in db.exec(select(PairCount))}
        low, high = sorted((rivals.mine, rivals.uct))
        assert list(counts) == [(low, high)]  # only the rated challenge's games
        assert counts[low, high].low_wins + counts[low, high].draws + counts[low, high].high_wins == 2
        table = fit_ladder(db, ladder_id=rivals.ladder_id)
        assert str(rivals.theirs) not in {row.bot for row in table.rows if row.games}
        recount_pairs(db, ladder_id=rivals.ladder_id)  # a rebuild from the games agrees
        assert [
            (r.low_bot_id, r.high_bot_id, r.low_wins, r.draws, r.high_wins)
            for r in db.exec(select(PairCount))
        ] == [(low, high, counts[low, high].low_wins, counts[low, high].draws, counts[low, high].high_wins)]
        state = ladder_state(db, ladder=db.get(Ladder, rivals.ladder_id))
        assert not state.played
        assert not state.in_flight
        db.exec(update(Pairing).where(col(Pairing.challenge_id).is_not(None)).values(status="queued"))
        state = ladder_state(db, ladder=db.get(Ladder, rivals.ladder_id))
        assert not state.in_flight


def test_a_bots_record_against_its_opponents_counts_rated_games_only(client, rivals, engine):
    _finish(engine, _challenge(client, rivals, pairs=2)["id"])
    _finish(engine, _challenge(client, rivals, pairs=1, rated=True, opponent_id=rivals.uct)["id"])
    record = client.get(f"/api/v1/bots/{rivals.mine}/opponents").json()
    assert [(row["opponent"]["id"], row["games"], row["wins"], row["draws"]) for row in record] == [
        (rivals.uct, 2, 1, 1)  # the rated pair; the unrated pairs against bob's bot are left out
    ]


def test_the_command_line_challenges_shows_and_names_what_is_wrong(
    live_server, rivals, engine, capsys, monkeypatch
):
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    url = live_server()
    token = rivals.alice["Authorization"].removeprefix("Bearer ")
    bots_named = [str(rivals.mine), str(rivals.theirs)]
    assert cli.main(["challenge", *bots_named, "--pairs", "2", "--url", url, "--token", token]) == 0
    first, follow = capsys.readouterr().out.splitlines()
    challenge_id = int(first.split(":")[0].removeprefix("challenge "))
    assert first.endswith(
        "alice-bot v1 against bob-bot v1, 2 unrated pairs on bobail-v1-8 at 8 simulations per move"
    )
    assert follow.endswith(f"{url}/challenges/{challenge_id}")
    _finish(engine, challenge_id)
    assert cli.main(["challenge", "--show", str(challenge_id), "--url", url]) == 0  # anyone may look
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].startswith(
        f"challenge {challenge_id} finished: alice-bot v1 (by alice) against bob-bot v1"
    )
    assert "| 2/2 pairs | W/D/L 2/2/0 | Elo +" in shown[0]
    assert len(shown) == 5  # and its four games, each with its replay's page
    assert shown[1].endswith("1-0 (status=done) " + f"{url}/games/{shown[1].split()[1].rstrip(':')}")

    for arguments, problem in (
        ([*bots_named, "--url", url], "challenging needs an API token"),
        ([str(rivals.mine), str(rivals.mine), "--url", url, "--token", token], "cannot challenge itself"),
        ([*bots_named, "--pairs", "99", "--url", url, "--token", token], "1 to 50 pairs"),
        ([str(rivals.mine), "--url", url], "name your bot and its opponent"),
        (["--show", "99", "--url", url], "challenge 99 does not exist"),
    ):
        assert cli.main(["challenge", *arguments]) == 2
        assert problem in capsys.readouterr().err
