"""The engine and search benchmarks (engines, compiled core, CSB, Smash, model host, ratings, warm
start) run in their quick mode and print their ratios (see quick_run.py)."""

from __future__ import annotations

import importlib.util

from quick_run import run_quick


def test_engines_prints_the_unlike_and_the_like_for_like_ratios():
    out = run_quick("engines.py")
    assert "batched/peer (N games vs 1: not like for like)" in out
    assert "1 game/peer (like for like)" in out
    if importlib.util.find_spec("pyspiel") is None:
        assert "OpenSpiel not installed" in out
    else:
        assert "OpenSpiel gomoku" in out


def test_compiled_core_prints_its_ratios_to_openspiel_and_the_reference():
    out = run_quick("compiled_core.py")
    assert "compiled/reference core: " in out
    assert "Bobail step loop, compiled/reference core: " in out
    assert "CSB step loop, compiled/reference core: " in out
    assert "Smash step loop, compiled/reference core: " in out
    assert "Spring 2021 step loop, compiled/reference core: " in out
    assert "Spring Challenge 2021: compiled core " in out  # the PUCT's µs per simulation
    assert "Smash the Code: compiled core " in out
    if importlib.util.find_spec("pyspiel") is None:
        assert out.count("OpenSpiel not installed") == 2
    else:
        assert "Pente, compiled core/OpenSpiel: " in out
        assert "Pente, compiled random games/OpenSpiel: " in out


def test_csb_prints_batched_against_one_race_at_a_time():
    out = run_quick("csb.py")
    assert "batched/one race: " in out
    assert "batched/step: " in out


def test_smash_prints_the_batched_and_the_like_for_like_ratios():
    out = run_quick("smash.py")
    assert "batched/loop (N games vs 1: not like for like)" in out
    assert "1 game batched/loop (like for like)" in out


def test_host_prints_its_overhead_ratios():
    out = run_quick("host.py")
    assert "host start-up (this revision)" in out
    assert "issue 24: 22 µs per row" in out  # the Bobail row, beside the figure from a real worker
    assert out.count("small MLP") == 2  # batches 1 and 64


def test_ratings_prints_its_ratio_to_the_target():
    out = run_quick("ratings.py")
    assert "ratio to the 1 s target" in out


def test_warm_start_prints_the_first_move_from_the_cache_against_after_the_warm_up():
    out = run_quick("warm_start.py")
    assert "bobail, first move from the cache/after warm-up: " in out
