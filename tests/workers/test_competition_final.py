"""A whole competition on the embedded platform's parts, on SQLite and PostgreSQL: the API (an
injected clock) opens it and takes entries, the deadline passes, the final is booked with the
schedule's seeds, the runner plays it (called directly, a round at a time as the workers'
scheduling messages would), an extra round goes to the unsettled neighbours, the final finishes,
its frozen ranking is recomputed the same, and its files are exported (the CLI too); the zip's
replays open in `arena view`'s reader."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from competitions_setup import Clock
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import col, select

from arena_bots.manifest import Manifest
from arena_platform import cli
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.finals.ranking import rank_final
from arena_platform.finals.schedule import FinalPlan, round_robin, unsettled_pairs
from arena_platform.local_view import load_game
from arena_platform.models import CompetitionFinal, Pairing
from arena_platform.settings import Settings
from arena_platform.store import bots, finals, users
from arena_platform.store.finals import FINAL_GRACE
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.scheduling import book_rounds
from arena_workers import runner
from arena_workers.context import WorkerContext

OPENS = datetime(2027, 2, 1, 12, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=1)
STARTS = DEADLINE + FINAL_GRACE
ENTRANTS = 3


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, lease_seconds=60, heartbeat_seconds=1)


@pytest.fixture
def context(settings: Settings, engine: Engine, tmp_path: Path) -> Iterator[WorkerContext]:
    context = WorkerContext(
        settings=settings, engine=engine, blobs=BlobStore(str(tmp_path / "blobs")), enqueue=lambda *_: None
    )
    yield context
    context.close()


def test_a_competition_from_its_opening_to_its_finals_exported_ranking(
    context: WorkerContext, engine: Engine, onnx_bot, serving, tmp_path: Path, monkeypatch, capsys
):
    clock = Clock(OPENS - timedelta(days=1))
    app = create_app(
        context.settings, engine=engine, blobs=context.blobs, enqueue=lambda *_: None, clock=clock
    )
    client = TestClient(app)
    headers, own_bots = {}, {}
    with session(engine) as db:
        open_ladder = ensure_ladder(db, game="bobail", simulations=4)
        for number, name in enumerate(("olga", "ann", "ben", "cat")):
            user, token = users.create_user(db, name=name, organiser=name == "olga")
            headers[name] = {"Authorization": f"Bearer {token}"}
            if name != "olga":
                own_bots[name] = bots.create_network_bot(
                    db,
                    ladder_id=open_ladder.id,
                    owner_id=user.id,
                    manifest=Manifest(game="bobail", game_version=1, name=f"{name}bot", player="greedy"),
                    report={},
                    model_sha256=context.blobs.put(onnx_bot(seed=number)),
                ).id
        db.commit()
    terms = {
        "game": "bobail",
        "title": "A final's test",
        "opens_at": OPENS.isoformat(),
        "deadline": DEADLINE.isoformat(),
        "simulations": 2,
        "final": {"pairs": 1},
    }
    made = client.post("/api/v1/competitions", json=terms, headers=headers["olga"]).json()
    competition, ladder_id = made["id"], made["ladder_id"]
    clock.now = OPENS + timedelta(hours=1)
    entered = []
    for name, bot_id in own_bots.items():
        answer = client.post(
            f"/api/v1/competitions/{competition}/entries", json={"bot_id": bot_id}, headers=headers[name]
        )
        assert answer.status_code == 201, answer.text
        entered.append(answer.json()["id"])

    clock.now = DEADLINE + timedelta(minutes=1)
    assert book_rounds(engine, lambda *_: None, [ladder_id], redelivery_seconds=60, now=clock.now) == []
    assert client.get(f"/api/v1/competitions/{competition}/results").json()["phase"] == "closed"

    played_rounds = []
    while booked := book_rounds(engine, lambda *_: None, [ladder_id], redelivery_seconds=60, now=STARTS):
        with session(engine) as db:
            if not played_rounds:  # the round robin, with the schedule's seeds
                final = db.get(CompetitionFinal, competition)
                plan = FinalPlan(entrants=tuple(entered), pairs_per_pair=1, seed=final.seed)
                rows = db.exec(select(Pairing).where(col(Pairing.id).in_(booked)).order_by(Pairing.id)).all()
                assert [(p.bot_a_id, p.bot_b_id, p.seed) for p in rows] == [
                    (p.bot_a, p.bot_b, p.seed) for p in round_robin(plan)
                ]
            else:  # an extra round: the neighbours the ranking so far left unsettled
                ranking = rank_final(finals.final_results(db, ladder_id=ladder_id), entered)
                rows = db.exec(select(Pairing).where(col(Pairing.id).in_(booked))).all()
                assert sorted((p.bot_a_id, p.bot_b_id) for p in rows) == sorted(
                    tuple(sorted(pair)) for pair in unsettled_pairs(ranking)
                )
        outcomes = runner.play_pairings(context, booked)
        assert {outcome.status for outcome in outcomes} == {"recorded"}
        played_rounds.append(len(booked))
    assert played_rounds[0] == 3  # the round robin
    assert 2 <= len(played_rounds) <= 3  # 2 games a pair settle nobody: 1 or 2 extra rounds (the cap)

    answer = client.get(f"/api/v1/competitions/{competition}/results").json()
    assert (answer["phase"], answer["provisional"], answer["entrants"]) == ("finished", False, entered)
    progress = answer["progress"]
    assert (progress["booked"], progress["done"], progress["failed"]) == (sum(played_rounds),) * 2 + (0,)
    assert progress["rounds"] == len(played_rounds)
    assert sorted(row["entrant_id"] for row in answer["ranking"]) == sorted(entered)
    assert sum(row["games"] for row in answer["ranking"]) == 2 * 2 * sum(played_rounds)

    # Frozen: another round books nothing, and the ranking recomputed from the games is the same.
    assert (
        book_rounds(
            engine, lambda *_: None, [ladder_id], redelivery_seconds=60, now=STARTS + timedelta(days=9)
        )
        == []
    )
    again = client.get(f"/api/v1/competitions/{competition}/results").json()
    assert again == answer
    table = client.get(f"/api/v1/competitions/{competition}/results.csv")
    assert table.headers["content-type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(table.text)))
    assert [int(line["entrant_id"]) for line in lines] == [row["entrant_id"] for row in answer["ranking"]]
    document = client.get(f"/api/v1/competitions/{competition}/results.json").json()
    assert document["entrants"] == answer["ranking"]

    archive = client.get(f"/api/v1/competitions/{competition}/final.zip")
    assert archive.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(archive.content)) as opened:
        names = opened.namelist()
        assert len(names) == 2 * sum(played_rounds)
        assert names == sorted(names)
        assert names[0].startswith("000000-")
        opened.extractall(tmp_path / "replays")
    for number, name in enumerate(names):
        game = load_game(number, tmp_path / "replays" / name)  # `arena view` re-plays it
        assert {game.summary.first.name, game.summary.second.name} <= {f"{name}bot" for name in own_bots}

    # The CLI saves the same files from a server.
    with serving(app) as url:
        files = {kind: tmp_path / f"out.{kind}" for kind in ("csv", "json", "zip")}
        options = [f"--{kind}={path}" for kind, path in files.items()]
        assert cli.main(["competition", "results", str(competition), "--url", url, *options]) == 0
    shown = capsys.readouterr().out
    assert "final ranking:" in shown
    assert files["csv"].read_text() == table.text
    assert json.loads(files["json"].read_text()) == document
    assert files["zip"].read_bytes() == archive.content
