"""Actor-critic training speed on Smash the Code: positions per second against seed 003's figures.

Usage: .venv/bin/python bench/actor_critic.py [--quick]

Runs the kit's loop (`arena_bots.training.actor_critic.Trainer.segment`: the batched games play a
segment with the network sampling every lane, then the V-trace passes train on it) in one
single-threaded process, and prints positions played and trained on per CPU second of this
process (time.process_time, so load slows the wall clock, not the figure) on each core
(ARENA_CORE: the chain bot's values compiled or in NumPy; the same games on both), one trainer
per core, their segments interleaved, next to the seed's: 276 positions/s with one process and 455
with eight (its own machine, network and game, wall clock; so those ratios compare set-ups, not
code alone). Rows: the default settings (chain-bot opponents and self-play, 2 passes), and
self-play only (no chain bot to pay for: the cores should tie). --quick: a small batch of games
and 2 segments per trainer.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import torch

from arena_bots.training.actor_critic import ActorCriticSettings, Trainer

SEED_ONE_PROCESS = 276.0  # positions/s, seed 003
SEED_EIGHT_PROCESSES = 455.0


CORES = ("reference", "compiled")


def trainer_on(core: str, settings: ActorCriticSettings) -> Trainer:
    """A fresh trainer whose chain bot runs on `core` (read from ARENA_CORE as it is made)."""
    previous = os.environ.get("ARENA_CORE")
    os.environ["ARENA_CORE"] = core
    try:
        return Trainer(settings)
    finally:
        if previous is None:
            del os.environ["ARENA_CORE"]
        else:
            os.environ["ARENA_CORE"] = previous


def positions_per_cpu_second(settings: ActorCriticSettings, segments: int) -> dict[str, float]:
    """Per core, positions per CPU second over `segments` segments of its own trainer, the cores'
    segments interleaved (after one untimed segment each: compilation, torch's first calls)."""
    trainers = {core: trainer_on(core, settings) for core in CORES}
    seconds = dict.fromkeys(CORES, 0.0)
    for trainer in trainers.values():
        trainer.segment()
    untimed = {core: trainer.progress.positions for core, trainer in trainers.items()}
    for _ in range(segments):
        for core, trainer in trainers.items():
            start = time.process_time()
            trainer.segment()
            seconds[core] += time.process_time() - start
    return {core: (trainers[core].progress.positions - untimed[core]) / seconds[core] for core in CORES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small batches, 2 segments per trainer")
    quick = parser.parse_args().quick
    torch.set_num_threads(1)
    base = ActorCriticSettings(iterations=2)
    if quick:
        base = dataclasses.replace(base, against_chain=8, self_play=4, segment_steps=4)
    segments = 2 if quick else 6
    rows = (
        (f"chain {base.against_chain} + self-play {base.self_play} games", base),
        (
            f"self-play only ({base.self_play * 2} games)",
            dataclasses.replace(base, against_chain=0, self_play=base.self_play * 2),
        ),
    )
    load = os.getloadavg()
    print("Smash the Code actor-critic: training positions per CPU second (one process, one thread)")
    print(f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"  {'':<36}{'reference':>11}{'compiled':>11}{'ratio':>8}")
    for label, settings in rows:
        rates = positions_per_cpu_second(settings, segments)
        reference, compiled = rates["reference"], rates["compiled"]
        print(f"  {label:<36}{reference:>10,.0f}/s{compiled:>10,.0f}/s{compiled / reference:>7.2f}x")
        for seed_rate, processes in ((SEED_ONE_PROCESS, "1 process"), (SEED_EIGHT_PROCESSES, "8 processes")):
            print(f"    compiled/seed {processes} ({seed_rate:.0f}/s): {compiled / seed_rate:.2f}x")


if __name__ == "__main__":
    main()
