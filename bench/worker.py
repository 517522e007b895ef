"""A worker's real batches: the runner plays a ladder of zoo bots, and we read what its models saw.

The real runner (`arena_workers.runner`: `schedule_ladder`, then `play_pairings` for every message
it sent, as a Celery worker would) runs in this process on SQLite and a blob folder, on a Bobail
ladder of network bots only: the three zoo checkpoints (bots/zoo/bobail, 4x32 residual nets)
entered `--copies` times each under different names (copies share a model host, as bots with one
model do; each bot has its own player, so its own searches and model calls). Every model host the
runner gets is wrapped to count its calls, rows and seconds. Prints:

- the worker's mean batch (rows per model call) and the share of its wall time inside model calls;
- its evaluations per second of wall time (every evaluation is one simulation, or a root);
- ONNX Runtime's own rate for the same model at that batch (in process, one thread, the inputs of
  real positions), and the ratio of the two: the worker's efficiency;
- for comparison, the search bench's set-up with the same model: 64 games searched together in
  lockstep through a ModelHost (bench/search.py), its batch and its efficiency, and the worker's
  evaluations/s as a ratio of its (on a shared machine the steadier figure: whole searches on
  both sides, no short ONNX Runtime measurement).

Run: .venv/bin/python bench/worker.py [--quick] [--simulations 100] [--tasks 24] [--copies 4]
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy import update
from sqlmodel import col, func, select
from timing import (
    MeteredBackend,
    bobail_planes,
    bobail_positions,
    evaluations_per_second,
    metered_models,
    temporary_worker,
    zoo_bot,
)

from arena_bots.evaluators import NetworkEvaluator
from arena_bots.host import ModelHost
from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, search
from arena_bots.runtime import InProcessSession
from arena_games.bobail import GAME as BOBAIL
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import DONE, PAIRINGS_PER_TASK, create_pairings
from arena_workers import ladders, runner
from arena_workers.context import WorkerContext

ZOO = Path(__file__).resolve().parent.parent / "bots" / "zoo" / "bobail"
CHECKPOINTS = ("az-bobail-early", "az-bobail-middle", "az-bobail-final")
LOCKSTEP_GAMES = 64


@dataclass(frozen=True)
class WorkerRun:
    """What the worker did: tasks and pairings played, wall seconds inside `play_pairings`, the
    model hosts' calls, rows and seconds, and the moves recorded."""

    tasks: int
    pairings: int
    seconds: float
    calls: int
    rows: int
    model_seconds: float
    moves: int

    @property
    def batch(self) -> float:
        return self.rows / self.calls

    @property
    def per_second(self) -> float:
        return self.rows / self.seconds


def new_ladder(context: WorkerContext, simulations: int, copies: int) -> int:
    """A Bobail ladder whose active bots are the zoo checkpoints, `copies` bots each, introduced
    (a pairing of every pair marked done, without games): its rounds are a running ladder's; its id."""
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=simulations, seed=1)
        db.exec(update(Bot).where(col(Bot.ladder_id) == ladder.id).values(status="retired"))  # house bots
        bots: list[Bot] = []
        for checkpoint in CHECKPOINTS:
            model = (ZOO / f"{checkpoint}.onnx").read_bytes()
            for copy in range(copies):
                bot = zoo_bot(context.blobs, ladder.id, model, f"{checkpoint}-{copy}")
                db.add(bot)
                bots.append(bot)
        db.flush()
        pairs = list(itertools.combinations([bot.id for bot in bots], 2))
        for pairing in create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=0):
            pairing.status = DONE
        db.commit()
        return ladder.id


def play_tasks(context: WorkerContext, sent: list[tuple], ladder_id: int, tasks: int) -> WorkerRun:
    """Scheduling rounds and their messages, played one after the other, until `tasks` messages."""
    meters = metered_models(context)
    played = pairings = 0
    seconds = 0.0
    while played < tasks:
        ladders.schedule_ladder(context, ladder_id)
        messages = [args[0] for name, *args in sent if name == PLAY_PAIRINGS]
        sent.clear()
        if not messages:
            raise RuntimeError("a scheduling round booked nothing")
        for ids in messages[: tasks - played]:
            started = time.perf_counter()
            runner.play_pairings(context, ids)
            seconds += time.perf_counter() - started
            played, pairings = played + 1, pairings + len(ids)
        sent.clear()  # the refits and rounds each task asks for: this loop schedules by itself
    with session(context.engine) as db:
        moves = int(db.exec(select(func.coalesce(func.sum(GameRecord.steps), 0))).one())
    return WorkerRun(
        tasks=played,
        pairings=pairings,
        seconds=seconds,
        calls=sum(meter.calls for meter in meters),
        rows=sum(meter.rows for meter in meters),
        model_seconds=sum(meter.seconds for meter in meters),
        moves=moves,
    )


def lockstep(simulations: int) -> tuple[float, float]:
    """The search bench's set-up on the zoo model: LOCKSTEP_GAMES opening positions searched together
    in lockstep through a ModelHost; (mean batch, evaluations per second)."""
    model = (ZOO / "az-bobail-final.onnx").read_bytes()
    with ModelHost(model) as host:
        metered = MeteredBackend(host)
        positions = bobail_positions(LOCKSTEP_GAMES)
        requests = [
            Request(s, BOBAIL.to_move(s)[0], np.random.default_rng(i)) for i, s in enumerate(positions)
        ]
        started = time.perf_counter()
        search(BOBAIL, NetworkEvaluator(metered, BOBAIL), requests, SearchConfig(simulations=simulations))
        seconds = time.perf_counter() - started
    return metered.rows / metered.calls, metered.rows / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run: 8 simulations, 2 tasks")
    parser.add_argument("--simulations", type=int, default=100, help="the ladder's budget per move")
    parser.add_argument("--tasks", type=int, default=24, help="task messages to play")
    parser.add_argument("--copies", type=int, default=4, help="bots per zoo checkpoint")
    args = parser.parse_args()
    simulations, tasks = (8, 2) if args.quick else (args.simulations, args.tasks)
    sent: list[tuple] = []
    with temporary_worker(lambda name, *task_args: sent.append((name, *task_args))) as context:
        ladder_id = new_ladder(context, simulations, args.copies)
        run = play_tasks(context, sent, ladder_id, tasks)
    reference_batch, reference_rate = lockstep(simulations)
    ort_session = InProcessSession(str(ZOO / "az-bobail-final.onnx"), threads=1)
    batch = max(1, round(run.batch))
    limit = evaluations_per_second(ort_session, bobail_planes(batch), 0.5 if args.quick else 2.0)
    reference_limit = evaluations_per_second(
        ort_session, bobail_planes(round(reference_batch)), 0.5 if args.quick else 2.0
    )
    ort_session.close()
    print(
        f"worker (runner.play_pairings in process, SQLite): Bobail zoo bots (4x32), {simulations} sims, "
        f"{len(CHECKPOINTS) * args.copies} bots, {PAIRINGS_PER_TASK} pairings per task"
    )
    print(
        f"  {run.tasks} tasks, {run.pairings} pairings, {run.moves} moves in {run.seconds:.1f} s; "
        f"{run.calls} model calls, mean batch {run.batch:.1f}, {run.model_seconds / run.seconds:.0%} "
        f"of the wall time in model calls"
    )
    print(f"  worker: {run.per_second:.0f} evaluations/s; ONNX Runtime alone at batch {batch}: {limit:.0f}/s")
    print(f"  worker efficiency: {run.per_second / limit:.2f} of ONNX Runtime's own rate at its batch")
    print(
        f"  the search bench's set-up ({LOCKSTEP_GAMES} games in lockstep, same model): batch "
        f"{reference_batch:.1f}, {reference_rate:.0f} evaluations/s, "
        f"{reference_rate / reference_limit:.2f} of ONNX Runtime's rate at that batch"
    )
    print(f"  worker / the search bench's set-up: {run.per_second / reference_rate:.2f} in evaluations/s")


if __name__ == "__main__":
    main()
