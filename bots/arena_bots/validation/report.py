"""The validation report: the verdict, what was checked, what was learnt about the model."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from arena_bots.manifest import Manifest
from arena_bots.validation.smoke import Latency

Shape = list[int | str]  # "batch" stands for the dynamic batch dimension


@dataclass(frozen=True)
class ModelFacts:
    """What validation learnt about the model before it stopped; None where it did not get that far.

    Bytes are bytes; FLOPs are the reference core's (`bounds.node_flops`: a multiply-add counts 2,
    other operators what they cost in that unit); tensor sizes are taken at `max_batch`.
    """

    file_bytes: int
    max_batch: int
    ir_version: int | None = None
    opset: int | None = None
    producer: str | None = None
    node_count: int | None = None
    parameter_count: int | None = None
    parameter_bytes: int | None = None
    op_counts: dict[str, int] = field(default_factory=dict)
    inputs: dict[str, Shape] = field(default_factory=dict)
    outputs: dict[str, Shape] = field(default_factory=dict)
    flops_per_position: int | None = None
    evaluations_per_move: int | None = None  # network calls of one position that a move costs at most
    flops_per_move: int | None = None  # flops_per_position x evaluations_per_move
    largest_tensor_bytes: int | None = None
    peak_activation_bytes: int | None = None
    sanitized_bytes: int | None = None


@dataclass(frozen=True)
class ValidationReport:
    """The verdict on one model. `code` and `message` describe the first failure ("" when ok).

    `checks` lists the checks passed, in order. `model_bytes` (only when ok) is the sanitized,
    re-serialised model: the only bytes that may be stored and run. `platform_fault` marks a refusal
    that is the platform's doing, not a verdict on the model (`internal_error`, or the model host
    failing for the platform's reasons: `validation_unavailable`): it must cost the uploader nothing.
    """

    ok: bool
    code: str
    message: str
    checks: tuple[str, ...]
    facts: ModelFacts
    manifest: Manifest | None = None
    latency: tuple[Latency, ...] = ()
    model_bytes: bytes | None = field(default=None, repr=False)
    platform_fault: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, without the model bytes."""
        return {
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
            "platform_fault": self.platform_fault,
            "checks": list(self.checks),
            "manifest": self.manifest.to_dict() if self.manifest else None,
            "facts": asdict(self.facts),
            "latency": [latency.to_dict() for latency in self.latency],
        }

    def format_text(self) -> str:
        """The report for a terminal (`arena bot check`)."""
        verdict = "OK" if self.ok else f"REJECTED [{self.code}]\n  {self.message}"
        lines = [f"bot check: {verdict}"]
        lines += [f"{label:<9} {text}" for label, text in self._fact_lines() if text]
        for index, latency in enumerate(self.latency):
            lines.append(f"{'latency' if index == 0 else '':<9} {_latency_text(latency)}")
        lines.append(f"{'passed':<9} {', '.join(self.checks) or 'nothing'}")
        return "\n".join(lines)

    def _fact_lines(self) -> list[tuple[str, str]]:
        facts, manifest = self.facts, self.manifest
        model = [f"{_size(facts.file_bytes)}"]
        if facts.ir_version is not None:
            model.append(f"IR {facts.ir_version}, opset {facts.opset}, by {facts.producer or 'unknown'}")
        if facts.node_count is not None:
            model.append(f"{facts.node_count:,} nodes, {facts.parameter_count:,} parameters")
        cost = memory = ""
        if facts.flops_per_position is not None:
            cost = f"{_flops(facts.flops_per_position)} per position"
            memory = (
                f"at batch {facts.max_batch} the largest tensor is {_size(facts.largest_tensor_bytes)}, "
                f"{_size(facts.peak_activation_bytes)} alive at once"
            )
        if facts.flops_per_move is not None and facts.evaluations_per_move is not None:
            plural = "s" if facts.evaluations_per_move != 1 else ""
            cost += (
                f", {_flops(facts.flops_per_move)} per move ({facts.evaluations_per_move:,} "
                f"evaluation{plural} of one position)"
            )
        return [
            ("bot", _manifest_text(manifest) if manifest else ""),
            ("model", ", ".join(model)),
            ("inputs", _shapes_text(facts.inputs)),
            ("outputs", _shapes_text(facts.outputs)),
            ("cost", cost),
            ("memory", memory),
        ]


def _manifest_text(manifest: Manifest) -> str:
    how = {
        "mcts": f"mcts with {manifest.simulations} simulations, c_puct {manifest.c_puct:g}",
        "greedy": "greedy",
        "sample": f"sample at temperature {manifest.temperature:g}",
    }[manifest.player]
    return (
        f"{manifest.name!r} for {manifest.game} v{manifest.game_version}: {how}; "
        f"head {manifest.head}, value {manifest.value}"
    )


def _shapes_text(shapes: dict[str, Shape]) -> str:
    return ", ".join(
        f"{name} ({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        for name, shape in shapes.items()
    )


def _latency_text(latency: Latency) -> str:
    return (
        f"batch {latency.batch}: p50 {latency.p50_ms:.2f} ms, p95 {latency.p95_ms:.2f} ms, "
        f"p99 {latency.p99_ms:.2f} ms ({latency.runs} calls)"
    )


def _size(count: int | None) -> str:
    if count is None:
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _flops(count: int) -> str:
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} FLOP"
