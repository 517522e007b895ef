"""The model's tensor interface against the contract: the manifest, the inputs, the outputs.

Declared output shapes are not trusted (torch often writes symbolic sizes there): the shape
bounds infer them and `sanitize.with_output_shapes` writes the contract's shapes into the final file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onnx import GraphProto, ModelProto, TensorProto, ValueInfoProto

from arena_bots.manifest import METADATA_PREFIX, ContractError, ExpectedOutput, Manifest
from arena_bots.validation.structure import type_name
from arena_games.api import GameSpec


def read_manifest(model: ModelProto, spec: GameSpec, overrides: Mapping[str, Any] | None) -> Manifest:
    """The manifest from the model's metadata and the overrides; it must name this game and version.

    The game being validated for, at its current version, fills in `arena.game` and
    `arena.game_version` where the file states neither, so a file without metadata can be checked
    and uploaded with the other fields given as overrides. A file that names another game or
    version is refused, not overridden.
    """
    stated = {entry.key: entry.value for entry in model.metadata_props}
    implied = {"game": spec.name, "game_version": str(spec.version)}
    props = {METADATA_PREFIX + name: value for name, value in implied.items()} | stated
    manifest = Manifest.from_metadata(props, overrides)
    if manifest.game != spec.name:
        raise ContractError(
            "wrong_game", f"the bot is made for {manifest.game!r}, but it was submitted for {spec.name!r}"
        )
    if manifest.game_version != spec.version:
        raise ContractError(
            "game_version_mismatch",
            f"the bot is made for {spec.name} version {manifest.game_version}, but Arena plays version "
            f"{spec.version} (its rules or encoding changed): retrain or re-export it",
        )
    if manifest.player == "mcts" and len(spec.heads) > 1:
        raise ContractError(
            "player_unsupported",
            f"{spec.name} has {len(spec.heads)} action heads ({', '.join(spec.heads)}) and tree search "
            "(player=mcts) plays games of one head only: upload it with player=greedy or player=sample",
        )
    return manifest


def data_inputs(graph: GraphProto) -> list[ValueInfoProto]:
    """The graph inputs a caller feeds: those not backed by an initializer (older exports list both)."""
    weights = {tensor.name for tensor in graph.initializer}
    return [value for value in graph.input if value.name not in weights]


def check_inputs(graph: GraphProto, spec: GameSpec) -> None:
    """The inputs are exactly the game's: names, float32, a dynamic batch, then the spec's shape."""
    inputs = data_inputs(graph)
    _check_names("input", [value.name for value in inputs], list(spec.inputs), list(spec.inputs))
    for value in inputs:
        expected = spec.inputs[value.name]
        _check_float("input", value)
        dims = value.type.tensor_type.shape.dim
        described = f"(batch, {', '.join(map(str, expected))})"
        if not value.type.tensor_type.HasField("shape") or len(dims) != len(expected) + 1:
            raise ContractError(
                "input_shape", f"input {value.name!r} must have rank {len(expected) + 1}: {described}"
            )
        if dims[0].HasField("dim_value"):
            raise ContractError(
                "input_shape",
                f"input {value.name!r} has a fixed batch size {dims[0].dim_value}; export it with a "
                "dynamic batch dimension (dynamic_axes={name: {0: 'batch'}})",
            )
        actual = [dim.dim_value if dim.HasField("dim_value") else dim.dim_param or "?" for dim in dims[1:]]
        if actual != list(expected):
            raise ContractError(
                "input_shape",
                f"input {value.name!r} has shape (batch, {', '.join(map(str, actual))}), "
                f"the game's encoding is {described}",
            )


def check_outputs(graph: GraphProto, expected: Sequence[ExpectedOutput]) -> None:
    """The outputs are the contract's (required ones present, nothing else), float32, of the right rank.

    Their sizes are checked on the inferred shapes (`bounds.py`): exporters often declare symbols.
    """
    required = [output.name for output in expected if output.required]
    _check_names("output", [value.name for value in graph.output], required, [o.name for o in expected])
    by_name = {output.name: output for output in expected}
    for value in graph.output:
        _check_float("output", value)
        output = by_name[value.name]
        ranks = (1, 2) if output.size is None else (2,)
        if not value.type.tensor_type.HasField("shape") or len(value.type.tensor_type.shape.dim) not in ranks:
            raise ContractError(
                "output_shape", f"output {value.name!r} must be declared as {output.describe()}"
            )


def _check_names(kind: str, names: list[str], required: list[str], allowed: list[str]) -> None:
    missing = [name for name in required if name not in names]
    unexpected = [name for name in names if name not in allowed]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if missing or unexpected or duplicated:
        problems = [
            f"{label} {', '.join(map(repr, group))}"
            for label, group in (("missing", missing), ("unexpected", unexpected), ("repeated", duplicated))
            if group
        ]
        raise ContractError(
            f"{kind}s_mismatch",
            f"the model's {kind}s do not follow the contract ({'; '.join(problems)}); "
            f"expected {', '.join(map(repr, allowed))}",
        )


def _check_float(kind: str, value: ValueInfoProto) -> None:
    which = value.type.WhichOneof("value")
    elem_type = value.type.tensor_type.elem_type if which == "tensor_type" else None
    if elem_type != TensorProto.FLOAT:
        shown = type_name(elem_type) if elem_type is not None else which or "untyped"
        raise ContractError(f"{kind}_dtype", f"{kind} {value.name!r} is {shown}; the contract needs float32")
