"""The benchmarks of search and training with models (search, worker, DQN worker, self-play,
actor-critic) run in their quick mode and print their ratios (see quick_run.py)."""

from __future__ import annotations

from quick_run import run_quick


def test_search_prints_its_share_of_the_limit():
    out = run_quick("search.py")
    assert "of the limit" in out
    assert "per simulation outside the model" in out  # the Spring 2021 row
    assert "Spring Challenge 2021, the zoo's net" in out  # its search through a model host, each core
    assert "Smash the Code, the zoo's actor-critic net" in out  # the same


def test_worker_prints_its_batch_and_efficiency():
    out = run_quick("worker.py")
    assert "mean batch" in out
    assert "worker efficiency:" in out


def test_ladders_prints_each_ladders_games_per_cpu_hour_on_both_cores_and_its_batches():
    out = run_quick("ladders.py")
    for game in ("bobail", "pente", "spring2021", "smash", "csb"):
        assert f"{game}, compiled/reference core: " in out
        assert f"{game}, compiled/today's" in out
    assert out.count("the same games on both cores: yes") == 5
    assert "mean batch (rows per model call) of az-bobail-early: " in out


def test_dqn_worker_prints_games_per_hour_and_the_share_in_onnx_runtime():
    out = run_quick("dqn_worker.py")
    assert "games/hour" in out
    assert "in ONNX Runtime itself" in out
    assert "DQN / racer: " in out


def test_selfplay_prints_both_cores_and_the_ratio_to_todays_figure():
    out = run_quick("selfplay.py")
    for title in ("Bobail", "Spring Challenge 2021"):
        assert f"{title}, compiled/reference core: " in out
        assert f"{title}, compiled/today's " in out
    assert "the same games on both cores: yes" in out
    assert "the same games on both cores: NO" not in out


def test_actor_critic_prints_its_training_speed_against_the_seeds():
    out = run_quick("actor_critic.py")
    assert "compiled/seed 1 process (276/s): " in out
    assert "compiled/seed 8 processes (455/s): " in out
