"""DQN greedy play in a worker: Coders Strike Back games per hour, and the share of time in ONNX Runtime.

The real runner (`arena_workers.runner.play_pairings`, as a Celery worker runs each task message of
PAIRINGS_PER_TASK pairings) plays in this process on SQLite and a blob folder, on a CSB ladder of
greedy DQN bots only: the zoo's (bots/zoo/csb/*.onnx) or, while the zoo has none, a stand-in of the
same shape (the training kit's runner-only Q-network: per pod, 3 tanh layers of 64 over its 16
inputs, then 37 angle and 52 thrust Q-values; random weights, so its pods wander and its races end
by the 100-turn timeout). Each model host the runner gets is wrapped to count its calls, rows and
seconds. Then the same runner plays as many pairings of house racers (no network) on another ladder.
Prints:

- the DQN bots' games per hour and turns per second, their model calls and mean batch;
- the share of the worker's wall time inside model calls (round trips to the model host), and
  inside ONNX Runtime itself (the rows at ONNX Runtime's own in-process rate at that batch);
- racer against racer through the same runner, and the DQN ladder's turns/s as a ratio of it (a
  turn's cost without a network: what the model hosts add).

Run: .venv/bin/python bench/dqn_worker.py [--quick] [--tasks 6] [--copies 4]
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sqlalchemy import update
from sqlmodel import col, func, select
from timing import evaluations_per_second, metered_models, temporary_worker

from arena_bots.manifest import Manifest, head_output_name
from arena_bots.runtime import InProcessSession
from arena_games.csb import GAME as CSB
from arena_games.csb import encoding
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, Ladder
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import PAIRINGS_PER_TASK, create_pairings
from arena_workers import runner
from arena_workers.context import WorkerContext

ZOO = Path(__file__).resolve().parent.parent / "bots" / "zoo" / "csb"
STAND_IN_LAYERS, STAND_IN_WIDTH = 3, 64


@dataclass(frozen=True)
class LadderRun:
    """What the worker did on one ladder: games and turns recorded in `seconds` of play_pairings,
    and its model hosts' calls, rows and seconds (0 for house bots)."""

    games: int
    turns: int
    seconds: float
    calls: int = 0
    rows: int = 0
    model_seconds: float = 0.0

    @property
    def games_per_hour(self) -> float:
        return self.games * 3600 / self.seconds

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds


def stand_in_dqn(seed: int = 0) -> bytes:
    """A runner-only CSB Q-network of the training kit's shape, random weights, the bot contract's
    names (input "pods" (batch, 2, 16); outputs q_angle0, q_thrust0, q_angle1, q_thrust1)."""
    rng = np.random.default_rng(seed)
    sizes = [encoding.FEATURES] + [STAND_IN_WIDTH] * STAND_IN_LAYERS
    weights = []

    def dense(name: str, rows: int, columns: int) -> None:
        scale = 1 / np.sqrt(rows)
        weights.append(
            numpy_helper.from_array(
                (rng.standard_normal((rows, columns)) * scale).astype(np.float32), f"{name}_w"
            )
        )
        weights.append(numpy_helper.from_array(np.zeros(columns, np.float32), f"{name}_b"))

    for layer, (rows, columns) in enumerate(itertools.pairwise(sizes)):
        dense(f"hidden{layer}", rows, columns)
    heads = {"angle": CSB.spec.heads["angle0"], "thrust": CSB.spec.heads["thrust0"]}
    for head, size in heads.items():
        dense(head, sizes[-1], size)
    nodes, outputs = [], []
    for pod in (0, 1):
        weights.append(numpy_helper.from_array(np.array(pod, np.int64), f"pod{pod}"))
        nodes.append(helper.make_node("Gather", ["pods", f"pod{pod}"], [f"row{pod}"], axis=1))
        previous = f"row{pod}"
        for layer in range(STAND_IN_LAYERS):
            nodes.append(
                helper.make_node(
                    "Gemm", [previous, f"hidden{layer}_w", f"hidden{layer}_b"], [f"z{layer}_{pod}"]
                )
            )
            nodes.append(helper.make_node("Tanh", [f"z{layer}_{pod}"], [f"h{layer}_{pod}"]))
            previous = f"h{layer}_{pod}"
        for head, size in heads.items():
            output = head_output_name(CSB.spec, f"{head}{pod}", "q")
            nodes.append(helper.make_node("Gemm", [previous, f"{head}_w", f"{head}_b"], [output]))
            outputs.append(helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", size]))
    order = [head_output_name(CSB.spec, head, "q") for head in CSB.spec.heads]
    outputs.sort(key=lambda value: order.index(value.name))
    inputs = [helper.make_tensor_value_info("pods", TensorProto.FLOAT, ["batch", *encoding.INPUTS["pods"]])]
    graph = helper.make_graph(nodes, "stand-in-dqn", inputs, outputs, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    helper.set_model_props(
        model,
        {
            "arena.game": "csb",
            "arena.game_version": str(CSB.spec.version),
            "arena.player": "greedy",
            "arena.head": "q",
            "arena.name": "stand-in-dqn",
        },
    )
    return model.SerializeToString()


def dqn_models() -> tuple[str, list[bytes]]:
    """(what they are, the model files): the zoo's CSB bots, or the stand-in."""
    zoo = sorted(ZOO.glob("*.onnx"))
    if zoo:
        return f"the zoo's {', '.join(path.stem for path in zoo)}", [path.read_bytes() for path in zoo]
    described = (
        f"a stand-in Q-network ({STAND_IN_LAYERS}x{STAND_IN_WIDTH} tanh per pod; bots/zoo/csb has no bot yet)"
    )
    return described, [stand_in_dqn()]


def network_ladder(context: WorkerContext, models: list[bytes], copies: int) -> list[int]:
    """A CSB ladder of greedy DQN bots only (`copies` bots per model, house bots retired); the ids."""
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game="csb", simulations=1, seed=1)
        db.exec(update(Bot).where(col(Bot.ladder_id) == ladder.id).values(status="retired"))
        ids = []
        for model in models:
            props = {entry.key: entry.value for entry in onnx.load_from_string(model).metadata_props}
            sha256 = context.blobs.put(model)
            for copy in range(copies):
                manifest = Manifest.from_metadata(
                    props,
                    {"name": f"{props.get('arena.name', 'dqn')}-{copy}", "player": "greedy", "head": "q"},
                )
                bot = Bot(
                    ladder_id=ladder.id,
                    name=manifest.name,
                    kind="network",
                    player="greedy",
                    model_sha256=sha256,
                    manifest=manifest.to_dict(),
                    report={},
                )
                db.add(bot)
                db.flush()
                ids.append(bot.id)
        db.commit()
        return ids


def racer_ladder(context: WorkerContext, count: int) -> list[int]:
    """A second CSB ladder (another budget) of `count` house racers; their ids."""
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game="csb", simulations=2, seed=1)
        db.exec(update(Bot).where(col(Bot.ladder_id) == ladder.id).values(status="retired"))
        bots = [
            Bot(ladder_id=ladder.id, name=f"racer-{k}", kind="house", player="racer") for k in range(count)
        ]
        db.add_all(bots)
        db.commit()
        return [bot.id for bot in bots]


def play(context: WorkerContext, bot_ids: list[int], tasks: int) -> LadderRun:
    """`tasks` task messages of PAIRINGS_PER_TASK pairings among `bot_ids`, played one after another."""
    meters = metered_models(context)
    pairs = itertools.islice(itertools.cycle(itertools.combinations(bot_ids, 2)), tasks * PAIRINGS_PER_TASK)
    with session(context.engine) as db:
        ladder = db.get(Ladder, db.get(Bot, bot_ids[0]).ladder_id)
        pairings = create_pairings(db, ladder=ladder, pairs=list(pairs), redelivery_seconds=600)
        db.commit()
        ids = [pairing.id for pairing in pairings]
    seconds = 0.0
    for start in range(0, len(ids), PAIRINGS_PER_TASK):
        began = time.perf_counter()
        runner.play_pairings(context, ids[start : start + PAIRINGS_PER_TASK])
        seconds += time.perf_counter() - began
    with session(context.engine) as db:
        games, turns = db.exec(
            select(func.count(), func.coalesce(func.sum(GameRecord.steps), 0)).where(
                col(GameRecord.pairing_id).in_(ids)
            )
        ).one()
    return LadderRun(
        games=int(games),
        turns=int(turns),
        seconds=seconds,
        calls=sum(meter.calls for meter in meters),
        rows=sum(meter.rows for meter in meters),
        model_seconds=sum(meter.seconds for meter in meters),
    )


def onnx_runtime_rate(model: bytes, batch: int, seconds: float) -> float:
    """ONNX Runtime's own rows/s for `model` at `batch`, in process, one thread, on real positions."""
    states, state = [], CSB.init(0, None)
    while len(states) < batch:
        states.append(state)
        state = CSB.step(state, [(18, 49, 18, 49), (18, 49, 18, 49)])
    inputs = {"pods": np.stack([CSB.encode(s, 0)["pods"] for s in states])}
    ort_session = InProcessSession(model, threads=1)
    try:
        return evaluations_per_second(ort_session, inputs, seconds)
    finally:
        ort_session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run: 1 task per ladder, 2 bots")
    parser.add_argument("--tasks", type=int, default=6, help="task messages to play per ladder")
    parser.add_argument("--copies", type=int, default=4, help="bots per DQN model")
    args = parser.parse_args()
    tasks, copies = (1, 2) if args.quick else (args.tasks, args.copies)
    described, models = dqn_models()
    with temporary_worker(lambda *_: None) as context:
        dqn = play(context, network_ladder(context, models, copies), tasks)
        racers = play(context, racer_ladder(context, len(models) * copies), tasks)
    batch = max(1, round(dqn.rows / dqn.calls))
    ort_rate = onnx_runtime_rate(models[0], batch, 0.5 if args.quick else 2.0)
    print(
        f"DQN greedy play in a worker (runner.play_pairings in process, SQLite): CSB, "
        f"{len(models) * copies} bots of {described}, {PAIRINGS_PER_TASK} pairings per task"
    )
    print(
        f"  DQN ladder: {dqn.games} games, {dqn.turns} turns in {dqn.seconds:.1f} s: "
        f"{dqn.games_per_hour:.0f} games/hour, {dqn.turns_per_second:.0f} turns/s; "
        f"{dqn.calls} model calls, mean batch {dqn.rows / dqn.calls:.1f}"
    )
    in_calls, in_ort = dqn.model_seconds / dqn.seconds, dqn.rows / ort_rate / dqn.seconds
    print(
        f"  share of the wall time in model calls (host round trips): {in_calls:.0%}; "
        f"in ONNX Runtime itself ({ort_rate:.0f} rows/s at batch {batch}): {in_ort:.1%}"
    )
    print(
        f"  racer ladder (no network), same runner: {racers.games} games, {racers.turns} turns in "
        f"{racers.seconds:.1f} s: {racers.games_per_hour:.0f} games/hour, "
        f"{racers.turns_per_second:.0f} turns/s"
    )
    print(f"  DQN / racer: {dqn.turns_per_second / racers.turns_per_second:.2f} in turns/s")


if __name__ == "__main__":
    main()
