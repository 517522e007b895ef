"""The model host's child process: loads the model under rlimits and answers the parent's calls
(`arena_bots.host` starts it as `python -m arena_bots.host_child <socket fd>`; the protocol is
`arena_bots.host_protocol`).

It imports nothing of the parent's side. A run is stopped by a watchdog thread once it has used
`call_timeout_s` of this process's CPU time; the same thread exits the process when the parent is
gone, so a child never outlives the worker that started it.

A call runs the model on ONNX Runtime I/O bindings of the shared memory, one per batch size, made at
that size's first call: the model reads its inputs from their blocks and writes its outputs into
the outputs' block, with no copy in either direction and no array made per call.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import numpy as np
import onnxruntime as ort

from arena_bots import runtime
from arena_bots.host_protocol import DESCRIBE, DONE, RUN, Channel, Layout, ProtocolError, SharedMemory

_WATCH_TICK_S = 0.02  # the watchdog: deadline precision and parent-death latency
_CPU_HARD_MARGIN_S = 5  # SIGXCPU at cpu_seconds, SIGKILL this much later

# ONNX Runtime's Python run_with_iobinding looks this run option up on every run, and an absent one
# costs it a C++ exception (about 30 µs); each run sets it to its default, the graph id 0.
_GRAPH_ID_OPTION = "gpu_graph_id"

Result = TypeVar("Result")


class _DeadlineExceeded(Exception):
    pass


class _Watchdog:
    """A daemon thread of the child: stops a run past its deadline; exits if the parent is gone.

    The deadline is in this process's CPU time (time.process_time: every thread's), so a run is
    stopped for the work it did, never for waiting on a busy machine. Each run gets its own
    RunOptions; past the deadline the thread sets its `terminate`, which ONNX Runtime checks between
    nodes (also inside Loop bodies). A single node that runs long ignores it; the parent's kill
    covers that case.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._parent = os.getppid()
        self._armed: tuple[ort.RunOptions, float] | None = None  # the run's options and deadline
        threading.Thread(target=self._watch, name="arena-host-watchdog", daemon=True).start()

    def deadline(self) -> float:
        """The deadline of a call starting now, in this process's CPU seconds."""
        return time.process_time() + self.timeout_s

    def run(self, deadline: float, run: Callable[[ort.RunOptions], Result]) -> Result:
        """`run(options)`, one ONNX Runtime run given the options, stopped past `deadline`."""
        options = ort.RunOptions()
        options.add_run_config_entry(_GRAPH_ID_OPTION, "0")
        self._armed = (options, deadline)
        try:
            return run(options)
        except Exception:
            if options.terminate:
                raise _DeadlineExceeded from None
            raise
        finally:
            self._armed = None

    def _watch(self) -> None:
        while True:
            time.sleep(_WATCH_TICK_S)
            if os.getppid() != self._parent:
                _orphaned()
            armed = self._armed
            if armed is not None and time.process_time() > armed[1]:
                armed[0].terminate = True


def _orphaned() -> NoReturn:
    """The parent is gone: remove the (empty) working directory it can no longer remove, and exit."""
    with contextlib.suppress(OSError):
        os.rmdir(os.getcwd())  # only ever removes an empty directory
    os._exit(1)


def _limit_resources(memory_bytes: int | None, cpu_seconds: int) -> None:
    """The child's rlimits, set before the model is loaded.

    No address-space limit with CUDA: its driver reserves far more address space than it uses.
    """
    _lower_limit(resource.RLIMIT_CORE, 0, 0)
    _lower_limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + _CPU_HARD_MARGIN_S)
    if memory_bytes is not None and "CUDAExecutionProvider" not in runtime.providers():
        _lower_limit(resource.RLIMIT_AS, memory_bytes, memory_bytes)


def _lower_limit(kind: int, soft: int, hard: int) -> None:
    """Sets a limit, never above the current hard limit (which an unprivileged process cannot raise)."""
    _, current_hard = resource.getrlimit(kind)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(kind, (soft, hard))


def _describe_session(session: ort.InferenceSession) -> dict[str, Any]:
    def tensors(args: list[Any]) -> list[Any]:
        return [[arg.name, arg.type, arg.shape] for arg in args]

    return {"inputs": tensors(session.get_inputs()), "outputs": tensors(session.get_outputs())}


def _describe_process() -> dict[str, Any]:
    limits = {
        "memory_bytes": resource.RLIMIT_AS,
        "cpu_seconds": resource.RLIMIT_CPU,
        "core": resource.RLIMIT_CORE,
    }
    return {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "cwd_entries": sorted(os.listdir(".")),
        "environment": dict(os.environ),
        "limits": {name: list(resource.getrlimit(kind)) for name, kind in limits.items()},  # [soft, hard]
    }


def _serve(socket_fd: int) -> None:
    """The child's life: load the model, map the shared memory, answer calls until the parent leaves."""
    channel = Channel(socket.socket(fileno=socket_fd))
    config = channel.receive_json()
    _limit_resources(config["memory_bytes"], config["cpu_seconds"])
    watchdog = _Watchdog(config["call_timeout_s"])
    try:
        session = runtime.create_session(bytes(channel.receive(max_bytes=sys.maxsize)), config["threads"])
    except Exception as error:  # whatever stops the load is the model's fault, reported as such
        message = f"onnxruntime cannot load the model: {error}"
        channel.send_json({"fault": "host_start_failed", "message": message})
        return
    channel.send_json(_describe_session(session))
    layout = Layout.from_json(channel.receive_json())
    memory = SharedMemory(layout)
    os.close(layout.memory_fd)
    calls = _Calls(session, memory, watchdog)
    channel.send_json({"ready": True, "cpu_s": time.process_time()})
    while True:
        doorbell = channel.wait_for_ring()
        if doorbell == RUN:
            calls.serve()
            channel.ring(DONE)
        elif doorbell == DESCRIBE:
            channel.send_json(_describe_process())
        else:
            raise ProtocolError(f"an unknown doorbell {doorbell!r}")


class _Calls:
    """Serves model calls through the shared memory, on the session's I/O bindings of it: one per
    batch size, made at that size's first call, with the output addresses it was bound to."""

    def __init__(self, session: ort.InferenceSession, memory: SharedMemory, watchdog: _Watchdog) -> None:
        self._session, self._memory, self._watchdog = session, memory, watchdog
        self._bindings: dict[int, tuple[ort.IOBinding, list[int]]] = {}

    def serve(self) -> None:
        """One model call: inputs from the shared memory, outputs or a fault into it."""
        memory = self._memory
        batch = memory.read_batch()
        try:
            outputs = self._run(batch)
        except _DeadlineExceeded:
            memory.write_fault("timeout", f"inference ran past {self._watchdog.timeout_s:g} s of CPU")
            return
        except Exception as error:  # onnxruntime's failures (e.g. a failed allocation) are the model's
            memory.write_fault("run_failed", f"onnxruntime failed: {error}")
            return
        if outputs is not None:
            for tensor, output in zip(memory.layout.outputs, outputs, strict=True):
                if output.shape != (expected := tensor.shape(batch)):
                    message = f"output {tensor.name!r} has shape {output.shape}, expected {expected}"
                    memory.write_fault("bad_output_shape", message)
                    return
            memory.write_outputs(batch, outputs)
        memory.write_answer()

    def _run(self, batch: int) -> list[np.ndarray] | None:
        """The model run on a call's inputs within one deadline: None once its outputs are in their
        block, else its outputs (to check and copy). A bound run that fails runs again unbound, so an
        output of the wrong shape shows as such (ONNX Runtime refuses to write it into its binding)."""
        deadline = self._watchdog.deadline()
        try:
            return self._run_bound(batch, deadline)
        except _DeadlineExceeded:
            raise
        except Exception:
            names = [tensor.name for tensor in self._memory.layout.outputs]
            feeds = self._memory.input_views(batch)
            return self._watchdog.run(deadline, lambda options: self._session.run(names, feeds, options))

    def _run_bound(self, batch: int, deadline: float) -> list[np.ndarray] | None:
        """None once ONNX Runtime wrote every output in place; else the outputs (it hands back a
        tensor of its own for an output that is also an input)."""
        binding, addresses = self._bindings.get(batch) or self._bind(batch)
        self._watchdog.run(deadline, lambda options: self._session.run_with_iobinding(binding, options))
        values = binding.get_outputs_as_ortvaluevector()  # indexed: iterating it ends in an exception
        if all(values[index].data_ptr() == address for index, address in enumerate(addresses)):
            return None
        return [values[index].numpy() for index in range(len(addresses))]

    def _bind(self, batch: int) -> tuple[ort.IOBinding, list[int]]:
        binding = self._session.io_binding()
        for name, view in self._memory.input_views(batch).items():
            binding.bind_cpu_input(name, view)
        outputs = self._memory.output_views(batch)
        for name, view in outputs.items():
            binding.bind_output(name, "cpu", 0, np.float32, view.shape, view.ctypes.data)
        self._bindings[batch] = binding, [view.ctypes.data for view in outputs.values()]
        return self._bindings[batch]


if __name__ == "__main__":
    try:
        _serve(int(sys.argv[1]))
    except (EOFError, ConnectionError):  # the parent left without killing the child: it died
        _orphaned()
