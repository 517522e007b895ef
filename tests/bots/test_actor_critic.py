"""The actor-critic (V-trace) kit: targets worked by hand, the entropy bonus, a training step,
an exact resume, and the exported bot validated and playing Smash the Code as each player kind."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from arena_bots.loading import house_player, network_player  # noqa: E402
from arena_bots.manifest import Manifest  # noqa: E402
from arena_bots.match import play  # noqa: E402
from arena_bots.runtime import InProcessSession  # noqa: E402
from arena_bots.training.actor_critic import (  # noqa: E402
    ActorCriticSettings,
    Trainer,
    phase,
    train_actor_critic,
)
from arena_bots.training.vtrace import (  # noqa: E402
    VtraceSettings,
    actor_critic_loss,
    entropy,
    masked_log_policy,
    vtrace,
)
from arena_bots.validation import validate  # noqa: E402
from arena_games.smash import GAME  # noqa: E402

TINY = ActorCriticSettings(
    blocks=1,
    filters=16,
    against_chain=2,
    self_play=1,
    segment_steps=4,
    iterations=2,
    imitation_segments=1,
    checkpoint_every=100,
    eval_pairs=1,
)

# One lane, three steps; the game ends (reward 1) at the last step. Ratios pi/mu 2, 0.5, 1.
VALUES = torch.tensor([[0.5], [0.6], [0.7], [0.8]])
REWARDS = torch.tensor([[0.0], [0.0], [1.0]])
DONES = torch.tensor([[False], [False], [True]])
LOG_RATIO = torch.log(torch.tensor([[2.0], [0.5], [1.0]]))


def targets_and_advantages(**settings: float) -> tuple[list[float], list[float]]:
    targets, advantages = vtrace(VALUES, REWARDS, DONES, LOG_RATIO, VtraceSettings(**settings))
    return targets[:, 0].tolist(), advantages[:, 0].tolist()


def test_one_step_vtrace_clips_the_importance_weight_and_stops_at_the_game_end():
    # rho = min(1, ratio) = 1, 0.5, 1; delta = rho (r + V' - V) = 0.1, 0.05, 0.3 (no V' after the end)
    targets, advantages = targets_and_advantages(steps=1)
    assert targets == pytest.approx([0.6, 0.65, 1.0])
    assert advantages == pytest.approx([0.1, 0.05, 0.3])
    unclipped, _ = targets_and_advantages(steps=1, rho_bar=2.0)  # rho_0 = 2
    assert unclipped == pytest.approx([0.7, 0.65, 1.0])


def test_n_step_vtrace_sums_the_clipped_traces():
    # c = min(1, ratio) = 1, 0.5; v_0 = V_0 + d_0 + c_0 d_1 + c_0 c_1 d_2 (3 steps)
    targets, advantages = targets_and_advantages(steps=2)
    assert targets == pytest.approx([0.5 + 0.1 + 0.05, 0.6 + 0.05 + 0.5 * 0.3, 1.0])
    # advantage_s = rho_s (r_s + v^(1)_{s+1} - V_s): v^(1)_1 = 0.65, v^(1)_2 = 1.0
    assert advantages == pytest.approx([0.15, 0.5 * (1.0 - 0.6), 0.3])
    three, _ = targets_and_advantages(steps=3)
    assert three[0] == pytest.approx(0.5 + 0.1 + 0.05 + 0.5 * 0.3)
    tight, _ = targets_and_advantages(steps=3, c_bar=0.25)  # c = 0.25, 0.25
    assert tight[0] == pytest.approx(0.5 + 0.1 + 0.25 * 0.05 + 0.25 * 0.25 * 0.3)


def test_the_entropy_bonus_is_over_legal_actions_and_pushes_towards_uniform():
    legal = torch.tensor([[True, True, True, False]])
    logits = torch.tensor([[2.0, 0.0, 0.0, 5.0]], requires_grad=True)
    log_policy = masked_log_policy(logits, legal)
    assert log_policy.exp()[0, 3] == 0
    assert entropy(masked_log_policy(torch.zeros(1, 4), legal)).item() == pytest.approx(math.log(3))

    def loss(weight: float) -> torch.Tensor:
        return actor_critic_loss(
            masked_log_policy(logits, legal),
            torch.tensor([0]),
            torch.tensor([0.5]),
            torch.tensor([0.5]),
            torch.tensor([0.0]),
            value_weight=1.0,
            entropy_weight=weight,
        ).total

    assert (loss(0.1) - loss(0.0)).item() == pytest.approx(-0.1 * entropy(log_policy).item(), abs=1e-6)
    loss(0.1).backward()
    assert logits.grad[0, 0] > 0  # descending lowers the favourite's logit: the policy flattens


def test_the_schedule_has_the_seeds_two_phases():
    settings = dataclasses.replace(TINY, phase_two_at=3, learning_rate=1e-3)
    assert phase(settings, 2) == (4, 1e-3, 0.01)
    steps, rate, bonus = phase(settings, 3)
    assert (steps, bonus) == (2, 0.001)
    assert rate == pytest.approx(7e-4)


def test_a_segment_trains_the_network_on_every_lane():
    trainer = Trainer(TINY)
    before = [p.detach().clone() for p in trainer.network.parameters()]
    recent = trainer.segment()
    assert trainer.environments.lanes == 4  # 2 games against the chain bot, 1 self-play game x 2 seats
    assert trainer.progress.positions == 4 * 4
    assert trainer.progress.step == 2
    assert all(math.isfinite(recent[key]) for key in ("policy", "value", "entropy", "imitation"))
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.network.parameters(), strict=True))


def test_a_resumed_run_continues_exactly_as_an_unbroken_one(tmp_path):
    train_actor_critic(tmp_path / "whole", max_segments=2, settings=TINY, log=lambda line: None)
    train_actor_critic(tmp_path / "split", max_segments=1, settings=TINY, log=lambda line: None)
    resumed = train_actor_critic(tmp_path / "split", max_segments=2, log=lambda line: None)
    assert resumed["segment"] == 2
    assert [c["segment"] for c in resumed["checkpoints"]] == [1, 2]
    whole = torch.load(tmp_path / "whole" / "state.pt", weights_only=True)["network"]
    split = torch.load(tmp_path / "split" / "state.pt", weights_only=True)["network"]
    assert all(torch.equal(whole[key], split[key]) for key in whole)
    assert (tmp_path / "split" / "curve.png").exists()


def test_a_run_is_the_same_on_both_cores(monkeypatch):
    """The chain bot (the opponent and, while imitating, the guide) values placements on the core
    ARENA_CORE names when the games are made: both cores give the same games and the same network."""
    runs = []
    for core in ("reference", "compiled"):
        monkeypatch.setenv("ARENA_CORE", core)
        trainer = Trainer(TINY)
        assert trainer.environments.chain.core == core
        logs = [trainer.segment() for _ in range(2)]  # the first imitates the chain bot
        runs.append((trainer, logs))
    (reference, reference_logs), (compiled, compiled_logs) = runs
    assert json.dumps(reference_logs) == json.dumps(compiled_logs)  # nan as nan
    for name, array in reference.environments.to_arrays().items():
        assert np.array_equal(array, compiled.environments.to_arrays()[name]), name
    weights = compiled.network.state_dict()
    assert all(torch.equal(value, weights[key]) for key, value in reference.network.state_dict().items())


@pytest.mark.parametrize("player", ["greedy", "sample", "mcts"])
def test_the_exported_bot_validates_and_plays_smash_as_each_player_kind(player):
    trainer = Trainer(TINY)
    model = trainer.export("ac-test", player=player)
    report = validate(model, GAME)
    assert report.ok, report.message
    manifest = Manifest(
        game="smash",
        game_version=GAME.spec.version,
        name="ac-test",
        player=player,
        value="sigmoid",
        simulations=8,
    )
    bot = network_player(manifest, InProcessSession(model, threads=1))
    result = play(GAME, [bot, house_player("chain", simulations=1)], 3, config={"TURN_LIMIT": 12})
    assert result.forfeit is None
    assert result.final_state.turn >= 1
    assert GAME.to_move(result.final_state) == ()


def test_the_cli_trains_and_resumes_a_run_and_refuses_one_without_a_budget(tmp_path, capsys):
    from arena_platform import cli

    train = ["train", "actor-critic", "--game", "smash", "--out", str(tmp_path / "run")]
    assert cli.main(train) != 0
    assert "--hours" in capsys.readouterr().err
    shape = ["--blocks", "1", "--filters", "16", "--against-chain", "1", "--self-play", "1"]
    tiny = [*shape, "--segment-steps", "2", "--iterations", "1", "--eval-pairs", "1", "--n-step", "2"]
    assert cli.main([*train, "--max-segments", "1", *tiny]) == 0
    assert "checkpoint smash-ac-seg00001" in capsys.readouterr().out
    assert (tmp_path / "run" / "checkpoints" / "smash-ac-seg00001.onnx").exists()
    saved = json.loads((tmp_path / "run" / "config.json").read_text())["settings"]
    assert (saved["blocks"], saved["vtrace"]["steps"]) == (1, 2)


@pytest.mark.parametrize(
    ("option", "problem"),
    [
        (["--processes", "0"], "--processes must be at least 1, got 0"),
        (["--device", "tpu"], "--device is cpu or cuda, got 'tpu'"),
        pytest.param(
            ["--device", "cuda"],
            "this machine's PyTorch sees no CUDA device",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is there"),
        ),
    ],
)
def test_the_cli_names_a_bad_processes_or_device_option(tmp_path, capsys, option, problem):
    from arena_platform import cli

    train = [
        "train",
        "actor-critic",
        "--game",
        "smash",
        "--out",
        str(tmp_path / "run"),
        "--max-segments",
        "1",
    ]
    assert cli.main([*train, *option]) != 0
    assert problem in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
