"""Export a PyTorch network as a bot file that satisfies the contract (ARCHITECTURE §3).

PyTorch is an optional extra (`arena[train]`): it is imported inside `export_bot` only, so
`import arena_bots` never needs it.
"""

from __future__ import annotations

import io
import os
import warnings
from typing import Any

from arena_bots.manifest import VALUE_OUTPUT, ContractError, Manifest, head_output_name
from arena_bots.validation import DEFAULT_LIMITS, ValidationLimits, validate_static
from arena_games.api import Game

_TRACE_BATCH = 2  # not 1: the tracer must not mistake the batch dimension for a constant


def export_bot(
    module: Any,
    game: Game,
    manifest: Manifest,
    path: str | os.PathLike[str] | None = None,
    *,
    opset: int = 17,
    limits: ValidationLimits = DEFAULT_LIMITS,
) -> bytes:
    """The validated, sanitized ONNX bytes of `module` (a torch.nn.Module), also written to `path`.

    `module.forward` takes the game's input tensors positionally, in `game.spec.inputs` order, each
    float32 (batch, *shape), and returns one tensor per action head, in `game.spec.heads` order,
    (batch, head size): logits for head="policy", Q-values for head="q"; then optionally the value,
    (batch,) or (batch, 1), which player="mcts" needs. The module is traced in evaluation mode
    (its training mode is restored afterwards) with the legacy exporter (dynamo=False), a dynamic
    batch dimension and the contract's tensor names; the manifest goes into metadata_props (the
    sanitized model keeps no other metadata).
    Raises ContractError when the result breaks the contract (checked as on upload, without the
    runtime smoke test).
    """
    import torch  # the optional extra

    spec = game.spec
    inputs = tuple(torch.zeros((_TRACE_BATCH, *shape)) for shape in spec.inputs.values())
    was_training = module.training
    module.eval()
    try:
        output_names = _output_names(module, inputs, game, manifest)
        buffer = io.BytesIO()
        with warnings.catch_warnings():  # the legacy exporter, on purpose (ARCHITECTURE §8), warns
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                module,
                inputs,
                buffer,
                dynamo=False,
                opset_version=opset,
                input_names=list(spec.inputs),
                output_names=output_names,
                dynamic_axes={name: {0: "batch"} for name in (*spec.inputs, *output_names)},
            )
    finally:
        module.train(was_training)
    report = validate_static(buffer.getvalue(), spec, manifest.to_dict(), limits)
    if not report.ok or report.model_bytes is None:
        raise ContractError(report.code, report.message)
    if path is not None:
        with open(path, "wb") as file:
            file.write(report.model_bytes)
    return report.model_bytes


def _output_names(module: Any, inputs: tuple[Any, ...], game: Game, manifest: Manifest) -> list[str]:
    """The contract's names for what `module` returns: the heads, then `value` if it returns one more."""
    import torch

    with torch.no_grad():
        returned = module(*inputs)
    count = len(returned) if isinstance(returned, (tuple, list)) else 1
    heads = [head_output_name(game.spec, head, manifest.head) for head in game.spec.heads]
    if count not in (len(heads), len(heads) + 1):
        raise ContractError(
            "outputs_mismatch",
            f"the module returns {count} tensor(s); the contract needs {len(heads)} head output(s) "
            f"({', '.join(heads)}), optionally followed by the value",
        )
    return heads + [VALUE_OUTPUT] * (count - len(heads))
