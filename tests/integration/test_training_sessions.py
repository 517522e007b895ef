"""A training session on real services: the API on PostgreSQL and Redis queues it, an `arena worker
--queues training` trains it (a tiny network, a few episodes) and is killed with SIGKILL mid-run,
a second one (standing by) resumes it from its last saved generation, and a match worker rates its checkpoints
on the ladder. No checkpoint is lost or entered twice.

Tiny budgets keep it well under a minute: Bobail, a 1-block, 16-filter network, two self-play games
per generation with a few simulations, leases of three seconds, the sweeper every second.
"""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import select
from waiting import wait_until

from arena_platform.api import create_app
from arena_platform.db import session
from arena_platform.models import Bot, Rating, TrainingCheckpoint, TrainingSession
from arena_platform.settings import load_settings
from arena_platform.store import training, users

pytest.importorskip("torch")

WORKER_SETTINGS = {
    "lease_seconds": 3,
    "heartbeat_seconds": 1,
    "task_time_limit_seconds": 60,
    "ladder_simulations": 4,
}
EPISODES, PER_GENERATION = 6, 2  # three generations, each checkpointed
TIMEOUT_S = 90.0  # per wait: the machine may be busy


def _checkpoints(engine: Engine) -> list[TrainingCheckpoint]:
    with session(engine) as db:
        return list(db.exec(select(TrainingCheckpoint).order_by(TrainingCheckpoint.id)))


def _holder(engine: Engine, session_id: int, workers: list):
    """The worker whose pool child holds the session's lease ("host/pid/token")."""
    with session(engine) as db:
        owner = db.get(TrainingSession, session_id).lease_owner
    group = os.getpgid(int(owner.split("/")[1]))
    return next(worker for worker in workers if worker.pid == group)


def test_a_session_killed_mid_run_resumes_and_its_checkpoints_are_rated(
    engine, worker_environment, start_worker
):
    environment = worker_environment(**WORKER_SETTINGS)
    with session(engine) as db:
        _, token = users.create_user(db, name="ada")
        db.commit()
    app = create_app(load_settings(environment), engine=engine)
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {token}"}
        ask = {"game": "bobail", "episodes": EPISODES, "time_limit_seconds": 600, "blocks": 1, "filters": 16}
        ask |= {"simulations": 8, "games_per_generation": PER_GENERATION, "checkpoint_every": 1}
        refused = client.post("/api/v1/training-sessions", json=ask, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (503, "no_training_workers")

        trainers = [
            start_worker(environment, queues="training", ready=False) for _ in range(2)
        ]  # one stands by
        players = start_worker(environment, beat=True, ready=False)  # plays the checkpoints' games and sweeps
        for worker in (*trainers, players):
            worker.wait_ready()
        response = client.post("/api/v1/training-sessions", json=ask, headers=headers)
        assert response.status_code == 202, response.text
        session_id = response.json()["id"]

        wait_until(
            lambda: len(_checkpoints(engine)) >= 1, "the first checkpoint is entered", timeout=TIMEOUT_S
        )
        _holder(engine, session_id, trainers).kill()
        assert len(_checkpoints(engine)) < 3, "the first worker finished before it was killed"
        assert client.get(f"/api/v1/training-sessions/{session_id}").json()["status"] == "running"

        def finished() -> bool:
            return client.get(f"/api/v1/training-sessions/{session_id}").json()["status"] == "finished"

        wait_until(finished, "the resumed session finishes", timeout=TIMEOUT_S)
        detail = client.get(f"/api/v1/training-sessions/{session_id}").json()

    assert detail["progress"]["games"] == EPISODES
    assert [point["step"] for point in detail["progress"]["losses"]] == sorted(
        {point["step"] for point in detail["progress"]["losses"]}
    )  # one loss point per generation, none repeated
    checkpoints = detail["checkpoints"]
    assert [(c["generation"], c["version"], c["error"]) for c in checkpoints] == [
        (1, 1, None),
        (2, 2, None),
        (3, 3, None),
    ]
    bot_ids = [c["bot_id"] for c in checkpoints]
    with session(engine) as db:
        assert all(db.get(Bot, bot_id).checkpoint for bot_id in bot_ids)
        assert len(db.exec(select(TrainingCheckpoint)).all()) == 3

    def latest_rated() -> bool:
        with session(engine) as db:
            rated = set(db.exec(select(Rating.bot_id)).all())
        return set(bot_ids[-2:]) <= rated  # the two active checkpoints (the first may retire unplayed)

    wait_until(latest_rated, "the ladder rates the active checkpoints", timeout=TIMEOUT_S)
    with session(engine) as db:
        detail = training.describe_session(db, session_id=session_id)
    for checkpoint in detail.checkpoints[-2:]:
        assert checkpoint.low <= checkpoint.rating <= checkpoint.high
