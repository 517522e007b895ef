"""The replay window: the most recent positions of self-play, sampled uniformly.

The seed trained on the last ~3M positions, about 15 network versions. We keep `capacity`
positions in a ring (the oldest overwritten first) and choose the capacity so that it holds
roughly the last 10-20 generations of our much smaller generations (run.py's defaults).
Inputs are stored as float16: the planes of both games are 0/1 and Pente's capture counts k / 5
keep three significant digits, at half the memory (a Pente position: 4.3 kB).
Symmetries are applied when sampling (`augment`), so the window holds each position once.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from arena_bots.training.augment import Symmetries
from arena_bots.training.selfplay import Positions

STORED_DTYPE = np.float16


class ReplayBuffer:
    """A ring of at most `capacity` positions of one game; `added` counts every position ever added."""

    def __init__(self, capacity: int, input_shapes: Mapping[str, tuple[int, ...]], actions: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.inputs = {
            name: np.zeros((capacity, *shape), dtype=STORED_DTYPE) for name, shape in input_shapes.items()
        }
        self.policy = np.zeros((capacity, actions), dtype=np.float32)
        self.value = np.zeros(capacity, dtype=np.float32)
        self.added = 0

    def __len__(self) -> int:
        return min(self.added, self.capacity)

    def add(self, positions: Positions) -> None:
        """Appends `positions`, overwriting the oldest once the window is full."""
        count = len(positions)
        keep = min(count, self.capacity)  # of a batch larger than the window, its newest part
        slots = (self.added + count - keep + np.arange(keep)) % self.capacity
        for name, array in self.inputs.items():
            array[slots] = positions.inputs[name][-keep:]
        self.policy[slots] = positions.policy[-keep:]
        self.value[slots] = positions.value[-keep:]
        self.added += count

    def sample(self, size: int, rng: np.random.Generator, symmetries: Symmetries | None = None) -> Positions:
        """`size` positions drawn uniformly with replacement, each under a random symmetry."""
        if not len(self):
            raise ValueError("the buffer is empty")
        rows = rng.integers(len(self), size=size)
        inputs = {name: array[rows].astype(np.float32) for name, array in self.inputs.items()}
        policy = self.policy[rows]
        if symmetries is not None:
            inputs, policy = symmetries.apply(inputs, policy, rng.integers(symmetries.count, size=size))
        return Positions(inputs=inputs, policy=policy, value=self.value[rows])

    def save(self, path: str) -> None:
        """A compressed snapshot (npz) of the window, in storage order, and the count added."""
        filled = len(self)
        arrays = {f"input_{name}": array[:filled] for name, array in self.inputs.items()}
        np.savez_compressed(
            path, **arrays, policy=self.policy[:filled], value=self.value[:filled], added=self.added
        )

    def load(self, path: str) -> None:
        """Restores a snapshot written by `save` into this (same-shaped) buffer."""
        with np.load(path) as data:
            filled, added = len(data["value"]), int(data["added"])
            if filled > self.capacity or (filled < added and filled != self.capacity):
                raise ValueError(
                    f"the snapshot's window ({filled} positions) does not fit capacity {self.capacity}"
                )
            for name, array in self.inputs.items():
                array[:filled] = data[f"input_{name}"]
            self.policy[:filled] = data["policy"]
            self.value[:filled] = data["value"]
            self.added = added
