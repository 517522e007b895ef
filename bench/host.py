"""What isolation costs: a ModelHost call against the same model in process (ARCHITECTURE §4, §9).

    python bench/host.py [--quick] [--zoo] [--baseline REV]

Per row, a model at a batch: the CPU time of a call in process (ONNX Runtime alone) and through a
model host (the caller's CPU plus the child's, as the child reports it), and the host's round trip
beyond inference per call and per evaluation (row). The Bobail and Pente rows are stand-ins with
the zoo nets' tensors and almost no compute, so the round trip is not lost in the model's noise;
they are printed beside issue 24's figures from a real worker (22 µs per evaluation at batch 9,
60 at batch 10). With --zoo, the rows are the Bobail, Pente and Spring zoo nets themselves
(bots/zoo/<game>/az-<game>-final.onnx) at batches 1, 8, 16, 32 and 64: the round trip with the
model's real work, whose caches the child and the caller find cold. With --baseline REV, that
revision's model host (any git revision since a6e6fac, the JSON framing per call) runs in the same
rounds. The runners take turns round after round and each keeps its best round: on a shared
machine that is the least noisy estimate. A round makes at most `calls` calls and lasts about
ROUND_S per runner at most. Also prints how long a host takes to start.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from arena_bots.host import HostLimits, ModelHost
from arena_bots.runtime import InferenceBackend, InProcessSession

BOARD = (4, 5, 5)  # the small MLP's input: a Bobail-sized encoding
HIDDEN = 128
ACTIONS = 100
REPOSITORY = Path(__file__).resolve().parent.parent
ZOO_GAMES = ("bobail", "pente", "spring2021")
ZOO_BATCHES = (1, 8, 16, 32, 64)
ROUND_S = 0.2  # CPU seconds a runner's round takes at most (fewer calls for a slow model)


def _model(nodes, inputs, outputs, weights=()) -> bytes:
    graph = helper.make_graph(nodes, "bench", inputs, outputs, list(weights))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def small_mlp() -> bytes:
    """board (batch, 4, 5, 5) -> policy (batch, 100) logits, value (batch, 1) in [-1, 1]."""
    rng = np.random.default_rng(0)

    def weight(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name
        )

    nodes = [
        helper.make_node("Flatten", ["board"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "w1"], ["linear"]),
        helper.make_node("Relu", ["linear"], ["hidden"]),
        helper.make_node("MatMul", ["hidden", "w_policy"], ["policy"]),
        helper.make_node("MatMul", ["hidden", "w_value"], ["value_linear"]),
        helper.make_node("Tanh", ["value_linear"], ["value"]),
    ]
    weights = [
        weight("w1", (int(np.prod(BOARD)), HIDDEN)),
        weight("w_policy", (HIDDEN, ACTIONS)),
        weight("w_value", (HIDDEN, 1)),
    ]
    inputs = [helper.make_tensor_value_info("board", TensorProto.FLOAT, ["batch", *BOARD])]
    outputs = [
        helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", ACTIONS]),
        helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1]),
    ]
    return _model(nodes, inputs, outputs, weights)


def stand_in(inputs: dict[str, tuple[int, ...]], actions: int) -> bytes:
    """A model with these inputs (name -> dims) and a zoo net's outputs, policy (batch, actions) and
    value (batch,), that hardly computes: policy is the first `actions` values of the first input,
    value the sum of every input."""
    names = list(inputs)
    nodes = [helper.make_node("Flatten", [name], [f"{name}_flat"], axis=1) for name in names]
    nodes += [
        helper.make_node("Concat", [f"{name}_flat" for name in names], ["flat"], axis=1),
        helper.make_node("Slice", ["flat", "start", "end", "axis1"], ["policy"]),
        helper.make_node("ReduceSum", ["flat", "axis1"], ["value"], keepdims=0),
    ]
    constants = {"start": [0], "end": [actions], "axis1": [1]}
    weights = [numpy_helper.from_array(np.array(value, np.int64), name) for name, value in constants.items()]
    value_infos = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *dims])
        for name, dims in inputs.items()
    ]
    outputs = [
        helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", actions]),
        helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch"]),
    ]
    return _model(nodes, value_infos, outputs, weights)


@dataclass(frozen=True)
class Row:
    name: str
    model: bytes
    inputs: dict[str, tuple[int, ...]]
    batch: int
    issue_us_per_evaluation: float | None  # issue 24's host IPC beyond inference, from a real worker


def rows() -> list[Row]:
    bobail = {"board": (43, 5, 5)}
    pente = {"board": (6, 19, 19), "captures": (2,)}
    mlp = {"board": BOARD}
    return [
        Row("Bobail zoo tensors", stand_in(bobail, 200), bobail, 9, 22.0),
        Row("Pente zoo tensors", stand_in(pente, 361), pente, 10, 60.0),
        Row("small MLP", small_mlp(), mlp, 1, None),
        Row("small MLP", small_mlp(), mlp, 64, None),
    ]


def zoo_rows() -> list[Row]:
    """The zoo nets at ZOO_BATCHES, their inputs' dims read from the model."""
    rows = []
    for game in ZOO_GAMES:
        model = (REPOSITORY / "bots" / "zoo" / game / f"az-{game}-final.onnx").read_bytes()
        graph = onnx.load_from_string(model).graph
        inputs = {
            value.name: tuple(dim.dim_value for dim in value.type.tensor_type.shape.dim[1:])
            for value in graph.input
        }
        rows += [Row(f"{game} zoo net", model, inputs, batch, None) for batch in ZOO_BATCHES]
    return rows


def calls_per_round(session: InferenceBackend, inputs: dict[str, np.ndarray], calls: int) -> int:
    """`calls`, or fewer where ONNX Runtime alone would take longer than ROUND_S (at least 3)."""
    session.run(inputs)  # warm-up
    started = time.process_time()
    session.run(inputs)
    return max(3, min(calls, int(ROUND_S / max(time.process_time() - started, 1e-6))))


def cpu_per_call(runners: list[Callable[[], float]], calls: int, rounds: int) -> list[float]:
    """Per runner (a call that returns the CPU seconds it cost), the best over `rounds` of the mean
    CPU seconds of `calls` calls, after a warm-up round."""
    best = [math.inf] * len(runners)
    for _ in range(rounds + 1):  # the first round warms up
        for index, runner in enumerate(runners):
            best[index] = min(best[index], sum(runner() for _ in range(calls)) / calls)
    return best


def in_process_runner(session: InferenceBackend, inputs: dict[str, np.ndarray]) -> Callable[[], float]:
    def call() -> float:
        started = time.process_time()
        session.run(inputs)
        return time.process_time() - started

    return call


def host_runner(host: ModelHost, inputs: dict[str, np.ndarray]) -> Callable[[], float]:
    """This process's CPU plus the child's (reported with each answer) for one call."""

    def call() -> float:
        started, child_started = time.process_time(), host.cpu_seconds
        host.run(inputs)
        return time.process_time() - started + host.cpu_seconds - child_started

    return call


def baseline_host_class(revision: str, folder: str) -> type:
    """ModelHost of an earlier revision, unpacked into `folder`; its child runs that revision's code
    (the child's PYTHONPATH is the folder its module lies in). Its host.py imports that revision's
    host_protocol (where it has one): it stands in as arena_bots.host_protocol while host.py loads."""
    archive = subprocess.run(
        ["git", "-C", str(REPOSITORY), "archive", revision, "bots/arena_bots"],
        check=True,
        capture_output=True,
    ).stdout
    archive_path = Path(folder) / "baseline.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(folder, filter="data")
    protocol_path = Path(folder) / "bots" / "arena_bots" / "host_protocol.py"
    ours = sys.modules["arena_bots.host_protocol"]
    try:
        if protocol_path.exists():
            sys.modules["arena_bots.host_protocol"] = _loaded("baseline_host_protocol", protocol_path)
        return _loaded("baseline_host", protocol_path.with_name("host.py")).ModelHost
    finally:
        sys.modules["arena_bots.host_protocol"] = ours


def _loaded(name: str, path: Path) -> Any:
    """The module at `path`, imported as `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def started_host(host_class: type, model: bytes, label: str) -> ModelHost:
    started = time.perf_counter()
    host = host_class(model, HostLimits())
    print(f"host start-up ({label}): {(time.perf_counter() - started) * 1e3:.0f} ms")
    return host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls: a rough answer in seconds")
    parser.add_argument("--zoo", action="store_true", help="the zoo nets at batches 1 to 64 instead")
    parser.add_argument("--baseline", metavar="REV", help="a git revision whose model host runs alongside")
    arguments = parser.parse_args()
    calls, rounds = (200, 3) if arguments.quick else (2000, 7)
    with tempfile.TemporaryDirectory() as folder:
        baseline = baseline_host_class(arguments.baseline, folder) if arguments.baseline else None
        print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; best of {rounds} x {calls} calls")
        print("CPU µs per call (in process: ONNX Runtime; host: caller + child); round trip beyond inference")
        header = (
            f"{'model':>18} {'batch':>5} {'in process':>10} {'host':>8} {'round trip':>10} {'per row':>8}"
        )
        print(header + ("  baseline: host, round trip, per row" if baseline else "") + "  issue 24 per row")
        for row in zoo_rows() if arguments.zoo else rows():
            print_row(row, baseline, calls, rounds)


def print_row(row: Row, baseline: type | None, calls: int, rounds: int) -> None:
    rng = np.random.default_rng(row.batch)
    inputs = {
        name: rng.standard_normal((row.batch, *dims)).astype(np.float32) for name, dims in row.inputs.items()
    }
    hosts = [started_host(ModelHost, row.model, "this revision")]
    if baseline is not None:
        hosts.append(started_host(baseline, row.model, "baseline"))
    session = InProcessSession(row.model)
    runners = [in_process_runner(session, inputs)] + [host_runner(host, inputs) for host in hosts]
    calls = calls_per_round(session, inputs, calls)
    in_process, *through_hosts = (seconds * 1e6 for seconds in cpu_per_call(runners, calls, rounds))
    trips = [host_us - in_process for host_us in through_hosts]
    cells = [f"{row.name:>18} {row.batch:>5} {in_process:>10.1f}"]
    cells += [
        f"{host_us:>8.1f} {trip:>10.1f} {trip / row.batch:>8.2f}"
        for host_us, trip in zip(through_hosts, trips, strict=True)
    ]
    if baseline is not None:
        cells.append(f"(this revision: {trips[0] / trips[1]:.2f}x the baseline's round trip)")
    if row.issue_us_per_evaluation is not None:
        cells.append(f"issue 24: {row.issue_us_per_evaluation:g} µs per row")
    print("  ".join(cells), flush=True)
    for host in hosts:
        host.close()


if __name__ == "__main__":
    sys.exit(main())
