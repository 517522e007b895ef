"""The one place that creates ONNX Runtime sessions: options, providers and the in-process runner."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from arena_bots import runtime
from arena_bots.runtime import InProcessSession


def _float(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", 3])


def scale_and_clip_model() -> bytes:
    """x (batch, 3) -> doubled (batch, 3) = 2x, clipped (batch, 3) = relu(x)."""
    nodes = [
        helper.make_node("Add", ["x", "x"], ["doubled"]),
        helper.make_node("Relu", ["x"], ["clipped"]),
    ]
    graph = helper.make_graph(nodes, "scale_and_clip", [_float("x")], [_float("doubled"), _float("clipped")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_session_options_pin_threads_and_accept_only_onnx():
    options = runtime.session_options(threads=2)
    assert options.intra_op_num_threads == 2
    assert options.inter_op_num_threads == 1
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert not options.enable_profiling
    assert options.get_session_config_entry("session.load_model_format") == "ONNX"
    assert runtime.session_options().intra_op_num_threads == 1


def test_providers_name_the_cpu_last(monkeypatch):
    assert runtime.providers()[-1] == "CPUExecutionProvider"
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert runtime.providers() == ["CPUExecutionProvider"]
    with_cuda = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(ort, "get_available_providers", lambda: with_cuda)
    assert runtime.providers() == ["CUDAExecutionProvider", "CPUExecutionProvider"]


def test_in_process_session_runs_the_model():
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], dtype=np.float32)
    with InProcessSession(scale_and_clip_model()) as session:
        assert session.input_names == ("x",)
        assert session.output_names == ("doubled", "clipped")
        outputs = session.run({"x": x})
    np.testing.assert_array_equal(outputs["doubled"], 2 * x)
    np.testing.assert_array_equal(outputs["clipped"], np.maximum(x, 0))


def test_in_process_session_loads_a_file(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(scale_and_clip_model())
    session = InProcessSession(path)
    assert session.run({"x": np.ones((1, 3), np.float32)})["doubled"].tolist() == [[2.0, 2.0, 2.0]]


def test_a_closed_session_refuses_to_run():
    session = InProcessSession(scale_and_clip_model())
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.run({"x": np.ones((1, 3), np.float32)})
