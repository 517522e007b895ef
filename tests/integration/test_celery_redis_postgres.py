"""Real services: `arena worker` processes on Redis and PostgreSQL play ladders end to end, and survive
a worker killed with SIGKILL in the middle of a pairing without counting any game twice.

Tiny budgets keep each test well under a minute: Bobail, a few UCT simulations, leases of three
seconds renewed every second, the sweeper every second.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import col, select

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, GameRecord, Ladder, Pairing, Rating, utc_now
from arena_platform.queue import SCHEDULE_LADDER, celery_enqueue
from arena_platform.scheduling import DEFAULT_POLICY
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import refit_ladder
from arena_workers import runner
from arena_workers.runner import WorkerContext

WORKER_SETTINGS = {"lease_seconds": 3, "heartbeat_seconds": 1, "task_time_limit_seconds": 60}
TIMEOUT_S = 45.0


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    """The blob store the workers write to (see `worker_environment`)."""
    return BlobStore(str(tmp_path / "blobs"))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def _tiny_network_bot(name: str, player: str, seed: int) -> tuple[Manifest, bytes]:
    """A tiny bobail network (linear policy and tanh value over the board), exported as a bot author would."""
    import torch

    from arena_bots.export import export_bot

    game = get_game("bobail")
    ((_input_name, shape),) = game.spec.inputs.items()
    ((_, actions),) = game.spec.heads.items()
    torch.manual_seed(seed)

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            size = int(torch.tensor(shape).prod())
            self.policy = torch.nn.Linear(size, actions)
            self.value = torch.nn.Linear(size, 1)

        def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            features = board.flatten(1)
            return self.policy(features), torch.tanh(self.value(features))

    manifest = Manifest(game="bobail", game_version=game.spec.version, name=name, player=player)
    return manifest, export_bot(Tiny(), game, manifest)


def _done_pairs(db, ladder_id: int) -> list[frozenset[int]]:
    done = db.exec(select(Pairing).where(Pairing.ladder_id == ladder_id, Pairing.status == "done"))
    return [frozenset((pairing.bot_a_id, pairing.bot_b_id)) for pairing in done]


def test_workers_play_a_ladder_of_house_and_network_bots_end_to_end(
    engine, blobs, worker_environment, start_worker, redis_url
):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=8, seed=5)
        db.add(
            Bot(ladder_id=ladder.id, name="uct-2", kind="house", player="uct", manifest={"simulations": 2})
        )
        owner, _ = users.create_user(db, name="author")
        for seed, (name, player) in enumerate((("tiny-mcts", "mcts"), ("tiny-greedy", "greedy"))):
            manifest, model = _tiny_network_bot(name, player, seed)
            bot_store.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=manifest,
                report={},
                model_sha256=blobs.put(model),
            )
        db.commit()
        bots = {bot.id: bot for bot in db.exec(select(Bot))}
    environment = worker_environment(**WORKER_SETTINGS)
    start_worker(environment, beat=True)
    start_worker(environment)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)

    def introduced_and_rated() -> bool:
        with session(engine) as db:
            pairs = _done_pairs(db, ladder.id)
            rated = db.exec(select(Rating.bot_id)).all()
        owed = {
            frozenset((a, b)): DEFAULT_POLICY.house_pairings if "house" in (bots[a].kind, bots[b].kind) else 1
            for a in bots
            for b in bots
            if a < b
        }
        return all(pairs.count(pair) >= count for pair, count in owed.items()) and set(rated) == set(bots)

    wait_until(introduced_and_rated, "every bot played its introduction and has a rating")

    game = get_game("bobail")
    with session(engine) as db:
        pairings = db.exec(select(Pairing)).all()
        games = db.exec(select(GameRecord)).all()
        done = {pairing.id for pairing in pairings if pairing.status == "done"}
        assert not [pairing for pairing in pairings if pairing.status == "failed"]
        assert sorted((g.pairing_id, g.index) for g in games if g.pairing_id in done) == sorted(
            (pairing_id, index) for pairing_id in done for index in (0, 1)
        )
        for record in games:
            replay = Replay.from_json(blobs.get(record.replay_sha256).decode())
            assert replay.players == (bots[record.first_bot_id].name, bots[record.second_bot_id].name)
            assert len(replay_states(game, replay)) == record.steps + 1
            assert record.forfeit_seat is None, record.end_reason  # the network bots played every move
        ratings = db.exec(select(Rating)).all()
        house = [row.rating for row in ratings if bots[row.bot_id].kind == "house"]
        assert sum(house) / len(house) == pytest.approx(0.0, abs=1e-6)
        for row in ratings:
            assert row.low <= row.rating <= row.high
            assert row.games == row.wins + row.draws + row.losses > 0


def test_a_pairing_killed_mid_play_is_finished_by_another_worker_and_counted_once(
    engine, blobs, worker_environment, start_worker, redis_url, tmp_path
):
    with session(engine) as db:
        ladder = Ladder(
            name="chaos", game="bobail", game_version=get_game("bobail").spec.version, simulations=32, seed=7
        )
        db.add(ladder)
        db.flush()
        db.add(Bot(ladder_id=ladder.id, name="uct", kind="house", player="uct"))
        db.add(
            Bot(ladder_id=ladder.id, name="uct-64", kind="house", player="uct", manifest={"simulations": 64})
        )
        db.commit()
    environment = worker_environment(**WORKER_SETTINGS)
    doomed = start_worker(environment)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)

    def in_play_for_a_while() -> bool:
        """A pairing is running and was claimed (or last renewed) at least 0.3 s ago."""
        soon = utc_now() + timedelta(seconds=WORKER_SETTINGS["lease_seconds"] - 0.3)
        with session(engine) as db:
            running = select(Pairing).where(Pairing.status == "running", Pairing.lease_expires_at < soon)
            return db.exec(running).first() is not None

    wait_until(in_play_for_a_while, "the first worker plays a pairing")
    doomed.kill()
    with session(engine) as db:
        killed = db.exec(select(Pairing).where(Pairing.status == "running")).all()
        killed_ids = sorted(pairing.id for pairing in killed)
        assert killed_ids, "the worker finished its pairings before it was killed"
        assert not db.exec(select(GameRecord).where(col(GameRecord.pairing_id).in_(killed_ids))).all()
    for pairing in killed:  # the lease owner is "host/pid/token": the process that played dies
        pid = int(pairing.lease_owner.split("/")[1])
        wait_until(lambda pid=pid: _is_dead(pid), f"the worker's process {pid} is gone", timeout=5)

    rescuer = start_worker(environment, beat=True)  # its sweeper re-queues them once their leases lapse

    def rescued() -> bool:
        with session(engine) as db:
            return all(db.get(Pairing, pairing_id).status == "done" for pairing_id in killed_ids)

    wait_until(rescued, "the second worker finished the killed pairings")
    rescuer.kill()
    print(f"killed {killed_ids}\n--- first worker\n{doomed.output()}\n--- second worker\n{rescuer.output()}")

    with session(engine) as db:  # its own session: a refit that finds nothing new rolls back
        refit_ladder(db, ladder_id=ladder.id)
    with session(engine) as db:
        for pairing_id in killed_ids:
            assert db.get(Pairing, pairing_id).attempts == 2
        done = db.exec(select(Pairing).where(Pairing.status == "done").order_by(Pairing.id)).all()
        games = db.exec(select(GameRecord).order_by(GameRecord.pairing_id, GameRecord.index)).all()
        assert [(g.pairing_id, g.index) for g in games] == [(p.id, i) for p in done for i in (0, 1)]
        disturbed = _leaderboard(db), [_game_row(g) for g in games]
        bots = db.exec(select(Bot)).all()
        ladder = db.get(Ladder, ladder.id)

    undisturbed = _undisturbed_run(tmp_path / "reference", ladder, bots, done)
    assert disturbed[1] == undisturbed[1]  # every game, replay hash included, as without the kill
    assert disturbed[0].keys() == undisturbed[0].keys()
    for bot, row in disturbed[0].items():
        assert row == pytest.approx(undisturbed[0][bot])


def test_a_pairing_whose_workers_keep_dying_is_failed_and_booked_again_so_no_game_is_lost(
    engine, worker_environment, start_worker, redis_url
):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=48, seed=9)  # two house bots: random, uct
        db.commit()
    environment = worker_environment(**WORKER_SETTINGS, max_attempts=1)  # one death fails a pairing
    start_worker(environment, beat=True)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)

    def a_running_pairing() -> Pairing | None:
        with session(engine) as db:
            return db.exec(select(Pairing).where(Pairing.status == "running")).first()

    wait_until(lambda: a_running_pairing() is not None, "a pool child plays a pairing")
    doomed = a_running_pairing()
    os.kill(int(doomed.lease_owner.split("/")[1]), signal.SIGKILL)  # the pool child, not the worker

    def failed_and_replaced() -> bool:
        with session(engine) as db:
            pairings = db.exec(select(Pairing)).all()
        done = [p for p in pairings if p.status == "done"]
        return any(p.id == doomed.id and p.status == "failed" for p in pairings) and len(done) >= 2

    wait_until(failed_and_replaced, "the failed pairing's pair is booked and played again")
    with session(engine) as db:
        failed = db.get(Pairing, doomed.id)
        assert "went silent" in failed.error
        done = [p.id for p in db.exec(select(Pairing).where(Pairing.status == "done"))]
        assert len(done) >= DEFAULT_POLICY.house_pairings  # the introduction owed, every game of it played
        games = db.exec(
            select(GameRecord).where(col(GameRecord.pairing_id).in_(done))
        ).all()  # the worker goes on
        assert sorted((g.pairing_id, g.index) for g in games) == [
            (p, i) for p in sorted(done) for i in (0, 1)
        ]
        assert all(g.forfeit_seat is None for g in games)


def _is_dead(pid: int) -> bool:
    """The process is gone or a zombie (killed, not yet reaped by its new parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _undisturbed_run(folder: Path, ladder: Ladder, bots: list[Bot], pairings: list[Pairing]):
    """The same pairings (same ids and seeds) played in this process without interruption, on SQLite."""
    engine = make_engine(f"sqlite:///{folder / 'arena.db'}")
    migrate(engine)
    with session(engine) as db:
        db.add(Ladder(**ladder.model_dump()))
        db.flush()
        db.add_all(Bot(**bot.model_dump()) for bot in bots)
        db.flush()
        db.add_all(
            Pairing(id=p.id, ladder_id=p.ladder_id, bot_a_id=p.bot_a_id, bot_b_id=p.bot_b_id, seed=p.seed)
            for p in pairings
        )
        db.commit()
    context = WorkerContext(
        settings=Settings(data_dir=folder),
        engine=engine,
        blobs=BlobStore(str(folder / "blobs")),
        enqueue=lambda *_: None,
    )
    runner.play_pairings(context, [pairing.id for pairing in pairings])
    with session(engine) as db:
        refit_ladder(db, ladder_id=ladder.id)
        games = db.exec(select(GameRecord).order_by(GameRecord.pairing_id, GameRecord.index)).all()
        result = _leaderboard(db), [_game_row(g) for g in games]
    engine.dispose()
    return result


def _leaderboard(db) -> dict[int, tuple]:
    return {
        row.bot_id: (row.rating, row.low, row.high, row.games, row.wins, row.draws, row.losses)
        for row in db.exec(select(Rating))
    }


def _game_row(game: GameRecord) -> tuple:
    return (
        game.pairing_id,
        game.index,
        game.first_bot_id,
        game.second_bot_id,
        game.score,
        game.steps,
        game.end_reason,
        game.replay_sha256,
    )
