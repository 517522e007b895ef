"""Static resource bounds: every tensor's shape, bytes, the memory alive at once, and the FLOPs.

ONNX's checker and shape inference (strict, with data propagation, so Shape -> Gather -> Concat ->
Reshape chains resolve) run on the rebuilt model with the batch dimension fixed, once at batch 1
and once at `max_batch`, in a child process with an address-space and a time limit
(`inference_child.py`): data propagation materialises vectors that a hostile graph can grow
without bound, and a crash in that C++ code must not take the caller down.

Every tensor a node produces must come out with a fully static shape, which is then capped. A
tensor whose size depends on the input's values (a Reshape or Expand whose target is computed
from the board, say, that allocates 40 GB only when a certain position arrives) has no static
shape and is refused: nothing runs before its size is known. Nothing here allocates a tensor.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import ModelProto, NodeProto, TensorProto

from arena_bots.manifest import ContractError, ExpectedOutput
from arena_bots.validation.limits import WORKER_BATCH, ValidationLimits

_UNKNOWN_ITEM_BYTES = 8
_RENAMING_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Constant"})
# What operators other than convolutions and matrix products cost, in FLOPs of the reference core:
# the FLOPs a convolution does in the same CPU time. The reference core runs a convolution at about
# 100 GFLOP/s (ONNX Runtime 1.32, one thread, 10 ps per FLOP), while an element-wise operator is
# bound by memory or by its function, not by arithmetic: the table is its CPU time per element
# there (the range measured on tensors of 256 KiB to 8 MiB, its upper end in units of 10 ps,
# rounded). Counting such an operator as 1 per element undercounted a chain of Softmaxes ~25x.
_PASS = 50  # one pass: arithmetic, comparisons, Clip, Relu, BatchNormalization, Cast, copies (0.2-0.5 ns)
_COST_PER_ELEMENT: dict[str, int] = {
    **dict.fromkeys(("Transpose", "Tile", "Pad", "GlobalAveragePool", "GlobalMaxPool"), 80),  # 0.4-0.8 ns
    **dict.fromkeys(("Exp", "Tanh", "Sigmoid", "Erf", "HardSwish", "InstanceNormalization"), 80),  # 0.3-0.8
    "Gelu": 150,  # 1.1-1.4 ns
    **dict.fromkeys(("Softmax", "LogSoftmax"), 200),  # 0.5-2 ns: a max, a sum and an exp per row
    **dict.fromkeys(("Log", "Elu", "Selu", "LayerNormalization"), 400),  # 1.4-3.9 ns
    "Pow": 1_400,  # 7-14 ns
    **dict.fromkeys(("Softplus", "Mish"), 2_000),  # 14-21 ns
}
_WINDOW_ELEMENT = 20  # a pooling window's element (a 3x3 window: 1.2-1.4 ns per output)
_VARIADIC_OPS = frozenset({"Max", "Min"})  # the allowed operators that take any number of inputs
_CHILD = Path(__file__).with_name("inference_child.py")
_CHILD_CODES = ("onnx_invalid", "shape_inference_failed")
_MESSAGE_CHARS = 400
_CHILD_ENVIRONMENT = {"PATH": os.defpath, "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}
Shapes = dict[str, tuple[tuple[int, ...], int]]  # tensor name -> (static dims, bytes per element)


@dataclass(frozen=True)
class ResourceBounds:
    """What static analysis proved about the rebuilt model."""

    output_dims: dict[str, tuple[int, ...]]  # per output, its shape without the batch dimension
    largest_tensor_bytes: int  # at max_batch
    peak_activation_bytes: int  # at max_batch: tensors alive at once when nodes run in file order
    flops_per_position: int  # multiply-adds count 2 (`node_flops`)


@dataclass(frozen=True)
class _Analysis:
    output_dims: dict[str, tuple[int, ...]]
    largest_tensor_bytes: int
    peak_activation_bytes: int
    flops: int


def bound_resources(
    model: ModelProto, expected: Sequence[ExpectedOutput], limits: ValidationLimits
) -> ResourceBounds:
    """Proves static shapes and the caps at batch 1 and max_batch; raises ContractError otherwise."""
    shapes = infer_isolated(model, (1, limits.max_batch), limits)
    at_one = _analyse(model, shapes[1], 1, expected, limits)
    at_max = _analyse(model, shapes[limits.max_batch], limits.max_batch, expected, limits)
    flops_per_position = max(at_one.flops, math.ceil(at_max.flops / limits.max_batch))
    if flops_per_position > limits.max_flops_per_position:
        raise ContractError(
            "flops_too_large",
            f"one position costs about {_gflop(flops_per_position)} GFLOP; at most "
            f"{_gflop(limits.max_flops_per_position)} GFLOP are allowed, so that a worker's call of "
            f"{WORKER_BATCH} positions finishes within a match's time limit on any machine. Use a "
            "smaller network (fewer filters or blocks)",
        )
    return ResourceBounds(
        output_dims=at_one.output_dims,
        largest_tensor_bytes=at_max.largest_tensor_bytes,
        peak_activation_bytes=at_max.peak_activation_bytes,
        flops_per_position=flops_per_position,
    )


def check_flops_per_move(
    flops_per_position: int, evaluations: int, how: str, limits: ValidationLimits
) -> None:
    """Refuses a move of `evaluations` network calls of one position each (`how` says why so many,
    for the message) over `limits.max_flops_per_move`. Counted, never timed: the verdict is the same
    on any machine, idle or busy."""
    flops_per_move = flops_per_position * evaluations
    if flops_per_move > limits.max_flops_per_move:
        raise ContractError(
            "flops_per_move_too_large",
            f"one move costs about {_gflop(flops_per_move)} GFLOP: {evaluations:,} network evaluations "
            f"({how}) of {_gflop(flops_per_position)} GFLOP each; at most "
            f"{_gflop(limits.max_flops_per_move)} GFLOP per move are allowed (about a second of one CPU "
            "core). Use a smaller network (fewer filters or blocks)",
        )


def infer_isolated(model: ModelProto, batches: Sequence[int], limits: ValidationLimits) -> dict[int, Shapes]:
    """Per batch size, the static shapes of the graph's tensors (initializers included), computed by
    onnx's checker and shape inference in a child process; ContractError if either refuses or dies."""
    config = {
        "batches": list(batches),
        "memory_bytes": limits.inference_memory_bytes,
        "cpu_seconds": math.ceil(limits.inference_timeout_s),
    }
    with tempfile.TemporaryDirectory(prefix="arena-infer-") as workdir:  # nothing to read there
        try:
            done = subprocess.run(
                [sys.executable, "-I", str(_CHILD), json.dumps(config)],
                input=model.SerializeToString(),
                capture_output=True,
                cwd=workdir,
                env=_CHILD_ENVIRONMENT,
                timeout=limits.inference_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ContractError(
                "shape_inference_failed",
                f"ONNX shape inference did not finish within {limits.inference_timeout_s:g} s",
            ) from None
    if done.returncode != 0:
        last_words = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise ContractError(
            "shape_inference_failed",
            f"ONNX shape inference ran out of memory or crashed on the model (exit status "
            f"{done.returncode}) {last_words[0][-200:]}".strip(),
        )
    answer = json.loads(done.stdout)
    if "error" in answer:
        code = answer["error"] if answer["error"] in _CHILD_CODES else "shape_inference_failed"
        raise ContractError(code, str(answer["message"])[:_MESSAGE_CHARS])
    weights: Shapes = {
        tensor.name: (tuple(tensor.dims), _item_bytes(tensor.data_type)) for tensor in model.graph.initializer
    }
    return {
        int(batch): weights
        | {name: (tuple(dims), _item_bytes(kind)) for name, (dims, kind) in shapes.items()}
        for batch, shapes in answer["shapes"].items()
    }


def _analyse(
    model: ModelProto,
    shapes: Shapes,
    batch: int,
    expected: Sequence[ExpectedOutput],
    limits: ValidationLimits,
) -> _Analysis:
    graph = model.graph
    sizes: dict[str, int] = {}
    for node in graph.node:
        for name in filter(None, node.output):
            sizes[name] = _checked_bytes(node, name, shapes, batch, limits)
    present = {output.name for output in graph.output}
    output_dims = {
        output.name: _checked_output(output, shapes, batch) for output in expected if output.name in present
    }
    peak = _peak_activation_bytes(model, shapes, sizes)
    if peak > limits.max_activation_bytes:
        raise ContractError(
            "memory_too_large",
            f"at batch {batch} the tensors alive at once need {peak:,} bytes; "
            f"at most {limits.max_activation_bytes:,} are allowed",
        )
    return _Analysis(
        output_dims=output_dims,
        largest_tensor_bytes=max(sizes.values(), default=0),
        peak_activation_bytes=peak,
        flops=sum(node_flops(node, shapes) for node in graph.node),
    )


def _checked_bytes(node: NodeProto, name: str, shapes: Shapes, batch: int, limits: ValidationLimits) -> int:
    label = f"tensor {name!r} (from {node.op_type} node {node.name!r})"
    if name not in shapes:
        raise ContractError(
            "shape_not_static",
            f"{label} has no static size at batch {batch}: its size depends on values computed from the "
            "input, or cannot be derived; use constant sizes (e.g. x.flatten(1), reshape with constants)",
        )
    dims, item_bytes = shapes[name]
    size = math.prod(dims) * item_bytes
    if size > limits.max_tensor_bytes:
        raise ContractError(
            "tensor_too_large",
            f"{label} has shape {list(dims)} at batch {batch}: {size:,} bytes; "
            f"at most {limits.max_tensor_bytes:,} per tensor are allowed",
        )
    return size


def _checked_output(output: ExpectedOutput, shapes: Shapes, batch: int) -> tuple[int, ...]:
    """The output's dims without the batch, if they follow the contract at this batch size."""
    dims = shapes[output.name][0]
    allowed = [(batch,), (batch, 1)] if output.size is None else [(batch, output.size)]
    if dims not in allowed:
        raise ContractError(
            "output_shape",
            f"output {output.name!r} has shape {_shown(dims)} at batch {batch}; "
            f"the contract needs {output.describe()}",
        )
    return dims[1:]


def _peak_activation_bytes(model: ModelProto, shapes: Shapes, sizes: dict[str, int]) -> int:
    """The most bytes of inputs and node outputs alive at once, freeing each after its last reader."""
    graph = model.graph
    last_reader = {name: index for index, node in enumerate(graph.node) for name in node.input if name}
    kept = {output.name for output in graph.output}
    alive = {value.name: math.prod(shapes[value.name][0]) * shapes[value.name][1] for value in graph.input}
    peak = sum(alive.values())
    for index, node in enumerate(graph.node):
        alive.update((name, sizes[name]) for name in node.output if name)
        peak = max(peak, sum(alive.values()))
        for name in list(alive):
            if name not in kept and last_reader.get(name, -1) <= index:
                del alive[name]
    return peak


def node_flops(node: NodeProto, shapes: Shapes) -> int:
    """What one node costs, from static shapes alone, in FLOPs of the reference core: the floating-
    point operations a convolution does there in the same CPU time (see _COST_PER_ELEMENT). The rule:

      Conv           2 x output elements x (input channels per group x kernel elements)
      ConvTranspose  2 x input elements x (output channels per group x kernel elements)
      MatMul, Gemm   2 x output elements x the inner dimension
      MaxPool, AveragePool   output elements x kernel elements x _WINDOW_ELEMENT
      Max, Min       (inputs - 1) x output elements x _PASS: each input is one more pass
      Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Constant   0 (they rename, not compute)
      anything else  its elements (of its output or its first input, whichever is larger) x its
                     cost per element (_COST_PER_ELEMENT; _PASS if not listed)
    and every node but the renaming ones costs at least one pass over its output (a matrix product
    with an inner dimension of 1 writes as much as a copy). A multiply-add counts 2, so a network of
    convolutions counts about twice its multiply-accumulates.
    """

    def dims(index: int) -> tuple[int, ...]:
        name = node.input[index] if index < len(node.input) else ""
        return shapes[name][0] if name in shapes else ()

    produced = math.prod(shapes[node.output[0]][0]) if node.output and node.output[0] in shapes else 0
    op = node.op_type
    if op in _RENAMING_OPS:
        return 0
    if op == "Conv":
        arithmetic = 2 * produced * math.prod(dims(1)[1:])
    elif op == "ConvTranspose":
        arithmetic = 2 * math.prod(dims(0)) * math.prod(dims(1)[1:])
    elif op == "MatMul":
        arithmetic = 2 * produced * dims(0)[-1]
    elif op == "Gemm":
        transposed = any(a.name == "transA" and a.i for a in node.attribute)
        arithmetic = 2 * produced * dims(0)[0 if transposed else 1]
    elif op in ("MaxPool", "AveragePool"):
        kernel = next((list(a.ints) for a in node.attribute if a.name == "kernel_shape"), [])
        arithmetic = produced * math.prod(kernel) * _WINDOW_ELEMENT
    elif op in _VARIADIC_OPS:
        arithmetic = (len(node.input) - 1) * produced * _PASS
    else:
        arithmetic = max(produced, math.prod(dims(0))) * _COST_PER_ELEMENT.get(op, _PASS)
    return max(arithmetic, produced * _PASS)


def _item_bytes(data_type: int) -> int:
    if data_type in (TensorProto.UNDEFINED, TensorProto.STRING):
        return _UNKNOWN_ITEM_BYTES
    return onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize


def _gflop(flops: int) -> str:
    return f"{flops / 1e9:,.3g}"


def _shown(dims: tuple[int, ...]) -> str:
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(map(str, dims))})"
