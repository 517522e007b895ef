"""bench/host.py's zoo rows and its baseline loader, without a whole run (quick_run.py runs it)."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
from quick_run import BENCH

from arena_bots import host_protocol
from arena_bots.host import HostLimits, ModelHost


def _bench_host(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_host", BENCH / "host.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_zoo_rows_are_each_zoo_net_at_each_batch_with_the_models_own_inputs(monkeypatch):
    bench = _bench_host(monkeypatch)
    rows = bench.zoo_rows()
    assert [(row.name, row.batch) for row in rows] == [
        (f"{game} zoo net", batch) for game in bench.ZOO_GAMES for batch in bench.ZOO_BATCHES
    ]
    pente = next(row for row in rows if row.name == "pente zoo net")
    assert pente.inputs == {"board": (6, 19, 19), "captures": (2,)}


def test_a_baseline_host_loads_with_its_own_protocol_and_serves_calls(monkeypatch, tmp_path):
    bench = _bench_host(monkeypatch)
    for name in ("baseline_host", "baseline_host_protocol"):  # the loader's modules, gone afterwards
        monkeypatch.setitem(sys.modules, name, None)
    baseline = bench.baseline_host_class("HEAD", str(tmp_path))
    assert sys.modules["arena_bots.host_protocol"] is host_protocol  # ours again once it is loaded
    their_protocol = sys.modules["baseline_host_protocol"]
    assert their_protocol is not host_protocol
    assert sys.modules["baseline_host"].Channel is their_protocol.Channel
    model = bench.small_mlp()
    inputs = {"board": np.ones((3, *bench.BOARD), np.float32)}
    with baseline(model, HostLimits()) as theirs, ModelHost(model, HostLimits()) as ours:
        np.testing.assert_array_equal(theirs.run(inputs)["policy"], ours.run(inputs)["policy"])
