"""The re-serialised model: rebuilt from the fields that were validated, and nothing else.

Downstream, ONNX Runtime only ever sees these bytes. The rebuild copies the nodes, attributes
(only the field their type names), initializers and the contract's inputs and outputs; it drops
doc strings, value_info (which may lie about shapes), metadata other than the manifest, and any
field this module does not know. Inputs and outputs get the contract's exact shapes with a
symbolic batch dimension, so the model host can size its buffers from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onnx import AttributeProto, ModelProto, NodeProto, TensorProto, ValueInfoProto

from arena_bots.manifest import ContractError, Manifest
from arena_bots.validation.interface import data_inputs
from arena_games.api import GameSpec

BATCH_DIM = "batch"
_PLAIN_FIELDS = {
    AttributeProto.FLOAT: "f",
    AttributeProto.INT: "i",
    AttributeProto.STRING: "s",
    AttributeProto.FLOATS: "floats",
    AttributeProto.INTS: "ints",
    AttributeProto.STRINGS: "strings",
}


def rebuild(model: ModelProto, opset: int, spec: GameSpec, manifest: Manifest) -> ModelProto:
    """A fresh model with `model`'s computation, the contract's inputs, outputs of the declared rank
    (sizes left to inference) and the manifest as its only metadata. onnx.checker runs on it in
    `bounds.py`, isolated."""
    clean = ModelProto(
        ir_version=model.ir_version,
        producer_name=model.producer_name[:64],
        producer_version=model.producer_version[:64],
    )
    clean.opset_import.add(domain="", version=opset)
    graph = clean.graph
    graph.name = "arena_bot"
    graph.node.extend(_clean_node(node) for node in model.graph.node)
    graph.initializer.extend(_clean_tensor(tensor) for tensor in model.graph.initializer)
    graph.input.extend(
        _float_info(value.name, (BATCH_DIM, *spec.inputs[value.name])) for value in data_inputs(model.graph)
    )
    graph.output.extend(_float_info(value.name, (None,) * _rank(value)) for value in model.graph.output)
    for key, value in manifest.to_metadata().items():
        clean.metadata_props.add(key=key, value=value)
    return clean


def with_output_shapes(clean: ModelProto, output_dims: Mapping[str, tuple[int, ...]]) -> bytes:
    """The final bytes: `clean` with each output shaped (batch, *output_dims[name])."""
    final = ModelProto()
    final.CopyFrom(clean)
    del final.graph.output[:]
    final.graph.output.extend(
        _float_info(value.name, (BATCH_DIM, *output_dims[value.name])) for value in clean.graph.output
    )
    return final.SerializeToString()


def _float_info(name: str, dims: Sequence[int | str | None]) -> ValueInfoProto:
    """A float32 tensor of shape `dims`: sizes, symbols, or None for a size left to inference."""
    value = ValueInfoProto(name=name)
    tensor_type = value.type.tensor_type
    tensor_type.elem_type = TensorProto.FLOAT
    shape = tensor_type.shape
    shape.SetInParent()  # a rank-0 shape must still be present
    for size in dims:
        dim = shape.dim.add()
        if isinstance(size, int):
            dim.dim_value = size
        elif isinstance(size, str):
            dim.dim_param = size
    return value


def _rank(value: ValueInfoProto) -> int:
    return len(value.type.tensor_type.shape.dim)


def _clean_node(node: NodeProto) -> NodeProto:
    clean = NodeProto(op_type=node.op_type, name=node.name, input=node.input, output=node.output)
    clean.attribute.extend(_clean_attribute(attribute, node) for attribute in node.attribute)
    return clean


def _clean_attribute(attribute: AttributeProto, node: NodeProto) -> AttributeProto:
    clean = AttributeProto(name=attribute.name, type=attribute.type)
    if attribute.type == AttributeProto.TENSOR:
        clean.t.CopyFrom(_clean_tensor(attribute.t))
    elif attribute.type == AttributeProto.TENSORS:
        clean.tensors.extend(_clean_tensor(tensor) for tensor in attribute.tensors)
    elif attribute.type in _PLAIN_FIELDS:
        field = _PLAIN_FIELDS[attribute.type]
        value = getattr(attribute, field)
        if isinstance(value, (float, int, bytes)):
            setattr(clean, field, value)
        else:
            getattr(clean, field).extend(value)
    else:
        raise ContractError(
            "onnx_invalid",
            f"attribute {attribute.name!r} of node {node.name or node.op_type!r} has a type "
            f"(number {attribute.type}) that Arena's operators do not take",
        )
    return clean


def _clean_tensor(tensor: TensorProto) -> TensorProto:
    clean = TensorProto()
    clean.CopyFrom(tensor)
    clean.ClearField("doc_string")
    clean.ClearField("metadata_props")
    return clean
