"""The platform's benchmarks (live games, platform load, a bot author's first hour, a competition's
final) run in their quick mode and print their figures beside their targets (see quick_run.py)."""

from __future__ import annotations

from quick_run import run_quick


def test_live_prints_the_cost_of_writing_games_in_progress():
    out = run_quick("live.py")
    assert "every 0.5 s (default):" in out
    assert "CPU ratio to no writes" in out


def test_platform_load_prints_its_scaling_and_latency(postgres_url: str, redis_url: str):
    """Needs PostgreSQL (the bench makes its own databases beside the fixture's) and Redis (the
    tests' own database number, flushed by the fixture)."""
    out = run_quick("platform_load.py", {"ARENA_BENCH_REDIS_URL": redis_url})
    assert "two workers / one worker:" in out
    assert "leaderboard (cache" in out


def test_first_hour_prints_each_target_beside_its_figure_and_the_load():
    out = run_quick("first_hour.py")
    assert "1. rated games, from the start:" in out
    assert "2. a new upload's first game, from its upload:" in out
    assert "3. a new version's SPRT" in out
    assert out.count("(target ") == 3  # one ladder in the quick run: one figure per target
    assert "load average" in out


def test_final_prints_its_table_pairings_per_cpu_hour_and_the_issue_scale():
    out = run_quick("final.py")
    assert "3 entrants at 4 simulations, 1 pairing(s) per pair:" in out
    assert "pairings per CPU-hour" in out
    assert "19,800 pairings: " in out
    assert "worker-core-hours" in out
