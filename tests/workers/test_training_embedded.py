"""Training sessions on the embedded default: SQLite, a blob folder, and the in-process worker
(consuming the training queue beside the matches) train a tiny session started through the API,
enter its checkpoints into the ladder and rate them, then fine-tune its last checkpoint (with each
kit: alphazero on Bobail, actor-critic on Smash the Code, dqn on Coders Strike Back); a paused
session is left alone until resumed, and a time slice hands the session on to the next task."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import select
from waiting import wait_until

from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Rating
from arena_platform.queue import TRAIN_SESSION
from arena_platform.settings import Settings
from arena_platform.store import training, users
from arena_workers.context import WorkerContext
from arena_workers.embedded import EmbeddedWorker
from arena_workers.sweeper import sweep
from arena_workers.training import DqnSessionRun, train_session

pytest.importorskip("torch")

TIMEOUT_S = 60.0
ASK = {"game": "bobail", "episodes": 4, "time_limit_seconds": 600, "blocks": 1, "filters": 16}
ASK |= {"simulations": 4, "games_per_generation": 2, "checkpoint_every": 1}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, lease_seconds=6, heartbeat_seconds=1, ladder_simulations=4).check()


@contextmanager
def _platform(settings: Settings) -> Iterator[tuple[Engine, TestClient, dict[str, str]]]:
    """The API over a migrated database with the embedded workers (a training worker beating),
    and the headers of the user ada."""
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    blobs = BlobStore(settings.resolved_blob_url)
    with session(engine) as db:
        _, token = users.create_user(db, name="ada")
        db.commit()
    with EmbeddedWorker(settings, engine=engine, blobs=blobs) as worker:
        app = create_app(settings, engine=engine, blobs=blobs, enqueue=worker.enqueue)
        with TestClient(app) as client:
            wait_until(lambda: _training_workers(engine) == 1, "the training worker beats", timeout=TIMEOUT_S)
            yield engine, client, {"Authorization": f"Bearer {token}"}


def test_the_embedded_workers_train_a_session_and_rate_its_checkpoints(settings: Settings):
    with _platform(settings) as (engine, client, headers):
        _, detail = _trained(client, headers, ASK)
        bot_ids = _rated_checkpoints(engine, client, detail)
        assert [c["generation"] for c in detail["checkpoints"]] == [1, 2]

        # A fine-tune of the last checkpoint: its network's shape, its weights, the same bot.
        tune = ASK | {
            "blocks": 3,
            "filters": 64,
            "episodes": 2,
            "base_bot_id": bot_ids[-1],
            "bot_name": "tuned",
        }
        created, tuned = _trained(client, headers, tune)
        assert (created["settings"]["blocks"], created["settings"]["filters"]) == (1, 16)
        assert [c["version"] for c in tuned["checkpoints"]] == [1]
    assert _training_workers(engine) == 0  # a stopped worker says so


def test_the_actor_critic_kit_trains_a_smash_session_and_fine_tunes_it(settings: Settings, monkeypatch):
    from arena_bots.training import actor_critic

    # 32 lanes (the kit's are 128): 16 games against the chain bot and 8 self-play games (two lanes each).
    kit_settings = actor_critic.settings_with
    monkeypatch.setattr(
        actor_critic, "settings_with", lambda **given: kit_settings(**given, against_chain=16, self_play=8)
    )
    episodes = 5
    ask = {"game": "smash", "kit": "actor-critic", "episodes": episodes, "time_limit_seconds": 600}
    ask |= {"blocks": 1, "filters": 8, "checkpoint_every": 1}
    with _platform(settings) as (engine, client, headers):
        _, detail = _trained(client, headers, ask)
        # A segment is a generation; the lanes' first games end in the second (no game ends within
        # 16 turns, as skulls that do not fit are discarded).
        assert [c["generation"] for c in detail["checkpoints"]] == [1, 2]
        assert detail["progress"]["games"] >= episodes
        assert detail["progress"]["positions"] == 2 * 32 * 16  # 2 segments of 32 lanes x 16 turns
        assert all(point["policy"] == point["policy"] for point in detail["progress"]["losses"])  # no NaN
        bot_ids = _rated_checkpoints(engine, client, detail)

        _, tuned = _trained(
            client, headers, ask | {"episodes": 1, "base_bot_id": bot_ids[-1], "bot_name": "tuned"}
        )
        assert [c["version"] for c in tuned["checkpoints"]] == [1, 2]  # its first game ends in segment 2


def test_the_dqn_kit_trains_a_csb_session_and_fine_tunes_it(settings: Settings, monkeypatch):
    # Generations of 250 steps of 32 races (the kit's are 2,000), about 30 races started: one is enough.
    monkeypatch.setattr(DqnSessionRun, "GENERATION_STEPS", 250)
    ask = {"game": "csb", "kit": "dqn", "episodes": 25, "time_limit_seconds": 600}
    ask |= {"blocks": 1, "filters": 8, "checkpoint_every": 1}
    with _platform(settings) as (engine, client, headers):
        _, detail = _trained(client, headers, ask)
        assert [c["generation"] for c in detail["checkpoints"]] == [1]
        assert detail["progress"]["positions"] == 250 * 32
        assert [point["policy"] for point in detail["progress"]["losses"]] == [None]  # no policy head
        bot_ids = _rated_checkpoints(engine, client, detail)

        tune = ask | {"episodes": 1, "base_bot_id": bot_ids[-1], "bot_name": "tuned"}
        _, tuned = _trained(client, headers, tune)
        assert [c["version"] for c in tuned["checkpoints"]] == [1]


def _trained(client: TestClient, headers: dict[str, str], ask: dict) -> tuple[dict, dict]:
    """The session `ask` started (as the API answered) and, once finished, its detail."""
    response = client.post("/api/v1/training-sessions", json=ask, headers=headers)
    assert response.status_code == 202, response.text
    url = f"/api/v1/training-sessions/{response.json()['id']}"
    wait_until(
        lambda: client.get(url).json()["status"] == "finished", f"session {url} finishes", timeout=TIMEOUT_S
    )
    return response.json(), client.get(url).json()


def _rated_checkpoints(engine: Engine, client: TestClient, detail: dict) -> list[int]:
    """The bot ids of a session's checkpoints, once all are rated, checked to be on its game's
    leaderboard as checkpoints (and no other bot is)."""
    bot_ids = [checkpoint["bot_id"] for checkpoint in detail["checkpoints"]]
    wait_until(lambda: _rated(engine) >= set(bot_ids), "the checkpoints are rated", timeout=TIMEOUT_S)
    ladder = next(item for item in client.get("/api/v1/ladders").json() if item["game"] == detail["game"])
    board = client.get(f"/api/v1/ladders/{ladder['id']}/leaderboard").json()["entries"]
    assert {entry["bot_id"] for entry in board if entry["checkpoint"]} == set(bot_ids)
    return bot_ids


def _training_workers(engine) -> int:
    from datetime import timedelta

    from arena_platform.models import utc_now

    with session(engine) as db:
        return training.training_workers(db, since=utc_now() - timedelta(seconds=6))


def _rated(engine) -> set[int]:
    with session(engine) as db:
        return set(db.exec(select(Rating.bot_id)).all())


def test_a_paused_session_stops_after_its_generation_and_a_slice_hands_it_on(settings: Settings):
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    sent: list[tuple] = []
    context = WorkerContext(
        settings=settings,
        engine=engine,
        blobs=BlobStore(settings.resolved_blob_url),
        enqueue=lambda *message: sent.append(message),
    )
    with session(engine) as db:
        user, _ = users.create_user(db, name="ada")
        settings_asked = {key: ASK[key] for key in ASK if key not in ("game",)} | {"seed": 0}
        row = training.create_session(
            db, owner_id=user.id, game="bobail", kit="alphazero", bot_name="net", settings=settings_asked
        )
        db.commit()
        training.pause(db, row=row)
    assert train_session(context, row.id) == "not claimed"  # a paused session is left alone
    with session(engine) as db:
        training.resume(db, row=training.get_session(db, session_id=row.id))
    # A slice of no time: the first generation is checked against it before it starts.
    sliced = WorkerContext(
        settings=Settings(data_dir=settings.data_dir, task_time_limit_seconds=0, ladder_simulations=4),
        engine=engine,
        blobs=context.blobs,
        enqueue=context.enqueue,
    )
    assert train_session(sliced, row.id) == "queued"
    assert sent == [(TRAIN_SESSION, row.id)]
    assert train_session(context, row.id) == "finished"
    with session(engine) as db:
        detail = training.describe_session(db, session_id=row.id)
        state_sha256 = training.get_session(db, session_id=row.id).state_sha256
    assert detail.progress.games == 4
    assert [c.generation for c in detail.checkpoints] == [1, 2]
    # Of the two generations' resume points the blob store keeps the last (the first was superseded),
    # until the sweeper deletes it: a finished session is never resumed.
    assert _resume_points(context.blobs) == [state_sha256]
    sweep(context)
    assert _resume_points(context.blobs) == []
    with session(engine) as db:
        assert training.get_session(db, session_id=row.id).state_sha256 is None
    context.blobs.delete(state_sha256)  # deleting what is gone is no error


def _resume_points(blobs: BlobStore) -> list[str]:
    """The keys of the blobs that are resume points (tar archives; models and weights are not)."""
    keys = [path.rsplit("/", 1)[1] for path in blobs.fs.find(blobs.root)]
    return [key for key in keys if tarfile.is_tarfile(io.BytesIO(blobs.get(key)))]
