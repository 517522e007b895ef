"""The bot contract and upload validation, against hostile models built with onnx.helper.

Every hostile model must come back as a failed report with the right code, a sentence, no
sanitized bytes, and without the caller's memory growing (the checks read shapes, never
allocate what a model declares). Most models are rejected before the runtime smoke test; the
runtime ones run in the real model host on positions of a toy game with two inputs and two heads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import mmap
import os
import resource
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from arena_bots.manifest import ContractError, Manifest, expected_outputs, head_output_name
from arena_bots.validation import (
    DEFAULT_LIMITS,
    PLATFORM_UNAVAILABLE,
    ValidationLimits,
    ValidationReport,
    validate,
    validate_file,
    validate_static,
)
from arena_bots.validation.limits import WORKER_BATCH
from arena_games.api import Game, GameSpec

FLOAT = TensorProto.FLOAT
SPEC = GameSpec(
    name="toy",
    version=3,
    title="Toy",
    num_players=2,
    inputs={"board": (3, 4, 4), "extra": (2,)},
    heads={"move": 16, "pass": 2},
    max_length=6,
)
# A toy of two heads is played greedily (tree search plays one head only): the search tests use
# ONE_HEAD, the same toy with its two heads joined into one, and models made for it by `one_head`.
METADATA = {"arena.game": "toy", "arena.game_version": "3", "arena.name": "Toy MLP", "arena.player": "greedy"}
ONE_HEAD = dataclasses.replace(SPEC, heads={"move": 18})
SEARCH = {"player": "mcts"}
RUNTIME_SHORT = {"smoke_games": 2, "smoke_positions": 32, "latency_runs_batch1": 5, "latency_runs_batch32": 2}
LIMITS = ValidationLimits(**RUNTIME_SHORT, max_latency_ms=5_000)  # a generous bound on a shared machine
ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo"  # <game>/<bot>.onnx
MAX_GROWTH_KIB = 256 * 1024  # of this process's peak memory, per hostile model


def toy_game(spec: GameSpec = SPEC) -> Game:
    """`spec`'s engine: two players alternate for 6 plies, every action is legal, positions are noise."""

    def encode(state: tuple[int, int], player: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([state[0], state[1], player])
        return {
            name: rng.integers(0, 2, size=shape).astype(np.float32) for name, shape in spec.inputs.items()
        }

    return Game(
        spec=spec,
        init=lambda seed, config: (seed, 0),
        to_move=lambda state: (state[1] % 2,) if state[1] < spec.max_length else (),
        legal_masks=lambda state, player: tuple(np.ones(size, bool) for size in spec.heads.values()),
        step=lambda state, joint: (state[0], state[1] + 1),
        returns=lambda state: (0.0, 0.0),
        end_reason=lambda state: "" if state[1] < spec.max_length else "ply limit",
        encode=encode,
        render=str,
        view=lambda state: {},
        to_dict=lambda state: {"seed": state[0], "ply": state[1]},
        from_dict=lambda data: (data["seed"], data["ply"]),
        opening=lambda seed, config: (),
    )


GAME = toy_game()
ONE_HEAD_GAME = toy_game(ONE_HEAD)


# ---- model building ---------------------------------------------------------------------


def weight(name: str, *shape: int, seed: int = 0) -> TensorProto:
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.3
    return numpy_helper.from_array(values, name)


def ints(name: str, values: list[int]) -> TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def info(name: str, shape: list[int | str | None], elem_type: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


INPUTS = [info("board", ["batch", 3, 4, 4]), info("extra", ["batch", 2])]
OUTPUTS = [info("policy_move", ["batch", 16]), info("policy_pass", ["batch", 2]), info("value", ["batch", 1])]


def mlp_layers(hidden: int = 32) -> tuple[list[NodeProto], list[TensorProto]]:
    """board and extra -> 'hidden' (batch, hidden) -> the three outputs of the contract."""
    nodes = [
        helper.make_node("Flatten", ["board"], ["flat"], axis=1),
        helper.make_node("Concat", ["flat", "extra"], ["features"], axis=1),
        helper.make_node("Gemm", ["features", "w1", "b1"], ["pre"]),
        helper.make_node("Relu", ["pre"], ["hidden"]),
        *heads(),
    ]
    return nodes, [weight("w1", 50, hidden), weight("b1", hidden, seed=1), *head_weights(hidden)]


def heads() -> list[NodeProto]:
    return [
        helper.make_node("Gemm", ["hidden", "wm", "bm"], ["policy_move"]),
        helper.make_node("Gemm", ["hidden", "wp", "bp"], ["policy_pass"]),
        helper.make_node("Gemm", ["hidden", "wv", "bv"], ["value_raw"]),
        helper.make_node("Tanh", ["value_raw"], ["value"]),
    ]


def head_weights(hidden: int) -> list[TensorProto]:
    sizes = {"m": 16, "p": 2, "v": 1}
    return [
        tensor
        for key, size in sizes.items()
        for tensor in (weight(f"w{key}", hidden, size), weight(f"b{key}", size))
    ]


def model(
    nodes: list[NodeProto],
    initializers: list[TensorProto],
    *,
    inputs: list[onnx.ValueInfoProto] = INPUTS,
    outputs: list[onnx.ValueInfoProto] = OUTPUTS,
    opset: int = 17,
    ir_version: int = 8,
    metadata: dict[str, str] = METADATA,
) -> ModelProto:
    graph = helper.make_graph(nodes, "toy", inputs, outputs, initializer=initializers)
    built = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)
    helper.set_model_props(built, metadata)
    return built


def mlp() -> ModelProto:
    return model(*mlp_layers())


def conv_net() -> ModelProto:
    """Conv -> BatchNormalization -> Relu -> MaxPool -> GlobalAveragePool, with the extra input."""
    nodes = [
        helper.make_node("Conv", ["board", "cw", "cb"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p1"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
        helper.make_node("Concat", ["flat", "extra"], ["hidden"], axis=1),
        *heads()[:3],
        helper.make_node("Tanh", ["value_raw"], ["value_2d"]),
        helper.make_node("Squeeze", ["value_2d", "axis1"], ["value"]),
    ]
    initializers = [
        weight("cw", 30, 3, 3, 3),
        weight("cb", 30),
        numpy_helper.from_array(np.ones(30, np.float32), "g"),
        numpy_helper.from_array(np.zeros(30, np.float32), "beta"),
        numpy_helper.from_array(np.zeros(30, np.float32), "mean"),
        numpy_helper.from_array(np.ones(30, np.float32), "var"),
        ints("axis1", [1]),
        *head_weights(32),
    ]
    return model(nodes, initializers, outputs=[*OUTPUTS[:2], info("value", ["batch"])])


def conv_tower(channels: int, layers: int) -> ModelProto:
    """A convolutional tower on the 4x4 board: 3 -> `channels` filters, then `layers` 3x3 convolutions
    that share one weight (a small file, full cost), global pooling and the heads.
    FLOPs per position (bounds.node_flops): about 2 x 16 x 9 x channels**2 per layer."""
    nodes = [helper.make_node("Conv", ["board", "w_in"], ["x0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    for index in range(layers):
        nodes += [
            helper.make_node("Conv", [f"x{index}", "w"], [f"c{index}"], kernel_shape=[3, 3], pads=[1] * 4),
            helper.make_node("Relu", [f"c{index}"], [f"x{index + 1}"]),
        ]
    nodes += [
        helper.make_node("GlobalAveragePool", [f"x{layers}"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
        helper.make_node("Concat", ["flat", "extra"], ["hidden"], axis=1),
        *heads(),
    ]
    scale = 1.0 / np.sqrt(9 * channels)  # keeps activations finite through the tower
    tower = (np.random.default_rng(2).standard_normal((channels, channels, 3, 3)) * scale).astype(np.float32)
    initializers = [
        weight("w_in", channels, 3, 3, 3),
        numpy_helper.from_array(tower, "w"),
        *head_weights(channels + 2),
    ]
    return model(nodes, initializers)


def one_head(base: ModelProto) -> ModelProto:
    """`base` for ONE_HEAD: its two policies joined into one output `policy` (batch, 18)."""
    base.graph.node.append(helper.make_node("Concat", ["policy_move", "policy_pass"], ["policy"], axis=1))
    kept = [output for output in base.graph.output if not output.name.startswith("policy_")]
    del base.graph.output[:]
    base.graph.output.extend([info("policy", ["batch", 18]), *kept])
    return base


def with_nodes(base: ModelProto, nodes: list[NodeProto], initializers: list[TensorProto] = ()) -> ModelProto:
    """`base` with extra nodes appended (their outputs may dangle) and extra initializers."""
    base.graph.node.extend(nodes)
    base.graph.initializer.extend(initializers)
    return base


def replace_node(base: ModelProto, output: str, *nodes: NodeProto) -> ModelProto:
    """`base` with the node producing `output` replaced by `nodes`."""
    index = next(i for i, node in enumerate(base.graph.node) if output in node.output)
    del base.graph.node[index]
    for offset, node in enumerate(nodes):
        base.graph.node.insert(index + offset, node)
    return base


def rejected(
    data: ModelProto | bytes | memoryview,
    code: str,
    overrides: dict[str, object] | None = None,
    limits: ValidationLimits = LIMITS,
    game: Game = GAME,
) -> ValidationReport:
    """Validates `data`, asserting it is refused with `code` without the caller growing in memory."""
    raw = data.SerializeToString() if isinstance(data, ModelProto) else data
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = validate(raw, game, overrides, limits)
    growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert (report.ok, report.code) == (False, code), report.message
    assert report.message
    assert report.model_bytes is None
    assert not report.platform_fault  # a verdict on the model
    assert growth_kib < MAX_GROWTH_KIB
    return report


# ---- positive cases -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp_report() -> ValidationReport:
    return validate(mlp().SerializeToString(), GAME, limits=LIMITS)


def test_a_small_mlp_passes_every_check(mlp_report: ValidationReport) -> None:
    assert mlp_report.ok, mlp_report.message
    assert mlp_report.checks[-1] == "runtime"
    assert [latency.batch for latency in mlp_report.latency] == [1, 32]
    assert mlp_report.facts.outputs == {
        "policy_move": ["batch", 16],
        "policy_pass": ["batch", 2],
        "value": ["batch", 1],
    }


def test_a_small_conv_net_passes_every_check() -> None:
    report = validate(conv_net().SerializeToString(), GAME, limits=LIMITS)
    assert report.ok, report.message
    assert report.facts.op_counts["Conv"] == 1
    assert report.facts.outputs["value"] == ["batch"]


def test_the_report_is_json_and_text(mlp_report: ValidationReport) -> None:
    data = json.loads(json.dumps(mlp_report.to_dict()))
    assert data["ok"]
    assert data["manifest"]["name"] == "Toy MLP"
    assert data["facts"]["parameter_count"] == 50 * 32 + 32 + 32 * 19 + 19
    assert data["latency"][0]["p50_ms"] > 0
    assert "model_bytes" not in data
    text = mlp_report.format_text()
    assert text.startswith("bot check: OK")
    assert "batch 32" in text


def test_sanitized_bytes_keep_only_what_was_validated() -> None:
    original = mlp()
    original.doc_string = original.graph.doc_string = "SECRET-DOC"
    original.graph.node[0].doc_string = original.graph.initializer[0].doc_string = "SECRET-DOC"
    helper.set_model_props(original, {**METADATA, "author.notes": "SECRET-META"})
    original.graph.value_info.append(info("hidden", [1, 1]))  # a lie about a shape
    original.graph.output[0].CopyFrom(info("policy_move", ["batch", "symbolic"]))
    report = validate_static(original.SerializeToString(), SPEC)
    assert report.ok, report.message
    assert b"SECRET" not in report.model_bytes
    sanitized = onnx.load_from_string(report.model_bytes)
    assert not sanitized.graph.value_info
    assert {entry.key for entry in sanitized.metadata_props} == set(
        Manifest.from_metadata(METADATA).to_metadata()
    )
    dims = sanitized.graph.output[0].type.tensor_type.shape.dim
    assert (dims[0].dim_param, dims[1].dim_value) == ("batch", 16)


def test_a_greedy_bot_needs_no_value() -> None:
    nodes, initializers = mlp_layers()
    report = validate_static(
        model(nodes[:-2], initializers, outputs=OUTPUTS[:2]).SerializeToString(), SPEC, {"player": "greedy"}
    )
    assert report.ok, report.message


def test_output_names_follow_the_head_rule() -> None:
    manifest = Manifest(game="toy", game_version=3, name="q bot", player="greedy", head="q")
    one_head = GameSpec(
        name="one", version=1, title="One", num_players=2, inputs={"x": (1,)}, heads={"move": 5}, max_length=1
    )
    assert [output.name for output in expected_outputs(SPEC, manifest)] == ["q_move", "q_pass", "value"]
    assert head_output_name(one_head, "move", "policy") == "policy"
    assert not expected_outputs(SPEC, manifest)[-1].required


# ---- size and parsing ---------------------------------------------------------------------


def test_a_file_over_the_limit_is_refused_before_parsing() -> None:
    report = rejected(b"\xff" * 2_000, "file_too_large", limits=ValidationLimits(max_file_bytes=1_000))
    assert report.checks == ()


def test_a_two_gigabyte_upload_is_refused_without_being_read(tmp_path) -> None:
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as file:
        file.truncate(2 << 30)  # a sparse file: 2 GiB declared, no block written
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            rejected(view, "file_too_large")
        finally:
            view.release()
    assert validate_file(path, GAME, limits=LIMITS).code == "file_too_large"


@pytest.mark.parametrize("data", [b"", b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 16, b"hello, world"])
def test_bytes_that_are_not_onnx(data: bytes) -> None:
    rejected(data, "not_onnx")


def _length_delimited(field: int, payload: bytes) -> bytes:
    def varint(number: int) -> bytes:
        out = bytearray()
        while True:
            out.append(number & 0x7F | (0x80 if number >> 7 else 0))
            number >>= 7
            if not number:
                return bytes(out)

    return varint(field << 3 | 2) + varint(len(payload)) + payload


def nested_if_bytes(depth: int) -> bytes:
    """A model whose graph nests If nodes `depth` deep, written as protobuf bytes by hand
    (onnx.helper cannot build it: protobuf refuses to copy messages nested that deep)."""
    graph = GraphProto(name="leaf").SerializeToString()
    for _ in range(depth):
        attribute = AttributeProto(name="then_branch", type=AttributeProto.GRAPH).SerializeToString()
        node = NodeProto(op_type="If", input=["c"], output=["y"]).SerializeToString()
        node += _length_delimited(5, attribute + _length_delimited(6, graph))  # NodeProto.attribute, .g
        graph = GraphProto(name="level").SerializeToString() + _length_delimited(1, node)  # GraphProto.node
    head = ModelProto(ir_version=8, opset_import=[helper.make_opsetid("", 17)]).SerializeToString()
    return head + _length_delimited(7, graph)  # ModelProto.graph


@pytest.mark.parametrize("depth", [12, 200])
def test_deeply_nested_ifs_are_refused_without_recursion(depth: int) -> None:
    rejected(nested_if_bytes(depth), "graph_too_deep")


# ---- versions, functions, domains ---------------------------------------------------------


@pytest.mark.parametrize("ir_version", [6, 11])
def test_unsupported_ir_versions(ir_version: int) -> None:
    rejected(model(*mlp_layers(), ir_version=ir_version), "ir_version_unsupported")


@pytest.mark.parametrize("opset", [12, 22])
def test_unsupported_opsets(opset: int) -> None:
    rejected(model(*mlp_layers(), opset=opset), "opset_unsupported")


def test_a_recursive_local_function() -> None:
    recursive = helper.make_function("local", "loop_forever", ["x"], ["y"], [
        helper.make_node("loop_forever", ["x"], ["y"], domain="local"),
    ], [helper.make_opsetid("", 17)])  # fmt: skip
    hostile = mlp()
    hostile.functions.append(recursive)
    hostile.opset_import.append(helper.make_opsetid("local", 1))
    rejected(hostile, "functions_not_allowed")


def test_training_graphs() -> None:
    hostile = mlp()
    hostile.training_info.add().algorithm.CopyFrom(helper.make_graph([], "train", [], []))
    rejected(hostile, "training_info_not_allowed")


def test_a_custom_domain_operator() -> None:
    hostile = with_nodes(mlp(), [helper.make_node("Backdoor", ["hidden"], ["x"], domain="com.evil")])
    rejected(hostile, "custom_domain")


@pytest.mark.parametrize("domain", ["com.microsoft", "ai.onnx.ml"])
def test_a_foreign_operator_set_import(domain: str) -> None:
    hostile = mlp()
    hostile.opset_import.append(helper.make_opsetid(domain, 1))
    rejected(hostile, "custom_domain")


# ---- operators ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op_type", "attributes"),
    [
        ("RandomNormalLike", {}),
        ("RandomUniformLike", {}),
        ("Bernoulli", {}),
        ("Multinomial", {}),
        ("Dropout", {}),
        ("NonZero", {}),
    ],
)
def test_operators_off_the_list(op_type: str, attributes: dict[str, object]) -> None:
    report = rejected(
        with_nodes(mlp(), [helper.make_node(op_type, ["hidden"], ["x"], **attributes)]), "op_not_allowed"
    )
    assert op_type in report.message


def test_loop_is_refused() -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [info("i", [], TensorProto.INT64), info("cond_in", [], TensorProto.BOOL)],
        [info("cond_out", [], TensorProto.BOOL)],
    )
    loop = helper.make_node("Loop", ["", ""], [], body=body)
    rejected(with_nodes(mlp(), [loop]), "op_not_allowed")


def test_random_normal_is_refused_with_a_reason() -> None:
    node = helper.make_node("RandomNormal", [], ["noise"], shape=[1, 32])
    report = rejected(with_nodes(mlp(), [node]), "op_not_allowed")
    assert "random" in report.message


# ---- tensors ------------------------------------------------------------------------------


def test_external_data_naming_an_existing_file() -> None:
    hostile = mlp()
    tensor = hostile.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="pyproject.toml")  # a file in the working directory
    report = rejected(hostile, "external_data")
    assert "pyproject.toml" in report.message


def test_external_data_in_a_constant_attribute() -> None:
    tensor = TensorProto(name="c", data_type=FLOAT, dims=[1], data_location=TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value="/etc/passwd")
    rejected(with_nodes(mlp(), [helper.make_node("Constant", [], ["c"], value=tensor)]), "external_data")


def test_external_data_hidden_in_a_subgraph() -> None:
    tensor = TensorProto(name="c", data_type=FLOAT, dims=[1])
    tensor.external_data.add(key="location", value="secrets.txt")
    branch = helper.make_graph(
        [helper.make_node("Constant", [], ["y"], value=tensor)], "b", [], [info("y", [1])]
    )
    node = helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch)
    rejected(with_nodes(mlp(), [node]), "external_data")


def test_a_sparse_initializer_bomb() -> None:
    values = numpy_helper.from_array(np.ones(1, np.float32), "bomb")
    indices = numpy_helper.from_array(np.zeros(1, np.int64), "bomb_indices")
    hostile = mlp()
    hostile.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [500_000_000]))
    rejected(hostile, "sparse_tensor")
    assert len(hostile.SerializeToString()) < len(mlp().SerializeToString()) + 200  # 2 GB when dense


def test_a_sparse_constant() -> None:
    values = numpy_helper.from_array(np.ones(1, np.float32), "v")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.zeros(1, np.int64), "i"), [1 << 28])
    node = helper.make_node("Constant", [], ["c"], sparse_value=sparse)
    rejected(with_nodes(mlp(), [node]), "sparse_tensor")


def test_a_string_initializer() -> None:
    strings = helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"b"])
    rejected(with_nodes(mlp(), [], [strings]), "string_tensor")


def test_a_cast_to_strings() -> None:
    node = helper.make_node("Cast", ["hidden"], ["text"], to=TensorProto.STRING)
    rejected(with_nodes(mlp(), [node]), "string_tensor")


def test_a_string_input() -> None:
    rejected(
        model(*mlp_layers(), inputs=[*INPUTS, info("note", ["batch"], TensorProto.STRING)]), "string_tensor"
    )


def test_complex_numbers() -> None:
    rejected(
        with_nodes(mlp(), [], [helper.make_tensor("z", TensorProto.COMPLEX64, [1], [1 + 0j])]),
        "tensor_type_not_allowed",
    )


def test_a_huge_declared_initializer_is_counted_not_allocated() -> None:
    huge = TensorProto(name="huge", data_type=FLOAT, dims=[1 << 30])  # 4 GiB declared, no data
    rejected(with_nodes(mlp(), [], [huge]), "parameters_too_large")


def test_weights_over_the_configured_limit() -> None:
    rejected(mlp(), "parameters_too_large", limits=ValidationLimits(max_parameter_bytes=4_000))


def test_an_initializer_whose_data_does_not_match_its_shape() -> None:
    hostile = mlp()
    hostile.graph.initializer[0].raw_data = hostile.graph.initializer[0].raw_data[:-4]
    rejected(hostile, "tensor_invalid")


def test_too_many_nodes() -> None:
    chain = [helper.make_node("Identity", [f"id{i}"], [f"id{i + 1}"]) for i in range(2_001)]
    rejected(with_nodes(mlp(), [helper.make_node("Identity", ["hidden"], ["id0"]), *chain]), "too_many_nodes")


# ---- the manifest -------------------------------------------------------------------------


def test_missing_metadata() -> None:
    report = rejected(
        model(*mlp_layers(), metadata={k: v for k, v in METADATA.items() if k != "arena.name"}),
        "manifest_missing_field",
    )
    assert "arena.name" in report.message


def test_overrides_fill_in_missing_metadata() -> None:
    report = validate_static(model(*mlp_layers(), metadata={}).SerializeToString(), SPEC, {
        "game": "toy", "game_version": 3, "name": "From the form", "player": "sample", "temperature": "0.5",
    })  # fmt: skip
    assert report.ok, report.message
    assert (report.manifest.name, report.manifest.temperature) == ("From the form", 0.5)


def test_the_game_validated_for_fills_in_where_the_file_names_none() -> None:
    """As on upload, where the form names the game: a file without metadata needs only its name and
    player; one that names another game is still refused, not overridden."""
    report = validate_static(model(*mlp_layers(), metadata={}).SerializeToString(), SPEC, {
        "name": "No metadata", "player": "greedy",
    })  # fmt: skip
    assert report.ok, report.message
    assert (report.manifest.game, report.manifest.game_version) == ("toy", 3)
    unversioned = {key: value for key, value in METADATA.items() if key != "arena.game_version"}
    only_game = model(*mlp_layers(), metadata=unversioned)
    assert validate_static(only_game.SerializeToString(), SPEC).manifest.game_version == 3
    other = model(*mlp_layers(), metadata={**METADATA, "arena.game": "bobail"})
    assert validate_static(other.SerializeToString(), SPEC).code == "wrong_game"


@pytest.mark.parametrize(
    "overrides",
    [
        {"player": "minimax"},
        {"simulations": "-3"},
        {"simulations": "2.5"},
        {"c_puct": "abc"},
        {"temperature": "nan"},
        {"name": ""},
        {"name": "x" * 65},
        {"value": "relu"},
        {"game_version": True},
    ],
)
def test_bad_manifest_values(overrides: dict[str, object]) -> None:
    rejected(mlp(), "manifest_bad_value", overrides)


def test_an_unknown_manifest_key() -> None:
    rejected(model(*mlp_layers(), metadata={**METADATA, "arena.simulation": "800"}), "manifest_unknown_key")


def test_mcts_needs_policy_logits() -> None:
    rejected(one_head(mlp()), "manifest_conflict", {**SEARCH, "head": "q"}, game=ONE_HEAD_GAME)


def test_mcts_is_refused_for_a_game_of_several_heads() -> None:
    report = rejected(mlp(), "player_unsupported", SEARCH)
    assert "toy has 2 action heads (move, pass)" in report.message
    assert "player=greedy or player=sample" in report.message


@pytest.mark.parametrize(
    ("overrides", "code"),
    [({"game": "bobail"}, "wrong_game"), ({"game_version": 2}, "game_version_mismatch")],
)
def test_a_bot_for_another_game(overrides: dict[str, object], code: str) -> None:
    rejected(mlp(), code, overrides)


def test_manifest_errors_are_contract_errors() -> None:
    with pytest.raises(ContractError) as caught:
        Manifest(game="toy", game_version=3, name="x", player="mcts", simulations=0)
    assert caught.value.code == "manifest_bad_value"
    assert "arena.simulations" in caught.value.message


# ---- the tensor interface -----------------------------------------------------------------


def test_wrong_input_names() -> None:
    nodes, initializers = mlp_layers()
    nodes[1] = helper.make_node("Concat", ["flat", "extras"], ["features"], axis=1)
    report = rejected(
        model(nodes, initializers, inputs=[INPUTS[0], info("extras", ["batch", 2])]), "inputs_mismatch"
    )
    assert "'extras'" in report.message


def test_an_extra_input() -> None:
    rejected(model(*mlp_layers(), inputs=[*INPUTS, info("cheat", ["batch", 1])]), "inputs_mismatch")


def test_a_float64_input() -> None:
    rejected(
        model(*mlp_layers(), inputs=[info("board", ["batch", 3, 4, 4], TensorProto.DOUBLE), INPUTS[1]]),
        "input_dtype",
    )


@pytest.mark.parametrize("shape", [["batch", 3, 4, 5], ["batch", 48], [1, 3, 4, 4], ["batch", 3, "h", 4]])
def test_wrong_input_shapes(shape: list[int | str]) -> None:
    rejected(model(*mlp_layers(), inputs=[info("board", shape), INPUTS[1]]), "input_shape")


def test_a_missing_value_for_mcts() -> None:
    nodes, initializers = mlp_layers()
    without_value = one_head(model(nodes[:-2], initializers, outputs=OUTPUTS[:2]))
    rejected(without_value, "outputs_mismatch", SEARCH, game=ONE_HEAD_GAME)


def test_an_extra_output() -> None:
    rejected(model(*mlp_layers(), outputs=[*OUTPUTS, info("hidden", ["batch", 32])]), "outputs_mismatch")


def test_an_integer_output() -> None:
    hostile = replace_node(
        mlp(),
        "value",
        helper.make_node("Tanh", ["value_raw"], ["v"]),
        helper.make_node("Cast", ["v"], ["value"], to=TensorProto.INT64),
    )
    hostile.graph.output[2].CopyFrom(info("value", ["batch", 1], TensorProto.INT64))
    rejected(hostile, "output_dtype")


def test_a_policy_of_the_wrong_size() -> None:
    hostile = mlp()
    next(t for t in hostile.graph.initializer if t.name == "wm").CopyFrom(weight("wm", 32, 15))
    next(t for t in hostile.graph.initializer if t.name == "bm").CopyFrom(weight("bm", 15))
    hostile.graph.output[0].CopyFrom(info("policy_move", ["batch", "n"]))
    report = rejected(hostile, "output_shape")
    assert "(batch, 16)" in report.message


def test_a_value_with_two_columns() -> None:
    hostile = mlp()
    next(t for t in hostile.graph.initializer if t.name == "wv").CopyFrom(weight("wv", 32, 2))
    next(t for t in hostile.graph.initializer if t.name == "bv").CopyFrom(weight("bv", 2))
    rejected(hostile, "output_shape")


# ---- graph validity and static bounds -----------------------------------------------------


def test_an_attribute_its_operator_does_not_have() -> None:
    rejected(
        replace_node(mlp(), "hidden", helper.make_node("Relu", ["pre"], ["hidden"], alpha=0.5)),
        "onnx_invalid",
    )


def test_shapes_that_do_not_fit_together() -> None:
    hostile = mlp()
    hostile.graph.initializer[0].CopyFrom(weight("w1", 49, 32))
    rejected(hostile, "shape_inference_failed")


def test_a_huge_static_expand() -> None:
    one = numpy_helper.from_array(np.ones((1, 1), np.float32), "one")
    node = helper.make_node("Expand", ["one", "bomb_shape"], ["bomb"])
    report = rejected(
        with_nodes(mlp(), [node], [one, ints("bomb_shape", [1 << 16, 1 << 16])]), "tensor_too_large"
    )
    assert "[65536, 65536]" in report.message


def test_a_huge_tile_of_the_batch() -> None:
    node = helper.make_node("Tile", ["hidden", "repeats"], ["bomb"])
    rejected(with_nodes(mlp(), [node], [ints("repeats", [1, 1 << 24])]), "tensor_too_large")


def test_an_allocation_sized_by_the_input_values() -> None:
    """40 GB only when a position with a large `extra` arrives: its size has no static bound."""
    nodes = [
        helper.make_node("ReduceMax", ["extra"], ["peak"], keepdims=0),
        helper.make_node("Mul", ["peak", "scale"], ["scaled"]),
        helper.make_node("Cast", ["scaled"], ["count"], to=TensorProto.INT64),
        helper.make_node("Unsqueeze", ["count", "axis0"], ["count_1d"]),
        helper.make_node("Concat", ["count_1d", "count_1d"], ["bomb_shape"], axis=0),
        helper.make_node("Expand", ["one", "bomb_shape"], ["bomb"]),
    ]
    constants = [
        numpy_helper.from_array(np.float32(1e5), "scale"),
        numpy_helper.from_array(np.ones((1, 1), np.float32), "one"),
        ints("axis0", [0]),
    ]
    report = rejected(with_nodes(mlp(), nodes, constants), "shape_not_static")
    assert "'bomb'" in report.message


def test_many_large_tensors_alive_at_once() -> None:
    tiles = [helper.make_node("Tile", ["hidden", "repeats"], [f"t{i}"]) for i in range(8)]
    gather = helper.make_node("Max", [f"t{i}" for i in range(8)], ["all"])
    limits = ValidationLimits(max_tensor_bytes=16 << 20, max_activation_bytes=32 << 20)
    rejected(
        with_nodes(mlp(), [*tiles, gather], [ints("repeats", [1, 256])]), "memory_too_large", limits=limits
    )


def test_a_compute_bomb() -> None:
    """A 4096 x 4096 matrix squared: 64 MiB of memory, 137 GFLOP for every position."""
    nodes = [
        helper.make_node("Expand", ["one", "square"], ["matrix"]),
        helper.make_node("MatMul", ["matrix", "matrix"], ["product"]),
    ]
    constants = [numpy_helper.from_array(np.ones((1, 1), np.float32), "one"), ints("square", [4096, 4096])]
    rejected(with_nodes(mlp(), nodes, constants), "flops_too_large")


def test_flops_follow_the_documented_counting_rule() -> None:
    report = validate_static(one_head(conv_net()).SerializeToString(), ONE_HEAD, SEARCH)
    assert report.ok, report.message
    conv = 2 * (30 * 4 * 4) * (3 * 3 * 3)  # output elements x input channels x kernel, multiply-add 2
    passes = 50 * (30 * 16 * 2 + 32 + 18)  # BatchNorm, Relu; the concatenated features and policy
    pools = 20 * (30 * 2 * 2) * (2 * 2) + 80 * (30 * 2 * 2)  # MaxPool's window elements; the global pool
    gemms = 2 * 32 * (16 + 2 + 1)  # the heads on 32 features (more than one pass over their outputs)
    tanh, renames = 80, 0  # the value; Flatten and Squeeze rename
    assert report.facts.flops_per_position == conv + passes + pools + gemms + tanh + renames
    assert report.facts.evaluations_per_move == 201  # mcts: the root and the default 200 simulations
    assert report.facts.flops_per_move == 201 * report.facts.flops_per_position
    assert "per move (201 evaluations of one position)" in report.format_text()


def widened(base: ModelProto, width: int) -> ModelProto:
    """`base` (an mlp) with 'wide' (batch, 32 x `width`): its hidden layer tiled, as a hostile graph
    would begin."""
    return with_nodes(
        base, [helper.make_node("Tile", ["hidden", "repeats"], ["wide"])], [ints("repeats", [1, width])]
    )


def test_a_variadic_max_counts_a_pass_per_input() -> None:
    """The audit's case: Max of 1,900 inputs was counted as one pass (0.21 GFLOP a move, 4.1 s real)."""
    hostile = with_nodes(widened(one_head(mlp()), 256), [helper.make_node("Max", ["wide"] * 1_900, ["top"])])
    report = validate_static(hostile.SerializeToString(), ONE_HEAD, SEARCH)  # 201 evaluations a move
    assert report.code == "flops_per_move_too_large", report.message
    max_cost = 1_899 * (32 * 256) * 50  # inputs - 1 passes over its 8,192 outputs, 50 per element
    assert max_cost < report.facts.flops_per_position < max_cost * 1.01


@pytest.mark.parametrize(("op_type", "per_element"), [("Softmax", 200), ("Softplus", 2_000), ("Relu", 50)])
def test_element_wise_chains_count_their_cost_per_element(op_type: str, per_element: int) -> None:
    """A chain of element-wise nodes costs its elements times the operator's measured cost each (a
    chain of Softmaxes counted 1 per element was undercounted about 25x)."""
    chain = [helper.make_node(op_type, ["wide"], ["link0"])]
    chain += [helper.make_node(op_type, [f"link{i}"], [f"link{i + 1}"]) for i in range(9)]
    base = validate_static(widened(mlp(), 1_024).SerializeToString(), SPEC)
    report = validate_static(with_nodes(widened(mlp(), 1_024), chain).SerializeToString(), SPEC)
    assert report.facts.flops_per_position - base.facts.flops_per_position == 10 * 32 * 1_024 * per_element


def test_a_long_softmax_chain_is_refused_before_it_runs() -> None:
    """400 Softmaxes over 32,768 numbers: 13 MFLOP counted 1 per element, ~10 ms of CPU per position."""
    chain = [helper.make_node("Softmax", [f"link{i}" if i else "wide"], [f"link{i + 1}"]) for i in range(400)]
    rejected(with_nodes(widened(mlp(), 1_024), chain), "flops_too_large")


def test_a_heavy_conv_net_is_refused_by_its_flops_per_move() -> None:
    """The audit's case: 1.7 GFLOP per position is allowed for one evaluation per move, but a search
    of 100 or 200 simulations costs over 170 GFLOP a move, whatever the machine's speed or load."""
    heavy = conv_tower(channels=256, layers=90)
    searching = one_head(conv_tower(channels=256, layers=90)).SerializeToString()
    report = rejected(searching, "flops_per_move_too_large", SEARCH, game=ONE_HEAD_GAME)
    assert 1.65e9 < report.facts.flops_per_position < 1.75e9
    assert report.facts.flops_per_move == 201 * report.facts.flops_per_position
    assert report.checks[-1] == "sanitize"
    assert "201 network evaluations (the root and 200 simulations, arena.simulations)" in report.message
    at_ladder = validate_static(searching, ONE_HEAD, SEARCH, simulations=100)
    assert (at_ladder.code, at_ladder.facts.evaluations_per_move) == ("flops_per_move_too_large", 101)
    assert "the ladder's budget" in at_ladder.message
    assert validate_static(searching, ONE_HEAD, SEARCH, simulations=50).ok  # 51 x 1.7 GFLOP
    without_value = list(heavy.graph.node)[:-2]  # the value's Gemm and Tanh
    greedy = model(without_value, list(heavy.graph.initializer), outputs=OUTPUTS[:2])
    assert validate_static(greedy.SerializeToString(), SPEC, {"player": "greedy"}).ok


def test_a_conv_net_too_heavy_for_a_workers_batch_is_refused_for_every_player() -> None:
    """The audit's other case: 7.5 GFLOP per position, 240 GFLOP in a call of 32 positions."""
    report = rejected(conv_tower(channels=512, layers=100), "flops_too_large", {"player": "greedy"})
    assert "32 positions" in report.message


def test_a_net_fast_at_batch_one_is_still_refused_by_its_flops_per_move() -> None:
    """Speed at batch 1 decides nothing about cost: the same net passes the runtime checks as a
    greedy player and is refused, before it runs, as a search over 200 simulations."""
    net = conv_tower(channels=64, layers=4)  # about 4.8 MFLOP per position
    limits = dataclasses.replace(LIMITS, max_flops_per_move=100_000_000)
    searching = one_head(conv_tower(channels=64, layers=4))
    report = rejected(searching, "flops_per_move_too_large", SEARCH, limits, ONE_HEAD_GAME)
    assert report.checks[-1] == "sanitize"
    greedy = validate(net.SerializeToString(), GAME, {"player": "greedy"}, limits)
    assert greedy.ok, greedy.message
    assert greedy.latency[0].p95_ms < LIMITS.max_latency_ms
    assert (greedy.facts.evaluations_per_move, greedy.facts.flops_per_move) == (
        1,
        greedy.facts.flops_per_position,
    )


def test_a_vector_that_data_propagation_would_grow_without_bound() -> None:
    """Shape inference materialises 1-D values: 40 doublings need 2**41 of them, in the isolated child."""
    nodes = [helper.make_node("Shape", ["hidden"], ["v0"])]
    nodes += [helper.make_node("Concat", [f"v{i}", f"v{i}"], [f"v{i + 1}"], axis=0) for i in range(40)]
    limits = dataclasses.replace(LIMITS, inference_memory_bytes=512 << 20)
    rejected(with_nodes(mlp(), nodes), "shape_inference_failed", limits=limits)


# ---- at runtime, on the toy game's positions ----------------------------------------------


def test_nan_outputs() -> None:
    hostile = replace_node(
        mlp(),
        "policy_pass",
        helper.make_node("Gemm", ["hidden", "wp", "bp"], ["logits"]),
        helper.make_node("Abs", ["logits"], ["size"]),
        helper.make_node("Neg", ["size"], ["negative"]),
        helper.make_node("Sub", ["negative", "one"], ["below_zero"]),
        helper.make_node("Sqrt", ["below_zero"], ["policy_pass"]),
    )
    hostile.graph.initializer.append(numpy_helper.from_array(np.float32(1.0), "one"))
    rejected(hostile, "output_not_finite")


def test_a_value_out_of_range() -> None:
    hostile = replace_node(
        mlp(),
        "value",
        helper.make_node("Tanh", ["value_raw"], ["squashed"]),
        helper.make_node("Add", ["squashed", "shift"], ["value"]),
    )
    hostile.graph.initializer.append(numpy_helper.from_array(np.float32(1.5), "shift"))
    report = rejected(hostile, "value_out_of_range")
    assert report.checks[-1] == "bounds"


def test_outputs_that_depend_on_the_rest_of_the_batch() -> None:
    hostile = replace_node(
        mlp(),
        "policy_move",
        helper.make_node("Gemm", ["hidden", "wm", "bm"], ["logits"]),
        helper.make_node("ReduceMean", ["logits"], ["batch_mean"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["logits", "batch_mean"], ["policy_move"]),
    )
    rejected(hostile, "batch_inconsistent")


def test_an_index_out_of_range_fails_at_runtime() -> None:
    node = helper.make_node("Gather", ["hidden", "far"], ["picked"], axis=1)
    report = rejected(with_nodes(mlp(), [node], [ints("far", [1_000])]), "runtime_failed")
    assert "toy" in report.message


def test_a_broken_engine_is_reported_not_raised() -> None:
    def encode(state: object, player: int) -> dict[str, np.ndarray]:
        raise KeyError("the engine's own bug")

    report = validate(mlp().SerializeToString(), dataclasses.replace(GAME, encode=encode), limits=LIMITS)
    assert (report.ok, report.code) == (False, "internal_error")
    assert "KeyError" in report.message
    assert report.platform_fault  # costs the uploader nothing


def test_a_model_slower_than_allowed() -> None:
    rejected(mlp(), "too_slow", limits=dataclasses.replace(LIMITS, max_latency_ms=1e-6))


def test_a_model_too_slow_at_a_workers_batch() -> None:
    report = rejected(mlp(), "batch_too_slow", limits=dataclasses.replace(LIMITS, max_batch_call_share=1e-9))
    assert f"a batch of {WORKER_BATCH} positions" in report.message


def test_a_busy_machine_does_not_make_a_small_model_too_slow() -> None:
    """The model host gets a fifth of the wall clock (stopped 20 ms in every 25, as on a loaded
    server): each call takes ~20 ms of wall time, but the verdict counts the host's CPU time."""
    limits = dataclasses.replace(
        LIMITS, max_latency_ms=5.0, max_batch_call_share=5e-3 / LIMITS.host_call_timeout_s
    )
    with _stalled_children(running_s=0.005, stopped_s=0.020):
        report = validate(mlp().SerializeToString(), GAME, limits=limits)
    assert report.ok, report.message
    assert max(latency.p95_ms for latency in report.latency) < 5.0


def test_a_model_host_killed_from_outside_is_the_platforms_refusal(monkeypatch) -> None:
    from arena_bots import host

    def killed(model_host, inputs):
        os.kill(model_host.pid, signal.SIGKILL)
        return run(model_host, inputs)

    run = host.ModelHost.run
    monkeypatch.setattr(host.ModelHost, "run", killed)
    report = validate(mlp().SerializeToString(), GAME, limits=LIMITS)
    assert (report.ok, report.code, report.platform_fault) == (False, PLATFORM_UNAVAILABLE, True)
    assert "SIGKILL from outside" in report.message
    assert report.to_dict()["platform_fault"] is True


@contextlib.contextmanager
def _stalled_children(running_s: float, stopped_s: float) -> Iterator[None]:
    """Stops this process's child processes (the model host) for `stopped_s` in every
    `running_s + stopped_s` while the block runs, as a machine busy with other work would."""
    done = threading.Event()

    def stall() -> None:
        while not done.wait(running_s):
            children = _children()
            _signal_all(children, signal.SIGSTOP)
            time.sleep(stopped_s)
            _signal_all(children, signal.SIGCONT)

    staller = threading.Thread(target=stall, daemon=True)
    staller.start()
    try:
        yield
    finally:
        done.set()
        staller.join()


def _children() -> list[int]:
    me = os.getpid()
    return [int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()]


def _signal_all(pids: list[int], number: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)


def test_speed_is_judged_at_the_batch_and_under_the_timeout_that_matches_use() -> None:
    from arena_bots.host import HostLimits
    from arena_platform.settings import Settings
    from arena_platform.store.pairings import PAIRINGS_PER_TASK

    assert PAIRINGS_PER_TASK * Settings().games_per_pairing <= WORKER_BATCH
    assert DEFAULT_LIMITS.host_call_timeout_s == HostLimits().call_timeout_s


@pytest.mark.parametrize("path", sorted(ZOO.glob("*/*.onnx")), ids=lambda path: path.stem)
def test_the_zoo_bots_pass_at_the_ladder_budget(path) -> None:
    from arena_games.registry import get_game
    from arena_platform.settings import Settings

    game = get_game(path.parent.name)
    report = validate_static(path.read_bytes(), game.spec, simulations=Settings().ladder_simulations)
    assert report.ok, report.message
    assert report.facts.flops_per_move <= DEFAULT_LIMITS.max_flops_per_move / 10  # a wide margin
    if path.stem.endswith("final"):
        full = validate(path.read_bytes(), game, limits=dataclasses.replace(DEFAULT_LIMITS, **RUNTIME_SHORT))
        assert full.ok, full.message
