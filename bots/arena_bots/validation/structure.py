"""Static checks of the model file itself: size, parsing, versions, and a walk over every graph.

`onnx.checker` is not a security check (it follows external data, accepts sparse tensors that
densify to gigabytes, custom domains and model-local functions), so this module walks the whole
model itself, without recursion: the main graph, every subgraph held by a node attribute (GRAPH or
GRAPHS, whatever the attribute claims its type is) down to a bounded depth, and every tensor. It
refuses before anything else from onnx or ONNX Runtime touches the model.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import onnx
from google.protobuf.message import DecodeError
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto

from arena_bots.manifest import ContractError
from arena_bots.validation.limits import ValidationLimits
from arena_bots.validation.operators import ALLOWED_OPS, refusal_reason

DEFAULT_DOMAINS = ("", "ai.onnx")
ALLOWED_TENSOR_TYPES = frozenset(
    {
        TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
        TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
        TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL,
    }
)  # fmt: skip
_ATTRIBUTE_ITEM_BYTES = 8  # per number of a Constant's value_ints or value_floats list


@dataclass
class Census:
    """What the walk counted over every graph of the model."""

    nodes: int = 0
    parameter_count: int = 0  # elements of initializers and constant tensors
    parameter_bytes: int = 0  # as declared by their shapes
    op_types: Counter[str] = field(default_factory=Counter)


def parse_model(model_bytes: bytes | bytearray | memoryview, limits: ValidationLimits) -> ModelProto:
    """The parsed model; refuses a file over the size limit before reading a byte of it."""
    size = memoryview(model_bytes).nbytes
    if size > limits.max_file_bytes:
        raise ContractError(
            "file_too_large",
            f"the model file has {size:,} bytes; at most {limits.max_file_bytes:,} are allowed",
        )
    try:
        model = ModelProto.FromString(bytes(model_bytes))
    except DecodeError as error:
        if "depth" in str(error).lower():  # protobuf refuses messages nested about 100 deep
            raise ContractError(
                "graph_too_deep", "the model nests graphs (If, Loop, ...) too deeply to be read"
            ) from None
        raise ContractError("not_onnx", f"the file is not an ONNX model (protobuf says: {error})") from None
    if not model.HasField("graph"):  # protobuf reads many byte strings, the empty one included
        raise ContractError("not_onnx", "the file is not an ONNX model (it holds no graph)")
    return model


def check_model_fields(model: ModelProto, limits: ValidationLimits) -> int:
    """Refuses functions, training graphs and unsupported versions; returns the default opset."""
    if model.functions:
        raise ContractError(
            "functions_not_allowed",
            f"the model defines {len(model.functions)} local function(s) (e.g. {model.functions[0].name!r}); "
            "export without them (torch.onnx.export(..., dynamo=False) emits none)",
        )
    if model.training_info:
        raise ContractError(
            "training_info_not_allowed", "the model carries training graphs; export it for inference only"
        )
    if not limits.min_ir_version <= model.ir_version <= limits.max_ir_version:
        raise ContractError(
            "ir_version_unsupported",
            f"the model has ONNX IR version {model.ir_version}; Arena runs IR versions "
            f"{limits.min_ir_version} to {limits.max_ir_version}, as written for opsets "
            f"{limits.min_opset} to {limits.max_opset}",
        )
    return _default_opset(model, limits)


def survey_graphs(model: ModelProto, limits: ValidationLimits) -> Census:
    """Walks every graph and tensor; refuses nesting, foreign domains, forbidden tensors and ops.

    Data problems (external data, sparse or string tensors, custom domains) are looked for in every
    graph before any operator is judged, so a file gets the most specific refusal.
    """
    graphs = _all_graphs(model.graph, limits.max_subgraph_depth)
    nodes = sum(len(graph.node) for graph, _ in graphs)
    if nodes > limits.max_nodes:
        raise ContractError(
            "too_many_nodes", f"the model has {nodes:,} nodes; at most {limits.max_nodes:,} are allowed"
        )
    census = Census(nodes=nodes)
    for graph, where in graphs:
        _survey_data(census, graph, where, limits)
    for graph, where in graphs:
        for node in graph.node:
            _check_operator(node, f"node {node.name or node.op_type!r}{where}")
            census.op_types[node.op_type] += 1
    return census


def _default_opset(model: ModelProto, limits: ValidationLimits) -> int:
    opsets = {entry.domain: entry.version for entry in model.opset_import}
    foreign = sorted(set(opsets) - set(DEFAULT_DOMAINS))
    if foreign:
        raise _domain_error(f"the model imports operator set domain {foreign[0]!r}")
    versions = [opsets[domain] for domain in DEFAULT_DOMAINS if domain in opsets]
    if len(versions) != 1 or not limits.min_opset <= versions[0] <= limits.max_opset:
        found = versions[0] if len(versions) == 1 else "none"
        raise ContractError(
            "opset_unsupported",
            f"the model uses ONNX opset {found}; Arena runs opsets {limits.min_opset} to {limits.max_opset} "
            f"(e.g. torch.onnx.export(..., opset_version=17))",
        )
    return versions[0]


def _all_graphs(main: GraphProto, max_depth: int) -> list[tuple[GraphProto, str]]:
    """Every graph, found without recursion, with where it sits ("" for the main graph)."""
    found: list[tuple[GraphProto, str]] = []
    pending: list[tuple[GraphProto, int, str]] = [(main, 0, "")]
    while pending:
        graph, depth, where = pending.pop()
        if depth > max_depth:
            raise ContractError(
                "graph_too_deep",
                f"the model nests graphs more than {max_depth} deep{where}; "
                "export a plain feed-forward graph",
            )
        found.append((graph, where))
        for node in graph.node:
            for attribute in node.attribute:
                inside = f" in subgraph {attribute.name!r} of node {node.name or node.op_type!r}"
                pending.extend((subgraph, depth + 1, inside) for subgraph in _subgraphs(attribute))
    return found


def _subgraphs(attribute: AttributeProto) -> list[GraphProto]:
    """The graphs an attribute holds, whatever type it claims to have."""
    return ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)


def _survey_data(census: Census, graph: GraphProto, where: str, limits: ValidationLimits) -> None:
    """Checks and counts the tensors of one graph: initializers, node attributes, declared types."""
    if graph.sparse_initializer:
        raise _sparse_error(f"sparse initializer {graph.sparse_initializer[0].values.name!r}{where}")
    for tensor in graph.initializer:
        _count_tensor(census, tensor, f"initializer {tensor.name!r}{where}", limits)
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.STRING:
            raise _string_error(f"tensor {value.name!r}{where}")
    for node in graph.node:
        label = f"node {node.name or node.op_type!r}{where}"
        if node.domain not in DEFAULT_DOMAINS:
            raise _domain_error(f"{label} is custom operator {node.op_type!r} of domain {node.domain!r}")
        for attribute in node.attribute:
            _survey_attribute(census, attribute, f"attribute {attribute.name!r} of {label}", limits)


def _check_operator(node: NodeProto, label: str) -> None:
    if node.op_type not in ALLOWED_OPS:
        raise ContractError("op_not_allowed", f"{label}: {refusal_reason(node.op_type)}")
    if node.op_type == "Cast":
        _check_cast(node, label)


def _survey_attribute(
    census: Census, attribute: AttributeProto, label: str, limits: ValidationLimits
) -> None:
    if attribute.HasField("sparse_tensor") or attribute.sparse_tensors:
        raise _sparse_error(label)
    if attribute.name in ("value_string", "value_strings"):  # Constant's string tensors
        raise _string_error(label)
    for tensor in ([attribute.t] if attribute.HasField("t") else []) + list(attribute.tensors):
        _count_tensor(census, tensor, label, limits)
    if attribute.name in ("value_ints", "value_floats"):  # Constant's number lists
        items = len(attribute.ints) + len(attribute.floats)
        census.parameter_count += items
        _add_parameter_bytes(census, items * _ATTRIBUTE_ITEM_BYTES, label, limits)


def _check_cast(node: NodeProto, label: str) -> None:
    target = next((a.i for a in node.attribute if a.name == "to"), TensorProto.UNDEFINED)
    if target == TensorProto.STRING:
        raise _string_error(label)
    if target not in ALLOWED_TENSOR_TYPES:
        raise ContractError(
            "tensor_type_not_allowed", f"{label} casts to {type_name(target)}, which Arena does not run"
        )


def _count_tensor(census: Census, tensor: TensorProto, label: str, limits: ValidationLimits) -> None:
    """Refuses external data, strings, exotic types and malformed tensors; counts the parameters."""
    if tensor.data_location == TensorProto.EXTERNAL or tensor.external_data:
        location = next((entry.value for entry in tensor.external_data if entry.key == "location"), "")
        shown = f" ({location[:80]!r})" if location else ""
        raise ContractError(
            "external_data",
            f"{label} keeps its data in an external file{shown}; Arena takes one self-contained "
            "file: save the model with all its weights inside (torch.onnx.export(..., "
            "external_data=False), or onnx.save(model, path, save_as_external_data=False))",
        )
    if tensor.data_type == TensorProto.STRING:
        raise _string_error(label)
    if tensor.data_type not in ALLOWED_TENSOR_TYPES:
        raise ContractError(
            "tensor_type_not_allowed",
            f"{label} holds {type_name(tensor.data_type)} values, which Arena does not run",
        )
    if tensor.HasField("segment") or any(dim < 0 for dim in tensor.dims):
        raise ContractError("tensor_invalid", f"{label} is malformed (a segment or a negative dimension)")
    count = math.prod(tensor.dims)
    census.parameter_count += count
    _add_parameter_bytes(census, count * _item_size(tensor.data_type), label, limits)
    if _stored_count(tensor) != count:
        raise ContractError(
            "tensor_invalid",
            f"{label} declares shape {list(tensor.dims)} but stores {_stored_count(tensor):,} values",
        )


def _add_parameter_bytes(census: Census, size: int, label: str, limits: ValidationLimits) -> None:
    census.parameter_bytes += size
    if census.parameter_bytes > limits.max_parameter_bytes:
        raise ContractError(
            "parameters_too_large",
            f"the weights reach {census.parameter_bytes:,} bytes at {label}; "
            f"at most {limits.max_parameter_bytes:,} are allowed",
        )


def _stored_count(tensor: TensorProto) -> int:
    """How many values `tensor` really stores (one typed field or raw bytes)."""
    if tensor.raw_data:
        size = _item_size(tensor.data_type)
        return len(tensor.raw_data) // size if len(tensor.raw_data) % size == 0 else -1
    typed = (tensor.float_data, tensor.int32_data, tensor.int64_data, tensor.double_data, tensor.uint64_data)
    return sum(len(values) for values in typed)


def _item_size(data_type: int) -> int:
    return onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize


def type_name(data_type: int) -> str:
    """The ONNX name of an element type ("FLOAT"), or its number when it has none."""
    return (
        TensorProto.DataType.Name(data_type) if data_type in TensorProto.DataType.values() else str(data_type)
    )


def _domain_error(what: str) -> ContractError:
    return ContractError(
        "custom_domain", f"{what}; only the standard ONNX operators (domain 'ai.onnx') are allowed"
    )


def _sparse_error(label: str) -> ContractError:
    return ContractError(
        "sparse_tensor", f"{label} is a sparse tensor; store weights as ordinary dense tensors"
    )


def _string_error(label: str) -> ContractError:
    return ContractError("string_tensor", f"{label} uses strings; a bot's tensors are numbers only")
