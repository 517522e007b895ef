"""The operators an uploaded model may use: an allow-list of the default ONNX domain.

Why these: they are what `torch.onnx.export(dynamo=False)` emits, at opsets 13 to 21, for the
networks bots are made of (measured with torch 2.13): AlphaZero resnets (Conv, BatchNormalization
folded or not, Relu, Add, Flatten, Gemm, Tanh), MLPs and DQNs (Gemm, MatMul, LeakyRelu, SiLU as
Sigmoid * Mul, GELU as Erf or Gelu, LayerNormalization, LogSoftmax), two-input conv nets with
deconvolutions (Concat, Reshape, ConvTranspose, Sigmoid, Clip + Log for a logit), pooling heads
(MaxPool, GlobalAveragePool, ReduceMean) and the shape bookkeeping around them (Shape, Gather,
Unsqueeze, Concat, Slice, Squeeze, Cast, Expand, Tile).

Every operator here is deterministic, has no subgraph, reads and writes nothing but tensors, and
produces outputs whose size follows from its input shapes; the static shape bounds
(`bounds.py`) then cap each one. Left out on purpose: control flow (If, Loop, Scan: unbounded or
nested graphs), random draws (bots must replay exactly), data-dependent shapes (NonZero, Range,
ConstantOfShape, Where, ...), sequences, maps, optionals and strings, and every other domain.
"""

from __future__ import annotations

ALLOWED_OPS: frozenset[str] = frozenset(
    {
        # dense and convolutional layers
        "Conv", "ConvTranspose", "Gemm", "MatMul",
        # normalisation
        "BatchNormalization", "LayerNormalization", "InstanceNormalization",
        # activations
        "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish",
        "Softplus", "Mish", "Gelu", "Erf", "Clip", "Softmax", "LogSoftmax",
        # element-wise arithmetic
        "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Exp", "Log", "Sqrt", "Pow", "Reciprocal", "Max", "Min",
        # pooling and reductions
        "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
        "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
        # shapes and layout
        "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
        "Shape", "Identity", "Constant", "Pad", "Expand", "Tile", "Cast",
    }
)  # fmt: skip

# Why well-known operators are refused, for the author's message (others: "not on the list").
_REFUSALS: dict[str, str] = {
    **dict.fromkeys(
        ("If", "Loop", "Scan", "SequenceMap"),
        "control flow is not allowed: export a plain feed-forward graph",
    ),
    **dict.fromkeys(
        (
            "RandomNormal",
            "RandomNormalLike",
            "RandomUniform",
            "RandomUniformLike",
            "Multinomial",
            "Bernoulli",
        ),
        "it draws random numbers; a bot must answer the same position the same way every time",
    ),
    "Dropout": "export the model in evaluation mode (model.eval()), which removes dropout",
    **dict.fromkeys(
        ("NonZero", "Range", "TopK", "Unique", "Compress"),
        "its output size depends on the values it computes, so its memory cannot be bounded",
    ),
    **dict.fromkeys(
        ("ConstantOfShape", "Where", "Equal", "Mod"),
        "torch emits it for size arithmetic such as expand(-1, ...), which Arena cannot bound; "
        "use constant sizes",
    ),
}


def refusal_reason(op_type: str) -> str:
    """A sentence saying why `op_type` may not be used, with a hint where there is one."""
    reason = _REFUSALS.get(op_type, "it is not on Arena's list of allowed operators")
    return f"operator {op_type} is not allowed: {reason}"
