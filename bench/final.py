"""A competition's final: how long it takes per worker core, on Bobail with the zoo bots (issue 26,
Scale), and what its ranking looks like.

The entrants: the three Bobail zoo models (bots/zoo/bobail), each entered twice, as its manifest's
MCTS player and as a greedy player (the policy's most likely move), and the house bots `random`
and `uct`: 8 entrants, at the ladders' default budget (Settings.ladder_simulations). The schedule is
the final's (`arena_platform.finals.round_robin`, --pairs pairings per pair of entrants, default 1),
booked as pairings with the schedule's seeds and grouped into task messages as scheduling groups a
round (`task_messages`, PAIRINGS_PER_TASK to a message); the real runner plays them
(`runner.play_pairings`: claim, play every pairing of a message in one `play_many`, record, on
SQLite and a blob folder) on the compiled core, as a Celery worker would. Untimed first: the model
hosts start, and a task in which every entrant plays once (bench/ladders.py's warm-up). CPU time:
this process (all threads) plus its model hosts' children, so load slows the clock, not the figure.

Printed: the final's table (`finals.rank_final`, the CSV export's columns), the extra pairings the
unsettled rule would book next, pairings per CPU-hour, and the extrapolation to issue 26's scale,
100 entrants x 4 pairings per pair = 19,800 pairings, in worker-core-hours. The mix matters: a
pairing's cost is its two entrants' (an MCTS network bot costs far more than `random`), so the
figure holds for a field like this one. Also timed: ranking a simulated final of that size (the fit
and its adjacent-pair refits), which runs once per extra round.

--quick (the bench test's): 4 simulations, one zoo model (MCTS only) and the house bots, no warm-up.

Run: .venv/bin/python bench/final.py [--quick] [--pairs 2]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # read when NumPy loads OpenBLAS, so set first

import argparse
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from ladders import MeteredHosts, play_timed, start_hosts, warm_up
from ratings import paired_games
from sqlmodel import col, select
from timing import temporary_worker, zoo_bot

from arena_platform.db import session
from arena_platform.finals.export import ranking_rows
from arena_platform.finals.ranking import FinalRanking, rank_final
from arena_platform.finals.schedule import FinalPairing, FinalPlan, extra_round, round_robin, round_robin_size
from arena_platform.models import Bot, GameRecord, Ladder
from arena_platform.ratings import GameResult
from arena_platform.settings import Settings
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import PAIRINGS_PER_TASK, create_pairings
from arena_platform.store.scheduling import task_messages
from arena_workers.context import WorkerContext

GAME = "bobail"
ZOO = Path(__file__).resolve().parent.parent / "bots" / "zoo" / GAME
PLAYERS = ("mcts", "greedy")  # each zoo model is entered as each of these players
FINAL_SEED = 26
QUICK_SIMULATIONS = 4
SCALE_ENTRANTS, SCALE_PAIRS = 100, 4  # issue 26's final: 19,800 pairings
SCALE_SPREAD_ELO = 200.0  # the simulated large final's true ratings: normal, this standard deviation


def enter_bots(
    context: WorkerContext, simulations: int, quick: bool
) -> tuple[int, dict[int, str], dict[str, str]]:
    """The Bobail ladder at `simulations` with its house bots and the zoo entrants (the module's
    doc); its id, the entrants' names by bot id, and the zoo models' names by SHA-256."""
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game=GAME, simulations=simulations, seed=1)
        models: dict[str, str] = {}
        for path in sorted(ZOO.glob("*.onnx"))[: 1 if quick else None]:
            for player in PLAYERS[: 1 if quick else None]:
                bot = zoo_bot(context.blobs, ladder.id, path.read_bytes(), f"{path.stem}-{player}", player)
                models[bot.model_sha256] = path.stem
                db.add(bot)
        db.commit()
        bots = db.exec(select(Bot).where(col(Bot.ladder_id) == ladder.id).order_by(Bot.id)).all()
        return ladder.id, {bot.id: bot.name for bot in bots}, models


def book(context: WorkerContext, ladder_id: int, schedule: Sequence[FinalPairing]) -> list[list[int]]:
    """The schedule's pairings booked with its seeds; their task messages (pairing ids), in order."""
    with session(context.engine) as db:
        ladder = db.get(Ladder, ladder_id)
        pairs = [(planned.bot_a, planned.bot_b) for planned in schedule]
        pairings = create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=0)
        for pairing, planned in zip(pairings, schedule, strict=True):
            pairing.seed = planned.seed
        db.commit()
        return task_messages(pairings, PAIRINGS_PER_TASK)


def final_results(context: WorkerContext, pairing_ids: Sequence[int]) -> list[GameResult]:
    """The recorded games of these pairings, as the fit takes them (bots named str(bot id))."""
    with session(context.engine) as db:
        games = db.exec(select(GameRecord).where(col(GameRecord.pairing_id).in_(list(pairing_ids)))).all()
        return [GameResult(str(g.id), str(g.first_bot_id), str(g.second_bot_id), g.score) for g in games]


def print_table(ranking: FinalRanking, names: Mapping[int, str]) -> None:
    print(f"  {'rank':>4} {'entrant':<24} {'rating':>7} {'95% interval':>17} {'W-D-L':>9} {'P(> next)':>9}")
    for row in ranking_rows(ranking, names):
        rank = f"{row['rank']}{'=' if row['tied'] else ''}"
        interval = f"[{row['interval_low']:.0f}, {row['interval_high']:.0f}]"
        record = f"{row['wins']}-{row['draws']}-{row['losses']}"
        stronger = "" if row["stronger_than_next"] is None else f"{row['stronger_than_next']:.3f}"
        print(f"  {rank:>4} {row['name']:<24} {row['rating']:>7.0f} {interval:>17} {record:>9} {stronger:>9}")


def scale_ranking_seconds() -> float:
    """CPU seconds to rank a simulated final of SCALE_ENTRANTS x SCALE_PAIRS (one refit and one per
    adjacent pair), true Elo normal with SCALE_SPREAD_ELO, outcomes with draws (bench/ratings.py)."""
    rng = np.random.default_rng(FINAL_SEED)
    plan = FinalPlan(entrants=tuple(range(SCALE_ENTRANTS)), pairs_per_pair=SCALE_PAIRS, seed=FINAL_SEED)
    truth = rng.normal(0.0, SCALE_SPREAD_ELO, SCALE_ENTRANTS)
    results = paired_games(rng, np.array([(p.bot_a, p.bot_b) for p in round_robin(plan)]), truth)
    start = time.process_time()
    rank_final(results, plan.entrants)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 simulations, 3 entrants, no warm-up")
    parser.add_argument("--pairs", type=int, default=1, help="pairings per pair of entrants (default 1)")
    args = parser.parse_args()
    simulations = QUICK_SIMULATIONS if args.quick else Settings().ladder_simulations
    load = os.getloadavg()
    print(
        f"A final on {GAME} (runner.play_pairings, SQLite; compiled core; "
        f"load {load[0]:.2f} on {os.cpu_count()} CPUs)"
    )
    with temporary_worker(lambda *task: None) as context:
        ladder_id, names, models = enter_bots(context, simulations, args.quick)
        plan = FinalPlan(entrants=tuple(names), pairs_per_pair=args.pairs, seed=FINAL_SEED)
        schedule = round_robin(plan)
        meters = MeteredHosts(context)
        start_hosts(context, GAME, models)
        if not args.quick:
            warm_up(context, ladder_id)
        messages = book(context, ladder_id, schedule)
        for message in messages:
            play_timed(context, meters, "compiled", message)
        tally = meters.tallies["compiled"]
        ranking = rank_final(final_results(context, [i for m in messages for i in m]), plan.entrants)
    print(f"\n{len(names)} entrants at {simulations} simulations, {args.pairs} pairing(s) per pair:")
    print_table(ranking, names)
    extra = extra_round(plan, schedule, ranking)
    print(f"  the unsettled rule's first extra round: {len(extra)} pairing(s)")
    per_hour = 3600 * len(schedule) / tally.cpu_s
    print(
        f"\n{len(schedule)} pairings ({tally.games} games) in {tally.cpu_s:.1f} CPU-s (this process "
        f"{tally.process_s:.1f} s + model hosts {tally.hosts_s:.1f} s): {per_hour:,.0f} pairings per CPU-hour"
    )
    scale = round_robin_size(SCALE_ENTRANTS, SCALE_PAIRS)
    print(
        f"{SCALE_ENTRANTS} entrants x {SCALE_PAIRS} pairings per pair = {scale:,} pairings: "
        f"{scale / per_hour:,.1f} worker-core-hours at this field's mix "
        f"({60 * scale / per_hour / 16:,.0f} min on 16 worker cores)"
    )
    print(f"ranking a simulated final of that size: {scale_ranking_seconds():.2f} CPU-s")


if __name__ == "__main__":
    main()
