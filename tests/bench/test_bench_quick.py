"""Every benchmark runs in its quick mode and prints its ratios, so `make bench` cannot rot.

Each script runs as `make bench` runs it (a subprocess, `--quick`); the test checks that it exits 0
and prints its ratio lines, never the figures themselves (speed is read from the bench's output,
not asserted in tests). OpenSpiel, the Pente engine's peer, is in the bench extra only: without it
the engines bench prints why its peer cells are empty, and the test checks that instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
TIMEOUT_S = 240  # a quick run takes seconds; the limit only stops a hung one


def run_quick(script: str, env: dict[str, str] | None = None) -> str:
    """The output of `bench/<script> --quick`; fails with the output if the script fails."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "ORT_DISABLE_TELEMETRY": "1", **(env or {})},
    )
    assert done.returncode == 0, f"bench/{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


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
    if importlib.util.find_spec("pyspiel") is None:
        assert out.count("OpenSpiel not installed") == 2
    else:
        assert "Pente, compiled core/OpenSpiel: " in out
        assert "Pente, compiled random games/OpenSpiel: " in out


def test_selfplay_prints_both_cores_and_the_ratio_to_todays_figure():
    out = run_quick("selfplay.py")
    for title in ("Bobail", "Spring Challenge 2021"):
        assert f"{title}, compiled/reference core: " in out
        assert f"{title}, compiled/today's " in out
    assert "the same games on both cores: yes" in out
    assert "the same games on both cores: NO" not in out


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


def test_search_prints_its_share_of_the_limit():
    out = run_quick("search.py")
    assert "of the limit" in out
    assert "per simulation outside the model" in out  # the Spring 2021 row
    assert "Spring Challenge 2021, the zoo's net" in out  # its search through a model host, each core


def test_worker_prints_its_batch_and_efficiency():
    out = run_quick("worker.py")
    assert "mean batch" in out
    assert "worker efficiency:" in out


def test_dqn_worker_prints_games_per_hour_and_the_share_in_onnx_runtime():
    out = run_quick("dqn_worker.py")
    assert "games/hour" in out
    assert "in ONNX Runtime itself" in out
    assert "DQN / racer: " in out


def test_live_prints_the_cost_of_writing_games_in_progress():
    out = run_quick("live.py")
    assert "every 0.5 s (default):" in out
    assert "CPU ratio to no writes" in out


def test_ratings_prints_its_ratio_to_the_target():
    out = run_quick("ratings.py")
    assert "ratio to the 1 s target" in out


def test_platform_load_prints_its_scaling_and_latency(postgres_url: str, redis_url: str):
    """Needs PostgreSQL (the bench makes its own databases beside the fixture's) and Redis (the
    tests' own database number, flushed by the fixture)."""
    out = run_quick("platform_load.py", {"ARENA_BENCH_REDIS_URL": redis_url})
    assert "two workers / one worker:" in out
    assert "leaderboard (cache" in out


def test_actor_critic_prints_its_training_speed_against_the_seeds():
    out = run_quick("actor_critic.py")
    assert "compiled/seed 1 process (276/s): " in out
    assert "compiled/seed 8 processes (455/s): " in out


def test_first_hour_prints_each_target_beside_its_figure_and_the_load():
    out = run_quick("first_hour.py")
    assert "1. rated games, from the start:" in out
    assert "2. a new upload's first game, from its upload:" in out
    assert "3. a new version's SPRT" in out
    assert out.count("(target ") == 3  # one ladder in the quick run: one figure per target
    assert "load average" in out
