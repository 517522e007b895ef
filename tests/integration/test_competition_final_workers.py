"""A competition's final on PostgreSQL and Redis with two real `arena worker`s, one of them killed
while it plays the final: the final starts by itself (the sweeper finds the passed deadline), its
rounds follow one another through the workers' scheduling messages, and it finishes with every
pairing of its schedule played exactly once, none lost, none twice, and its ranking complete."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from competitions_setup import entered_competition
from sqlmodel import col, select
from waiting import wait_until

from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.finals.schedule import FinalPlan, round_robin
from arena_platform.models import Competition, CompetitionFinal, GameRecord, Pairing, utc_now
from arena_platform.store import finals
from arena_platform.store.competitions import FinalTerms
from arena_platform.store.finals import FINAL_GRACE

WORKER_SETTINGS = {"lease_seconds": 3, "heartbeat_seconds": 1, "task_time_limit_seconds": 60}
TIMEOUT_S = 60.0
ENTRANTS = 4


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    """The blob store the workers write to (see `worker_environment`)."""
    return BlobStore(str(tmp_path / "blobs"))


def _closed_competition(engine, blobs: BlobStore, onnx_bot) -> tuple[int, list[int]]:
    """A bobail competition whose deadline and grace have passed, with ENTRANTS users' tiny MCTS
    bots entered; (its id, the bots' ids)."""
    deadline = utc_now() - FINAL_GRACE - timedelta(seconds=1)
    models = [blobs.put(onnx_bot(seed=number)) for number in range(ENTRANTS)]
    with session(engine) as db:
        competition, entered = entered_competition(
            db,
            opens=deadline - timedelta(days=1),
            deadline=deadline,
            final=FinalTerms(pairs=1),
            models=models,
            player="mcts",
            simulations=4,
        )
        return competition.id, entered


def _parent(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))


def test_a_final_is_played_exactly_once_through_a_worker_killed_during_it(
    engine, blobs, worker_environment, start_worker, onnx_bot
):
    competition, entered = _closed_competition(engine, blobs, onnx_bot)
    environment = worker_environment(**WORKER_SETTINGS)
    steady = start_worker(environment, beat=True, ready=False)  # its sweeper starts the final
    doomed = start_worker(environment, ready=False)
    steady.wait_ready()
    doomed.wait_ready()

    killed: list[int] = []

    def doomed_plays_the_final() -> bool:
        with session(engine) as db:
            running = db.exec(
                select(Pairing).where(col(Pairing.final_number).is_not(None), Pairing.status == "running")
            ).all()
        killed[:] = [p.id for p in running if _parent(int(p.lease_owner.split("/")[1])) == doomed.pid]
        return bool(killed)

    wait_until(doomed_plays_the_final, "the second worker plays a pairing of the final", timeout=TIMEOUT_S)
    doomed.kill()

    def finished() -> bool:
        with session(engine) as db:
            final = db.get(CompetitionFinal, competition)
            return final is not None and final.finished_at is not None

    wait_until(finished, "the final is finished by the worker left", timeout=2 * TIMEOUT_S)
    print(f"killed {killed}\n--- steady\n{steady.output()}\n--- doomed\n{doomed.output()}")
    with session(engine) as db:
        final = db.get(CompetitionFinal, competition)
        pairings = db.exec(
            select(Pairing).where(col(Pairing.final_number).is_not(None)).order_by(Pairing.final_number)
        ).all()
        assert [p.status for p in pairings] == ["done"] * len(pairings)  # none lost, none failed
        assert [p.final_number for p in pairings] == list(range(len(pairings)))  # none booked twice
        plan = FinalPlan(entrants=tuple(entered), pairs_per_pair=1, seed=final.seed)
        schedule = round_robin(plan)
        assert [(p.bot_a_id, p.bot_b_id, p.seed) for p in pairings[: len(schedule)]] == [
            (p.bot_a, p.bot_b, p.seed) for p in schedule
        ]
        ids = [p.id for p in pairings]
        games = db.exec(select(GameRecord).where(col(GameRecord.pairing_id).in_(ids))).all()
        assert sorted((g.pairing_id, g.index) for g in games) == [(i, k) for i in ids for k in (0, 1)]
        assert set(killed) <= set(ids)
        results = finals.results(db, competition=db.get(Competition, competition), now=utc_now())
    assert (results.phase, results.provisional, results.progress.failed) == ("finished", False, 0)
    assert sorted(row["entrant_id"] for row in results.ranking) == sorted(entered)
    assert sum(row["games"] for row in results.ranking) == 2 * len(games)
