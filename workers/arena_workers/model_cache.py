"""A worker process's model hosts (`ModelCache`) and the inference backend its network bots play
through (`ServedModel`), which decides whom a dead host costs (ARCHITECTURE §4).

A bot loses a game only for its model's own faults (`arena_bots.host`: timing out on its own CPU
time, failing, non-finite outputs, crashing a fresh host again); any other loss of a host is the
platform's fault, raised as a PlatformFault so that the batch is given back and played again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from arena_bots.host import ModelFault, ModelHost, second_loss_verdict
from arena_bots.match import PlatformFault
from arena_platform.blobs import BlobStore
from arena_platform.store.pairings import PAIRINGS_PER_TASK

log = logging.getLogger(__name__)

MODEL_CACHE_SIZE = 2 * PAIRINGS_PER_TASK  # model hosts per worker process: a batch's bots all fit


class ModelCache:
    """This process's model hosts by the model's SHA-256, started on first use.

    The models of a batch are `pinned` while it plays: a pinned host is never closed by the cache
    (it may hold more than `capacity` hosts while a batch pins them); beyond `capacity`, the least
    recently used unpinned hosts close. A host that faulted is dead, and `discard` forgets it, so the
    next use starts a fresh one. Thread-safe; a host itself serves one caller at a time, and a worker
    process plays one batch at a time.
    """

    def __init__(self, blobs: BlobStore, capacity: int = MODEL_CACHE_SIZE) -> None:
        self.blobs = blobs  # where the models are read from, by SHA-256
        self._capacity = capacity
        self._hosts: OrderedDict[str, ModelHost] = OrderedDict()
        self._pins: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def pinned(self, sha256s: Iterable[str]) -> Iterator[None]:
        """Keeps the hosts of these models open (once started) until the block ends."""
        keys = list(set(sha256s))
        with self._lock:
            self._pins.update(keys)
        try:
            yield
        finally:
            with self._lock:
                self._pins.subtract(keys)
                self._pins = +self._pins  # drops the models no longer pinned
            self._close(self._evicted())

    def get(self, sha256: str) -> ModelHost:
        """The host serving the model stored under `sha256`; raises ModelFault if it cannot start."""
        with self._lock:
            if sha256 in self._hosts:
                self._hosts.move_to_end(sha256)
                return self._hosts[sha256]
        host = ModelHost(self.blobs.get(sha256))
        with self._lock:
            self._hosts[sha256] = host
        self._close(self._evicted())
        return host

    def discard(self, sha256: str, host: ModelHost) -> None:
        """Forgets and closes `host` (dead after a fault) if it still serves `sha256`."""
        with self._lock:
            if self._hosts.get(sha256) is not host:
                return
            del self._hosts[sha256]
        host.close()

    def close(self) -> None:
        with self._lock:
            hosts, self._hosts = list(self._hosts.values()), OrderedDict()
        self._close(hosts)

    def _evicted(self) -> list[ModelHost]:
        """Takes out the least recently used unpinned hosts beyond capacity; the caller closes them."""
        with self._lock:
            idle = [sha256 for sha256 in self._hosts if sha256 not in self._pins]
            excess = len(self._hosts) - self._capacity
            return [self._hosts.pop(sha256) for sha256 in idle[: max(excess, 0)]]

    @staticmethod
    def _close(hosts: Iterable[ModelHost]) -> None:
        for host in hosts:
            host.close()


class ServedModel:
    """The inference backend a network bot plays through in a worker (`run`, as ModelHost's).

    Each call goes to the model's current host in the cache. A fault traced to the model is raised as
    the ModelFault it is (the player turns it into a forfeit). A host that died otherwise is replaced
    and the call tried once more on the same positions: a crash of unknown cause on the fresh host
    too is the model's fault; a kill from outside (see arena_bots.host) on either try, or any other
    fault of the platform on the second, becomes a PlatformFault (the batch is given back and played
    again), so a dead host costs a bot nothing but its provable faults.
    """

    def __init__(self, models: ModelCache, sha256: str) -> None:
        self._models = models
        self._sha256 = sha256

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            return self._run_once(inputs)
        except ModelFault as fault:
            if fault.blame == "model":
                raise
            first = fault
            log.warning("model %s lost its host (%s); trying a fresh one", self._sha256[:12], fault)
        try:
            return self._run_once(inputs)
        except ModelFault as fault:
            if fault.blame == "model":
                raise
            if (verdict := second_loss_verdict(first, fault)) is not None:
                raise verdict from None
            raise PlatformFault(f"the hosts of model {self._sha256[:12]} failed: {first}; {fault}") from fault

    def _run_once(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One call on the current host; a dead host is discarded. Raises ModelFault (of any blame)
        or, for a bug of ours, PlatformFault."""
        host = None
        try:
            host = self._models.get(self._sha256)
            return host.run(inputs)
        except ModelFault:
            if host is not None:
                self._models.discard(self._sha256, host)
            raise
        except Exception as error:  # a ModelHost raises only ModelFault: anything else is a bug of ours
            raise PlatformFault(f"model {self._sha256[:12]}: {type(error).__name__}: {error}") from error
