"""The limits an uploaded model is validated against; sizes in bytes, times in milliseconds/seconds."""

from __future__ import annotations

from dataclasses import dataclass

from arena_bots.manifest import MAX_MODEL_BYTES

_MiB = 1 << 20

WORKER_BATCH = 32
"""Positions per model call that validation judges a bot's speed at. A worker plays a task's games
at once and sends a bot's leaves of all of them in one call: PAIRINGS_PER_TASK 4 x games_per_pairing
2 = 8 games in the runner today, so 32 leaves 4x headroom (more games per task, virtual-loss leaves
per round). tests/bots/test_validation.py checks that the runner's batch stays within it."""


@dataclass(frozen=True)
class ValidationLimits:
    """What a bot may be. Defaults fit the ladders' networks with a wide margin (ARCHITECTURE §8).

    The opset and IR ranges are the ones torch.onnx.export (dynamo=False) writes and ONNX Runtime
    1.31 runs: opset 13 -> IR 7, opsets 17-18 -> IR 8, 20 -> IR 9, 21 -> IR 10.
    Tensor and memory bounds are taken at `max_batch` positions, the largest batch a model host takes.

    Cost is judged twice. Statically, so that the verdict is the same on an idle or a busy machine:
    FLOPs per position (the counting rule is `bounds.node_flops`) and per move, that is per position
    times the network evaluations one move costs (simulations + 1 for an mcts player). The FLOP
    caps are set from the speed measured on one core (ONNX Runtime 1.32, one intra-op thread: the
    zoo's Pente net, 58 MFLOP of convolutions per position, runs about 100 GFLOP/s at batch 32;
    other operators are counted at what they cost in that unit). Then at runtime:
    a call of WORKER_BATCH positions must stay well inside the model host's call timeout. Both
    runtime checks count the model host's CPU time, as a match does, so the server's load changes
    no verdict.
    """

    max_file_bytes: int = MAX_MODEL_BYTES  # checked before the file is parsed; the API's cap as well
    min_ir_version: int = 7
    max_ir_version: int = 10
    min_opset: int = 13
    max_opset: int = 21
    max_subgraph_depth: int = 8  # nesting of graphs inside node attributes, walked before refusing
    max_nodes: int = 2_000  # a 20-block resnet has about 150
    max_parameter_bytes: int = 64 * _MiB  # initializers and constants, as declared by their shapes
    max_batch: int = 256
    max_tensor_bytes: int = 256 * _MiB  # any one tensor at max_batch
    max_activation_bytes: int = 1024 * _MiB  # tensors alive at once, at max_batch
    # a WORKER_BATCH call is then at most 64 GFLOP, ~0.6 s on one core: the host_call_timeout_s of a
    # match holds on a machine 15x slower or busier than the one measured
    max_flops_per_position: int = 2_000_000_000  # multiply-adds count 2
    # ~1 s of one core per move; the zoo's nets need 0.5 (Bobail) and 6.5 (Pente) at 100 simulations
    max_flops_per_move: int = 100_000_000_000
    inference_memory_bytes: int = 2048 * _MiB  # the address space of onnx's checker and shape inference
    inference_timeout_s: float = 60.0
    # the runtime smoke test, on positions from random games of the real engine
    smoke_games: int = 4
    smoke_max_steps: int = 400  # per game
    smoke_positions: int = 64
    latency_runs_batch1: int = 50
    latency_runs_batch32: int = 10
    max_latency_ms: float = 200.0  # the p95 of one position's evaluation (batch 1), in CPU time
    value_tolerance: float = 1e-4  # how far `value` may stray outside its range
    batch_tolerance: float = 1e-3  # a position's outputs alone and inside a batch of 32 agree this well
    host_memory_bytes: int = 2048 * _MiB  # the model host's address space during the smoke test
    host_call_timeout_s: float = 10.0  # as `HostLimits.call_timeout_s`, the one matches run under
    # the p95 of a WORKER_BATCH call may take this share of host_call_timeout_s (both CPU time); the
    # rest is the headroom for a slower core, and for a batch larger than WORKER_BATCH
    max_batch_call_share: float = 0.25
    seed: int = 0  # of the random games


DEFAULT_LIMITS = ValidationLimits()
