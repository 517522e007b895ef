"""Helpers the benchmarks share: the rate of repeated work, a backend that meters its calls, ONNX
Runtime's own rate, positions from the seeded openings and simultaneous games' mid-game frames. (Run as
scripts, the bench files import this as `timing`: the script's folder is first on the path.)"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from arena_bots.manifest import Manifest
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.spring2021 import GAME as SPRING
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate
from arena_platform.models import Bot
from arena_platform.settings import Settings
from arena_workers.context import WorkerContext


def moves_per_second(play: Callable[[], int], seconds: float) -> float:
    """Calls `play` (which returns the moves, or turns, it made) until `seconds` have passed; the
    moves per second."""
    moves, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        moves += play()
    return moves / elapsed


class MeteredBackend:
    """Wraps an inference backend and counts its `run` calls, their rows and their seconds."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.seconds, self.rows, self.calls = backend, 0.0, 0, 0

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        start = time.perf_counter()
        outputs = self.backend.run(inputs)
        self.seconds += time.perf_counter() - start
        self.rows += len(next(iter(inputs.values())))
        self.calls += 1
        return outputs

    def __getattr__(self, name: str) -> Any:  # input_names, close, ...: the wrapped backend's
        return getattr(self.backend, name)


@contextlib.contextmanager
def temporary_worker(enqueue: Callable[..., None]) -> Iterator[WorkerContext]:
    """A worker context on a fresh SQLite database and blob folder, removed afterwards; the tasks
    it enqueues go to `enqueue(name, *args)`."""
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite:///{folder}/arena.db")
        migrate(engine)
        context = WorkerContext(
            settings=Settings(data_dir=Path(folder)),
            engine=engine,
            blobs=BlobStore(f"{folder}/blobs"),
            enqueue=enqueue,
        )
        try:
            yield context
        finally:
            context.close()
            engine.dispose()


def metered_models(context: Any) -> list[MeteredBackend]:
    """Wraps every model host a worker context (`arena_workers.context.WorkerContext`) gets from now
    on to count its calls; the list fills as hosts are got."""
    meters: list[MeteredBackend] = []
    plain_get = context.models.get

    def metered_get(sha256: str) -> MeteredBackend:
        meters.append(MeteredBackend(plain_get(sha256)))
        return meters[-1]

    context.models.get = metered_get  # this context's hosts, metered
    return meters


def evaluations_per_second(
    backend: Any,
    inputs: dict[str, np.ndarray],
    seconds: float,
    windows: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """ONNX Runtime's own rate on these inputs, rows per second of `clock`: the best of `windows`
    windows that share about `seconds` (on a shared machine the best window is the least disturbed).
    With `time.process_time` (an in-process session: its threads are this process's) a loaded machine
    slows the clock, not the figure."""
    backend.run(inputs)
    rows, best = len(next(iter(inputs.values()))), 0.0
    for _ in range(windows):
        calls, start = 0, clock()
        while (elapsed := clock() - start) < seconds / windows:
            backend.run(inputs)
            calls += 1
        best = max(best, calls * rows / elapsed)
    return best


class CpuMeter:
    """Work and CPU seconds of this process summed over the timed calls of one measurement:
    `work(call)` does call number `call` and returns how much it did (in `unit`s: simulations,
    moves, games)."""

    def __init__(self, work: Callable[[int], int], name: str = "", unit: str = "") -> None:
        self.work, self.name, self.unit = work, name, unit
        self.done, self.seconds, self.calls = 0, 0.0, 0

    def run(self) -> None:
        """One timed call."""
        start = time.process_time()
        self.done += self.work(self.calls)
        self.seconds += time.process_time() - start
        self.calls += 1

    @property
    def rate(self) -> float:
        return self.done / self.seconds


def opening_positions(game: Game, count: int) -> list[Any]:
    """The game's positions after its seeded openings 0 .. count - 1 (default config)."""
    positions = []
    for seed in range(count):
        state = game.init(seed, None)
        for joint in game.opening(seed, None):
            state = game.step(state, joint)
        positions.append(state)
    return positions


def played_positions(game: Game, count: int, reached: Callable[[Any], bool]) -> list[Any]:
    """Positions of `count` seeded games (seeds 0..) of a simultaneous `game` after uniformly random
    play, each at its first frame where `reached(state)` holds and both players move (the play
    must get there before the game ends)."""
    rng, positions = np.random.default_rng(2021), []
    for seed in range(count):
        state = game.init(seed, None)
        while not reached(state) or len(game.to_move(state)) < 2:
            state = game.step(state, [game.random_action(state, p, rng) for p in game.to_move(state)])
        positions.append(state)
    return positions


def spring_positions(count: int, day: int = 8) -> list[Any]:
    """Positions of `count` seeded games at the first frame of `day` after random play: mid-game,
    both players to move."""
    return played_positions(SPRING, count, lambda state: state.day >= day)


def bobail_positions(count: int) -> list[Any]:
    """Bobail's positions after the seeded openings 0 .. count - 1."""
    return opening_positions(BOBAIL, count)


def bobail_planes(count: int) -> dict[str, np.ndarray]:
    """The network inputs of `count` opening positions, each seen by its player to move."""
    states = bobail_positions(count)
    return {"board": np.stack([BOBAIL.encode(s, BOBAIL.to_move(s)[0])["board"] for s in states])}


def zoo_bot(blobs: BlobStore, ladder_id: int, model: bytes, name: str, player: str | None = None) -> Bot:
    """A network bot of `ladder_id` (not yet added) for a zoo model's bytes, named `name`, its player
    (`player`, or the file's) and the rest of its manifest from the file's metadata, its model stored
    in `blobs`; unvalidated, where `arena demo` validates a new one (the zoo's files are the project's
    own)."""
    props = {entry.key: entry.value for entry in onnx.load_from_string(model).metadata_props}
    manifest = Manifest.from_metadata(props, {"name": name, "player": player})
    return Bot(
        ladder_id=ladder_id,
        name=manifest.name,
        kind="network",
        player=manifest.player,
        model_sha256=blobs.put(model),
        manifest=manifest.to_dict(),
        report={},
    )
