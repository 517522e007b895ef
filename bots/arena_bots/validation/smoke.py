"""The runtime smoke test: the sanitized model on real positions, inside the isolated model host.

Positions come from random games played by the real engine (`game.init`, `random_action`,
`step`, `encode`), not from random tensors: a model that breaks only on positions that occur in
play (a NaN for a full board, a value out of range late in the game) is caught here. The model
runs in `arena_bots.host.ModelHost`, the same child process that serves matches.

Speed is judged as a match judges a call: in the model host's CPU time, never the wall clock, so a
busy server (whoever keeps it busy) cannot turn a verdict into too_slow. A host that fails for the
platform's reasons (not started in time, killed from outside, starved of CPU) ends the check with
`PlatformRefusal`: no verdict on the model, and nothing the uploader should be charged for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arena_bots.evaluators import encode_batch
from arena_bots.manifest import VALUE_OUTPUT, ContractError, ExpectedOutput, Manifest
from arena_bots.validation.limits import WORKER_BATCH, ValidationLimits
from arena_games.api import Game

if TYPE_CHECKING:
    from arena_bots.host import ModelFault, ModelHost

Arrays = dict[str, np.ndarray]

_VALUE_RANGES = {"tanh": (-1.0, 1.0), "sigmoid": (0.0, 1.0)}
_FAULT_CODES = {  # the model host's ModelFault codes -> validation codes
    "host_start_failed": "runtime_load_failed",
    "timeout": "runtime_timeout",
    "non_finite": "output_not_finite",
    "bad_output_shape": "output_shape",
}


PLATFORM_UNAVAILABLE = "validation_unavailable"  # the code of every PlatformRefusal


class PlatformRefusal(ContractError):
    """Validation could not judge the model through the platform's fault, not the model's."""

    def __init__(self, message: str) -> None:
        super().__init__(PLATFORM_UNAVAILABLE, message)


@dataclass(frozen=True)
class Latency:
    """The model host's CPU time for one model call, in milliseconds, over `runs` calls."""

    batch: int
    runs: int
    p50_ms: float
    p95_ms: float
    p99_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def smoke_test(
    model_bytes: bytes,
    game: Game,
    expected: Sequence[ExpectedOutput],
    manifest: Manifest,
    limits: ValidationLimits,
) -> tuple[Latency, ...]:
    """Runs the model on positions of random games; returns its latency at batch 1 and WORKER_BATCH.

    Raises ContractError when the model fails, answers with non-finite numbers, a value out of its
    range, outputs for a position that change with the rest of the batch, or is too slow: at batch 1
    (`max_latency_ms`) or at a worker's batch (`max_batch_call_share` of the host's call timeout),
    both in the host's CPU time. Raises PlatformRefusal when the host fails for the platform's reasons.
    """
    from arena_bots.host import HostLimits, ModelFault, ModelHost  # spawns processes: only here

    positions = collect_positions(game, limits)
    host_limits = HostLimits(
        memory_bytes=limits.host_memory_bytes,
        call_timeout_s=limits.host_call_timeout_s,
        max_batch=limits.max_batch,
    )
    try:
        with ModelHost(model_bytes, host_limits) as host:
            latencies = _exercise(host, positions, expected, manifest, limits)
    except ModelFault as fault:
        raise _refusal(fault, game) from None
    if latencies[0].p95_ms > limits.max_latency_ms:
        raise ContractError(
            "too_slow",
            f"one position takes {latencies[0].p95_ms:.1f} ms of CPU (95th percentile); "
            f"at most {limits.max_latency_ms:g} ms are allowed",
        )
    _check_batch_latency(latencies[1], limits)
    return latencies


def _refusal(fault: ModelFault, game: Game) -> ContractError:
    """The refusal for a fault of the model host: the model's, or the platform's (see the module doc)."""
    if fault.blame == "platform":
        return PlatformRefusal(
            f"Arena could not finish running the model ({fault.message}); the model was not judged, try again"
        )
    where = f"on positions of random {game.name} games"
    return ContractError(_FAULT_CODES.get(fault.code, "runtime_failed"), f"{fault.message} ({where})")


def _check_batch_latency(latency: Latency, limits: ValidationLimits) -> None:
    """A worker's call must leave most of the host's call timeout (CPU time, as the call's) free:
    the margin covers slower cores and a larger batch than measured, and a call past it loses."""
    allowed_ms = limits.max_batch_call_share * limits.host_call_timeout_s * 1e3
    if latency.p95_ms > allowed_ms:
        raise ContractError(
            "batch_too_slow",
            f"a batch of {latency.batch} positions, as a worker sends them in a match, takes "
            f"{latency.p95_ms:,.0f} ms of CPU (95th percentile); at most {allowed_ms:,.0f} ms are "
            f"allowed, {limits.max_batch_call_share:.0%} of the {limits.host_call_timeout_s:g} s of CPU "
            "a model call may take in a match, so that a slower machine still answers in time. Use a "
            "smaller network",
        )


def collect_positions(game: Game, limits: ValidationLimits) -> Arrays:
    """`limits.smoke_positions` encoded positions drawn from random games, seeded by `limits.seed`."""
    rng = np.random.default_rng(limits.seed)
    seen: list[tuple[Any, int]] = []  # (state, player to move)
    for index in range(limits.smoke_games):
        state = game.init(limits.seed + index, None)
        for _ in range(limits.smoke_max_steps):
            players = game.to_move(state)
            if not players:
                break
            seen.extend((state, player) for player in players)
            state = game.step(state, [game.random_action(state, player, rng) for player in players])
    count = limits.smoke_positions
    chosen = rng.choice(len(seen), size=count, replace=len(seen) < count)
    positions = encode_batch(game, [seen[i][0] for i in chosen], [seen[i][1] for i in chosen])
    for name, shape in game.spec.inputs.items():
        if positions[name].shape != (count, *shape):  # the engine's fault, not the bot's
            raise RuntimeError(
                f"{game.name} encodes {name!r} as {positions[name].shape[1:]}, its spec says {shape}"
            )
    return positions


def _exercise(
    host: ModelHost,
    positions: Arrays,
    expected: Sequence[ExpectedOutput],
    manifest: Manifest,
    limits: ValidationLimits,
) -> tuple[Latency, ...]:
    """Checks every output on every position, then times calls of one position and of a full batch."""
    count = len(next(iter(positions.values())))
    windows = [_rows(positions, start, WORKER_BATCH) for start in range(0, count, WORKER_BATCH)]
    batched = [host.run(window) for window in windows]  # also warms the session up
    reference = {name: np.concatenate([outputs[name] for outputs in batched]) for name in batched[0]}
    _check_outputs(reference, expected, manifest, limits)
    singles: list[float] = []
    host.run(_rows(positions, 0, 1))
    for run in range(limits.latency_runs_batch1):
        row = run % count
        outputs, elapsed = _timed(host, _rows(positions, row, 1))
        _check_batch_consistency(outputs, reference, row, limits)
        singles.append(elapsed)
    grouped = [_timed(host, windows[0])[1] for _ in range(limits.latency_runs_batch32)]
    return _latency(1, singles), _latency(len(next(iter(windows[0].values()))), grouped)


def _rows(positions: Arrays, start: int, size: int) -> Arrays:
    return {name: array[start : start + size] for name, array in positions.items()}


def _timed(host: ModelHost, inputs: Mapping[str, np.ndarray]) -> tuple[Arrays, float]:
    """The outputs and the CPU time the call cost the model host, in milliseconds."""
    started = host.cpu_seconds
    outputs = host.run(inputs)
    return outputs, (host.cpu_seconds - started) * 1e3


def _check_outputs(
    outputs: Arrays, expected: Sequence[ExpectedOutput], manifest: Manifest, limits: ValidationLimits
) -> None:
    count = len(next(iter(outputs.values())))
    for output in expected:
        if output.name not in outputs:
            continue  # an optional value; required outputs were checked statically
        array = outputs[output.name]
        allowed = [(count,), (count, 1)] if output.size is None else [(count, output.size)]
        if array.shape not in allowed:
            raise ContractError(
                "output_shape",
                f"output {output.name!r} came out {array.shape} for {count} positions; "
                f"the contract needs {output.describe()}",
            )
        if not np.isfinite(array).all():
            raise ContractError(
                "output_not_finite", f"output {output.name!r} has NaN or infinity on real positions"
            )
    if VALUE_OUTPUT in outputs:
        _check_value_range(outputs[VALUE_OUTPUT], manifest.value, limits.value_tolerance)


def _check_value_range(values: np.ndarray, kind: str, tolerance: float) -> None:
    low, high = _VALUE_RANGES[kind]
    if values.min() < low - tolerance or values.max() > high + tolerance:
        extreme = values.min() if values.min() < low - tolerance else values.max()
        raise ContractError(
            "value_out_of_range",
            f"output 'value' reaches {extreme:.4g} on a real position; with value={kind} it must lie in "
            f"[{low:g}, {high:g}] (end the value head with {kind}, or declare the other convention)",
        )


def _check_batch_consistency(single: Arrays, reference: Arrays, row: int, limits: ValidationLimits) -> None:
    """A position's outputs alone must match its outputs inside a batch: positions must not mix."""
    for name, array in single.items():
        expected = reference[name][row : row + 1]
        scale = 1.0 + np.abs(expected)
        if not (np.abs(array - expected) <= limits.batch_tolerance * scale).all():
            raise ContractError(
                "batch_inconsistent",
                f"output {name!r} for a position changes when other positions share its batch; each "
                "position must be evaluated on its own (e.g. batch normalisation with running statistics)",
            )


def _latency(batch: int, milliseconds: list[float]) -> Latency:
    p50, p95, p99 = (float(np.percentile(milliseconds, q)) if milliseconds else 0.0 for q in (50, 95, 99))
    return Latency(batch=batch, runs=len(milliseconds), p50_ms=p50, p95_ms=p95, p99_ms=p99)
