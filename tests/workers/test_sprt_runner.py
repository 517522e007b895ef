"""A new version's SPRT end to end through the runner, on SQLite and PostgreSQL: scheduling rounds
book the test first, the played pairings feed it, and the verdict retires the old version."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import col, select

from arena_bots.manifest import Manifest
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.scheduling import SchedulePolicy
from arena_platform.settings import Settings
from arena_platform.store import bots, sprt_tests, users
from arena_platform.store.ladders import ensure_ladder
from arena_workers import ladders, runner
from arena_workers.context import WorkerContext

QUICK = sprt_tests.SprtParameters(elo0=0.0, elo1=400.0, alpha=0.2, beta=0.2)  # a verdict in a few pairs
MAX_ROUNDS = 20
LONGER = sprt_tests.SprtParameters(elo0=0.0, elo1=100.0, alpha=0.05, beta=0.05)  # more pairs than a round
MAX_TASKS = 200  # play messages taken before the verdict must have come


def _versions(engine: Engine, context: WorkerContext, onnx_bot, parameters=QUICK) -> tuple[Ladder, int, int]:
    """A Bobail ladder with two versions of one network bot under a test: (ladder, old, new)."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=5)
        author, _ = users.create_user(db, name="author")
        versions = []
        for seed in (0, 1):
            versions.append(
                bots.create_network_bot(
                    db,
                    ladder_id=ladder.id,
                    owner_id=author.id,
                    manifest=Manifest(game="bobail", game_version=1, name="net", player="greedy"),
                    report={},
                    model_sha256=context.blobs.put(onnx_bot(seed=seed)),
                    sprt=parameters,
                )
            )
        db.commit()
    old, new = (bot.id for bot in versions)
    return ladder, old, new


def _context(engine: Engine, tmp_path: Path, enqueue) -> WorkerContext:
    settings = Settings(data_dir=tmp_path, lease_seconds=60, heartbeat_seconds=1, max_attempts=2)
    return WorkerContext(
        settings=settings, engine=engine, blobs=BlobStore(str(tmp_path / "blobs")), enqueue=enqueue
    )


def test_a_new_version_plays_its_test_first_until_the_verdict_retires_the_old(
    engine: Engine, tmp_path: Path, onnx_bot
):
    context = _context(engine, tmp_path, lambda *_: None)
    ladder, old, new = _versions(engine, context, onnx_bot)
    try:
        first_round = ladders.schedule_ladder(context, ladder.id)
        with session(engine) as db:
            pairs = [
                (db.get(Pairing, pairing_id).bot_a_id, db.get(Pairing, pairing_id).bot_b_id)
                for pairing_id in first_round
            ]
        cap = SchedulePolicy().max_in_flight
        assert pairs[:cap] == [(new, old)] * cap  # the new version's first games are its test
        booked = first_round
        for _ in range(MAX_ROUNDS):
            runner.play_pairings(context, booked)
            with session(engine) as db:
                test = sprt_tests.find_test(db, new_bot_id=new)
            if test.status != "running":
                break
            booked = ladders.schedule_ladder(context, ladder.id)
        assert test.status in ("H1", "H0")
        state = sprt_tests.result(test)
        assert state.verdict == test.status  # the frozen counts give the frozen verdict
        assert state.pairs >= 1
        with session(engine) as db:
            assert (db.get(Bot, old).status, db.get(Bot, new).status) == ("retired", "active")
            played = db.exec(
                select(Pairing).where(col(Pairing.bot_a_id) == new, col(Pairing.bot_b_id) == old)
            ).all()
            assert state.pairs <= sum(pairing.status == "done" for pairing in played)
        later = ladders.schedule_ladder(context, ladder.id)
        with session(engine) as db:
            assert all(old not in (db.get(Pairing, i).bot_a_id, db.get(Pairing, i).bot_b_id) for i in later)
    finally:
        context.close()


def test_an_sprt_s_pairs_keep_coming_from_the_tasks_that_play_them_until_the_verdict(
    engine: Engine, tmp_path: Path, onnx_bot
):
    """The tasks that record the test's pairs book the next ones at once: the verdict comes from
    the play messages alone, while the scheduling messages wait behind them (none is run here)."""
    queue: list[tuple] = []  # the broker's queue, first in first out
    context = _context(engine, tmp_path, lambda name, *args: queue.append((name, *args)))
    ladder, _, new = _versions(engine, context, onnx_bot, LONGER)
    try:
        ladders.schedule_ladder(context, ladder.id)  # the upload's round
        for _ in range(MAX_TASKS):
            with session(engine) as db:
                if sprt_tests.find_test(db, new_bot_id=new).status != "running":
                    break
            _, pairing_ids = queue.pop(
                next(i for i, message in enumerate(queue) if message[0] == PLAY_PAIRINGS)
            )
            runner.play_pairings(context, pairing_ids)
        with session(engine) as db:
            test = sprt_tests.find_test(db, new_bot_id=new)
        assert test.status in ("H1", "H0")
        assert sprt_tests.result(test).pairs > SchedulePolicy().max_in_flight  # more than the first round's
    finally:
        context.close()
