"""The embedded default: SQLite, a blob folder and the in-process Celery worker play a small ladder of
house bots end to end through the tasks, and a challenge posted to the API; and the task layer's
contracts."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func
from sqlalchemy.exc import OperationalError
from sqlmodel import select
from waiting import wait_until

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.cli.serve import services
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, GameRecord, PairCount, Pairing, Rating, RatingHistory, WorkerBeat
from arena_platform.queue import SCHEDULE_LADDER, TRAIN_SESSION
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import fit_ladder
from arena_workers import tasks
from arena_workers.celery_app import celery_config, create_celery_app
from arena_workers.context import REFIT, SWEEP
from arena_workers.embedded import EmbeddedWorker
from arena_workers.tasks import TASKS, TaskFailed

TIMEOUT_S = 60.0


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, lease_seconds=6, heartbeat_seconds=1).check()


@pytest.fixture
def engine(settings: Settings) -> Engine:
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    return engine


@pytest.fixture
def blobs(settings: Settings) -> BlobStore:
    return BlobStore(settings.resolved_blob_url)


def _introduced(db, ladder_id: int) -> bool:
    """Every pair of the ladder's bots has played its two introduction pairings."""
    bots = db.exec(select(Bot.id).where(Bot.ladder_id == ladder_id)).all()
    done = db.exec(select(Pairing).where(Pairing.ladder_id == ladder_id, Pairing.status == "done")).all()
    pairs = [frozenset((p.bot_a_id, p.bot_b_id)) for p in done]
    return all(pairs.count(frozenset((a, b))) >= 2 for a in bots for b in bots if a < b)


def test_the_embedded_worker_plays_a_ladder_of_house_bots_through_the_tasks(settings, engine, blobs):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=6, seed=3)
        db.add(
            Bot(ladder_id=ladder.id, name="uct-2", kind="house", player="uct", manifest={"simulations": 2})
        )
        db.commit()
    with EmbeddedWorker(settings, engine=engine, blobs=blobs) as worker:
        worker.enqueue(SCHEDULE_LADDER, ladder.id)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            with session(engine) as db:
                if _introduced(db, ladder.id) and db.exec(select(func.count(RatingHistory.id))).one() > 0:
                    break
            assert time.monotonic() < deadline, "the ladder's round robin did not finish"
            time.sleep(0.2)

    game = get_game("bobail")
    with session(engine) as db:
        done = db.exec(select(Pairing).where(Pairing.status == "done")).all()
        games = db.exec(select(GameRecord)).all()
        assert sorted((g.pairing_id, g.index) for g in games) == sorted(
            (p.id, i) for p in done for i in (0, 1)
        )
        for record in games:
            replay = Replay.from_json(blobs.get(record.replay_sha256).decode())
            assert replay.meta["bot_ids"] == [record.first_bot_id, record.second_bot_id]
            assert len(replay_states(game, replay)) == record.steps + 1
        names = {bot.id: bot.name for bot in db.exec(select(Bot))}
        assert {replay_name for g in games for replay_name in _players(blobs, g)} == set(names.values())

    # The worker refitted while it ran; a refit through the task now covers every recorded game.
    assert worker.app.tasks[REFIT].apply(args=(ladder.id,)).successful()
    with session(engine) as db:
        ratings = {row.bot_id: row for row in db.exec(select(Rating))}
        assert sum(row.games for row in ratings.values()) == 2 * len(games)
        fitted = fit_ladder(db, ladder_id=ladder.id)
        for bot_id, row in ratings.items():
            assert row.rating == pytest.approx(fitted[str(bot_id)].rating)
            assert row.low <= row.rating <= row.high
        # Every bot here is a house bot: the scale's zero is their mean, weighted as the fit weighs them.
        weights = {bot_id: fitted[str(bot_id)].anchor_weight for bot_id in ratings}
        assert sum(weights.values()) == pytest.approx(1.0)
        zero = sum(weights[bot_id] * row.rating for bot_id, row in ratings.items())
        assert zero == pytest.approx(0.0, abs=1e-6)


def test_with_several_processes_the_embedded_worker_plays_in_child_processes(settings, engine, blobs):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=6, seed=4)
        db.commit()
    playing: set[int] = set()  # the pids of the processes that beat while the ladder played
    with EmbeddedWorker(settings, engine=engine, blobs=blobs, processes=2) as worker:
        worker.enqueue(SCHEDULE_LADDER, ladder.id)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            with session(engine) as db:
                beats = db.exec(select(WorkerBeat.name).where(WorkerBeat.queues == "")).all()  # players'
                playing |= {int(name.split("/")[1]) for name in beats}
                if _introduced(db, ladder.id):
                    break
            assert time.monotonic() < deadline, "the ladder's introduction was not played"
            time.sleep(0.2)
    assert 1 <= len(playing) <= 2
    assert os.getpid() not in playing  # played by the children, not here
    with session(engine) as db:
        assert db.exec(select(WorkerBeat).where(WorkerBeat.queues == "")).all() == []  # the children closed
        games = db.exec(select(GameRecord)).all()
        done = db.exec(select(Pairing).where(Pairing.status == "done")).all()
        assert sorted((g.pairing_id, g.index) for g in games) == sorted(
            (p.id, i) for p in done for i in (0, 1)
        )


def _players(blobs: BlobStore, record: GameRecord) -> tuple[str, ...]:
    return Replay.from_json(blobs.get(record.replay_sha256).decode()).players


def test_known_errors_become_clean_task_failures(settings, engine):
    app = create_celery_app(settings)  # its context opens the settings' database: `engine`'s
    failed = app.tasks[REFIT].apply(args=(404,))
    assert failed.failed()
    assert isinstance(failed.result, TaskFailed)
    assert "ladder 404 does not exist" in str(failed.result)
    assert app.tasks["arena.play_pairing"].apply(args=(404,)).result == [[404, "not_claimed"]]
    assert app.tasks[SWEEP].apply().result == {"requeued": [], "failed": [], "resent": []}


def test_a_lost_database_is_retried_with_a_back_off_not_dropped(settings, monkeypatch, caplog):
    unreachable = dataclasses.replace(settings, database_url="postgresql+psycopg://arena@127.0.0.1:9/gone")
    monkeypatch.setattr(tasks, "DATABASE_RETRIES", 3)
    app = create_celery_app(unreachable)
    result = app.tasks[REFIT].apply(args=(1,))  # eagerly: each retry runs at once, in this thread
    assert isinstance(result.result, OperationalError)  # given up only after every retry
    retries = [record.message for record in caplog.records if "retrying in" in record.message]
    assert retries == [f"arena.refit(1,): the database is unreachable, retrying in {s} s" for s in (1, 2, 4)]


def test_the_in_memory_broker_is_polled_often_enough_for_a_busy_pool(settings):
    # kombu's default, a poll a second, let the demo's busy pool take one message a second, while each
    # play message brings a refit and a scheduling message: its play processes sat idle for a minute
    # with pairings queued. Redis's consumer is woken by the broker and needs no polling.
    assert celery_config(settings)["broker_transport_options"]["polling_interval"] <= 0.1
    on_redis = dataclasses.replace(settings, broker_url="redis://127.0.0.1:6379/0")
    assert "polling_interval" not in celery_config(on_redis)["broker_transport_options"]


def test_the_celery_configuration_keeps_every_task_until_it_ran(settings):
    config = celery_config(settings)
    assert config["task_acks_late"]
    assert config["task_reject_on_worker_lost"]
    assert config["worker_prefetch_multiplier"] == 1
    assert config["task_time_limit"] == settings.task_time_limit_seconds
    assert config["task_soft_time_limit"] < config["task_time_limit"]
    assert config["broker_transport_options"]["visibility_timeout"] >= 2 * config["task_time_limit"]
    assert config["accept_content"] == ["json"]
    assert config["task_serializer"] == "json"
    assert config["worker_redirect_stdouts"] is False
    assert "beat_schedule" not in config  # the sweep keeps its own clock (arena_workers.sweeper)
    app = create_celery_app(settings)
    assert set(TASKS) <= set(app.tasks)
    assert set(TASKS) == {
        SCHEDULE_LADDER, "arena.play_pairing", "arena.play_pairings", REFIT, SWEEP, TRAIN_SESSION
    }  # fmt: skip
    assert config["task_routes"] == {TRAIN_SESSION: {"queue": "training"}}  # match workers never train


def _statuses(engine: Engine) -> dict[int, tuple[str, int]]:
    with session(engine) as db:
        return {p.id: (p.status, p.attempts) for p in db.exec(select(Pairing))}


def test_stopping_gives_the_running_pairings_back_and_a_restart_resumes_them(settings, engine, blobs):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="pente", simulations=200, seed=3)  # games of many seconds
        db.commit()
    worker = EmbeddedWorker(settings, engine=engine, blobs=blobs).start()
    worker.enqueue(SCHEDULE_LADDER, ladder.id)
    wait_until(
        lambda: "running" in {status for status, _ in _statuses(engine).values()},
        "nothing ran",
        timeout=TIMEOUT_S,
    )
    started = time.monotonic()
    worker.stop()
    assert time.monotonic() - started < 10  # no waiting for the games to end
    statuses = _statuses(engine)
    # A pairing of two quick house bots (threats against random) may have ended before the stop.
    given_back = {pairing_id for pairing_id, (status, _) in statuses.items() if status != "done"}
    assert given_back
    assert {statuses[pairing_id] for pairing_id in given_back} == {("queued", 0)}  # no attempt used up
    with session(engine) as db:
        records = db.exec(select(GameRecord)).all()
    assert not [r for r in records if r.pairing_id in given_back]  # unscored
    assert not [r for r in records if r.forfeit_seat is not None]  # no game forfeited on the way out

    with EmbeddedWorker(settings, engine=engine, blobs=blobs):  # its broker is new and empty
        wait_until(
            lambda: ("running", 0) in {_statuses(engine)[pairing_id] for pairing_id in given_back},
            "the given-back pairings were not taken up again at once after the restart",
            timeout=TIMEOUT_S,
        )


def test_serving_starts_exactly_one_embedded_worker(settings):
    with services(settings) as running:
        workers = [thread for thread in threading.enumerate() if thread.name == "arena-embedded-worker"]
        assert len(workers) == 1  # two would play side by side on one set of model hosts
    worker = EmbeddedWorker(settings, engine=running.engine, blobs=running.blobs).start()
    with pytest.raises(RuntimeError, match="already started"):
        worker.start()
    worker.stop()


def test_a_challenge_posted_to_the_api_is_played_by_the_embedded_worker(settings, engine, blobs, onnx_bot):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=3)
        author, token = users.create_user(db, name="author")
        mine = bot_store.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=author.id,
            manifest=Manifest(game="bobail", game_version=1, name="net", player="greedy"),
            report={},
            model_sha256=blobs.put(onnx_bot()),
        )
        opponent = db.exec(select(Bot.id).where(Bot.ladder_id == ladder.id, Bot.name == "random")).one()
        db.commit()
        mine_id = mine.id
    with EmbeddedWorker(settings, engine=engine, blobs=blobs) as worker:
        app = create_app(settings, engine=engine, blobs=blobs, enqueue=worker.enqueue)
        with TestClient(app) as client:
            body = {"bot_id": mine_id, "opponent_id": opponent, "pairs": 2}
            made = client.post("/api/v1/challenges", json=body, headers={"Authorization": f"Bearer {token}"})
            assert made.status_code == 201, made.text
            url = f"/api/v1/challenges/{made.json()['id']}"
            wait_until(
                lambda: client.get(url).json()["status"] == "finished",
                "the challenge was not played",
                timeout=TIMEOUT_S,
            )
            played = client.get(url).json()
    assert (played["progress"]["done"], played["games"], len(played["game_list"])) == (2, 4, 4)
    with session(engine) as db:  # the ladder's own rounds start after each task; only theirs are counted
        own = select(func.count(GameRecord.id)).join(Pairing).where(Pairing.challenge_id.is_(None))
        counted = select(
            func.coalesce(func.sum(PairCount.low_wins + PairCount.draws + PairCount.high_wins), 0)
        )
        assert db.exec(counted).one() == db.exec(own).one()
