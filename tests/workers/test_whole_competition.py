"""A whole competition on the embedded platform (issue 26's first test): SQLite, the blob folder and
the in-process worker, with one injected clock read by the API and the worker alike, moved forward
by the test. Through the HTTP API: the organiser creates it with two leagues; an entry before the
opening is refused; entries by upload and by copy, one over the per-user limits refused; the
worker's games and refits promote the strong entrant out of the lower league;
two uploads race the deadline (the one started before it is entered, the other refused); past the
deadline and its grace the worker starts the final by itself (no request asks), plays it to its end, and
its frozen ranking is read twice the same and exported as CSV, JSON and a zip of replays that
`arena view`'s reader opens. Every wait is on a database state, with a timeout."""

from __future__ import annotations

import csv
import io
import threading
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from competitions_setup import Clock
from fastapi.testclient import TestClient
from sqlmodel import col, select
from waiting import wait_until

from arena_bots.manifest import Manifest
from arena_platform.api import create_app
from arena_platform.api.routes import bots as bot_routes
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.local_view import load_game
from arena_platform.models import Bot, Pairing
from arena_platform.settings import Settings
from arena_platform.store import bots, users
from arena_platform.store.finals import FINAL_GRACE
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.leagues import PLACEMENT_GAMES, PROMOTION_LEVEL
from arena_workers.embedded import EmbeddedWorker

ZOO_BOT = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "bobail" / "az-bobail-final.onnx"
OPENS = datetime(2027, 3, 1, 12, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=7)
SIMULATIONS = 2  # the competition's budget: uct, the upper league's boss, plays with it
TIMEOUT_S = 90.0
TERMS = {
    "game": "bobail",
    "title": "Bobail spring cup",
    "opens_at": OPENS.isoformat(),
    "deadline": DEADLINE.isoformat(),
    "simulations": SIMULATIONS,
    "max_active_bots": 2,
    "uploads_per_day": 5,
    "final": {"pairs": 1},
    "leagues": [{"name": "wood", "boss": "random"}, {"name": "bronze", "boss": "uct"}],
}


def _refusal(response) -> tuple[int, str]:
    return response.status_code, response.json()["code"]


def test_a_whole_competition_from_its_opening_to_its_exported_final(tmp_path: Path, onnx_bot, monkeypatch):
    settings = Settings(data_dir=tmp_path, lease_seconds=10, heartbeat_seconds=1).check()
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    blobs = BlobStore(settings.resolved_blob_url)
    clock = Clock(OPENS - timedelta(days=1))
    headers = {}
    with session(engine) as db:
        for name in ("olga", "ann", "bob", "cat"):
            _, token = users.create_user(db, name=name, organiser=name == "olga")
            headers[name] = {"Authorization": f"Bearer {token}"}
        champion = bots.create_network_bot(  # ann's zoo bot on the open ladder, to be copied in
            db,
            ladder_id=ensure_ladder(db, game="bobail", simulations=SIMULATIONS).id,
            owner_id=users.get_user_by_name(db, name="ann").id,
            manifest=Manifest(game="bobail", game_version=1, name="champ", player="greedy"),
            report={},
            model_sha256=blobs.put(ZOO_BOT.read_bytes()),
        ).id
        db.commit()

    with EmbeddedWorker(settings, engine=engine, blobs=blobs, clock=clock) as worker:
        app = create_app(settings, engine=engine, blobs=blobs, enqueue=worker.enqueue, clock=clock)
        with TestClient(app) as client:
            made = client.post("/api/v1/competitions", json=TERMS, headers=headers["olga"])
            assert made.status_code == 201, made.text
            competition = made.json()["id"]
            url = f"/api/v1/competitions/{competition}"

            def upload(user: str, name: str, seed: int = 0):
                return client.post(
                    f"{url}/entries",
                    files={"model": ("bot.onnx", onnx_bot(seed=seed))},
                    data={"name": name, "player": "greedy"},
                    headers=headers[user],
                )

            # Before the opening, no entry; after it, an upload and a copy, and no third name.
            assert _refusal(upload("ann", "tiny")) == (409, "not_open")
            clock.now = OPENS + timedelta(hours=1)
            tiny = upload("ann", "tiny")
            assert tiny.status_code == 201, tiny.text
            copied = client.post(f"{url}/entries", json={"bot_id": champion}, headers=headers["ann"])
            assert copied.status_code == 201, copied.text
            tiny_id, champ_id = tiny.json()["id"], copied.json()["id"]
            assert _refusal(upload("ann", "third", seed=2)) == (409, "active_bots_reached")
            assert client.get(url).json()["league_sizes"] == [2, 0]

            # The worker plays the lower league and its refits promote the zoo bot. (Whether the tiny
            # bot, about as strong as `random`, ever beats it clearly enough is its own affair: each
            # bot stands where its promotions put it.)
            leagues = f"{url}/leagues"

            def champion_promoted() -> list[dict]:
                promotions = client.get(leagues).json()["leagues"][0]["promotions"]
                return [promotion for promotion in promotions if promotion["bot_id"] == champ_id]

            wait_until(champion_promoted, "the zoo bot's promotion", timeout=TIMEOUT_S)
            wood, bronze = client.get(leagues).json()["leagues"]
            (promotion,) = champion_promoted()
            assert promotion["to_league"] == "bronze"
            assert promotion["probability"] >= PROMOTION_LEVEL
            assert promotion["games"] >= PLACEMENT_GAMES
            risen = {promotion["bot_id"] for promotion in wood["promotions"]}
            assert {member["bot_id"] for member in wood["members"]} == {tiny_id} - risen
            assert {member["bot_id"] for member in bronze["members"]} == {champ_id} | risen
            assert (wood["boss"]["name"], bronze["boss"]["name"]) == ("random", "uct")

            # Two uploads race the deadline: the one started before it is entered after it.
            clock.now = DEADLINE - timedelta(seconds=1)
            validating, release = threading.Event(), threading.Event()
            real_validate = bot_routes.validate

            def held_validate(*args, **kwargs):
                validating.set()
                assert release.wait(TIMEOUT_S)
                return real_validate(*args, **kwargs)

            monkeypatch.setattr(bot_routes, "validate", held_validate)
            answers = {}
            early = threading.Thread(
                target=lambda: answers.setdefault("early", upload("bob", "early", seed=1))
            )
            early.start()
            assert validating.wait(TIMEOUT_S)
            clock.now = DEADLINE
            assert _refusal(upload("cat", "late", seed=3)) == (409, "deadline_passed")
            release.set()
            early.join(TIMEOUT_S)
            assert answers["early"].status_code == 201, answers["early"].text
            early_id = answers["early"].json()["id"]
            entrants = sorted([tiny_id, champ_id, early_id])
            assert client.get(f"{url}/results").json()["phase"] == "closed"

            # Past the grace the worker starts the final by itself (its sweeper) and plays it to its end.
            clock.now = DEADLINE + FINAL_GRACE
            results = f"{url}/results"
            wait_until(
                lambda: client.get(results).json()["phase"] == "finished",
                "the final finished",
                timeout=TIMEOUT_S,
            )
            answer = client.get(results).json()
            assert (answer["provisional"], sorted(answer["entrants"])) == (False, entrants)
            progress = answer["progress"]
            assert progress["done"] == progress["booked"] >= 3  # the round robin, and extra rounds
            assert progress["failed"] == 0
            assert sorted(row["entrant_id"] for row in answer["ranking"]) == entrants
            assert sum(row["games"] for row in answer["ranking"]) == 2 * 2 * progress["done"]

            # Frozen: the same ranking a while later, while the worker still sweeps.
            clock.now += timedelta(days=3)
            time.sleep(2 * settings.heartbeat_seconds)
            assert client.get(results).json() == answer
            with session(engine) as db:  # nobody entered late; the early bot played in the final only
                assert db.exec(select(Bot.name).where(Bot.name == "late")).all() == []
                by_early = (col(Pairing.bot_a_id) == early_id) | (col(Pairing.bot_b_id) == early_id)
                assert db.exec(select(Pairing.final_number).where(by_early)).all()
                assert None not in db.exec(select(Pairing.final_number).where(by_early)).all()

            table = client.get(f"{url}/results.csv")
            assert table.headers["content-type"].startswith("text/csv")
            ranked = [row["entrant_id"] for row in answer["ranking"]]
            assert [int(row["entrant_id"]) for row in csv.DictReader(io.StringIO(table.text))] == ranked
            assert client.get(f"{url}/results.json").json()["entrants"] == answer["ranking"]
            archive = client.get(f"{url}/final.zip")
            assert archive.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(archive.content)) as opened:
        names = opened.namelist()
        opened.extractall(tmp_path / "replays")
    assert len(names) == 2 * progress["done"]
    for number, name in enumerate(names):
        game = load_game(number, tmp_path / "replays" / name)  # as `arena view` re-plays it
        assert {game.summary.first.name, game.summary.second.name} <= {"tiny", "champ", "early"}
