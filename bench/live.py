"""What writing the games in progress costs a worker (issue 25.4; arena_workers.live).

    python bench/live.py [--quick] [--game pente] [--rounds 5] [--simulations 100] [--pairings 4]

The real runner (`play_pairings`) plays the same batch of pairings (the uct house bot against a
second one, fixed seeds, so every variant plays the same games) on SQLite and a blob folder, with
the games in progress written
- never (the writer replaced by one that does nothing),
- at the default throttle (`live_seconds` 0.5: at most one write per batch per half second),
- before every round (`live_seconds` 0: the cost without a throttle).
The variants take turns round after round; each keeps its best round (CPU seconds of this process,
all threads: on a shared machine the least disturbed). Prints per variant the batch's CPU and wall
seconds, the writes and their mean CPU and wall milliseconds, and the ratio of its CPU to the run
without writes. Fast moves are the hard case for writes: the compiled uct plays a Pente move at 100
simulations in about 5 ms (ARCHITECTURE §9), so a batch has a few hundred rounds a second.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import update
from sqlmodel import col, select
from timing import temporary_worker

from arena_bots.match import GameInProgress
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import create_pairings
from arena_workers import live, runner
from arena_workers.context import WorkerContext

SECOND_UCT = "uct-2"  # a second uct house bot: two searchers make long games
VARIANTS = {"no writes": None, "every 0.5 s (default)": 0.5, "every round": 0.0}  # -> live_seconds


@dataclass
class Meter:
    """The CPU and wall seconds of the writer's calls that wrote (a throttled call costs ~nothing)."""

    writes: int = 0
    cpu: float = 0.0
    wall: float = 0.0
    calls: int = 0


@dataclass
class Best:
    cpu: float = float("inf")
    wall: float = 0.0
    meter: Meter = field(default_factory=Meter)


def metered_writer(meter: Meter) -> type:
    """A LiveWriter that adds the cost of each call to `meter`."""

    class MeteredWriter(live.LiveWriter):
        def __call__(self, games: Sequence[GameInProgress]) -> None:
            due = self._due
            cpu, wall = time.thread_time(), time.perf_counter()
            super().__call__(games)
            meter.calls += 1
            if self._due != due:  # it wrote
                meter.writes += 1
                meter.cpu += time.thread_time() - cpu
                meter.wall += time.perf_counter() - wall

    return MeteredWriter


class NoWriter:
    def __init__(self, *_: object, **__: object) -> None:
        pass

    def __call__(self, games: Sequence[GameInProgress]) -> None:
        pass


def play_round(context: WorkerContext, ladder: Ladder, pairings: int) -> Callable[[], None]:
    """A fresh batch of `pairings` queued pairings, seeds 1..pairings; a function that plays it."""
    with session(context.engine) as db:
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        made = create_pairings(
            db, ladder=ladder, pairs=[(house["uct"], house[SECOND_UCT])] * pairings, redelivery_seconds=600
        )
        db.flush()
        ids = [pairing.id for pairing in made]
        for seed, pairing_id in enumerate(ids, start=1):
            db.exec(update(Pairing).where(col(Pairing.id) == pairing_id).values(seed=seed))
        db.commit()
    return lambda: _played(runner.play_pairings(context, ids))


def _played(outcomes: Sequence[runner.PairingOutcome]) -> None:
    assert all(outcome.status == "recorded" for outcome in outcomes), outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round of one pairing at 10 simulations")
    parser.add_argument("--game", default="pente", help="a game whose house bots include uct")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--pairings", type=int, default=4)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.pairings, args.simulations = 1, 1, 10
    rounds, pairings = args.rounds, args.pairings
    best = {name: Best() for name in VARIANTS}
    with temporary_worker(lambda *_: None) as context:
        with session(context.engine) as db:
            ladder = ensure_ladder(db, game=args.game, simulations=args.simulations)
            db.add(Bot(ladder_id=ladder.id, name=SECOND_UCT, kind="house", player="uct"))
            db.commit()
            db.refresh(ladder)
        play_round(context, ladder, 1)()  # warm: the compiled tree loads, the hosts start
        for _ in range(rounds):
            for name, seconds in VARIANTS.items():
                meter = Meter()
                runner.LiveWriter = NoWriter if seconds is None else metered_writer(meter)
                if seconds is not None:
                    context.settings = dataclasses.replace(context.settings, live_seconds=seconds)
                play = play_round(context, ladder, pairings)
                cpu, wall = time.process_time(), time.perf_counter()
                play()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                if cpu < best[name].cpu:
                    best[name] = Best(cpu, wall, meter)
    base = best["no writes"].cpu
    what = f"{pairings} pairings ({2 * pairings} games) of {args.game}, uct against uct"
    print(f"{what} at {args.simulations} simulations; best of {rounds} rounds")
    for name, result in best.items():
        meter = result.meter
        per_write = (
            f"{meter.writes} writes of {meter.calls} calls, {1000 * meter.cpu / meter.writes:.2f} ms CPU "
            f"and {1000 * meter.wall / meter.writes:.2f} ms wall each"
            if meter.writes
            else "no writes"
        )
        print(
            f"{name:>22}: {result.cpu:.3f} CPU-s, {result.wall:.3f} s wall; {per_write}; "
            f"CPU ratio to no writes {result.cpu / base:.3f}"
        )


if __name__ == "__main__":
    main()
