"""The model host: runs an uploaded model in an isolated child process (ARCHITECTURE §3, §4).

Upload checks cannot prove a model harmless: some misbehave only on some inputs, and some ONNX
Runtime paths abort the whole process. So at match time a model runs in a child process that
starts from a fresh interpreter (no fork: the parent may have threads) in an empty temporary
working directory, with a scrubbed environment, an address-space and a CPU-time limit and no core
dumps. Whatever the model does, the caller gets outputs or a `ModelFault`; it never hangs or dies.

The module is in three parts: this one, the parent's side (`ModelHost`, its limits and faults);
`arena_bots.host_protocol`, how the two sides talk and where the tensors lie; and
`arena_bots.host_child`, the child's loop, rlimits and watchdog.

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
same positions and blames the model only if that one dies too (arena_workers.model_cache.ServedModel).
Any other signal (SIGKILL, SIGTERM, SIGINT, SIGHUP, ...) came from outside, from an operator, a
supervisor or the OOM killer, and is the platform's: never the bot's loss, at start or in a call.
(The hard CPU limit's SIGKILL never ends a child: SIGXCPU, at the soft limit, ends it first.)
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from arena_bots.host_protocol import (
    CALL_FAULT_CODES,
    DESCRIBE,
    DONE,
    RUN,
    Channel,
    Layout,
    ProtocolError,
    SharedMemory,
    Tensor,
)
from arena_bots.runtime import InferenceBackend

_FLOAT32 = np.dtype(np.float32)
_MAX_FAULT_MESSAGE_CHARS = 600  # of text from the child quoted in a ModelFault
_STDERR_TAIL_BYTES = 400
_REAP_TIMEOUT_S = 1.0  # how long a child that closed its socket gets to exit before it is killed
_CHILD_CONFIG = ("memory_bytes", "cpu_seconds", "call_timeout_s", "threads")  # HostLimits fields
_CHILD_FAULT_CODES = frozenset({"host_start_failed", *CALL_FAULT_CODES})
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


def second_loss_verdict(first: ModelFault, second: ModelFault) -> ModelFault | None:
    """Whom a host lost twice on the same positions costs, the first loss not the model's doing (the
    caller tried a fresh host) and the second not provably so: the model when both hosts crashed of
    unknown cause (the fault returned, blamed on it), otherwise the platform (None)."""
    if first.blame == second.blame == "unknown":
        again = f"{second.message} (it crashed a fresh host too, on the same positions)"
        return ModelFault(second.code, again, blame="model")
    return None


class ModelHost(InferenceBackend):
    """An uploaded model served by a child process; `run` matches `InProcessSession.run`.

    `model_bytes` must be validated, re-serialised ONNX. Outputs are float32 copies keyed by output
    name. A batch larger than `limits.max_batch` is split into several calls (each with its own
    deadline) and the outputs are concatenated. Not thread-safe: one caller at a time.
    """

    def __init__(self, model_bytes: bytes, limits: HostLimits = HostLimits()) -> None:
        self._limits = limits
        self._fault: ModelFault | None = None  # the first; once set, the host is dead
        self._child_cpu_s = 0.0  # the child's CPU time at its last answer
        self._memory: SharedMemory | None = None  # mapped once the layout is agreed
        self._child = _ChildResources.create()
        self._release = weakref.finalize(self, self._child.release)
        self._channel = Channel(self._child.socket)
        self._conversation = _Conversation(self)
        try:
            self._child.spawn()
            self._start(model_bytes)
        except ModelFault as fault:
            raise self._fail(fault) from None
        except TimeoutError:
            message = f"the model host did not start within {limits.start_timeout_s:g} s"
            raise self._fail(ModelFault("host_start_failed", message, blame="platform")) from None
        except (EOFError, OSError, ProtocolError):
            raise self._fail(self._death("host_start_failed")) from None

    @property
    def input_names(self) -> tuple[str, ...]:
        return self._input_names

    @property
    def output_names(self) -> tuple[str, ...]:
        return self._output_names

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
        if batch <= step:
            return self._run_chunk(arrays, batch)
        chunks = [
            self._run_chunk({name: array[start : start + step] for name, array in arrays.items()}, rows)
            for start in range(0, batch, step)
            if (rows := min(step, batch - start))
        ]
        return {name: np.concatenate([chunk[name] for chunk in chunks]) for name in self.output_names}

    def describe_child(self) -> dict[str, Any]:
        """The child's pid, cwd and its entries, environment and rlimits (for tests and operators)."""
        with self._conversation:
            deadline = time.monotonic() + self._limits.call_timeout_s
            self._channel.ring(DESCRIBE)
            return self._channel.receive_json(deadline)

    def close(self) -> None:
        """Kills the child and frees everything; later calls raise ModelFault("host_died")."""
        self._fail(ModelFault("host_died", "the model host was closed", blame="platform"))

    def _start(self, model_bytes: bytes) -> None:
        """Hands the child its limits and the model, and agrees with it on the tensors' layout."""
        limits = self._limits
        deadline = time.monotonic() + limits.start_timeout_s
        self._channel.send_json({name: getattr(limits, name) for name in _CHILD_CONFIG}, deadline)
        self._channel.send(model_bytes, deadline)
        described = self._channel.receive_json(deadline)
        if "fault" in described:
            raise _child_fault(described.get("fault"), described.get("message"))
        inputs, outputs = _tensors_of(described)
        layout = self._layout = Layout(limits.max_batch, inputs, outputs, self._child.memory_fd)
        self._input_names = tuple(tensor.name for tensor in inputs)
        self._output_names = tuple(tensor.name for tensor in outputs)
        if limits.memory_bytes is not None and layout.shared_bytes() > limits.memory_bytes:
            raise ModelFault("host_start_failed", f"its tensors need {layout.shared_bytes()} bytes per call")
        self._memory = SharedMemory.allocate(layout)
        self._channel.send_json(layout.to_json(), deadline)
        ready = self._channel.receive_json(deadline)
        if ready.get("ready") is not True:
            raise ProtocolError("the model host did not confirm it is ready")
        self._child_cpu_s = float(ready.get("cpu_s", 0.0))

    def _checked_inputs(self, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
        """The inputs as arrays in model order, and their common batch size; raises bad_input."""
        if inputs.keys() != set(self._input_names):
            raise ModelFault("bad_input", f"expected inputs {list(self.input_names)}, got {sorted(inputs)}")
        arrays = {}
        for tensor in self._layout.inputs:
            array = arrays[tensor.name] = np.asarray(inputs[tensor.name])
            if array.ndim == 0 or array.shape[1:] != tensor.dims:
                message = f"{tensor.name!r} has shape {array.shape}, expected (batch, *{tensor.dims})"
                raise ModelFault("bad_input", message)
            if array.dtype != _FLOAT32 and not np.can_cast(array.dtype, _FLOAT32, casting="same_kind"):
                raise ModelFault("bad_input", f"{tensor.name!r} has dtype {array.dtype}, expected float32")
        batches = {len(array) for array in arrays.values()}
        if len(batches) != 1 or 0 in batches:
            raise ModelFault("bad_input", f"the inputs need one common, non-zero batch size; got {batches}")
        return arrays, batches.pop()

    def _run_chunk(self, arrays: dict[str, np.ndarray], batch: int) -> dict[str, np.ndarray]:
        """One model call of `batch` rows, at most max_batch."""
        with self._conversation:
            deadline = time.monotonic() + self._limits.call_timeout_s + self._limits.kill_grace_s
            self._memory.write_call(arrays, batch)
            self._channel.ring(RUN)
            if self._channel.wait_for_ring(deadline) != DONE:
                raise ProtocolError("the model host rang an unknown doorbell")
            answer = self._memory.read_answer()
            if answer.status:
                raise self._fail(_child_fault(answer.fault_code, answer.message))
            self._child_cpu_s = answer.cpu_s
            rows, outputs = self._memory.read_outputs(batch)
        if not np.isfinite(rows).all():  # one pass over all outputs; the culprit's name for the message
            name = next(name for name, output in outputs.items() if not np.isfinite(output).all())
            raise self._fail(ModelFault("non_finite", f"output {name!r} contains NaN or infinity"))
        return outputs

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
        self._memory = None  # unmaps the shared memory
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


class _Conversation:
    """`with host._conversation:` around a talk with the child refuses a dead host, and turns a
    silent or broken child into a ModelFault (a class, not a generator: it runs on every call)."""

    def __init__(self, host: ModelHost) -> None:
        self._host = weakref.proxy(host)  # no cycle: the host's finalizer runs when it is dropped

    def __enter__(self) -> None:
        fault = self._host._fault
        if fault is not None:
            raise ModelFault("host_died", f"the model host is dead ({fault})", blame=fault.blame)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        if kind is None:
            return
        if issubclass(kind, TimeoutError):
            raise self._host._fail(self._host._overdue()) from None
        if issubclass(kind, (EOFError, OSError, ProtocolError)):
            raise self._host._fail(self._host._death("host_died")) from None


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
            parent_end.setblocking(False)  # the parent waits with a deadline (host_protocol.Channel)
            undo.callback(parent_end.close)
            undo.callback(child_end.close)
            memory_fd = os.memfd_create("arena-host", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            undo.callback(os.close, memory_fd)
            stderr = undo.enter_context(tempfile.TemporaryFile())
            workdir = tempfile.mkdtemp(prefix="arena-host-")
            undo.pop_all()
        return cls(parent_end, child_end, memory_fd, stderr, workdir)

    def spawn(self) -> None:
        """Starts a fresh interpreter (no user site-packages) serving the model over the socket
        (`arena_bots.host_child`)."""
        socket_fd = self.child_end.fileno()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-s", "-m", "arena_bots.host_child", str(socket_fd)],
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


def _tensors_of(described: Mapping[str, Any]) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """The model's inputs and outputs from the child's description; raises host_start_failed.

    The contract: float32 tensors whose first dimension is the batch (dynamic for inputs) and
    whose other dimensions are fixed, so blocks of max_batch rows can be allocated once.
    """
    try:
        inputs = tuple(_tensor_of("input", *entry) for entry in described["inputs"])
        outputs = tuple(_tensor_of("output", *entry) for entry in described["outputs"])
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolError(f"bad tensor description: {error}") from None
    return inputs, outputs


def _tensor_of(kind: str, name: str, element_type: str, shape: list[Any] | None) -> Tensor:
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
    return Tensor(name, dims)


def _child_fault(code: Any, message: Any) -> ModelFault:
    """The fault the child reported (its code and message); an unknown code counts as a broken host."""
    if not isinstance(code, str) or code not in _CHILD_FAULT_CODES:
        return ModelFault("host_died", f"the model host reported an unknown fault {code!r:.40}")
    return ModelFault(code, _shorten(str(message or "")))


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
