"""Self-play benchmark: positions per CPU second of `arena train alphazero`'s self-play on each core.

Usage: .venv/bin/python bench/selfplay.py [--quick]

Per game (Bobail, Spring 2021), one generation of `selfplay.play_generation` with the run's default
network (`run.DEFAULT_SETTINGS`: its blocks and filters, torch's initial weights from a fixed seed,
exported as the bot a generation plays) and the game's default self-play settings (games, games
in lockstep, simulations, root noise), on the reference core and on the compiled core
(`players.puct_search`: the compiled PUCT), the cores interleaved round by round from the same
seeds, so that a change in load hits both alike. Each figure is per CPU second of this process
(time.process_time): self-play runs its model in process (`InProcessSession`, no model host), so
the process's CPU is all of it. ONNX Runtime's part is the CPU inside its `run` calls. The two cores
play the same games (the differential test, tests/bots/test_training.py); the bench checks that
they did. Target (issue 24): the compiled core >= 4x today's self-play, Bobail 172 and Spring 2021
280 positions per CPU-s (measured before the compiled core, on the reference); the ratio to this
run's reference core is printed beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from arena_bots.export import export_bot
from arena_bots.manifest import Manifest
from arena_bots.runtime import InProcessSession
from arena_bots.training import selfplay
from arena_bots.training.networks import build_network
from arena_bots.training.run import DEFAULT_SETTINGS
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.spring2021 import GAME as SPRING2021

CORES = ("reference", "compiled")
TARGET = 4.0  # compiled against today's figure (issue 24)
TODAY = {"bobail": 172.0, "spring2021": 280.0}  # positions per CPU-s before the compiled core
GAMES = (BOBAIL, SPRING2021)


@dataclass(frozen=True)
class Plan:
    rounds: int  # interleaved rounds: one generation per core and game each
    overrides: Mapping[str, object]  # replaced in each game's default SelfPlaySettings
    game_configs: Mapping[str, Mapping[str, object]]  # per game: caps for a quick run


FULL = Plan(rounds=3, overrides={}, game_configs={})
QUICK = Plan(
    rounds=1,
    overrides={"games": 2, "parallel": 2, "simulations": 8},
    game_configs={"bobail": {"max_turns": 10}, "spring2021": {"MAX_ROUNDS": 2}},
)


class MeteredSession(InProcessSession):
    """The in-process session self-play creates, counting the CPU seconds inside its `run` calls
    (all sessions together: `cpu` is the class's)."""

    cpu = 0.0

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        start = time.process_time()
        try:
            return super().run(inputs)
        finally:
            MeteredSession.cpu += time.process_time() - start


@dataclass
class Tally:
    """One core's generations of one game, summed over the rounds."""

    positions: int = 0
    seconds: float = 0.0  # CPU
    model_seconds: float = 0.0  # CPU inside ONNX Runtime's run

    @property
    def rate(self) -> float:
        return self.positions / self.seconds

    @property
    def model_share(self) -> float:
        return self.model_seconds / self.seconds


def default_model(game: Game) -> bytes:
    """The run's default network for `game`, as first built (seeded), exported as a bot."""
    run_settings = DEFAULT_SETTINGS[game.name]
    torch.manual_seed(0)
    network = build_network(game.spec, run_settings.blocks, run_settings.filters)
    manifest = Manifest(game=game.name, game_version=game.spec.version, name="bench", player="mcts")
    return export_bot(network, game, manifest)


def settings_for(game: Game, plan: Plan) -> selfplay.SelfPlaySettings:
    base = DEFAULT_SETTINGS[game.name].selfplay
    config = plan.game_configs.get(game.name, base.game_config)
    return dataclasses.replace(base, **plan.overrides, game_config=config)


def generation(
    game: Game, model: bytes, settings: selfplay.SelfPlaySettings, seed: int, core: str, tally: Tally
) -> selfplay.Positions:
    """One timed generation on `core`, added to `tally`; its positions."""
    MeteredSession.cpu = 0.0
    start = time.process_time()
    positions, _ = selfplay.play_generation(game, model, settings, seed, core)
    tally.seconds += time.process_time() - start
    tally.model_seconds += MeteredSession.cpu
    tally.positions += len(positions)
    return positions


def same(first: selfplay.Positions, second: selfplay.Positions) -> bool:
    return (
        all(np.array_equal(first.inputs[name], second.inputs[name]) for name in first.inputs)
        and np.array_equal(first.policy, second.policy)
        and np.array_equal(first.value, second.value)
    )


def bench_game(game: Game, plan: Plan) -> None:
    model, settings = default_model(game), settings_for(game, plan)
    warm = dataclasses.replace(settings, games=1, parallel=1, simulations=2)
    for core in CORES:  # loads (or compiles) the kernels and the tree outside the timing
        selfplay.play_generation(game, model, warm, 0, core)
    tallies = {core: Tally() for core in CORES}
    alike = True
    for round_ in range(plan.rounds):
        played = [generation(game, model, settings, 1 + round_, core, tallies[core]) for core in CORES]
        alike = alike and same(*played)
    reference, compiled = tallies["reference"], tallies["compiled"]
    today = TODAY[game.name]
    print(
        f"{game.spec.title}: {settings.games} games, {settings.parallel} in lockstep, "
        f"{settings.simulations} simulations, {compiled.positions // plan.rounds} positions a generation"
    )
    for core, tally in tallies.items():
        print(
            f"  {core:9s} core: {tally.rate:7.0f} positions per CPU-s "
            f"(ONNX Runtime {100 * tally.model_share:.0f}% of the CPU)"
        )
    print(f"  {game.spec.title}, compiled/reference core: {compiled.rate / reference.rate:.2f}x")
    print(
        f"  {game.spec.title}, compiled/today's {today:.0f}: {compiled.rate / today:.2f}x "
        f"(target >= {TARGET:.0f}x); the same games on both cores: {'yes' if alike else 'NO'}"
    )
    bound = compiled.positions / compiled.model_seconds
    print(f"  ONNX Runtime alone would allow {bound:.0f} positions per CPU-s ({bound / today:.1f}x today's)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few short games, one round")
    plan = QUICK if parser.parse_args().quick else FULL
    torch.set_num_threads(1)
    selfplay.InProcessSession = MeteredSession  # meters the sessions play_generation creates
    load = os.getloadavg()
    print(f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"self-play positions per CPU-s, {plan.rounds} interleaved rounds per game")
    if plan is QUICK:
        print("quick: a few short games, not the default settings; compare no figure with the target")
    print()
    for game in GAMES:
        bench_game(game, plan)
    load = os.getloadavg()
    print(f"\nmachine load at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
