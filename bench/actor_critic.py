"""Actor-critic training speed on Smash the Code: positions per second against seed 003's figures.

Usage: .venv/bin/python bench/actor_critic.py [--quick]

Runs the kit's loop (`arena_bots.training.actor_critic.Trainer.segment`: the batched games play a
segment with the network sampling every lane, then the V-trace passes train on it) in one
single-threaded process for about `seconds` of wall time, and prints positions played and trained
on per second, measured in this run, next to the seed's: 276 positions/s with one process and 455
with eight (its own machine, network and game; so the ratios compare set-ups, not code alone).
Rows: the default settings (chain-bot opponents and self-play, 2 passes), and self-play only
(no chain bot to pay for). --quick: a small batch of games and 2 s per row.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from arena_bots.training.actor_critic import ActorCriticSettings, Trainer

SEED_ONE_PROCESS = 276.0  # positions/s, seed 003
SEED_EIGHT_PROCESSES = 455.0


def positions_per_second(settings: ActorCriticSettings, seconds: float) -> float:
    """Segments of a fresh trainer until `seconds` have passed (one at least); positions per second."""
    trainer = Trainer(settings)
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or trainer.progress.segment == 0:
        trainer.segment()
    return trainer.progress.positions / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small batches, 2 s per row")
    quick = parser.parse_args().quick
    torch.set_num_threads(1)
    base = ActorCriticSettings(iterations=2)
    if quick:
        base = dataclasses.replace(base, against_chain=8, self_play=4, segment_steps=4)
    seconds = 2.0 if quick else 30.0
    rows = (
        (f"chain {base.against_chain} + self-play {base.self_play} games", base),
        (
            f"self-play only ({base.self_play * 2} games)",
            dataclasses.replace(base, against_chain=0, self_play=base.self_play * 2),
        ),
    )
    print("Smash the Code actor-critic: training positions per second (one process, one thread)")
    for label, settings in rows:
        rate = positions_per_second(settings, seconds)
        print(f"  {label:<36}{rate:>8,.0f}/s")
        print(f"    ours/seed 1 process ({SEED_ONE_PROCESS:.0f}/s): {rate / SEED_ONE_PROCESS:.2f}x")
        print(f"    ours/seed 8 processes ({SEED_EIGHT_PROCESSES:.0f}/s): {rate / SEED_EIGHT_PROCESSES:.2f}x")


if __name__ == "__main__":
    main()
