"""The model host's protocol: how the parent (`arena_bots.host`) and the child
(`arena_bots.host_child`) talk, and where the tensors lie (ARCHITECTURE §4).

Over a Unix socket pair, in frames of an 8-byte little-endian length and a payload:
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

The shared memory is one anonymous memfd (Linux): it has no name in /dev/shm, so nothing leaks even
when both processes are killed, and it is sealed against resizing, so a compromised child cannot
shrink it under the parent's mapping (which would crash the parent with SIGBUS).
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Transport = Literal["shm", "pipe"]

_FLOAT32_BYTES = 4
_BLOCK_ALIGNMENT = 64  # bytes: each tensor's block starts on a cache line
_RECEIVE_BYTES = 1 << 16  # one recv reads up to this much, so a small frame costs one system call
_MAX_MESSAGE_BYTES = 1 << 20  # a JSON message from the child; anything longer is a protocol breach
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


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
    """What both sides agree on: the transport, the most rows per call, the tensors, the memfd."""

    transport: Transport
    max_batch: int
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    memory_fd: int  # the same number in both processes (passed at spawn)

    def block_offsets(self) -> list[int]:
        """Where each tensor's block starts in the shared memory: inputs, then outputs."""
        sizes = [tensor.nbytes(self.max_batch) for tensor in self.inputs + self.outputs]
        aligned = [-(-size // _BLOCK_ALIGNMENT) * _BLOCK_ALIGNMENT for size in sizes]
        return [sum(aligned[:index]) for index in range(len(aligned) + 1)]

    def shared_bytes(self) -> int:
        return self.block_offsets()[-1]

    def to_json(self) -> dict[str, Any]:
        def tensors(group: tuple[Tensor, ...]) -> list[Any]:
            return [[tensor.name, list(tensor.dims)] for tensor in group]

        fields = {"transport": self.transport, "max_batch": self.max_batch, "memory_fd": self.memory_fd}
        return fields | {"inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layout:
        def tensors(entries: list[Any]) -> tuple[Tensor, ...]:
            return tuple(Tensor(name, tuple(dims)) for name, dims in entries)

        inputs, outputs = tensors(data["inputs"]), tensors(data["outputs"])
        return cls(data["transport"], data["max_batch"], inputs, outputs, data["memory_fd"])


class ProtocolError(Exception):
    """The other side sent something the protocol does not allow."""


class Channel:
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


class SharedMemory:
    """Tensors travel through blocks of the shared memory, float32 arrays (max_batch, *dims)."""

    def __init__(self, layout: Layout) -> None:
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
    def allocate(cls, layout: Layout) -> SharedMemory:
        """Parent side: sizes the memfd, seals its size, maps it."""
        os.ftruncate(layout.memory_fd, layout.shared_bytes())
        fcntl.fcntl(layout.memory_fd, fcntl.F_ADD_SEALS, _SEALS)
        return cls(layout)

    def send_inputs(
        self, channel: Channel, arrays: Mapping[str, np.ndarray], batch: int, deadline: float
    ) -> None:
        for name, block in self._input_blocks.items():
            block[:batch] = arrays[name]
        channel.send_json({"op": "run", "batch": batch}, deadline)

    def receive_outputs(self, channel: Channel, batch: int, deadline: float) -> dict[str, np.ndarray]:
        return {name: block[:batch].copy() for name, block in self._output_blocks.items()}

    def receive_inputs(self, channel: Channel, batch: int) -> dict[str, np.ndarray]:
        return {name: block[:batch] for name, block in self._input_blocks.items()}

    def send_outputs(self, channel: Channel, outputs: Sequence[np.ndarray]) -> None:
        for block, output in zip(self._output_blocks.values(), outputs, strict=True):
            block[: len(output)] = output
        channel.send_json({"ok": True, "cpu_s": time.process_time()})


class Pipe:
    """Tensors travel through the socket, one raw float32 frame each after the JSON message."""

    def __init__(self, layout: Layout) -> None:
        self.inputs, self.outputs = layout.inputs, layout.outputs

    def send_inputs(
        self, channel: Channel, arrays: Mapping[str, np.ndarray], batch: int, deadline: float
    ) -> None:
        channel.send_json({"op": "run", "batch": batch}, deadline)
        for tensor in self.inputs:
            channel.send(np.ascontiguousarray(arrays[tensor.name], dtype=np.float32), deadline)

    def receive_outputs(self, channel: Channel, batch: int, deadline: float) -> dict[str, np.ndarray]:
        return {tensor.name: _receive_array(channel, tensor, batch, deadline) for tensor in self.outputs}

    def receive_inputs(self, channel: Channel, batch: int) -> dict[str, np.ndarray]:
        return {tensor.name: _receive_array(channel, tensor, batch, None) for tensor in self.inputs}

    def send_outputs(self, channel: Channel, outputs: Sequence[np.ndarray]) -> None:
        channel.send_json({"ok": True, "cpu_s": time.process_time()})
        for output in outputs:
            channel.send(np.ascontiguousarray(output, dtype=np.float32))


def _receive_array(channel: Channel, tensor: Tensor, batch: int, deadline: float | None) -> np.ndarray:
    frame = channel.receive(deadline, max_bytes=tensor.nbytes(batch))
    if len(frame) != tensor.nbytes(batch):
        raise ProtocolError(f"{tensor.name!r}: {len(frame)} bytes, expected {tensor.nbytes(batch)}")
    return np.frombuffer(frame, dtype=np.float32).reshape(tensor.shape(batch))
