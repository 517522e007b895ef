"""Validation of an uploaded model against the bot contract (ARCHITECTURE §3).

The order; each step refuses with a stable code and a sentence for the author:
  size          the file's length, before a byte is parsed            file_too_large
  parse         protobuf                                              not_onnx, graph_too_deep
  versions      IR version, opset, local functions, training graphs   ir_version_unsupported, ...
  structure     every graph and tensor, and the operators             external_data, sparse_tensor,
                (structure.py, operators.py)                          op_not_allowed, ...
  manifest      `arena.*` metadata and overrides, for this game       manifest_*, wrong_game,
                (its player kind against the game's action heads)     player_unsupported, ...
  interface     input and output tensors                              inputs_mismatch, input_shape, ...
  sanitize      rebuilt from the fields checked (sanitize.py)         onnx_invalid
  bounds        onnx.checker, static shapes, tensor and memory caps,  onnx_invalid, shape_not_static,
                FLOPs per position and per move (bounds.py,           tensor_too_large, flops_too_large,
                isolated in inference_child.py)                       flops_per_move_too_large, ...
  runtime       real positions through the model host (smoke.py),     output_not_finite, too_slow,
                speed in its CPU time                                 batch_too_slow, ...
`validate` never raises for a bad model: an unexpected error becomes the code `internal_error`.
That, and a model host failing for the platform's reasons (`validation_unavailable`), are refusals
the platform caused, not verdicts on the model: the report says so in `platform_fault`.

`simulations` is the budget the bot will play at (a ladder's, which replaces the manifest's for an
mcts player); None judges it at the manifest's own. A move's FLOPs are judged at that budget.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena_bots.manifest import ContractError, Manifest, expected_outputs
from arena_bots.validation.bounds import bound_resources, check_flops_per_move
from arena_bots.validation.interface import check_inputs, check_outputs, read_manifest
from arena_bots.validation.limits import DEFAULT_LIMITS, ValidationLimits
from arena_bots.validation.report import ModelFacts, ValidationReport
from arena_bots.validation.sanitize import BATCH_DIM, rebuild, with_output_shapes
from arena_bots.validation.smoke import PLATFORM_UNAVAILABLE, Latency, PlatformRefusal, smoke_test
from arena_bots.validation.structure import check_model_fields, parse_model, survey_graphs
from arena_games.api import Game, GameSpec

__all__ = [
    "DEFAULT_LIMITS",
    "PLATFORM_UNAVAILABLE",
    "Latency",
    "ModelFacts",
    "ValidationLimits",
    "ValidationReport",
    "validate",
    "validate_file",
    "validate_static",
]

_log = logging.getLogger(__name__)
ModelBytes = bytes | bytearray | memoryview


def validate(
    model_bytes: ModelBytes,
    game: Game,
    overrides: Mapping[str, Any] | None = None,
    limits: ValidationLimits = DEFAULT_LIMITS,
    *,
    simulations: int | None = None,
) -> ValidationReport:
    """Every check, the runtime smoke test on `game`'s positions included; see the module doc."""
    progress = _Progress(limits, memoryview(model_bytes).nbytes)
    try:
        sanitized, manifest = _static_checks(progress, model_bytes, game.spec, overrides, simulations)
        progress.latency = smoke_test(
            sanitized, game, expected_outputs(game.spec, manifest), manifest, limits
        )
        progress.checks.append("runtime")
    except Exception as error:
        return progress.failed(error)
    return progress.report()


def validate_static(
    model_bytes: ModelBytes,
    spec: GameSpec,
    overrides: Mapping[str, Any] | None = None,
    limits: ValidationLimits = DEFAULT_LIMITS,
    *,
    simulations: int | None = None,
) -> ValidationReport:
    """Every check but the runtime smoke test (no engine or model host needed): for exporters."""
    progress = _Progress(limits, memoryview(model_bytes).nbytes)
    try:
        _static_checks(progress, model_bytes, spec, overrides, simulations)
    except Exception as error:
        return progress.failed(error)
    return progress.report()


def validate_file(
    path: str | os.PathLike[str],
    game: Game,
    overrides: Mapping[str, Any] | None = None,
    limits: ValidationLimits = DEFAULT_LIMITS,
    *,
    simulations: int | None = None,
) -> ValidationReport:
    """`validate` on a file, whose size is checked before it is read; OSError if it cannot be read."""
    size = os.stat(path).st_size
    if size > limits.max_file_bytes:
        return _Progress(limits, size).failed(
            ContractError(
                "file_too_large",
                f"the model file has {size:,} bytes; at most {limits.max_file_bytes:,} are allowed",
            )
        )
    with open(path, "rb") as file:
        model_bytes = file.read(limits.max_file_bytes + 1)  # the file may have grown since
    return validate(model_bytes, game, overrides, limits, simulations=simulations)


@dataclass
class _Progress:
    """What validation has established so far."""

    limits: ValidationLimits
    file_bytes: int
    checks: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    manifest: Manifest | None = None
    model_bytes: bytes | None = None
    latency: tuple[Latency, ...] = ()

    def report(self, code: str = "", message: str = "", *, platform_fault: bool = False) -> ValidationReport:
        facts = ModelFacts(file_bytes=self.file_bytes, max_batch=self.limits.max_batch, **self.facts)
        return ValidationReport(
            ok=not code,
            code=code,
            message=message,
            checks=tuple(self.checks),
            facts=facts,
            manifest=self.manifest,
            latency=self.latency,
            model_bytes=None if code else self.model_bytes,
            platform_fault=platform_fault,
        )

    def failed(self, error: Exception) -> ValidationReport:
        if isinstance(error, ContractError):
            return self.report(error.code, error.message, platform_fault=isinstance(error, PlatformRefusal))
        _log.exception("validation failed unexpectedly")
        return self.report(
            "internal_error",
            f"Arena could not finish checking this model ({type(error).__name__}: {error})",
            platform_fault=True,
        )


def _static_checks(
    progress: _Progress,
    model_bytes: ModelBytes,
    spec: GameSpec,
    overrides: Mapping[str, Any] | None,
    simulations: int | None,
) -> tuple[bytes, Manifest]:
    """All checks up to the sanitized bytes, which it returns with the manifest; fills `progress` as
    it goes and raises ContractError at the first failure."""
    limits, facts = progress.limits, progress.facts
    model = parse_model(model_bytes, limits)
    progress.checks += ["size", "parse"]

    facts["opset"] = check_model_fields(model, limits)
    facts["ir_version"] = model.ir_version
    facts["producer"] = f"{model.producer_name} {model.producer_version}".strip()[:80]
    progress.checks.append("versions")

    census = survey_graphs(model, limits)
    facts |= {
        "node_count": census.nodes,
        "parameter_count": census.parameter_count,
        "parameter_bytes": census.parameter_bytes,
        "op_counts": dict(sorted(census.op_types.items())),
    }
    progress.checks.append("structure")

    manifest = progress.manifest = read_manifest(model, spec, overrides)
    expected = expected_outputs(spec, manifest)
    progress.checks.append("manifest")

    check_inputs(model.graph, spec)
    check_outputs(model.graph, expected)
    facts["inputs"] = {name: [BATCH_DIM, *shape] for name, shape in spec.inputs.items()}
    progress.checks.append("interface")

    clean = rebuild(model, facts["opset"], spec, manifest)
    progress.checks.append("sanitize")

    bounds = bound_resources(clean, expected, limits)
    progress.model_bytes = with_output_shapes(clean, bounds.output_dims)
    facts |= {
        "outputs": {name: [BATCH_DIM, *dims] for name, dims in bounds.output_dims.items()},
        "flops_per_position": bounds.flops_per_position,
        "largest_tensor_bytes": bounds.largest_tensor_bytes,
        "peak_activation_bytes": bounds.peak_activation_bytes,
        "sanitized_bytes": len(progress.model_bytes),
    }
    evaluations = facts["evaluations_per_move"] = manifest.evaluations_per_move(simulations)
    facts["flops_per_move"] = bounds.flops_per_position * evaluations
    why = _evaluations_reason(manifest, simulations)
    check_flops_per_move(bounds.flops_per_position, evaluations, why, limits)
    progress.checks.append("bounds")
    return progress.model_bytes, manifest


def _evaluations_reason(manifest: Manifest, simulations: int | None) -> str:
    """Why a move of this bot costs `manifest.evaluations_per_move(simulations)` evaluations."""
    if manifest.player != "mcts":
        return f"a {manifest.player} player evaluates the position once"
    whose = "the ladder's budget" if simulations else "arena.simulations"
    return f"the root and {simulations or manifest.simulations} simulations, {whose}"
