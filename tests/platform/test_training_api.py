"""/api/v1/training-sessions without a worker (the enqueue is recorded): starting a session, its
4xx and 503 cases, owner actions and their states, and the store's claim, save and sweep."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import Bot, TrainingCheckpoint, TrainingSession, utc_now
from arena_platform.queue import TRAIN_SESSION
from arena_platform.store import bots, reads, training
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.training import Progress

BASE = "/api/v1/training-sessions"
ASK = {"game": "bobail", "episodes": 8, "time_limit_seconds": 60, "blocks": 1, "filters": 16}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def training_worker(engine: Engine) -> None:
    """A worker on the training queue, as its beats record it."""
    with session(engine) as db:
        training.beat_worker(db, name="host/1", queues="celery,training")


def _start(client: TestClient, token: str, **changes: Any):
    return client.post(BASE, json=ASK | changes, headers=_auth(token))


def test_a_session_is_queued_sent_to_the_training_queue_and_listed(
    client: TestClient, new_user: Callable[[str], str], enqueued: list, training_worker: None
):
    token = new_user("ada")
    response = _start(client, token, seed=3)
    assert response.status_code == 202, response.text
    created = response.json()
    assert created["status"] == "queued"
    assert re.fullmatch(r"alphazero-[0-9a-f]{8}", created["bot_name"])  # nobody can take it first
    assert created["settings"]["games_per_generation"] == 8
    assert created["settings"]["seed"] == 3
    assert created["progress"]["games"] == 0
    assert created["checkpoints"] == []
    assert enqueued == [(TRAIN_SESSION, (created["id"],))]
    listed = client.get(BASE, headers=_auth(token)).json()
    assert [item["id"] for item in listed] == [created["id"]]
    assert client.get(BASE, headers=_auth(new_user("bob"))).json() == []  # each sees their own
    assert client.get(f"{BASE}/{created['id']}").json()["status"] == "queued"


@pytest.mark.parametrize(
    ("changes", "status", "code"),
    [
        ({"game": "chess"}, 422, "unknown_game"),
        ({"kit": "muzero"}, 422, "unknown_kit"),
        ({"episodes": 10**9}, 422, "out_of_range"),
        ({"blocks": 99}, 422, "out_of_range"),
        ({"episodes": 0}, 422, "invalid_request"),
        ({"base_bot_id": 1}, 422, "bad_base_bot"),
        ({"game": "csb"}, 422, "unsupported_game"),  # two pods' angle and thrust: no one-head network
        ({"kit": "actor-critic"}, 422, "unsupported_game"),  # seed 003's Smash network only
        ({"game": "smash", "kit": "actor-critic", "simulations": 8}, 422, "not_for_kit"),
        ({"game": "smash", "kit": "actor-critic", "games_per_generation": 8}, 422, "not_for_kit"),
        ({"game": "csb", "kit": "dqn", "simulations": 8}, 422, "not_for_kit"),
        ({"game": "smash", "kit": "dqn"}, 422, "unsupported_game"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(
    client: TestClient, new_user: Callable[[str], str], training_worker: None, changes, status, code
):
    response = _start(client, new_user("ada"), **changes)
    assert (response.status_code, response.json()["code"]) == (status, code), response.text
    assert response.json()["detail"]


def test_an_actor_critic_session_keeps_no_search_settings(
    client: TestClient, new_user: Callable[[str], str], training_worker: None
):
    response = _start(client, new_user("ada"), game="smash", kit="actor-critic", checkpoint_every=2)
    assert response.status_code == 202, response.text
    created = response.json()
    assert (created["kit"], created["bot_name"][:13]) == ("actor-critic", "actor-critic-")
    assert set(created["settings"]) == {
        "episodes",
        "time_limit_seconds",
        "blocks",
        "filters",
        "seed",
        "checkpoint_every",
    }


def test_each_kit_is_offered_the_games_it_builds_a_network_for():
    pytest.importorskip("torch")
    from arena_bots.training.networks import build_network
    from arena_games.registry import GAMES, get_game

    def builds(game: str) -> bool:
        try:
            build_network(get_game(game).spec, blocks=1, filters=8)
        except ValueError:
            return False
        return True

    assert set(training.KIT_GAMES["alphazero"]) == {game for game in GAMES if builds(game)}
    assert training.KIT_GAMES["actor-critic"] == ("smash",)  # arena_bots.training.actor_critic.GAME
    assert training.KIT_GAMES["dqn"] == ("csb",)  # arena_bots.training.dqn_run trains CSB only


def test_a_token_is_needed(client: TestClient):
    assert client.post(BASE, json=ASK).status_code == 401
    assert client.get(BASE).status_code == 401


def test_without_a_training_worker_the_api_says_so(client: TestClient, new_user, engine: Engine):
    with session(engine) as db:
        training.beat_worker(db, name="matches/1", queues="celery")  # a match worker only
        training.beat_worker(db, name="old/1", queues="training")
        db.exec(update(training.WorkerBeat).where(training.WorkerBeat.name == "old/1").values(
            last_seen=utc_now() - timedelta(hours=1)))  # fmt: skip
        db.commit()
    response = _start(client, new_user("ada"))
    assert response.status_code == 503
    assert response.json()["code"] == "no_training_workers"
    assert "arena worker --queues training" in response.json()["detail"]


def test_one_session_at_a_time_then_pause_resume_and_cancel(
    client: TestClient, new_user: Callable[[str], str], enqueued: list, training_worker: None
):
    token, other = new_user("ada"), new_user("bob")
    first = _start(client, token).json()["id"]
    second = _start(client, token)
    assert (second.status_code, second.json()["code"]) == (409, "session_running")
    assert client.post(f"{BASE}/{first}/pause", headers=_auth(other)).status_code == 403
    assert client.post(f"{BASE}/{first}/pause", headers=_auth(token)).json()["status"] == "paused"
    resumed = client.post(f"{BASE}/{first}/resume", headers=_auth(token))
    assert (resumed.status_code, resumed.json()["status"]) == (202, "queued")
    assert enqueued[-1] == (TRAIN_SESSION, (first,))
    again = client.post(f"{BASE}/{first}/resume", headers=_auth(token))
    assert (again.status_code, again.json()["code"]) == (409, "bad_state")
    assert client.post(f"{BASE}/{first}/cancel", headers=_auth(token)).json()["status"] == "cancelled"
    assert client.post(f"{BASE}/{first}/resume", headers=_auth(token)).status_code == 409
    assert _start(client, token).status_code == 202  # the cancelled one no longer counts
    assert client.get(f"{BASE}/999").status_code == 404


def test_a_bot_name_of_someone_else_is_refused(
    client: TestClient, new_user: Callable[[str], str], engine: Engine, training_worker: None, settings
):
    new_user("bob")
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=settings.ladder_simulations)
        db.add(Bot(ladder_id=ladder.id, owner_id=1, name="taken", kind="network", player="mcts"))
        db.commit()
    response = _start(client, new_user("ada"), bot_name="taken")
    assert (response.status_code, response.json()["code"]) == (409, "name_taken")


def test_a_default_name_cannot_be_taken_before_the_session_starts(
    client: TestClient, new_user: Callable[[str], str], engine: Engine, training_worker: None, settings
):
    new_user("bob")
    with session(engine) as db:  # bob holds what the next session's default names used to be
        ladder = ensure_ladder(db, game="bobail", simulations=settings.ladder_simulations)
        for name in ("alphazero-1", "alphazero-2"):
            db.add(Bot(ladder_id=ladder.id, owner_id=1, name=name, kind="network", player="mcts"))
        db.commit()
    started = [_start(client, token) for token in (new_user("ada"), new_user("cy"))]
    assert [response.status_code for response in started] == [202, 202]
    names = [response.json()["bot_name"] for response in started]
    assert len(set(names)) == 2
    assert all(re.fullmatch(r"alphazero-[0-9a-f]{8}", name) for name in names)


def test_a_sessions_name_is_its_owners_until_it_ends_whatever_its_case(
    client: TestClient, new_user: Callable[[str], str], engine: Engine, training_worker: None
):
    ada, bob = new_user("ada"), new_user("bob")
    session_id = _start(client, ada, bot_name="Net").json()["id"]
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        db.commit()
    for status in ("queued", "paused", "failed"):  # it may still make checkpoints (after a resume)
        _set_status(engine, session_id, status)
        with session(engine) as db, pytest.raises(bots.NameReserved):
            bots.create_network_bot(db, ladder_id=ladder.id, owner_id=2, manifest=_manifest("net"),
                                    report={}, model_sha256="b" * 64)  # fmt: skip
        refused = _start(client, bob, bot_name="NET")
        assert (refused.status_code, refused.json()["code"]) == (409, "name_reserved"), refused.text
    _set_status(engine, session_id, "running")
    assert _checkpoint(engine, session_id, ladder.id, generation=1) is not None  # its own name
    _set_status(engine, session_id, "cancelled")  # ended: the name is its checkpoint's now
    with session(engine) as db, pytest.raises(bots.NameTaken, match="someone else"):
        bots.create_network_bot(db, ladder_id=ladder.id, owner_id=2, manifest=_manifest("net"),
                                report={}, model_sha256="b" * 64)  # fmt: skip
    other = _start(client, ada, bot_name="other").json()["id"]
    _set_status(engine, other, "finished")  # ended without a checkpoint: the name is free again
    assert _start(client, bob, bot_name="other").status_code == 202


def _manifest(name: str) -> Manifest:
    return Manifest(game="bobail", game_version=1, name=name, player="mcts")


def _set_status(engine: Engine, session_id: int, status: str) -> None:
    with session(engine) as db:
        db.exec(update(TrainingSession).where(TrainingSession.id == session_id).values(status=status))
        db.commit()


def _checkpoint(engine: Engine, session_id: int, ladder_id: int, generation: int) -> int | None:
    """Saves a generation of the session with its checkpoint, as its worker "w1" would; the bot id."""
    with session(engine) as db:
        db.exec(update(TrainingSession).where(TrainingSession.id == session_id).values(lease_owner="w1"))
        checkpoint = TrainingCheckpoint(session_id=session_id, generation=generation, step=1, games=1,
                                        network_sha256="0" * 64)  # fmt: skip
        row = db.get(TrainingSession, session_id)
        _saved, bot_id = training.save_generation(
            db, session_id=session_id, owner="w1", state_sha256="1" * 64, progress=Progress(),
            checkpoint=checkpoint, manifest=_manifest(row.bot_name), report={}, model_sha256="2" * 64,
            ladder_id=ladder_id,
        )  # fmt: skip
        return bot_id


def _session(engine: Engine, owner_id: int) -> int:
    with session(engine) as db:
        row = training.create_session(
            db, owner_id=owner_id, game="bobail", kit="alphazero", bot_name="net", settings=dict(ASK)
        )
        db.commit()
        return row.id


def test_a_claimed_session_saves_each_checkpoint_once_and_is_swept_when_silent(
    engine: Engine, new_user: Callable[[str], str]
):
    new_user("ada")
    session_id = _session(engine, owner_id=1)
    with session(engine) as db:
        ladder_id = ensure_ladder(db, game="bobail", simulations=16).id
        db.commit()
        claim = {"session_id": session_id, "lease_seconds": 60, "max_attempts": 2}
        assert training.claim_session(db, owner="w1", **claim) is not None
        assert training.claim_session(db, owner="w2", **claim) is None  # held under a live lease
        manifest = Manifest(game="bobail", game_version=1, name="net", player="mcts")
        for _ in range(2):  # the same generation saved twice: one checkpoint, one bot
            checkpoint = TrainingCheckpoint(session_id=session_id, generation=1, step=4, games=8,
                                            network_sha256="0" * 64)  # fmt: skip
            saved, _bot = training.save_generation(
                db, session_id=session_id, owner="w1", state_sha256="1" * 64,
                progress=Progress(generation=1, games=8), checkpoint=checkpoint, manifest=manifest,
                report={}, model_sha256="2" * 64, ladder_id=ladder_id,
            )  # fmt: skip
            assert saved
        detail = training.describe_session(db, session_id=session_id)
        assert [(c.generation, c.version) for c in detail.checkpoints] == [(1, 1)]
        bot = db.get(Bot, detail.checkpoints[0].bot_id)
        assert bot.checkpoint
        assert training.checkpoint_of_bot(db, bot_id=bot.id).session_id == session_id
        entry = next(e for e in reads.leaderboard(db, ladder_id=ladder_id) if e.bot_id == bot.id)
        assert entry.checkpoint
        saved, _ = training.save_generation(
            db, session_id=session_id, owner="w2", state_sha256="3" * 64, progress=Progress()
        )
        assert not saved  # not the lease holder's
        assert training.sweep_sessions(db, lease_seconds=60) == []  # w1's lease is live
        assert training.running_session_owners(db) == ["w1"]
        assert training.sweep_sessions(db, lease_seconds=60, dead_owners=["w1"]) == [session_id]
        assert training.claim_session(db, owner="w1", **claim) is not None  # w1 again, for the lease test
        db.exec(update(TrainingSession).values(lease_expires_at=utc_now() - timedelta(seconds=1)))
        db.commit()
        assert training.sweep_sessions(db, lease_seconds=60) == [session_id]
        assert training.get_session(db, session_id=session_id).status == "queued"
        assert training.sweep_sessions(db, lease_seconds=60) == []  # due again a lease later
        assert training.claim_session(db, owner="w3", **claim).state_sha256 == "1" * 64


def test_only_ended_sessions_give_up_their_resume_points(engine: Engine, new_user: Callable[[str], str]):
    new_user("ada")
    ends = {"a" * 64: "finished", "b" * 64: "failed", "c" * 64: "finished"}  # each one's resume point
    ids = [_session(engine, owner_id=1) for _ in ends]
    with session(engine) as db:
        for session_id, (state, status) in zip(ids, ends.items(), strict=True):
            assert training.claim_session(
                db, session_id=session_id, owner="w", lease_seconds=60, max_attempts=3
            )
            saved, _ = training.save_generation(
                db, session_id=session_id, owner="w", state_sha256=state, progress=Progress()
            )
            assert saved
            assert training.finish(db, session_id=session_id, owner="w", status=status)
        assert sorted(training.drop_ended_states(db)) == ["a" * 64, "c" * 64]  # a failed one may resume
        assert training.drop_ended_states(db) == []
        assert [training.get_session(db, session_id=i).state_sha256 for i in ids] == [None, "b" * 64, None]
        assert training.holds_state(db, state_sha256="b" * 64)
        assert not training.holds_state(db, state_sha256="a" * 64)


def test_a_session_whose_workers_keep_dying_fails(engine: Engine, new_user: Callable[[str], str]):
    new_user("ada")
    session_id = _session(engine, owner_id=1)
    with session(engine) as db:
        for attempt in range(3):
            claimed = training.claim_session(
                db, session_id=session_id, owner=f"w{attempt}", lease_seconds=60, max_attempts=2
            )
            assert (claimed is None) == (attempt == 2)
            db.exec(update(TrainingSession).values(lease_expires_at=utc_now() - timedelta(seconds=1)))
            db.commit()
        row = training.get_session(db, session_id=session_id)
        assert row.status == "failed"
        assert "stopped 2 times" in row.error


def test_a_resume_while_the_worker_stops_for_a_pause_is_not_lost(
    engine: Engine, new_user: Callable[[str], str]
):
    new_user("ada")
    session_id = _session(engine, owner_id=1)
    with session(engine) as db:
        training.claim_session(db, session_id=session_id, owner="w1", lease_seconds=60, max_attempts=2)
        training.pause(db, row=training.get_session(db, session_id=session_id))
        training.resume(db, row=training.get_session(db, session_id=session_id))
        assert training.finish(db, session_id=session_id, owner="w1", status="paused")  # it saw the pause
        row = training.get_session(db, session_id=session_id)
        assert row.status == "queued"
        assert row.lease_owner is None
        assert training.sweep_sessions(db, lease_seconds=60) == [session_id]  # due at once
