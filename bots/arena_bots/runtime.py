"""The one place that creates ONNX Runtime sessions (ARCHITECTURE §4).

Two runners share the `InferenceBackend` protocol: `InProcessSession` runs a trusted model in this
process (benchmarks, training self-play); `arena_bots.host.ModelHost` runs an uploaded model in an
isolated child process (matches). Both take and return dicts of arrays keyed by tensor name, with
the batch as the first dimension.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from types import TracebackType
from typing import Protocol, Self

import numpy as np
import onnxruntime as ort

# ORT_ENABLE_ALL measured fastest or equal on 2 cores, one thread (us per evaluation, batch 1 / 64):
# small MLP 5.9 / 0.1 against 10-12 / 0.1 for the lower levels; a 6x64 Bobail resnet 122 / 101
# against 320-370 / 310-345 (its NCHWc convolution layout only comes with ALL); a 6x64 Pente resnet
# 2980 / 1590 against 3020-3530 / 2470-4230.
GRAPH_OPTIMIZATION = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
_LOG_ERRORS_ONLY = 3  # ONNX Runtime severity: 0 verbose ... 3 error, 4 fatal


class InferenceBackend(Protocol):
    """Runs one model: `run` maps input name -> array (batch, *dims) to output name -> array."""

    @property
    def input_names(self) -> tuple[str, ...]: ...

    @property
    def output_names(self) -> tuple[str, ...]: ...

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def session_options(threads: int = 1) -> ort.SessionOptions:
    """Options for every session: `threads` intra-op threads, sequential, ONNX format only."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = GRAPH_OPTIMIZATION
    options.enable_profiling = False
    options.log_severity_level = _LOG_ERRORS_ONLY
    options.add_session_config_entry("session.load_model_format", "ONNX")  # never the ORT format
    return options


def providers() -> list[str]:
    """The execution providers to ask for, best first: CUDA when this build has it, then the CPU."""
    if "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def create_session(model: bytes | str | PathLike[str], threads: int = 1) -> ort.InferenceSession:
    """A session over `model` (serialised ONNX, or a path to a .onnx file) with our options."""
    return ort.InferenceSession(model, session_options(threads), providers=providers())


class InProcessSession(InferenceBackend):
    """A trusted model run in this process: for benchmarks and self-play, never for uploads."""

    def __init__(self, model: bytes | str | PathLike[str], threads: int = 1) -> None:
        self._session: ort.InferenceSession | None = create_session(model, threads)
        self._input_names = tuple(arg.name for arg in self._session.get_inputs())
        self._output_names = tuple(arg.name for arg in self._session.get_outputs())

    @property
    def input_names(self) -> tuple[str, ...]:
        return self._input_names

    @property
    def output_names(self) -> tuple[str, ...]:
        return self._output_names

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The model's outputs by name, as ONNX Runtime returns them."""
        if self._session is None:
            raise RuntimeError("the session is closed")
        outputs = self._session.run(list(self._output_names), dict(inputs))
        return dict(zip(self._output_names, outputs, strict=True))

    def close(self) -> None:
        """Drops the session; `run` raises afterwards."""
        self._session = None
