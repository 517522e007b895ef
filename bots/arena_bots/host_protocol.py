"""The model host's protocol: how the parent (`arena_bots.host`) and the child
(`arena_bots.host_child`) talk, and where the tensors lie (ARCHITECTURE §4).

Control messages travel over a Unix socket pair in frames of an 8-byte little-endian length and a
payload, at start and when asked:
  parent -> child  config JSON, then the model bytes
  child -> parent  the session's tensors JSON {"inputs"|"outputs": [[name, type, shape], ...]}
                   or {"fault": "host_start_failed", "message": ...}
  parent -> child  the layout JSON: max_batch, the tensors with fixed dims, the memfd
  child -> parent  {"ready": true, "cpu_s": t}      (t: the child's CPU seconds so far)
  parent -> child  the doorbell DESCRIBE -> the child's pid, cwd, environment and rlimits, as JSON
A model call costs no JSON and no copy through the socket: the parent writes the inputs and the
call header (the batch) into the shared memory and rings the doorbell RUN, one byte on the socket;
the child runs the model, writes the outputs and its answer (status, its CPU seconds, a fault's
message) into the shared memory and rings DONE. The socket stays the doorbell because it also
tells each side when the other is gone (end of file). The parent never unpickles anything from the
child (unpickling is running code) and reads the header once per call, into its own copy.

The shared memory is one anonymous memfd (Linux): it has no name in /dev/shm, so nothing leaks even
when both processes are killed, and it is sealed against resizing, so a compromised child cannot
shrink it under the parent's mapping (which would crash the parent with SIGBUS). It holds the call
header, then one block per input sized for max_batch rows, then the outputs' block: a call's outputs
lie there packed one after the other for its batch (output k starts where output k-1's `batch` rows
end), so the parent reads them all with one copy and checks them with one pass. The child binds
ONNX Runtime's inputs and outputs to views of these blocks, so the model reads its inputs and writes
its outputs in place.
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import select
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

RUN = b"r"  # parent -> child: the call in the shared memory is ready
DESCRIBE = b"d"  # parent -> child: answer with the process description (JSON)
DONE = b"!"  # child -> parent: the answer in the shared memory is ready

# The status of an answer in the call header: 0 for outputs, else 1 + the index of a fault code.
CALL_FAULT_CODES = ("timeout", "run_failed", "bad_output_shape")

_FLOAT32_BYTES = 4
_BLOCK_ALIGNMENT = 64  # bytes: each block starts on a cache line
_RECEIVE_BYTES = 1 << 16  # one recv reads up to this much, so a small frame costs one system call
_MAX_MESSAGE_BYTES = 1 << 20  # a JSON message from the child; anything longer is a protocol breach
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
# The call header at offset 0: batch (u32, the parent's), then the child's answer: status (u32),
# cpu_s (f64: its CPU seconds at the answer), the length of its fault message (u32) and, from
# _FAULT_TEXT_OFFSET, the message's UTF-8 bytes (at most _FAULT_TEXT_BYTES).
_BATCH = struct.Struct("<I")
_ANSWER = struct.Struct("<IdI")
_ANSWER_OFFSET = 8
_FAULT_TEXT_OFFSET = 64
_FAULT_TEXT_BYTES = 1024
_HEADER_BYTES = _FAULT_TEXT_OFFSET + _FAULT_TEXT_BYTES


def _aligned(size: int) -> int:
    return -(-size // _BLOCK_ALIGNMENT) * _BLOCK_ALIGNMENT


@dataclass(frozen=True)
class Tensor:
    """One float32 tensor of the model: `dims` is its shape without the batch dimension."""

    name: str
    dims: tuple[int, ...]

    def shape(self, batch: int) -> tuple[int, ...]:
        return (batch, *self.dims)

    def nbytes(self, batch: int) -> int:
        return batch * math.prod(self.dims) * _FLOAT32_BYTES


@dataclass(frozen=True)
class Layout:
    """What both sides agree on: the most rows per call, the tensors, the memfd."""

    max_batch: int
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    memory_fd: int  # the same number in both processes (passed at spawn)

    def block_offsets(self) -> list[int]:
        """Where each input's block starts in the shared memory (after the call header), then where
        the outputs' block starts, then where the memory ends."""
        sizes = [_aligned(tensor.nbytes(self.max_batch)) for tensor in self.inputs]
        sizes.append(sum(tensor.nbytes(self.max_batch) for tensor in self.outputs))
        return [_HEADER_BYTES + sum(sizes[:index]) for index in range(len(sizes) + 1)]

    def output_offsets(self, batch: int) -> list[int]:
        """Where each output of a `batch`-row call starts, in float32 elements from the start of the
        outputs' block (packed: each right after the last); the last entry is where they end."""
        sizes = [tensor.nbytes(batch) // _FLOAT32_BYTES for tensor in self.outputs]
        return [sum(sizes[:index]) for index in range(len(sizes) + 1)]

    def shared_bytes(self) -> int:
        return self.block_offsets()[-1]

    def to_json(self) -> dict[str, Any]:
        def tensors(group: tuple[Tensor, ...]) -> list[Any]:
            return [[tensor.name, list(tensor.dims)] for tensor in group]

        fields = {"max_batch": self.max_batch, "memory_fd": self.memory_fd}
        return fields | {"inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        def tensors(entries: list[Any]) -> tuple[Tensor, ...]:
            return tuple(Tensor(name, tuple(dims)) for name, dims in entries)

        inputs, outputs = tensors(data["inputs"]), tensors(data["outputs"])
        return cls(data["max_batch"], inputs, outputs, data["memory_fd"])


class ProtocolError(Exception):
    """The other side sent something the protocol does not allow."""


class Channel:
    """Length-prefixed frames and one-byte doorbells over a stream socket.

    `deadline` is a time.monotonic() value after which a send or receive raises TimeoutError; the
    parent gives one to every call and makes its socket non-blocking, so nothing it sends or waits
    for can block it past that. None blocks (the child). A closed peer raises EOFError or an OSError.
    """

    _LENGTH = struct.Struct("<Q")

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._received = bytearray()  # read from the socket, not yet returned
        self._readable, self._writable = select.poll(), select.poll()
        self._readable.register(sock, select.POLLIN)
        self._writable.register(sock, select.POLLOUT)

    def send(self, payload: bytes, deadline: float | None = None) -> None:
        data = memoryview(self._LENGTH.pack(len(payload)) + payload)
        while data:
            self._wait(self._writable, deadline)
            data = data[self._socket.send(data) :]

    def receive(self, deadline: float | None = None, max_bytes: int = _MAX_MESSAGE_BYTES) -> bytearray:
        (length,) = self._LENGTH.unpack(self._read_exactly(self._LENGTH.size, deadline))
        if length > max_bytes:
            raise ProtocolError(f"a frame of {length} bytes, at most {max_bytes} allowed")
        return self._read_exactly(length, deadline)

    def send_json(self, message: Mapping[str, Any], deadline: float | None = None) -> None:
        self.send(json.dumps(message).encode(), deadline)

    def receive_json(self, deadline: float | None = None) -> dict[str, Any]:
        try:
            message = json.loads(self.receive(deadline))
        except ValueError as error:
            raise ProtocolError(f"not JSON: {error}") from None
        if not isinstance(message, dict):
            raise ProtocolError("a message must be a JSON object")
        return message

    def ring(self, doorbell: bytes) -> None:
        """Sends a one-byte doorbell in one system call (the peer's buffer has room: each doorbell
        waits for its answer; one the buffer refuses is an OSError, as from a broken peer)."""
        self._socket.send(doorbell)

    def wait_for_ring(self, deadline: float | None = None) -> bytes:
        """The next one-byte doorbell: with nothing buffered, one wait and a one-byte read."""
        if self._received:
            return bytes(self._read_exactly(1, deadline))
        return self._receive_some(1, deadline)

    def _read_exactly(self, size: int, deadline: float | None) -> bytearray:
        while len(self._received) < size:
            self._received += self._receive_some(max(_RECEIVE_BYTES, size - len(self._received)), deadline)
        data = self._received[:size]
        del self._received[:size]
        return data

    def _receive_some(self, max_bytes: int, deadline: float | None) -> bytes:
        """What the socket has (1 to max_bytes bytes), once it has something; EOFError once closed."""
        self._wait(self._readable, deadline)
        chunk = self._socket.recv(max_bytes)
        if not chunk:
            raise EOFError("the other side closed the socket")
        return chunk

    @staticmethod
    def _wait(poll: select.poll, deadline: float | None) -> None:
        """Returns once the socket is ready (or closed) as `poll` asks; raises TimeoutError past the
        deadline. Without a deadline it returns at once: the blocking call itself waits."""
        if deadline is None:
            return
        remaining_ms = math.ceil((deadline - time.monotonic()) * 1e3)
        if remaining_ms <= 0 or not poll.poll(remaining_ms):
            raise TimeoutError("no answer before the deadline")


class Answer(NamedTuple):
    """The child's answer to a call, as read from the call header."""

    status: int  # 0: the outputs are in their block; else 1 + the index of a CALL_FAULT_CODES entry
    cpu_s: float  # the child's CPU seconds when it answered
    message: str  # a fault's message, for the bot's author; "" with outputs

    @property
    def fault_code(self) -> str | None:
        """None with outputs, else the fault's code (a status no child should send reads as
        "status N", which the parent takes for a broken host)."""
        if self.status == 0:
            return None
        if self.status <= len(CALL_FAULT_CODES):
            return CALL_FAULT_CODES[self.status - 1]
        return f"status {self.status}"


class SharedMemory:
    """The call header, the inputs' blocks (float32 arrays (max_batch, *dims)) and the outputs'
    block (float32, packed per call: `Layout.output_offsets`), in the memfd."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._memory = mmap.mmap(layout.memory_fd, layout.shared_bytes())
        offsets = layout.block_offsets()
        self._input_blocks = {
            tensor.name: np.ndarray(tensor.shape(layout.max_batch), np.float32, self._memory, offset)
            for tensor, offset in zip(layout.inputs, offsets, strict=False)
        }
        output_floats = (offsets[-1] - offsets[-2]) // _FLOAT32_BYTES
        self._output_block = np.ndarray((output_floats,), np.float32, self._memory, offsets[-2])
        # by batch: where the outputs end in the block, and each output's (name, start, end, shape)
        self._output_ends = [layout.output_offsets(batch)[-1] for batch in range(layout.max_batch + 1)]
        self._output_slices = [self._slices(batch) for batch in range(layout.max_batch + 1)]

    @classmethod
    def allocate(cls, layout: Layout) -> SharedMemory:
        """Parent side: sizes the memfd, seals its size, maps it."""
        os.ftruncate(layout.memory_fd, layout.shared_bytes())
        fcntl.fcntl(layout.memory_fd, fcntl.F_ADD_SEALS, _SEALS)
        return cls(layout)

    def _slices(self, batch: int) -> list[tuple[str, int, int, tuple[int, ...]]]:
        offsets = self.layout.output_offsets(batch)
        return [
            (tensor.name, start, end, tensor.shape(batch))
            for tensor, start, end in zip(self.layout.outputs, offsets, offsets[1:], strict=False)
        ]

    def _split_outputs(self, rows: np.ndarray, batch: int) -> dict[str, np.ndarray]:
        """The outputs of a `batch`-row call by name, shaped (batch, *dims), as views of `rows` (the
        outputs' block or a copy of its start)."""
        slices = self._output_slices[batch]
        return {name: rows[start:end].reshape(shape) for name, start, end, shape in slices}

    # the parent's side of a call

    def write_call(self, arrays: Mapping[str, np.ndarray], batch: int) -> None:
        """The inputs (`batch` rows each, at most max_batch) and the header's batch."""
        for name, block in self._input_blocks.items():
            block[:batch] = arrays[name]
        _BATCH.pack_into(self._memory, 0, batch)

    def read_answer(self) -> Answer:
        status, cpu_s, length = _ANSWER.unpack_from(self._memory, _ANSWER_OFFSET)
        if status == 0:
            return Answer(status, cpu_s, "")
        text = self._memory[_FAULT_TEXT_OFFSET : _FAULT_TEXT_OFFSET + min(length, _FAULT_TEXT_BYTES)]
        return Answer(status, cpu_s, text.decode(errors="replace"))

    def read_outputs(self, batch: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """A copy of a `batch`-row call's outputs (the child may write the block at any time), flat,
        and the outputs by name as views of that copy."""
        rows = self._output_block[: self._output_ends[batch]].copy()
        return rows, self._split_outputs(rows, batch)

    # the child's side of a call

    def read_batch(self) -> int:
        (batch,) = _BATCH.unpack_from(self._memory, 0)
        return batch

    def input_views(self, batch: int) -> dict[str, np.ndarray]:
        """The inputs of a `batch`-row call by name, as views of their blocks."""
        return {name: block[:batch] for name, block in self._input_blocks.items()}

    def output_views(self, batch: int) -> dict[str, np.ndarray]:
        """Where a `batch`-row call's outputs go, by name: views of the outputs' block."""
        return self._split_outputs(self._output_block, batch)

    def write_outputs(self, batch: int, outputs: Sequence[np.ndarray]) -> None:
        """Copies a call's outputs (in model order, shaped (batch, *dims)) into the outputs' block."""
        for view, output in zip(self.output_views(batch).values(), outputs, strict=True):
            view[...] = output

    def write_answer(self) -> None:
        """The answer "outputs ready", with this process's CPU seconds."""
        _ANSWER.pack_into(self._memory, _ANSWER_OFFSET, 0, time.process_time(), 0)

    def write_fault(self, code: str, message: str) -> None:
        """A fault of CALL_FAULT_CODES as the answer, with its message (cut to fit) and this
        process's CPU seconds."""
        text = message.encode(errors="replace")[:_FAULT_TEXT_BYTES]
        self._memory[_FAULT_TEXT_OFFSET : _FAULT_TEXT_OFFSET + len(text)] = text
        status = 1 + CALL_FAULT_CODES.index(code)
        _ANSWER.pack_into(self._memory, _ANSWER_OFFSET, status, time.process_time(), len(text))
