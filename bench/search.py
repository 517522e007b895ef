"""How fast the tree search runs, as ratios measured in one run (`--quick` for a short one).

1. Bobail, the seed's AlphaZero network (6 residual blocks x 75 filters on 43x5x5, policy 200 +
   value; built with torch, exported with dynamo=False): ONNX Runtime's own evaluations/s at the
   batch the search achieves (the limit), our simulations/s through the ModelHost with 64 games
   searched in lockstep, and the one-game loop: one evaluation per call, and with the AlphaZero
   player's virtual loss (`players.SEARCH_LEAVES` leaves per round), against ONNX Runtime's own
   batch-1 rate. Target: >= 0.8 of the limit. (A real worker's batches: bench/worker.py.)
2. Spring 2021 with seed 001's MLP (534 -> 96 -> 96 -> 38 + value), searched as the platform
   searches it (both seats of each frame, the sequential view of `arena_bots.sequential`, the
   real engine) on mid-game positions: inference costs microseconds, so the search's own Python
   cost shows (tree code, the engine, encoding); against ONNX Runtime's own rate on the same
   network at the batch the search achieves, and microseconds per simulation outside the model
   (wall-clock, the reference search alone). Then as Pente below, through a ModelHost on each core:
   the zoo's net (bots/zoo/spring2021/az-spring2021-final.onnx, seed 001's MLP shape, the Spring
   ladder's) on 3 and 16 mid-game frames, both seats each (issue 24: batch 22 in a worker); target
   <= 10 µs per simulation outside the model (issue 24: 87 µs in a worker); no share target (an
   MLP's rows cost under 1 µs).
3. Pente, the zoo's AlphaZero net (bots/zoo/pente/az-pente-final.onnx, 4x32 residual, the Pente
   ladder's): the AlphaZero player's move (`MctsPlayer.decide`, `players.SEARCH_LEAVES` leaves per
   round) on the seeded openings searched in lockstep through a ModelHost, on each core (compiled:
   `compiled_puct`; reference: `mcts.search`), CPU-timed: this process's CPU plus the host child's
   (as it reports it), so the figures hold on a loaded machine; the cores interleaved round by
   round. Against ONNX Runtime's own rate at the batch the search achieves (in process, 1 thread,
   CPU-timed, real encodings): evaluations per CPU-s as a share of it (target >= 0.9), and CPU
   per simulation outside the model, that is the search's CPU less ONNX Runtime's own for calls of
   the search's very batches replayed in process (tree + engine + encode + glue + IPC; target <= 20
   µs; issue 24: 0.65 and 178 µs in a worker).
   Three games in lockstep make about a worker's batch (issue 24: 10 rows); 16 a larger one.
4. Smash the Code, the zoo's actor-critic net (bots/zoo/smash/ac-smash-final.onnx: a policy and a
   value, searched as an AlphaZero net is), as Pente through a ModelHost on each core, on 3 and 16
   positions at turn 10 of random play, both seats each (seed 001's sequential search, as Spring's);
   no target (issue 24 has none for Smash).

`--quick` (the bench test's smoke run): 8 simulations per search, 8 Bobail games and 4 Spring frames
in lockstep, each game on the cores through a ModelHost on its smaller lockstep alone for 1 round,
and ONNX Runtime's limits over 0.3 s.

Run: .venv/bin/python bench/search.py [--quick] [--only spring|bobail|pente|smash]
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from timing import (
    MeteredBackend,
    bobail_planes,
    bobail_positions,
    evaluations_per_second,
    opening_positions,
    played_positions,
    spring_positions,
)
from torch import nn

from arena_bots.evaluators import NetworkEvaluator
from arena_bots.host import ModelHost
from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, search
from arena_bots.players import SEARCH_LEAVES, MctsPlayer
from arena_bots.runtime import InProcessSession
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.pente import GAME as PENTE
from arena_games.smash import GAME as SMASH
from arena_games.spring2021 import GAME as SPRING

GAMES = 64  # searched together, as a worker plays them
QUICK_GAMES = 8  # --quick: Bobail games searched together (Spring: half as many frames, both seats)
QUICK_SIMULATIONS = 8  # --quick: per search, in every bench
QUICK_LIMIT_S = 0.3  # --quick: seconds of each ONNX Runtime limit measurement
PENTE_NET = Path(__file__).resolve().parent.parent / "bots" / "zoo" / "pente" / "az-pente-final.onnx"
PENTE_LOCKSTEPS = (3, 16)  # Pente games searched together: about a worker's batch, and a larger one
PENTE_SHARE_TARGET = 0.9  # of ONNX Runtime's own rate at the search's batch (issue 24)
PENTE_OUTSIDE_TARGET_US = 20.0  # CPU per simulation outside the model (issue 24)
SPRING_NET = PENTE_NET.parent.parent / "spring2021" / "az-spring2021-final.onnx"
SPRING_LOCKSTEPS = (3, 16)  # Spring frames searched together, both seats each (issue 24: batch 22)
SPRING_OUTSIDE_TARGET_US = 10.0  # CPU per simulation outside the model (issue 24)
SMASH_NET = PENTE_NET.parent.parent / "smash" / "ac-smash-final.onnx"
SMASH_TURN = 10  # Smash's positions to search: turn 10 of random play (its games last about 40)


class ResidualBlock(nn.Module):
    def __init__(self, filters: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(filters, filters, 3, padding=1, bias=False),
            nn.BatchNorm2d(filters),
            nn.ReLU(),
            nn.Conv2d(filters, filters, 3, padding=1, bias=False),
            nn.BatchNorm2d(filters),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


class AlphaZeroNet(nn.Module):
    """The seed's Bobail network: a residual tower, a policy head (logits) and a tanh value head."""

    def __init__(self, planes: int = 43, filters: int = 75, blocks: int = 6, actions: int = 200) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(planes, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters), nn.ReLU()
        )
        self.tower = nn.Sequential(*(ResidualBlock(filters) for _ in range(blocks)))
        self.policy = nn.Sequential(
            nn.Conv2d(filters, 2, 1, bias=False),
            nn.BatchNorm2d(2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(50, actions),
        )
        self.value = nn.Sequential(
            nn.Conv2d(filters, 1, 1, bias=False),
            nn.BatchNorm2d(1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(25, 64),
            nn.ReLU(),
            nn.Linear(64, 1),
            nn.Tanh(),
        )

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.tower(self.stem(board))
        return self.policy(features), self.value(features)


class SpringMlp(nn.Module):
    """The Spring 2021 shape: 534 inputs, two hidden layers of 96, 38 policy logits and a tanh value."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(534, 96), nn.ReLU(), nn.Linear(96, 96), nn.ReLU())
        self.policy = nn.Linear(96, 38)
        self.value = nn.Sequential(nn.Linear(96, 1), nn.Tanh())

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.body(features)
        return self.policy(hidden), self.value(hidden)


def to_onnx(model: nn.Module, input_name: str, shape: tuple[int, ...]) -> bytes:
    """The model in eval mode as ONNX bytes with a dynamic batch (TorchScript exporter)."""
    torch.manual_seed(0)
    buffer = io.BytesIO()
    torch.onnx.export(
        model.eval(),
        (torch.zeros(1, *shape),),
        buffer,
        input_names=[input_name],
        output_names=["policy", "value"],
        dynamic_axes={name: {0: "batch"} for name in (input_name, "policy", "value")},
        dynamo=False,
    )
    return buffer.getvalue()


@dataclass(frozen=True)
class Measure:
    """One search call: wall time, descents, model rows and calls, and time inside the model."""

    label: str
    seconds: float
    simulations: int
    evaluations: int
    calls: int
    model_seconds: float

    @property
    def per_second(self) -> float:
        return self.simulations / self.seconds

    @property
    def batch(self) -> float:
        return self.evaluations / self.calls

    @property
    def overhead_us(self) -> float:
        """Microseconds per simulation outside the model call."""
        return (self.seconds - self.model_seconds) / self.simulations * 1e6

    @property
    def model_us(self) -> float:
        return self.model_seconds / self.simulations * 1e6


def measure_search(game: Game, backend: Any, states: list[Any], simulations: int, leaves: int = 1) -> Measure:
    """One search call over `states` (all searched together; a simultaneous game's by every player
    to move), `leaves` per tree and round."""
    timed = MeteredBackend(backend)
    evaluator = NetworkEvaluator(timed, game)
    seats = [(s, player) for s in states for player in game.to_move(s)]
    requests = [Request(s, player, np.random.default_rng(i)) for i, (s, player) in enumerate(seats)]
    config = SearchConfig(simulations=simulations, leaves_per_round=leaves)
    start = time.perf_counter()
    search(game, evaluator, requests, config)
    seconds = time.perf_counter() - start
    label = f"{len(requests)} search{'es' if len(requests) > 1 else ''}, " + (
        "lockstep" if leaves == 1 else f"virtual loss x{leaves}"
    )
    return Measure(label, seconds, simulations * len(requests), timed.rows, timed.calls, timed.seconds)


def search_rows(game: Game, backend: Any, positions: list[Any], simulations: int) -> list[Measure]:
    """The bench's four searches: every position together, in lockstep and with 4 leaves per round,
    then the first position alone (4x the simulations), in lockstep and with the player's leaves."""
    return [
        measure_search(game, backend, positions, simulations),
        measure_search(game, backend, positions, simulations, leaves=4),
        measure_search(game, backend, positions[:1], simulations * 4),
        measure_search(game, backend, positions[:1], simulations * 4, leaves=SEARCH_LEAVES),
    ]


def print_table(measures: list[Measure], limit: float | None = None) -> None:
    """One line per measure: simulations/s (and its share of `limit`), batch, time split."""
    header = ("sim/s", "of limit", "batch", "us/sim model", "us/sim rest")
    print(f"  {'search':30s} " + " ".join(f"{name:>12s}" for name in header))
    for m in measures:
        share = f"{m.per_second / limit:12.2f}" if limit else f"{'':12s}"
        numbers = f"{m.per_second:12.0f} {share} {m.batch:12.1f} {m.model_us:12.1f} {m.overhead_us:12.1f}"
        print(f"  {m.label:30s} {numbers}")


def bench_bobail(quick: bool) -> None:
    simulations = QUICK_SIMULATIONS if quick else 100
    games = QUICK_GAMES if quick else GAMES
    model = to_onnx(AlphaZeroNet(), "board", BOBAIL.spec.inputs["board"])
    positions = bobail_positions(games)
    with ModelHost(model) as host:
        measures = search_rows(BOBAIL, host, positions, simulations)
    lockstep = measures[0]
    batch = round(lockstep.batch)
    session = InProcessSession(model, threads=1)
    limit = evaluations_per_second(session, bobail_planes(batch), QUICK_LIMIT_S if quick else 3.0)
    limit_one = evaluations_per_second(session, bobail_planes(1), QUICK_LIMIT_S if quick else 1.5)
    session.close()
    print(f"Bobail AlphaZero network 6x75 (43x5x5 -> 200 + value), {simulations} simulations per search")
    print(f"  limit: ONNX Runtime in process, 1 thread, batch {batch} (the lockstep's): {limit:.0f} eval/s")
    print(f"         (batch 1: {limit_one:.0f} evaluations/s)")
    print_table(measures, limit)
    print(
        f"  lockstep over {games} games: {lockstep.per_second / limit:.2f} of the limit, "
        f"{lockstep.per_second / measures[2].per_second:.1f}x the one-game loop"
    )
    print(
        f"  one game: {measures[2].per_second / limit_one:.2f} of the batch-1 rate in lockstep, "
        f"{measures[3].per_second / limit_one:.2f} with {SEARCH_LEAVES} leaves per round "
        f"({measures[3].per_second / measures[2].per_second:.1f}x)"
    )


def bench_spring(quick: bool) -> None:
    simulations = QUICK_SIMULATIONS if quick else 200
    model = to_onnx(SpringMlp(), "obs", SPRING.spec.inputs["obs"])
    session = InProcessSession(model, threads=1)
    positions = spring_positions((QUICK_GAMES if quick else GAMES) // 2)  # both seats: as many searches
    measures = search_rows(SPRING, session, positions, simulations)
    lockstep = measures[0]
    batch = round(lockstep.batch)
    states = (positions * batch)[:batch]
    inputs = {"obs": np.stack([SPRING.encode(state, 0)["obs"] for state in states])}
    limit = evaluations_per_second(session, inputs, QUICK_LIMIT_S if quick else 3.0)
    session.close()
    print(
        f"Spring 2021, seed 001's MLP (534 -> 96 -> 96 -> 38 + value), {simulations} simulations per search"
    )
    print(f"  limit: ONNX Runtime in process, 1 thread, batch {batch} (the lockstep's): {limit:.0f} eval/s")
    print_table(measures, limit)
    print(
        f"  lockstep over {len(positions)} frames x 2 seats: {lockstep.per_second / limit:.2f} of the limit; "
        f"{lockstep.overhead_us:.1f} us per simulation outside the model, {lockstep.model_us:.1f} inside"
    )
    bench_on_cores(SPRING_BENCH, quick)


class BatchLog(MeteredBackend):
    """A metered backend that also notes every call's batch, to replay the calls in process."""

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.batches: list[int] = []

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.batches.append(len(next(iter(inputs.values()))))
        return super().run(inputs)


@dataclass
class CpuMeter:
    """The AlphaZero player's moves on one core over some games in lockstep, summed over calls: CPU
    seconds (this process's plus the model host's), simulations, model rows and calls, and the CPU
    seconds ONNX Runtime alone took for calls of the same batches (replayed in process); and each
    round's CPU µs per simulation outside the model (`rounds_us`: one move over the games each)."""

    core: str
    games: int
    seconds: float = 0.0
    simulations: int = 0
    rows: int = 0
    calls: int = 0
    model_seconds: float = 0.0
    rounds_us: list[float] = field(default_factory=list)

    @property
    def batch(self) -> float:
        return self.rows / self.calls

    @property
    def evaluations_per_cpu_second(self) -> float:
        return self.rows / self.seconds

    @property
    def share_of_replay(self) -> float:
        """The search's evaluations/CPU-s over ONNX Runtime's own on calls of the same batches."""
        return self.model_seconds / self.seconds

    @property
    def outside_model_us(self) -> float:
        """CPU µs per simulation less ONNX Runtime's own CPU for calls of the same batches."""
        return (self.seconds - self.model_seconds) / self.simulations * 1e6

    @property
    def median_outside_model_us(self) -> float:
        """The median round's CPU µs per simulation outside the model (a small difference of two large
        CPU times: on a loaded machine one disturbed round moves the total)."""
        return float(np.median(self.rounds_us))


def game_inputs(game: Game, positions: list[Any], rows: int) -> dict[str, np.ndarray]:
    """The network inputs of `rows` positions (`positions` repeated), each for its (first) player to
    move."""
    encoded = [game.encode(state, game.to_move(state)[0]) for state in (positions * rows)[:rows]]
    return {name: np.stack([planes[name] for planes in encoded]) for name in game.spec.inputs}


def host_move(
    meter: CpuMeter,
    game: Game,
    host: ModelHost,
    session: InProcessSession,
    states: list[Any],
    simulations: int,
    seed: int,
) -> None:
    """One `MctsPlayer.decide` over `states` in lockstep (by every player to move) through `host` on
    the meter's core, CPU-timed; then calls of the same batches on `session` (ONNX Runtime alone, in
    process), CPU-timed: on the encodings of `states`, since the network's cost does not depend on
    the values."""
    log = BatchLog(host)
    player = MctsPlayer(NetworkEvaluator(log, game), simulations, core=meter.core)
    seats = [(state, mover) for state in states for mover in game.to_move(state)]
    requests = [
        Request(state, mover, np.random.default_rng((seed, index)))
        for index, (state, mover) in enumerate(seats)
    ]
    child, start = host.cpu_seconds, time.process_time()
    player.decide(game, requests)
    seconds = time.process_time() - start + host.cpu_seconds - child
    inputs = game_inputs(game, states, max(log.batches))
    start = time.process_time()
    for batch in log.batches:
        session.run({name: array[:batch] for name, array in inputs.items()})
    model_seconds = time.process_time() - start
    meter.seconds += seconds
    meter.model_seconds += model_seconds
    meter.rounds_us.append((seconds - model_seconds) / (simulations * len(seats)) * 1e6)
    meter.simulations += simulations * len(seats)
    meter.rows += log.rows
    meter.calls += log.calls


@dataclass(frozen=True)
class HostBench:
    """A game's AlphaZero player through a model host on each core (`bench_on_cores`)."""

    game: Game
    title: str  # the network's, for the printed section
    net: Path  # the zoo's ONNX model that the game's ladder runs
    positions: Callable[[int], list[Any]]  # count -> positions to search
    locksteps: tuple[int, ...]  # positions searched together, one row each
    outside_target_us: float | None  # CPU per simulation outside the model (issue 24); None: none
    share_target: float | None  # of ONNX Runtime's own rate at the batch; None: the µs target alone


PENTE_BENCH = HostBench(
    PENTE,
    "the zoo's AlphaZero net (az-pente-final, 4x32)",
    PENTE_NET,
    lambda count: opening_positions(PENTE, count),
    PENTE_LOCKSTEPS,
    PENTE_OUTSIDE_TARGET_US,
    PENTE_SHARE_TARGET,
)
SPRING_BENCH = HostBench(
    SPRING,
    "the zoo's net (az-spring2021-final: seed 001's MLP, 534 -> 96 -> 96 -> 38 + value), mid-game frames",
    SPRING_NET,
    spring_positions,
    SPRING_LOCKSTEPS,
    SPRING_OUTSIDE_TARGET_US,
    None,  # an MLP's rows cost under 1 µs: issue 24's target is the µs figure
)
SMASH_BENCH = HostBench(
    SMASH,
    "the zoo's actor-critic net (ac-smash-final: a policy and a value), positions at turn 10",
    SMASH_NET,
    lambda count: played_positions(SMASH, count, lambda state: state.turn >= SMASH_TURN),
    SPRING_LOCKSTEPS,
    None,
    None,
)


def bench_on_cores(bench: HostBench, quick: bool) -> None:
    """The bench's game searched by the AlphaZero player through a ModelHost on each core, the cores
    interleaved round by round, CPU-timed; its figures beside the targets."""
    game = bench.game
    simulations, rounds = (QUICK_SIMULATIONS, 1) if quick else (100, 8)
    locksteps = (min(bench.locksteps),) if quick else bench.locksteps
    positions = bench.positions(max(locksteps))
    seats = len(game.to_move(positions[0]))  # searches per position (Spring's: both seats)
    meters = [CpuMeter(core, games) for games in locksteps for core in ("compiled", "reference")]
    session = InProcessSession(bench.net, threads=1)
    with ModelHost(bench.net.read_bytes()) as host:
        for meter in meters:  # warm-up: compiled code from the cache, the host's and session's first calls
            warm = CpuMeter(meter.core, meter.games)
            host_move(warm, game, host, session, positions[: meter.games], simulations, rounds)
        for seed in range(rounds):
            for meter in meters:
                host_move(meter, game, host, session, positions[: meter.games], simulations, seed)
    batches = {meter.games: max(1, round(meter.batch)) for meter in meters}
    limits = {
        games: evaluations_per_second(
            session,
            game_inputs(game, positions, batch),
            QUICK_LIMIT_S if quick else 3.0,
            clock=time.process_time,
        )
        for games, batch in batches.items()
    }
    session.close()
    print(f"\n{game.spec.title}, {bench.title}, {simulations} simulations per search,")
    print(f"  {SEARCH_LEAVES} leaves per round; CPU-timed: this process + the model host, {rounds} rounds")
    for games, limit in limits.items():
        print(f"  limit: ONNX Runtime in process, 1 thread, batch {batches[games]}: {limit:.0f} eval/CPU-s")
    print("  (of limit: evaluations/CPU-s over the limit; of replay: over ONNX Runtime's own rate on calls")
    print("  of the search's very batches, in process; us/sim out: CPU per simulation less that replay's,")
    print("  over all rounds and the median round)")
    header = ("sim/CPU-s", "eval/CPU-s", "batch", "of limit", "of replay", "us/sim out", "median")
    print(f"  {'search':30s} " + " ".join(f"{name:>10s}" for name in header))
    for meter in meters:
        rate = meter.evaluations_per_cpu_second
        numbers = (
            f"{meter.simulations / meter.seconds:10.0f} {rate:10.0f} {meter.batch:10.1f} "
            f"{rate / limits[meter.games]:10.2f} {meter.share_of_replay:10.2f} "
            f"{meter.outside_model_us:10.1f} {meter.median_outside_model_us:10.1f}"
        )
        print(f"  {f'{meter.games * seats} searches, {meter.core} core':30s} {numbers}")
    target = bench.outside_target_us
    outside_target = "no target" if target is None else f"target <= {target:g}"
    for compiled, reference in zip(meters[::2], meters[1::2], strict=True):
        share = compiled.evaluations_per_cpu_second / limits[compiled.games]
        share_target = "" if bench.share_target is None else f" (target >= {bench.share_target:g})"
        print(
            f"  {compiled.games * seats} searches, compiled core: {share:.2f} of ONNX Runtime's rate at its "
            f"batch{share_target}, {compiled.outside_model_us:.1f} µs per simulation outside the model, "
            f"median {compiled.median_outside_model_us:.1f} ({outside_target}); "
            f"reference core {reference.evaluations_per_cpu_second / limits[reference.games]:.2f}, "
            f"{reference.outside_model_us:.1f} µs, median {reference.median_outside_model_us:.1f}"
        )


def bench_pente(quick: bool) -> None:
    bench_on_cores(PENTE_BENCH, quick)


def bench_smash(quick: bool) -> None:
    bench_on_cores(SMASH_BENCH, quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run (see the docstring)")
    parser.add_argument("--only", choices=("spring", "bobail", "pente", "smash"), help="one of the benches")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load = os.getloadavg()
    print(f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    benches = {"spring": bench_spring, "bobail": bench_bobail, "pente": bench_pente, "smash": bench_smash}
    for name, bench in benches.items():
        if args.only in (None, name):
            bench(args.quick)


if __name__ == "__main__":
    main()
