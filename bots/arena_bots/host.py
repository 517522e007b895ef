"""The model host: runs an uploaded model in an isolated child process (ARCHITECTURE §3, §4).

Upload checks cannot prove a model harmless: some misbehave only on some inputs, and some ONNX
Runtime paths abort the whole process. So at match time a model runs in a child process that
starts from a fresh interpreter (no fork: the parent may have threads) in an empty temporary
working directory, with a scrubbed environment, an address-space and a CPU-time limit and no core
dumps. Whatever the model does, the caller gets outputs or a `ModelFault`; it never hangs or dies.

Protocol, over a Unix socket pair, in frames of an 8-byte little-endian length and a payload:
  parent -> child  config JSON, then the model bytes
  child -> parent  the session's tensors JSON {"inputs"|"outputs": [[name, type, shape], ...]}
                   or {"fault": "host_start_failed", "message": ...}
  parent -> child  the layout JSON: transport, max_batch, the tensors with fixed dims, the memfd
  child -> parent  {"ready": true, "cpu_s": t}      (t: the child's CPU seconds so far)
  per call         {"op": "run", "batch": n} -> {"ok": true, "cpu_s": t} | {"fault": code, "message": text}
                   {"op": "describe"} -> the child's pid, cwd, environment and rlimits
With the "shm" transport (the default) the tensors travel through shared memory allocated once at
start: one block per tensor, sized for max_batch. With "pipe" each tensor follows its JSON as one
raw float32 frame; it costs 1.5-1.8x the overhead per call of "shm" (bench/host.py). The parent
never unpickles anything from the child: unpickling is running code.

A call's deadline is counted in the child's CPU time, not the wall clock, so a model is judged by
the work it does, the same on an idle or a busy machine: the child stops a run once it has used
`call_timeout_s` of CPU. The parent's wall-clock deadline is only a backstop; when it passes, the
child's CPU time (`cpu_s`, reported with each answer, and /proc at the deadline) tells whether the
model was busy past its limit (the model's fault) or never got the CPU (the machine's).

Whose doing a dead child is (`ModelFault.blame`; only the model's own faults may lose it a game).
The model is data: it cannot send a signal. What it can do is make the child fault on its own: a
bad memory access or illegal instruction in ONNX Runtime (the kernel's SIGSEGV, SIGBUS, SIGILL,
SIGFPE, SIGSYS, SIGTRAP), an abort() (SIGABRT), its rlimits (SIGXCPU; RLIMIT_AS only fails
allocations, which ONNX Runtime reports as an error) or an exit of the interpreter. Such a death
is "unknown": the same signal can be sent from outside, so the caller tries a fresh host on the
same positions and blames the model only if that one dies too (arena_workers.runner.ServedModel).
Any other signal (SIGKILL, SIGTERM, SIGINT, SIGHUP, ...) came from outside, from an operator, a
supervisor or the OOM killer, and is the platform's: never the bot's loss, at start or in a call.
(The hard CPU limit's SIGKILL never ends a child: SIGXCPU, at the soft limit, ends it first.)

The shared memory is one anonymous memfd (Linux): it has no name in /dev/shm, so nothing leaks even
when both processes are killed, and it is sealed against resizing, so a compromised child cannot
shrink it under the parent's mapping (which would crash the parent with SIGBUS).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import mmap
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, NoReturn

import numpy as np
import onnxruntime as ort

from arena_bots import runtime
from arena_bots.runtime import InferenceBackend

Transport = Literal["shm", "pipe"]

_FLOAT32_BYTES = 4
_BLOCK_ALIGNMENT = 64  # bytes: each tensor's block starts on a cache line
_RECEIVE_BYTES = 1 << 16  # one recv reads up to this much, so a small frame costs one system call
_MAX_MESSAGE_BYTES = 1 << 20  # a JSON message from the child; anything longer is a protocol breach
_MAX_FAULT_MESSAGE_CHARS = 600  # of text from the child quoted in a ModelFault
_STDERR_TAIL_BYTES = 400
_REAP_TIMEOUT_S = 1.0  # how long a child that closed its socket gets to exit before it is killed
_WATCH_TICK_S = 0.02  # the child's watchdog: deadline precision and parent-death latency
_CPU_HARD_MARGIN_S = 5  # SIGXCPU at cpu_seconds, SIGKILL this much later
_CHILD_CONFIG = ("memory_bytes", "cpu_seconds", "call_timeout_s", "threads")  # HostLimits fields
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
_CHILD_FAULT_CODES = frozenset({"host_start_failed", "timeout", "run_failed", "bad_output_shape"})
_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")  # the unit of a process's CPU times in /proc
_INHERITED_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES")  # what ORT (CUDA) needs
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)  # the folder holding arena_bots
# The signals a child can die of by its own doing (see the module doc); any other came from outside.
_OWN_FAULT_SIGNALS = frozenset(
    {
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGILL,
        signal.SIGFPE,
        signal.SIGSYS,
        signal.SIGTRAP,
        signal.SIGABRT,
        signal.SIGXCPU,
        signal.SIGXFSZ,
    }
)


@dataclass(frozen=True)
class HostLimits:
    """What one model host may use; times in seconds, memory in bytes."""

    memory_bytes: int | None = 2 << 30  # RLIMIT_AS of the child (address space); None: no limit
    cpu_seconds: int = 3600  # RLIMIT_CPU over the host's whole life: it serves many games
    call_timeout_s: float = 10.0  # per model call, in the child's CPU seconds: the child stops the run...
    kill_grace_s: float = 2.0  # ...and the parent kills the child if no answer comes this much later (wall)
    max_batch: int = 256  # rows per model call; `run` splits larger batches into such calls
    threads: int = 1  # intra-op threads of the child's session
    start_timeout_s: float = 30.0  # spawn to ready: interpreter, imports, model load

    def __post_init__(self) -> None:
        if not all(value > 0 for value in vars(self).values() if value is not None):
            raise ValueError(f"host limits must be positive: {self}")


Blame = Literal["model", "platform", "unknown"]

# Who a fault is traced to, by code, unless the host knows better (see ModelFault.blame).
_BLAME_BY_CODE: dict[str, Blame] = {
    "host_start_failed": "model",  # the child could not load the model or refused its tensors
    "timeout": "model",  # the run used its whole CPU budget
    "run_failed": "model",  # onnxruntime failed on the model (a failed allocation under its limit, say)
    "non_finite": "model",
    "bad_output_shape": "model",
    "host_died": "unknown",  # the child crashed: the model, or a fault signal sent from outside
    "bad_input": "platform",  # the caller sent tensors that break the contract
}


class ModelFault(Exception):
    """The model could not answer. `code` is machine-readable, `message` is for the bot's author.

    Model faults (host_start_failed, host_died, timeout, run_failed, non_finite, bad_output_shape)
    leave the host dead; a caller error (bad_input) does not. `blame` says whom the fault is traced
    to: "model" (the bot's own doing: it forfeits), "platform" (the host was closed, killed from
    outside, could not be started, or never got the CPU: never the bot's loss) or "unknown" (the
    child crashed; the caller may try a fresh host to find out). See the module doc for the rule.
    """

    def __init__(self, code: str, message: str, *, blame: Blame | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.blame: Blame = blame or _BLAME_BY_CODE.get(code, "unknown")


class ModelHost(InferenceBackend):
    """An uploaded model served by a child process; `run` matches `InProcessSession.run`.

    `model_bytes` must be validated, re-serialised ONNX. Outputs are float32 copies keyed by output
    name. A batch larger than `limits.max_batch` is split into several calls (each with its own
    deadline) and the outputs are concatenated. Not thread-safe: one caller at a time.
    """

    def __init__(
        self, model_bytes: bytes, limits: HostLimits = HostLimits(), *, transport: Transport = "shm"
    ) -> None:
        self._limits = limits
        self._fault: ModelFault | None = None  # the first; once set, the host is dead
        self._child_cpu_s = 0.0  # the child's CPU time at its last answer
        self._transport: _SharedMemory | _Pipe | None = None
        self._child = _ChildResources.create()
        self._release = weakref.finalize(self, self._child.release)
        self._channel = _Channel(self._child.socket)
        try:
            self._child.spawn()
            self._start(model_bytes, transport)
        except ModelFault as fault:
            raise self._fail(fault) from None
        except TimeoutError:
            message = f"the model host did not start within {limits.start_timeout_s:g} s"
            raise self._fail(ModelFault("host_start_failed", message, blame="platform")) from None
        except (EOFError, OSError, _ProtocolError):
            raise self._fail(self._death("host_start_failed")) from None

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(tensor.name for tensor in self._layout.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(tensor.name for tensor in self._layout.outputs)

    @property
    def cpu_seconds(self) -> float:
        """The CPU time (user + system, all threads) the child had used by its last answer. What a
        call cost the model is the difference across it: the same on an idle or a busy machine."""
        return self._child_cpu_s

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._child.process.pid

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name, float32, shaped (batch, *dims); raises ModelFault."""
        arrays, batch = self._checked_inputs(inputs)
        step = self._limits.max_batch
        chunks = [
            self._run_chunk({name: array[start : start + step] for name, array in arrays.items()})
            for start in range(0, batch, step)
        ]
        if len(chunks) == 1:
            return chunks[0]
        return {name: np.concatenate([chunk[name] for chunk in chunks]) for name in self.output_names}

    def describe_child(self) -> dict[str, Any]:
        """The child's pid, cwd and its entries, environment and rlimits (for tests and operators)."""
        with self._faults_kill_host():
            deadline = time.monotonic() + self._limits.call_timeout_s
            self._channel.send_json({"op": "describe"}, deadline)
            return self._channel.receive_json(deadline)

    def close(self) -> None:
        """Kills the child and frees everything; later calls raise ModelFault("host_died")."""
        self._fail(ModelFault("host_died", "the model host was closed", blame="platform"))

    def _start(self, model_bytes: bytes, transport: Transport) -> None:
        """Hands the child its limits and the model, and agrees with it on the tensors' layout."""
        limits = self._limits
        deadline = time.monotonic() + limits.start_timeout_s
        self._channel.send_json({name: getattr(limits, name) for name in _CHILD_CONFIG}, deadline)
        self._channel.send(model_bytes, deadline)
        described = self._channel.receive_json(deadline)
        if "fault" in described:
            raise _child_fault(described)
        inputs, outputs = _tensors_of(described)
        layout = self._layout = _Layout(transport, limits.max_batch, inputs, outputs, self._child.memory_fd)
        if limits.memory_bytes is not None and layout.shared_bytes() > limits.memory_bytes:
            raise ModelFault("host_start_failed", f"its tensors need {layout.shared_bytes()} bytes per call")
        self._transport = _SharedMemory.allocate(layout) if transport == "shm" else _Pipe(layout)
        self._channel.send_json(layout.to_json(), deadline)
        ready = self._channel.receive_json(deadline)
        if ready.get("ready") is not True:
            raise _ProtocolError("the model host did not confirm it is ready")
        self._child_cpu_s = float(ready.get("cpu_s", 0.0))

    def _checked_inputs(self, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
        """The inputs as arrays in model order, and their common batch size; raises bad_input."""
        if set(inputs) != set(self.input_names):
            raise ModelFault("bad_input", f"expected inputs {list(self.input_names)}, got {sorted(inputs)}")
        arrays = {tensor.name: np.asarray(inputs[tensor.name]) for tensor in self._layout.inputs}
        for tensor in self._layout.inputs:
            array = arrays[tensor.name]
            if array.ndim == 0 or array.shape[1:] != tensor.dims:
                message = f"{tensor.name!r} has shape {array.shape}, expected (batch, *{tensor.dims})"
                raise ModelFault("bad_input", message)
            if not np.can_cast(array.dtype, np.float32, casting="same_kind"):
                raise ModelFault("bad_input", f"{tensor.name!r} has dtype {array.dtype}, expected float32")
        batches = {len(array) for array in arrays.values()}
        if len(batches) != 1 or 0 in batches:
            raise ModelFault("bad_input", f"the inputs need one common, non-zero batch size; got {batches}")
        return arrays, batches.pop()

    def _run_chunk(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One model call of at most max_batch rows."""
        batch = len(next(iter(arrays.values())))
        with self._faults_kill_host():
            deadline = time.monotonic() + self._limits.call_timeout_s + self._limits.kill_grace_s
            self._transport.send_inputs(self._channel, arrays, batch, deadline)
            reply = self._channel.receive_json(deadline)
            if "fault" in reply:
                raise self._fail(_child_fault(reply))
            self._child_cpu_s = float(reply.get("cpu_s", self._child_cpu_s))
            outputs = self._transport.receive_outputs(self._channel, batch, deadline)
        for name, output in outputs.items():
            if not np.isfinite(output).all():
                raise self._fail(ModelFault("non_finite", f"output {name!r} contains NaN or infinity"))
        return outputs

    @contextlib.contextmanager
    def _faults_kill_host(self) -> Iterator[None]:
        """Refuses to talk to a dead host, and turns a silent or broken child into a ModelFault."""
        if self._fault is not None:
            raise ModelFault("host_died", f"the model host is dead ({self._fault})", blame=self._fault.blame)
        try:
            yield
        except TimeoutError:
            raise self._fail(self._overdue()) from None
        except (EOFError, OSError, _ProtocolError):
            raise self._fail(self._death("host_died")) from None

    def _overdue(self) -> ModelFault:
        """The fault of a call that got no answer by the wall-clock backstop, traced by CPU time."""
        limits = self._limits
        waited = limits.call_timeout_s + limits.kill_grace_s
        used = _cpu_seconds(self.pid) - self._child_cpu_s
        if used >= limits.call_timeout_s:
            return ModelFault(
                "timeout", f"no answer within {waited:g} s after {used:.1f} s of CPU; host killed"
            )
        message = (
            f"no answer within {waited:g} s, but the model got only {used:.1f} s of CPU: the machine stalled"
        )
        return ModelFault("timeout", message, blame="platform")

    def _fail(self, fault: ModelFault) -> ModelFault:
        """Records the first fault, kills the child and frees everything; returns `fault` to raise."""
        self._fault = self._fault or fault
        self._transport = None  # unmaps the shared memory
        self._release()
        return fault

    def _death(self, code: str) -> ModelFault:
        """The fault `code` of a child that closed its socket or broke the protocol: how it ended, its
        last words, and whose doing that was (a signal from outside is the platform's)."""
        try:
            status = self._child.process.wait(timeout=_REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return ModelFault(code, "the model host broke off the conversation", blame="unknown")
        how, blame = _end_of(status)
        message = _shorten(f"the model host {how}. {_tail(self._child.stderr)}".strip())
        return ModelFault(code, message, blame=blame)


@dataclass
class _ChildResources:
    """What the parent holds for one child; `release` frees it all (once, through weakref.finalize)."""

    socket: socket.socket  # the parent's end of the socket pair
    child_end: socket.socket  # the child's end, closed here once the child has it
    memory_fd: int  # the shared memory (a memfd, passed at spawn), empty until the layout is known
    stderr: IO[bytes]  # an unnamed file: the child's last words
    workdir: str  # the child's empty working directory
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> _ChildResources:
        with contextlib.ExitStack() as undo:  # a failure frees what was made before it
            parent_end, child_end = socket.socketpair()
            undo.callback(parent_end.close)
            undo.callback(child_end.close)
            memory_fd = os.memfd_create("arena-host", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            undo.callback(os.close, memory_fd)
            stderr = undo.enter_context(tempfile.TemporaryFile())
            workdir = tempfile.mkdtemp(prefix="arena-host-")
            undo.pop_all()
        return cls(parent_end, child_end, memory_fd, stderr, workdir)

    def spawn(self) -> None:
        """Starts a fresh interpreter (no user site-packages) running `_serve` over the socket."""
        socket_fd = self.child_end.fileno()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-s", "-m", "arena_bots.host", str(socket_fd)],
                cwd=self.workdir,
                env=child_environment(self.workdir),
                pass_fds=(socket_fd, self.memory_fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.stderr,
            )
        except OSError as error:
            raise ModelFault("host_start_failed", f"cannot start the model host: {error}") from None
        finally:
            self.child_end.close()  # else the parent would not see the child close its end

    def release(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        for stream in (self.socket, self.child_end, self.stderr):
            stream.close()
        os.close(self.memory_fd)
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass(frozen=True)
class _Tensor:
    """One float32 tensor of the model: `dims` is its shape without the batch dimension."""

    name: str
    dims: tuple[int, ...]

    def shape(self, batch: int) -> tuple[int, ...]:
        return (batch, *self.dims)

    def nbytes(self, batch: int) -> int:
        return batch * math.prod(self.dims) * _FLOAT32_BYTES


@dataclass(frozen=True)
class _Layout:
    """What both sides agree on: the transport, the most rows per call, the tensors, the memfd."""

    transport: Transport
    max_batch: int
    inputs: tuple[_Tensor, ...]
    outputs: tuple[_Tensor, ...]
    memory_fd: int  # the same number in both processes (passed at spawn)

    def block_offsets(self) -> list[int]:
        """Where each tensor's block starts in the shared memory: inputs, then outputs."""
        sizes = [tensor.nbytes(self.max_batch) for tensor in self.inputs + self.outputs]
        aligned = [-(-size // _BLOCK_ALIGNMENT) * _BLOCK_ALIGNMENT for size in sizes]
        return [sum(aligned[:index]) for index in range(len(aligned) + 1)]

    def shared_bytes(self) -> int:
        return self.block_offsets()[-1]

    def to_json(self) -> dict[str, Any]:
        def tensors(group: tuple[_Tensor, ...]) -> list[Any]:
            return [[tensor.name, list(tensor.dims)] for tensor in group]

        fields = {"transport": self.transport, "max_batch": self.max_batch, "memory_fd": self.memory_fd}
        return fields | {"inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Layout:
        def tensors(entries: list[Any]) -> tuple[_Tensor, ...]:
            return tuple(_Tensor(name, tuple(dims)) for name, dims in entries)

        inputs, outputs = tensors(data["inputs"]), tensors(data["outputs"])
        return cls(data["transport"], data["max_batch"], inputs, outputs, data["memory_fd"])


class _ProtocolError(Exception):
    """The other side sent something the protocol does not allow."""


class _Channel:
    """Length-prefixed frames over a stream socket.

    `deadline` is a time.monotonic() value after which a send or receive raises TimeoutError;
    None blocks (the child). A closed peer raises EOFError or an OSError.
    """

    _LENGTH = struct.Struct("<Q")

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._received = bytearray()  # read from the socket, not yet returned

    def send(self, payload: bytes | np.ndarray, deadline: float | None = None) -> None:
        data = memoryview(payload)
        self._arm(deadline)
        self._socket.sendall(self._LENGTH.pack(data.nbytes) + data)

    def receive(self, deadline: float | None = None, max_bytes: int = _MAX_MESSAGE_BYTES) -> bytearray:
        (length,) = self._LENGTH.unpack(self._read_exactly(self._LENGTH.size, deadline))
        if length > max_bytes:
            raise _ProtocolError(f"a frame of {length} bytes, at most {max_bytes} allowed")
        return self._read_exactly(length, deadline)

    def send_json(self, message: Mapping[str, Any], deadline: float | None = None) -> None:
        self.send(json.dumps(message).encode(), deadline)

    def receive_json(self, deadline: float | None = None) -> dict[str, Any]:
        try:
            message = json.loads(self.receive(deadline))
        except ValueError as error:
            raise _ProtocolError(f"not JSON: {error}") from None
        if not isinstance(message, dict):
            raise _ProtocolError("a message must be a JSON object")
        return message

    def _read_exactly(self, size: int, deadline: float | None) -> bytearray:
        while len(self._received) < size:
            self._arm(deadline)
            chunk = self._socket.recv(max(_RECEIVE_BYTES, size - len(self._received)))
            if not chunk:
                raise EOFError("the other side closed the socket")
            self._received += chunk
        data = self._received[:size]
        del self._received[:size]
        return data

    def _arm(self, deadline: float | None) -> None:
        if deadline is not None:
            self._socket.settimeout(max(deadline - time.monotonic(), 1e-3))


class _SharedMemory:
    """Tensors travel through blocks of the shared memory, float32 arrays (max_batch, *dims)."""

    def __init__(self, layout: _Layout) -> None:
        self.inputs, self.outputs = layout.inputs, layout.outputs
        memory = mmap.mmap(layout.memory_fd, layout.shared_bytes())
        tensors, offsets = layout.inputs + layout.outputs, layout.block_offsets()[:-1]
        blocks = [
            np.ndarray(tensor.shape(layout.max_batch), dtype=np.float32, buffer=memory, offset=offset)
            for tensor, offset in zip(tensors, offsets, strict=True)
        ]
        count = len(layout.inputs)
        self._input_blocks = {t.name: block for t, block in zip(self.inputs, blocks[:count], strict=True)}
        self._output_blocks = {t.name: block for t, block in zip(self.outputs, blocks[count:], strict=True)}

    @classmethod
    def allocate(cls, layout: _Layout) -> _SharedMemory:
        """Parent side: sizes the memfd, seals its size, maps it."""
        os.ftruncate(layout.memory_fd, layout.shared_bytes())
        fcntl.fcntl(layout.memory_fd, fcntl.F_ADD_SEALS, _SEALS)
        return cls(layout)

    def send_inputs(
        self, channel: _Channel, arrays: Mapping[str, np.ndarray], batch: int, deadline: float
    ) -> None:
        for name, block in self._input_blocks.items():
            block[:batch] = arrays[name]
        channel.send_json({"op": "run", "batch": batch}, deadline)

    def receive_outputs(self, channel: _Channel, batch: int, deadline: float) -> dict[str, np.ndarray]:
        return {name: block[:batch].copy() for name, block in self._output_blocks.items()}

    def receive_inputs(self, channel: _Channel, batch: int) -> dict[str, np.ndarray]:
        return {name: block[:batch] for name, block in self._input_blocks.items()}

    def send_outputs(self, channel: _Channel, outputs: Sequence[np.ndarray]) -> None:
        for block, output in zip(self._output_blocks.values(), outputs, strict=True):
            block[: len(output)] = output
        channel.send_json({"ok": True, "cpu_s": time.process_time()})


class _Pipe:
    """Tensors travel through the socket, one raw float32 frame each after the JSON message."""

    def __init__(self, layout: _Layout) -> None:
        self.inputs, self.outputs = layout.inputs, layout.outputs

    def send_inputs(
        self, channel: _Channel, arrays: Mapping[str, np.ndarray], batch: int, deadline: float
    ) -> None:
        channel.send_json({"op": "run", "batch": batch}, deadline)
        for tensor in self.inputs:
            channel.send(np.ascontiguousarray(arrays[tensor.name], dtype=np.float32), deadline)

    def receive_outputs(self, channel: _Channel, batch: int, deadline: float) -> dict[str, np.ndarray]:
        return {tensor.name: _receive_array(channel, tensor, batch, deadline) for tensor in self.outputs}

    def receive_inputs(self, channel: _Channel, batch: int) -> dict[str, np.ndarray]:
        return {tensor.name: _receive_array(channel, tensor, batch, None) for tensor in self.inputs}

    def send_outputs(self, channel: _Channel, outputs: Sequence[np.ndarray]) -> None:
        channel.send_json({"ok": True, "cpu_s": time.process_time()})
        for output in outputs:
            channel.send(np.ascontiguousarray(output, dtype=np.float32))


def _receive_array(channel: _Channel, tensor: _Tensor, batch: int, deadline: float | None) -> np.ndarray:
    frame = channel.receive(deadline, max_bytes=tensor.nbytes(batch))
    if len(frame) != tensor.nbytes(batch):
        raise _ProtocolError(f"{tensor.name!r}: {len(frame)} bytes, expected {tensor.nbytes(batch)}")
    return np.frombuffer(frame, dtype=np.float32).reshape(tensor.shape(batch))


def _tensors_of(described: Mapping[str, Any]) -> tuple[tuple[_Tensor, ...], tuple[_Tensor, ...]]:
    """The model's inputs and outputs from the child's description; raises host_start_failed.

    The contract: float32 tensors whose first dimension is the batch (dynamic for inputs) and
    whose other dimensions are fixed, so blocks of max_batch rows can be allocated once.
    """
    try:
        inputs = tuple(_tensor_of("input", *entry) for entry in described["inputs"])
        outputs = tuple(_tensor_of("output", *entry) for entry in described["outputs"])
    except (KeyError, TypeError, ValueError) as error:
        raise _ProtocolError(f"bad tensor description: {error}") from None
    return inputs, outputs


def _tensor_of(kind: str, name: str, element_type: str, shape: list[Any] | None) -> _Tensor:
    def refuse(reason: str) -> ModelFault:
        return ModelFault("host_start_failed", f"{kind} {name!r} {reason}")

    if element_type != "tensor(float)":
        raise refuse(f"is {element_type}; the contract needs tensor(float)")
    if not shape:
        raise refuse("has no batch dimension")
    if kind == "input" and isinstance(shape[0], int):
        raise refuse(f"has a fixed batch dimension {shape[0]}; it must be dynamic")
    dims = tuple(shape[1:])
    if not all(type(dim) is int and dim > 0 for dim in dims):
        raise refuse(f"has shape {shape}: every dimension but the batch must be fixed")
    return _Tensor(name, dims)


def _child_fault(reply: Mapping[str, Any]) -> ModelFault:
    """The fault the child reported; an unknown code counts as a broken host."""
    code = reply.get("fault")
    if code not in _CHILD_FAULT_CODES:
        return ModelFault("host_died", f"the model host reported an unknown fault {code!r:.40}")
    return ModelFault(code, _shorten(str(reply.get("message", ""))))


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_FAULT_MESSAGE_CHARS else text[: _MAX_FAULT_MESSAGE_CHARS - 3] + "..."


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has used so far; +inf if it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except OSError:
        return math.inf
    user_ticks, system_ticks = int(fields[11]), int(fields[12])  # utime and stime (fields 14 and 15)
    return (user_ticks + system_ticks) / _CLOCK_TICKS_PER_S


def _end_of(status: int) -> tuple[str, Blame]:
    """How a child with this exit status (Popen.returncode: -N for signal N) ended, and whose doing
    that was: a signal from outside is the platform's; a fault signal or an exit may be the model's."""
    if status >= 0:
        return f"exited with status {status}", "unknown"
    if -status in _OWN_FAULT_SIGNALS:
        return f"was killed by {_signal_name(-status)}", "unknown"
    return f"was killed by {_signal_name(-status)} from outside (not the model's doing)", "platform"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _tail(stream: IO[bytes]) -> str:
    """The last bytes written to `stream`, as text."""
    stream.seek(0, os.SEEK_END)
    stream.seek(max(stream.tell() - _STDERR_TAIL_BYTES, 0))
    return stream.read().decode(errors="replace").strip()


def child_environment(workdir: str) -> dict[str, str]:
    """The child's whole environment: what Python and ONNX Runtime need, and no secrets."""
    inherited = {name: os.environ[name] for name in _INHERITED_VARIABLES if name in os.environ}
    return (
        {"PATH": os.defpath}
        | inherited
        | {
            "PYTHONPATH": _PACKAGE_ROOT,
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": workdir,
            "TMPDIR": workdir,
            "LANG": "C.UTF-8",
            "ORT_DISABLE_TELEMETRY": "1",  # else ORT 1.31 keeps a device id and event store under ~/.cache
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2",  # each glibc arena reserves 64 MiB of address space (RLIMIT_AS)
        }
    )


# ---- the child ----------------------------------------------------------------------------


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

    def run(self, session: ort.InferenceSession, names: list[str], feeds: dict[str, np.ndarray]) -> list[Any]:
        options = ort.RunOptions()
        self._armed = (options, time.process_time() + self.timeout_s)
        try:
            return session.run(names, feeds, options)
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
    """The child's life: load the model, map the transport, answer calls until the parent leaves."""
    channel = _Channel(socket.socket(fileno=socket_fd))
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
    layout = _Layout.from_json(channel.receive_json())
    transport = _SharedMemory(layout) if layout.transport == "shm" else _Pipe(layout)
    os.close(layout.memory_fd)
    channel.send_json({"ready": True, "cpu_s": time.process_time()})
    while True:
        request = channel.receive_json()
        if request["op"] == "describe":
            channel.send_json(_describe_process())
        else:
            _serve_run(channel, session, transport, watchdog, request["batch"])


def _serve_run(
    channel: _Channel,
    session: ort.InferenceSession,
    transport: _SharedMemory | _Pipe,
    watchdog: _Watchdog,
    batch: int,
) -> None:
    """One model call: inputs in, then outputs or a fault out."""
    feeds = transport.receive_inputs(channel, batch)
    try:
        outputs = watchdog.run(session, [tensor.name for tensor in transport.outputs], feeds)
    except _DeadlineExceeded:
        message = f"inference ran past {watchdog.timeout_s:g} s of CPU"
        channel.send_json({"fault": "timeout", "message": message})
        return
    except Exception as error:  # onnxruntime's failures (e.g. a failed allocation) are the model's
        channel.send_json({"fault": "run_failed", "message": f"onnxruntime failed: {error}"})
        return
    for tensor, output in zip(transport.outputs, outputs, strict=True):
        if output.shape != tensor.shape(batch):
            message = f"output {tensor.name!r} has shape {output.shape}, expected {tensor.shape(batch)}"
            channel.send_json({"fault": "bad_output_shape", "message": message})
            return
    transport.send_outputs(channel, outputs)


if __name__ == "__main__":
    try:
        _serve(int(sys.argv[1]))
    except (EOFError, ConnectionError):  # the parent left without killing the child: it died
        _orphaned()
