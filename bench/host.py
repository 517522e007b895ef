"""What isolation costs: a ModelHost call against the same model in process (ARCHITECTURE §4).

    python bench/host.py [--quick]

For a small MLP at batch 1 and 64 it prints the time per call in process and through a model
host with each transport (shared memory, pipe), and the host's overhead per call in ms and as a
ratio to the in-process call; and how long a host takes to start. The runners take turns round
after round and each keeps its best round: on a shared machine that is the least noisy estimate.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from arena_bots.host import HostLimits, ModelHost
from arena_bots.runtime import InferenceBackend, InProcessSession

BATCHES = (1, 64)
BOARD = (4, 5, 5)  # a Bobail-sized encoding
HIDDEN = 128
ACTIONS = 100


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
    graph = helper.make_graph(
        nodes,
        "small_mlp",
        [helper.make_tensor_value_info("board", TensorProto.FLOAT, ["batch", *BOARD])],
        [
            helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", ACTIONS]),
            helper.make_tensor_value_info("value", TensorProto.FLOAT, ["batch", 1]),
        ],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def seconds_per_call(backends: list[InferenceBackend], batch: int, calls: int, rounds: int) -> list[float]:
    """Per backend, the best over `rounds` of the mean time of `calls` calls, after a warm-up."""
    inputs = {"board": np.random.default_rng(batch).standard_normal((batch, *BOARD)).astype(np.float32)}
    best = [math.inf] * len(backends)
    for _ in range(rounds + 1):  # the first round warms up
        for index, backend in enumerate(backends):
            started = time.perf_counter()
            for _ in range(calls):
                backend.run(inputs)
            best[index] = min(best[index], (time.perf_counter() - started) / calls)
    return best


def started_hosts(model: bytes) -> dict[str, ModelHost]:
    """One host per transport, printing how long each took to start."""
    hosts = {}
    for transport in ("shm", "pipe"):
        started = time.perf_counter()
        hosts[transport] = ModelHost(model, HostLimits(), transport=transport)
        print(f"host start-up ({transport}): {(time.perf_counter() - started) * 1e3:.0f} ms")
    return hosts


def overhead_cell(seconds: float, base: float) -> str:
    """Time per call, its overhead over `base` in ms, and their ratio."""
    return f"{seconds * 1e3:.3f} (+{(seconds - base) * 1e3:.3f}, {seconds / base:4.1f}x)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls: a rough answer in seconds")
    calls, rounds = (200, 3) if parser.parse_args().quick else (2000, 7)
    model = small_mlp()
    hosts = started_hosts(model)
    in_process = InProcessSession(model)
    print(f"\nsmall MLP {BOARD} -> {HIDDEN} -> {ACTIONS} + 1: ms per call, best of {rounds} x {calls} calls")
    print(f"{'batch':>5}  {'in process':>10}  {'host (shm)':>29}  {'host (pipe)':>29}")
    for batch in BATCHES:
        base, shm, pipe = seconds_per_call([in_process, hosts["shm"], hosts["pipe"]], batch, calls, rounds)
        cells = [overhead_cell(seconds, base) for seconds in (shm, pipe)]
        print(f"{batch:>5}  {base * 1e3:>10.3f}  {cells[0]:>29}  {cells[1]:>29}")
    for host in hosts.values():
        host.close()


if __name__ == "__main__":
    main()
