"""The model host: isolated inference that returns outputs or a ModelFault, and never hurts the caller."""

from __future__ import annotations

import gc
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from arena_bots import host as host_module
from arena_bots import host_child
from arena_bots.host import HostLimits, ModelFault, ModelHost, child_environment
from arena_bots.host_protocol import Layout, SharedMemory, Tensor
from arena_bots.runtime import InProcessSession, create_session

# ---- test models: float32 inputs with a dynamic batch dimension, built with onnx.helper ----------


def _model(nodes, inputs, outputs, initializers=()) -> bytes:
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _float(name: str, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _constant(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def two_input_mlp() -> bytes:
    """board (batch, 2, 3, 3) and extra (batch, 2) -> policy (batch, 9), value (batch, 1)."""
    rng = np.random.default_rng(0)
    weights = [
        _constant("w1", rng.standard_normal((20, 16)).astype(np.float32)),
        _constant("w2", rng.standard_normal((16, 9)).astype(np.float32)),
        _constant("wv", rng.standard_normal((16, 1)).astype(np.float32)),
    ]
    nodes = [
        helper.make_node("Flatten", ["board"], ["flat"], axis=1),
        helper.make_node("Concat", ["flat", "extra"], ["features"], axis=1),
        helper.make_node("MatMul", ["features", "w1"], ["hidden_linear"]),
        helper.make_node("Relu", ["hidden_linear"], ["hidden"]),
        helper.make_node("MatMul", ["hidden", "w2"], ["policy"]),
        helper.make_node("MatMul", ["hidden", "wv"], ["value_linear"]),
        helper.make_node("Tanh", ["value_linear"], ["value"]),
    ]
    inputs = [_float("board", ["batch", 2, 3, 3]), _float("extra", ["batch", 2])]
    return _model(nodes, inputs, [_float("policy", ["batch", 9]), _float("value", ["batch", 1])], weights)


def log_model() -> bytes:
    """policy = log(obs): NaN for a negative observation only."""
    nodes = [helper.make_node("Log", ["obs"], ["policy"])]
    return _model(nodes, [_float("obs", ["batch", 4])], [_float("policy", ["batch", 4])])


def _scalar_from_max(prefix: str) -> list[onnx.NodeProto]:
    """Nodes computing `{prefix}count`, int64 of shape [1]: the largest observation of the batch."""
    return [
        helper.make_node("ReduceMax", ["obs"], [f"{prefix}max"], keepdims=0),
        helper.make_node("Unsqueeze", [f"{prefix}max", "axis0"], [f"{prefix}max1"]),
        helper.make_node("Cast", [f"{prefix}max1"], [f"{prefix}count"], to=TensorProto.INT64),
    ]


def _policy_from(term: str) -> list[onnx.NodeProto]:
    """policy (batch, 1) = the row sums of obs plus 0 * `term` (a scalar), so `term` must be computed."""
    return [
        helper.make_node("ReduceSum", ["obs", "axis1"], ["row_sums"], keepdims=1),
        helper.make_node("Mul", [term, "zero"], ["nothing"]),
        helper.make_node("Add", ["row_sums", "nothing"], ["policy"]),
    ]


_SCALAR_MODEL_CONSTANTS = [
    _constant("axis0", np.array([0], np.int64)),
    _constant("axis1", np.array([1], np.int64)),
    _constant("zero", np.array(0.0, np.float32)),
]


def loop_model() -> bytes:
    """Runs a Loop of max(obs) iterations: quick for small observations, endless for 1e12."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["carried_in", "one"], ["carried_out"]),
            helper.make_node("Identity", ["condition_in"], ["condition_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("iteration", TensorProto.INT64, []),
            helper.make_tensor_value_info("condition_in", TensorProto.BOOL, []),
            _float("carried_in", []),
        ],
        [helper.make_tensor_value_info("condition_out", TensorProto.BOOL, []), _float("carried_out", [])],
        [_constant("one", np.array(1.0, np.float32))],
    )
    nodes = [
        helper.make_node("ReduceMax", ["obs"], ["largest"], keepdims=0),
        helper.make_node("Cast", ["largest"], ["trips"], to=TensorProto.INT64),
        helper.make_node("Constant", [], ["start"], value=_constant("", np.array(0.0, np.float32))),
        helper.make_node("Constant", [], ["true"], value=_constant("", np.array(True))),
        helper.make_node("Loop", ["trips", "true", "start"], ["count"], body=body),
        *_policy_from("count"),
    ]
    constants = _SCALAR_MODEL_CONSTANTS
    return _model(nodes, [_float("obs", ["batch", 4])], [_float("policy", ["batch", 1])], constants)


def memory_hog_model() -> bytes:
    """Allocates a (max(obs), max(obs)) float tensor: 64 bytes for 4, 40 GB for 1e5."""
    nodes = [
        *_scalar_from_max(""),
        helper.make_node("Concat", ["count", "count"], ["square"], axis=0),
        helper.make_node(
            "ConstantOfShape", ["square"], ["big"], value=_constant("", np.array([1.0], np.float32))
        ),
        helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
        *_policy_from("total"),
    ]
    constants = _SCALAR_MODEL_CONSTANTS
    return _model(nodes, [_float("obs", ["batch", 4])], [_float("policy", ["batch", 1])], constants)


def batch_doubling_model() -> bytes:
    """Declares policy (batch, 4) but returns (2 * batch, 4)."""
    nodes = [helper.make_node("Concat", ["obs", "obs"], ["policy"], axis=0)]
    return _model(nodes, [_float("obs", ["batch", 4])], [_float("policy", ["batch", 4])])


def passthrough_model() -> bytes:
    """policy = relu(obs), and obs itself as a second output: ONNX Runtime hands its own tensor back
    for that one instead of writing it where the host bound it."""
    nodes = [helper.make_node("Relu", ["obs"], ["policy"])]
    return _model(
        nodes, [_float("obs", ["batch", 4])], [_float("policy", ["batch", 4]), _float("obs", ["batch", 4])]
    )


def relu_model(input_shape: list, element_type: int = TensorProto.FLOAT) -> bytes:
    """policy = relu(obs) for an input of any shape and type (for the start-up refusals)."""
    nodes = [
        helper.make_node("Cast", ["obs"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Relu", ["as_float"], ["policy"]),
    ]
    inputs = [helper.make_tensor_value_info("obs", element_type, input_shape)]
    return _model(nodes, inputs, [_float("policy", input_shape)])


def _mlp_inputs(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    board = rng.standard_normal((batch, 2, 3, 3)).astype(np.float32)
    return {"board": board, "extra": rng.standard_normal((batch, 2)).astype(np.float32)}


def _obs(value: float, batch: int = 2) -> dict[str, np.ndarray]:
    return {"obs": np.full((batch, 4), value, dtype=np.float32)}


# Short deadlines keep the module fast; the parent waits call_timeout_s + kill_grace_s at most.
QUICK = HostLimits(call_timeout_s=0.5, kill_grace_s=0.5, start_timeout_s=20)


@pytest.fixture(scope="module")
def mlp_host():
    with ModelHost(two_input_mlp(), QUICK) as host:
        yield host


def _fault_of(host: ModelHost, inputs: dict[str, np.ndarray]) -> ModelFault:
    with pytest.raises(ModelFault) as caught:
        host.run(inputs)
    return caught.value


def _is_running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a dead child nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _shared_memory_mappings() -> int:
    """The hosts' shared memory mapped in this process, once unreachable objects are collected (a
    fault's traceback can keep a dead host's mapping alive in a reference cycle until then)."""
    gc.collect()
    return Path("/proc/self/maps").read_text().count("memfd:arena-host")


# ---- correct answers ------------------------------------------------------------------------


def test_outputs_match_onnxruntime_in_process():
    model = two_input_mlp()
    reference = InProcessSession(model)
    with ModelHost(model, HostLimits(max_batch=8)) as host:
        assert host.input_names == ("board", "extra")
        assert host.output_names == ("policy", "value")
        for batch in (1, 8, 19):  # 19 rows: three calls of at most max_batch = 8
            inputs = _mlp_inputs(batch, seed=batch)
            outputs = host.run(inputs)
            expected = reference.run(inputs)
            assert outputs.keys() == expected.keys()
            for name, output in outputs.items():
                assert output.dtype == np.float32
                assert output.shape == expected[name].shape
                np.testing.assert_allclose(output, expected[name], rtol=1e-5, atol=1e-6)


def test_a_call_is_one_doorbell_each_way_and_no_frame(mlp_host, monkeypatch):
    """The inputs, the batch, the outputs and the child's CPU time travel in the shared memory;
    the socket carries one byte each way (no JSON per call)."""
    from arena_bots import host_protocol

    rings, waits = [], []
    ring, wait_for_ring = host_protocol.Channel.ring, host_protocol.Channel.wait_for_ring

    def refuse(*args, **kwargs):
        raise AssertionError("a model call sent or received a frame")

    def counted_ring(channel, doorbell):
        rings.append(doorbell)
        ring(channel, doorbell)

    def counted_wait(channel, deadline=None):
        waits.append(wait_for_ring(channel, deadline))
        return waits[-1]

    monkeypatch.setattr(host_protocol.Channel, "send", refuse)
    monkeypatch.setattr(host_protocol.Channel, "receive", refuse)
    monkeypatch.setattr(host_protocol.Channel, "ring", counted_ring)
    monkeypatch.setattr(host_protocol.Channel, "wait_for_ring", counted_wait)
    cpu_before = mlp_host.cpu_seconds
    assert mlp_host.run(_mlp_inputs(3))["policy"].shape == (3, 9)
    assert (rings, waits) == ([host_protocol.RUN], [host_protocol.DONE])
    assert mlp_host.cpu_seconds > cpu_before  # reported in the call header


def test_an_output_that_is_an_input_comes_back():
    observations = np.array([[-1.0, 2.0, -3.0, 4.0]] * 3, np.float32)
    with ModelHost(passthrough_model(), QUICK) as host:
        for batch in (3, 3, 1):  # a batch size's second call reuses its binding
            outputs = host.run({"obs": observations[:batch]})
            np.testing.assert_array_equal(outputs["obs"], observations[:batch])
            np.testing.assert_array_equal(outputs["policy"], np.maximum(observations[:batch], 0))


class _UnwatchedRuns:
    """A stand-in for the child's watchdog (no thread): runs at once, with fresh options."""

    timeout_s = 10.0

    def deadline(self) -> float:
        return math.inf

    def run(self, deadline, run):
        return run(ort.RunOptions())


def _child_calls(model: bytes) -> tuple[host_child._Calls, SharedMemory]:
    """The child's call server over a fresh shared memory, in this process."""
    session = create_session(model)

    def tensors(args) -> tuple[Tensor, ...]:
        return tuple(Tensor(arg.name, tuple(arg.shape[1:])) for arg in args)

    memory_fd = os.memfd_create("test-host", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    layout = Layout(8, tensors(session.get_inputs()), tensors(session.get_outputs()), memory_fd)
    memory = SharedMemory.allocate(layout)
    os.close(memory_fd)  # the mapping stays
    return host_child._Calls(session, memory, _UnwatchedRuns()), memory


def test_the_child_runs_the_model_in_place_and_copies_only_what_onnxruntime_keeps():
    calls, memory = _child_calls(two_input_mlp())
    inputs = _mlp_inputs(3)
    memory.write_call(inputs, 3)
    assert calls._run(3) is None  # the outputs are in their block already
    _, outputs = memory.read_outputs(3)
    for name, expected in InProcessSession(two_input_mlp()).run(inputs).items():
        np.testing.assert_allclose(outputs[name], expected, rtol=1e-5, atol=1e-6)

    calls, memory = _child_calls(passthrough_model())
    memory.write_call(_obs(2.0, batch=3), 3)
    kept = calls._run(3)  # ONNX Runtime hands its input back as the "obs" output: copied by serve
    assert kept is not None
    np.testing.assert_array_equal(kept[1], np.full((3, 4), 2.0, np.float32))


def test_outputs_are_copies(mlp_host):
    first = mlp_host.run(_mlp_inputs(3, seed=1))
    kept = first["policy"].copy()
    mlp_host.run(_mlp_inputs(3, seed=2))
    np.testing.assert_array_equal(first["policy"], kept)


def test_inputs_of_other_real_dtypes_are_cast(mlp_host):
    inputs = _mlp_inputs(2)
    as_float64 = {name: array.astype(np.float64) for name, array in inputs.items()}
    np.testing.assert_allclose(mlp_host.run(as_float64)["value"], mlp_host.run(inputs)["value"], rtol=1e-6)


@pytest.mark.parametrize(
    "inputs",
    [
        {"board": np.zeros((1, 2, 3, 3), np.float32)},  # a missing input
        _mlp_inputs(1) | {"more": np.zeros((1, 2), np.float32)},  # an unknown input
        {"board": np.zeros((1, 2, 3, 4), np.float32), "extra": np.zeros((1, 2), np.float32)},  # dims
        {"board": np.zeros((2, 2, 3, 3), np.float32), "extra": np.zeros((1, 2), np.float32)},  # batches
        {"board": np.zeros((0, 2, 3, 3), np.float32), "extra": np.zeros((0, 2), np.float32)},  # empty
        {"board": np.zeros((1, 2, 3, 3), np.float32), "extra": np.array([["a", "b"]])},  # strings
        {"board": np.float32(1.0), "extra": np.zeros((1, 2), np.float32)},  # a scalar
    ],
)
def test_bad_inputs_are_refused_and_the_host_lives_on(mlp_host, inputs):
    assert _fault_of(mlp_host, inputs).code == "bad_input"
    assert mlp_host.run(_mlp_inputs(1))["policy"].shape == (1, 9)


# ---- faults ------------------------------------------------------------------------------------


def test_non_finite_outputs_fault_and_leave_the_host_dead():
    host = ModelHost(log_model(), QUICK)
    assert host.run(_obs(1.0))["policy"].tolist() == [[0.0] * 4] * 2
    assert _fault_of(host, _obs(-1.0)).code == "non_finite"
    started = time.monotonic()
    fault = _fault_of(host, _obs(1.0))
    assert fault.code == "host_died"
    assert "non_finite" in fault.message
    assert time.monotonic() - started < 0.1
    assert not _is_running(host.pid)


def test_a_runaway_loop_is_stopped_at_the_deadline():
    limits = HostLimits(call_timeout_s=0.3, kill_grace_s=3.0)
    with ModelHost(loop_model(), limits) as host:
        assert host.run(_obs(3.0))["policy"].tolist() == [[12.0], [12.0]]  # 3 trips, then row sums
        started = time.monotonic()
        fault = _fault_of(host, _obs(1e12))
        assert (fault.code, fault.blame) == ("timeout", "model")
        assert "ran past 0.3 s of CPU" in fault.message  # the child stopped the run itself...
        assert time.monotonic() - started < limits.call_timeout_s + limits.kill_grace_s  # ...in time


def test_a_silent_child_is_killed_after_the_grace():
    with ModelHost(two_input_mlp(), QUICK) as host:
        os.kill(host.pid, signal.SIGSTOP)  # frozen: it can neither answer nor stop its run
        started = time.monotonic()
        fault = _fault_of(host, _mlp_inputs(1))
        waited = time.monotonic() - started
        assert fault.code == "timeout"
        assert fault.blame == "platform"  # it got no CPU: a stalled machine, never the model's fault
        assert "the machine stalled" in fault.message
        assert QUICK.call_timeout_s + QUICK.kill_grace_s <= waited < 3.0
        assert not _is_running(host.pid)


def test_a_memory_hog_fails_under_the_address_space_limit():
    limits = HostLimits(memory_bytes=1 << 30, call_timeout_s=5)
    with ModelHost(memory_hog_model(), limits) as host:
        assert host.run(_obs(4.0))["policy"].tolist() == [[16.0], [16.0]]
        fault = _fault_of(host, _obs(1e5))  # 1e5 x 1e5 floats: 40 GB
        assert fault.code == "run_failed"
        assert "allocate" in fault.message


def test_the_cpu_limit_kills_a_busy_child():
    limits = HostLimits(cpu_seconds=1, call_timeout_s=20)
    with ModelHost(loop_model(), limits) as host:
        fault = _fault_of(host, _obs(1e12))
        assert fault.code == "host_died"
        assert "SIGXCPU" in fault.message


def test_a_crashed_child_is_reported_and_a_new_host_works():
    host = ModelHost(two_input_mlp(), QUICK)
    os.kill(host.pid, signal.SIGSEGV)
    fault = _fault_of(host, _mlp_inputs(1))
    assert (fault.code, fault.blame) == ("host_died", "unknown")  # the model, or a kill from outside
    assert "SIGSEGV" in fault.message
    assert _fault_of(host, _mlp_inputs(1)).code == "host_died"
    with ModelHost(two_input_mlp(), QUICK) as fresh:
        assert fresh.run(_mlp_inputs(2))["value"].shape == (2, 1)


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_child_killed_from_outside_is_the_platforms_fault(number):
    """The model is data and cannot send a signal; its own limits end it otherwise (SIGXCPU, an error)."""
    ignored = signal.getsignal(number) == signal.SIG_IGN  # under nohup or in a background job
    previous = signal.signal(number, signal.SIG_DFL) if ignored else None  # a child inherits SIG_IGN
    try:
        host = ModelHost(two_input_mlp(), QUICK)
    finally:
        if ignored:
            signal.signal(number, previous)
    host.run(_mlp_inputs(1))
    os.kill(host.pid, number)
    fault = _fault_of(host, _mlp_inputs(1))
    assert (fault.code, fault.blame) == ("host_died", "platform")
    assert f"killed by {signal.Signals(number).name} from outside" in fault.message
    assert _fault_of(host, _mlp_inputs(1)).blame == "platform"  # and it stays the platform's


def test_a_child_killed_from_outside_while_starting_is_the_platforms_fault(monkeypatch):
    spawn = host_module._ChildResources.spawn

    def spawn_and_kill(child):
        spawn(child)
        child.process.kill()  # SIGKILL, before the child has read its limits or the model

    monkeypatch.setattr(host_module._ChildResources, "spawn", spawn_and_kill)
    with pytest.raises(ModelFault) as caught:
        ModelHost(two_input_mlp(), QUICK)
    assert (caught.value.code, caught.value.blame) == ("host_start_failed", "platform")
    assert "SIGKILL from outside" in caught.value.message


def test_outputs_of_the_wrong_shape_fault():
    with ModelHost(batch_doubling_model(), QUICK) as host:
        fault = _fault_of(host, _obs(1.0, batch=3))
        assert fault.code == "bad_output_shape"
        assert "(6, 4)" in fault.message


@pytest.mark.parametrize(
    ("model", "words"),
    [
        (b"not an onnx model", "cannot load"),
        (relu_model(["batch", "width"]), "every dimension but the batch must be fixed"),
        (relu_model([1, 4]), "fixed batch dimension"),
        (relu_model(["batch", 4], TensorProto.INT64), "tensor(int64)"),
    ],
)
def test_models_the_host_cannot_serve_fail_to_start(model, words):
    with pytest.raises(ModelFault) as caught:
        ModelHost(model, QUICK)
    assert caught.value.code == "host_start_failed"
    assert words in caught.value.message


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        HostLimits(call_timeout_s=0)


# ---- isolation and clean-up ------------------------------------------------------------------


def test_the_child_runs_in_an_empty_directory_with_a_scrubbed_environment(mlp_host):
    child = mlp_host.describe_child()
    assert child["pid"] == mlp_host.pid != os.getpid()
    assert child["cwd"] != os.getcwd()
    assert child["cwd_entries"] == []
    assert child["environment"] == child_environment(child["cwd"])
    assert child["limits"] == {"memory_bytes": [2 << 30] * 2, "cpu_seconds": [3600, 3605], "core": [0, 0]}


def test_the_child_environment_keeps_no_secrets(monkeypatch):
    monkeypatch.setenv("ARENA_DATABASE_URL", "postgresql://user:secret@db/arena")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")  # would let a model set its own options
    environment = child_environment("/tmp/somewhere")
    assert "secret" not in repr(environment)
    assert "ORT_LOAD_CONFIG_FROM_MODEL" not in environment
    assert environment["HOME"] == environment["TMPDIR"] == "/tmp/somewhere"
    assert environment["OMP_NUM_THREADS"] == "1"
    assert environment["ORT_DISABLE_TELEMETRY"] == "1"


def test_close_kills_the_child_and_leaves_nothing_behind():
    shm_before, mappings_before = set(os.listdir("/dev/shm")), _shared_memory_mappings()
    host = ModelHost(two_input_mlp(), QUICK)
    workdir = host.describe_child()["cwd"]
    assert _shared_memory_mappings() == mappings_before + 1
    host.run(_mlp_inputs(4))
    host.close()
    assert not _is_running(host.pid)
    assert not Path(workdir).exists()
    assert _shared_memory_mappings() == mappings_before
    assert not [
        name for name in set(os.listdir("/dev/shm")) - shm_before if "psm_" in name or "arena" in name
    ]
    fault = _fault_of(host, _mlp_inputs(1))
    assert (fault.code, fault.blame) == ("host_died", "platform")  # closed by its owner: never the model's


def test_a_crash_leaves_nothing_behind():
    mappings_before = _shared_memory_mappings()
    host = ModelHost(two_input_mlp(), QUICK)
    workdir = host.describe_child()["cwd"]
    os.kill(host.pid, signal.SIGKILL)
    assert _fault_of(host, _mlp_inputs(1)).code == "host_died"
    assert not Path(workdir).exists()
    assert _shared_memory_mappings() == mappings_before


def test_the_child_exits_when_its_parent_dies(tmp_path):
    model_path = tmp_path / "model.onnx"
    model_path.write_bytes(two_input_mlp())
    parent_code = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from arena_bots.host import ModelHost
        host = ModelHost(Path({str(model_path)!r}).read_bytes())
        print(host.pid, host.describe_child()["cwd"], flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    pid, workdir = parent.stdout.readline().split()
    child_pid = int(pid)
    assert _is_running(child_pid)
    parent.kill()
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + 3.0
    while _is_running(child_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _is_running(child_pid)
    assert not Path(workdir).exists()
