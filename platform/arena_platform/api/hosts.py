"""The model hosts that serve `predict`: one isolated child process per model, the few most
recently used kept alive (an LRU keyed by the model's SHA-256), all closed on shutdown.

A `ModelHost` is not thread-safe, so each host is leased to one request at a time; requests for
the same model wait for each other, requests for different models run side by side.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from arena_bots.host import ModelHost


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while the host is in use
    host: ModelHost | None = None  # started on first use
    closed: bool = False  # evicted: a request that finds it so looks the model up again


class HostCache:
    def __init__(self, load: Callable[[str], bytes], *, capacity: int) -> None:
        """`load(sha256)` returns a model's (validated) bytes; at most `capacity` hosts stay alive."""
        self._load = load
        self._capacity = capacity
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Lock()  # guards `_slots`; never held while a host starts or runs

    @contextmanager
    def lease(self, model_sha256: str) -> Iterator[ModelHost]:
        """The model's host, for this thread alone until the block ends; ModelFault if it cannot start."""
        while True:
            slot = self._slot(model_sha256)
            with slot.lock:
                if slot.closed:
                    continue
                if slot.host is None:
                    slot.host = ModelHost(self._load(model_sha256))
                yield slot.host
                return

    def discard(self, model_sha256: str) -> None:
        """Close the model's host (after a fault); the next lease starts a fresh one."""
        with self._lock:
            slot = self._slots.pop(model_sha256, None)
        if slot is not None:
            _close(slot)

    def close(self) -> None:
        with self._lock:
            slots = list(self._slots.values())
            self._slots.clear()
        for slot in slots:
            _close(slot)

    def _slot(self, model_sha256: str) -> _Slot:
        with self._lock:
            slot = self._slots.setdefault(model_sha256, _Slot())
            self._slots.move_to_end(model_sha256)
            evicted = [self._slots.popitem(last=False)[1] for _ in range(len(self._slots) - self._capacity)]
        for old in evicted:
            _close(old)  # waits for its current lease to end
        return slot


def _close(slot: _Slot) -> None:
    with slot.lock:
        slot.closed = True
        if slot.host is not None:
            slot.host.close()
