"""The DQN training kit for CSB: memory, epsilon, target network, rewards, learning, resume, export."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from arena_bots.match import MatchSetup, play_many
from arena_bots.players import GreedyPlayer, RacerPlayer
from arena_bots.runtime import InProcessSession
from arena_bots.training.dqn import (
    CsbQNet,
    EpsilonSchedule,
    Learner,
    LearnSettings,
    ReplayMemory,
    greedy_heads,
    load_runner,
    random_heads,
)
from arena_bots.training.dqn_run import DqnRun, DqnSettings, export_network, settings_with, train_dqn
from arena_bots.training.racing import CHECKPOINT_REWARD, TIMEOUT_REWARD, BlockerTrack, RunnerTrack, progress
from arena_bots.validation import validate
from arena_games.csb import playouts, rules
from arena_games.registry import get_game

CSB = get_game("csb")
TINY = DqnSettings(
    layers=1,
    width=8,
    races=2,
    memory=500,
    warmup=16,
    learn=LearnSettings(batch_size=16, target_every=5),
    epsilon=EpsilonSchedule(1.0, 0.1, 10),
    runner_steps=6,
    demo_steps=2,
    checkpoint_every=10,
    eval_pairs=1,
)


@pytest.fixture(autouse=True)
def one_thread():
    """As in training: tiny networks are fastest on one thread (and the suite shares the CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def transitions(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    rows = rng.normal(size=(count, 16)).astype(np.float32)
    return {
        "rows": rows,
        "actions": random_heads(rng, rows),
        "rewards": rng.choice([0.0, 50.0, -10.0], size=count).astype(np.float32),
        "next_rows": rng.normal(size=(count, 16)).astype(np.float32),
        "terminal": rng.random(count) < 0.1,
    }


def test_replay_memory_is_a_ring_that_saves_and_loads(tmp_path):
    memory, rng = ReplayMemory(5), np.random.default_rng(0)
    batch = transitions(rng, 7)
    memory.add(**batch)
    assert len(memory) == 5
    assert memory.added == 7
    assert np.array_equal(memory.rows[:2], batch["rows"][5:])  # the two oldest overwritten
    sample = memory.sample(3, rng)
    assert sample["rows"].shape == (3, 16)
    assert sample["actions"].shape == (3, 2)
    memory.save(tmp_path / "memory.npz")
    loaded = ReplayMemory(5)
    loaded.load(tmp_path / "memory.npz")
    assert loaded.added == 7
    assert np.array_equal(loaded.next_rows, memory.next_rows)
    with pytest.raises(ValueError, match="memory of 5"):
        ReplayMemory(6).load(tmp_path / "memory.npz")


def test_epsilon_schedule_decays_linearly_then_holds():
    schedule = EpsilonSchedule(1.0, 0.1, 100)
    assert schedule(0) == 1.0
    assert schedule(50) == pytest.approx(0.55)
    assert schedule(100) == schedule(10_000) == pytest.approx(0.1)


def test_random_and_greedy_heads_skip_a_spent_boost():
    rows = np.zeros((2000, 16), dtype=np.float32)  # feature 14 = 0: the boost is spent
    heads = random_heads(np.random.default_rng(1), rows)
    assert not (heads[:, 1] == rules.BOOST_ACTION).any()
    assert (heads[:, 1] == rules.SHIELD_ACTION).any()
    network = CsbQNet(1, 8)
    with torch.no_grad():
        network.runner.thrust.bias[rules.BOOST_ACTION] = 1e6
    assert not (greedy_heads(network.runner, rows)[:, 1] == rules.BOOST_ACTION).any()
    rows[:, 14] = 1.0
    assert (greedy_heads(network.runner, rows)[:, 1] == rules.BOOST_ACTION).all()


def test_the_target_network_is_copied_every_target_every_updates():
    torch.manual_seed(0)
    learner = Learner(CsbQNet(1, 8), LearnSettings(batch_size=8, target_every=3))
    batch = transitions(np.random.default_rng(2), 8)

    def same() -> bool:
        online, target = learner.network.state_dict(), learner.target.state_dict()
        return all(torch.equal(online[key], target[key]) for key in online)

    learner.update("runner", batch)
    learner.update("runner", batch)
    assert not same()
    learner.update("runner", batch)
    assert same()


def test_a_few_updates_reduce_the_td_error_of_a_fixed_batch():
    torch.manual_seed(0)
    learner = Learner(CsbQNet(2, 32), LearnSettings(batch_size=32, target_every=10**6, learning_rate=1e-2))
    batch = transitions(np.random.default_rng(3), 32)
    errors = [learner.update("runner", batch) for _ in range(100)]
    assert errors[-1] < 0.5 * errors[0]


def test_the_margin_loss_pulls_the_greedy_moves_to_the_demonstrated_ones():
    torch.manual_seed(0)
    learner = Learner(CsbQNet(2, 32, blocker=True), LearnSettings(learning_rate=1e-2, margin=5.0))
    batch = transitions(np.random.default_rng(4), 64)
    batch["actions"][:, 1] = np.minimum(batch["actions"][:, 1], rules.BOOST_ACTION - 1)  # legal anywhere
    batch["rewards"][:], batch["terminal"][:] = 0.0, True  # TD targets 0, which the margins can meet
    everyone = np.ones(64, dtype=bool)
    before = learner.margin_loss("blocker", batch, everyone).item()
    for _ in range(300):
        learner.update("blocker", batch, demonstrated=everyone)
    assert learner.margin_loss("blocker", batch, everyone).item() < 0.05 * before
    assert np.array_equal(greedy_heads(learner.network.blocker, batch["rows"]), batch["actions"])


def test_the_first_blocker_steps_are_the_heuristic_blockers_demonstrations(tmp_path):
    run = train_dqn("csb", tmp_path / "run", max_steps=7, settings=TINY)  # 6 runner steps, 1 demo step
    assert run["step"] == 7
    assert len(np.load(tmp_path / "run" / "memory-demos.npz")["rows"]) == TINY.races  # a blocker a race
    assert not (tmp_path / "run" / "memory-blocker.npz").exists()  # nothing of its own yet


def test_rewards_of_a_scripted_race_timeout_then_checkpoint():
    track = RunnerTrack(1, seed=5)
    idle = np.zeros((1, 4, 2), dtype=np.int64)
    idle[..., 0] = rules.ANGLE_CENTRE  # thrust 0: the pods never move
    for _ in range(99):
        step = track.step(idle)
        assert not step["terminal"].any()
        assert not step["rewards"].any()
    step = track.step(idle)  # the 100th turn without a pass: -10, terminal, the race is reset
    assert step["terminal"].all()
    assert (step["rewards"] == TIMEOUT_REWARD).all()
    assert track.races.turn[0] == 0
    for _ in range(60):  # the house racer drives every pod of the new race to checkpoint 1
        racer = [playouts.racer_actions(track.races, player).reshape(1, 2, 2) for player in (0, 1)]
        step = track.step(np.concatenate(racer, axis=1))
        if step["rewards"].any():
            break
    assert set(step["rewards"]) == {0.0, CHECKPOINT_REWARD} or set(step["rewards"]) == {CHECKPOINT_REWARD}
    assert not step["terminal"].any()


def test_a_resumed_run_continues_exactly(tmp_path):
    straight = train_dqn("csb", tmp_path / "straight", max_steps=10, settings=TINY)
    train_dqn("csb", tmp_path / "resumed", max_steps=7, settings=TINY)  # stops in the blocker phase
    resumed = train_dqn("csb", tmp_path / "resumed", max_steps=10)  # settings from the folder
    assert resumed["updates"] == straight["updates"] > 0
    assert [c["step"] for c in resumed["checkpoints"]] == [10]
    assert set(resumed["checkpoints"][0]) >= {"runner_vs_racer", "team_vs_racer", "team_vs_runner_only"}
    states = [torch.load(tmp_path / run / "state.pt", weights_only=False) for run in ("straight", "resumed")]
    for key, value in states[0]["learner"]["network"].items():
        assert torch.equal(value, states[1]["learner"]["network"][key]), key
    assert (tmp_path / "resumed" / "curve.png").exists()
    with pytest.raises(ValueError, match="csb only"):
        train_dqn("bobail", tmp_path / "other", max_steps=1)


def test_progress_is_strict_json_before_a_td_error_is_measured(tmp_path):
    train_dqn("csb", tmp_path / "run", max_steps=2, settings=TINY)  # no checkpoint: no TD error yet

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    saved = json.loads((tmp_path / "run" / "progress.json").read_text(), parse_constant=refuse)
    assert saved["td_error"] is None
    assert math.isnan(DqnRun.open(tmp_path / "run", None).progress.td_error)  # read back as NaN


@pytest.mark.parametrize("blocker", [False, True])
def test_the_exported_bot_validates_and_plays_a_race(blocker):
    torch.manual_seed(0)
    model = export_network(CsbQNet(2, 16, blocker=True), "dqn-test", blocker)
    report = validate(model, CSB)
    assert report.ok, report.message
    bot = GreedyPlayer(InProcessSession(model), head_kind="q", name="dqn-test")
    (result,) = play_many(CSB, [MatchSetup(players=(bot, RacerPlayer()), seed=3)])
    assert sorted(result.returns) == [-1.0, 1.0]


def test_arena_train_dqn_needs_a_budget_and_trains_csb_only(tmp_path, capsys):
    from arena_platform import cli

    assert cli.main(["train", "dqn", "--game", "csb", "--out", str(tmp_path / "run")]) != 0
    assert "--hours" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["train", "dqn", "--game", "bobail", "--out", str(tmp_path / "run"), "--hours", "1"])
    assert (
        cli.main(["train", "dqn", "--game", "csb", "--out", str(tmp_path / "run"), "--max-steps", "0"]) == 0
    )
    assert (tmp_path / "run" / "config.json").exists()
    assert (tmp_path / "run" / "state.pt").exists()
    missing = ["train", "dqn", "--game", "csb", "--out", str(tmp_path / "r2"), "--hours", "1"]
    assert cli.main([*missing, "--runner-from", str(tmp_path / "none.onnx")]) != 0
    assert "no such file" in capsys.readouterr().err
    assert cli.main([*missing, "--runner-from", str(tmp_path / "run" / "config.json")]) != 0
    assert "not a readable ONNX model" in capsys.readouterr().err


def test_progress_counts_passes_and_the_share_of_the_current_leg():
    track = RunnerTrack(2, seed=1)
    start = progress(track.races)
    assert ((start >= 0) & (start < 0.2)).all()  # on the start line, the whole leg ahead
    for _ in range(80):
        racer = [playouts.racer_actions(track.races, player).reshape(2, 2, 2) for player in (0, 1)]
        track.step(np.concatenate(racer, axis=1))
    now = progress(track.races)
    assert (track.races.passes >= 1).all()
    assert (np.floor(now) == track.races.passes).all()


def test_the_blocker_faces_the_racer_in_half_the_races_and_its_rewards_add_up_to_the_passes():
    runner = CsbQNet(1, 8).runner
    track = BlockerTrack(4, seed=2, runner=lambda rows: greedy_heads(runner, rows))
    assert track.against_racer.tolist() == [True, True, False, False]
    assert track.seats.tolist() == [0, 1, 0, 1]
    total = np.zeros(4)
    passes = np.zeros((4, 4))
    for _ in range(60):
        before = track.races.passes.copy()
        step = track.step(track.guide_heads())  # the heuristic blocker drives every blocker
        total += step["rewards"]
        passes += track.races.passes - before
        assert not step["terminal"].any()
    races, seats = np.arange(4), track.seats
    own, opponents = passes[races, 2 * seats], passes[races[:, None], 2 * (1 - seats)[:, None] + [0, 1]]
    assert passes[:2, :].sum() > 0  # the racers got going
    # the dense rewards sum to 50 per pass of the team's runner, less 50 per pass of the opponents'
    # lead, up to the legs the pods are part-way along
    assert np.all(np.abs(total - CHECKPOINT_REWARD * (own - opponents.max(axis=1))) <= 2 * CHECKPOINT_REWARD)


def test_a_run_can_start_from_a_trained_runner(tmp_path):
    torch.manual_seed(1)
    trained = CsbQNet(1, 8, blocker=True)
    export_network(trained, "runner-only", blocker=False, path=tmp_path / "runner.onnx")
    fresh = CsbQNet(1, 8, blocker=True)
    load_runner(fresh, tmp_path / "runner.onnx")
    for name, value in trained.runner.state_dict().items():
        assert torch.allclose(value, fresh.runner.state_dict()[name]), name
    with pytest.raises(ValueError, match="do not fit"):
        load_runner(CsbQNet(2, 8), tmp_path / "runner.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a readable ONNX model"):
        load_runner(fresh, tmp_path / "junk.onnx")
    settings = dataclasses.replace(TINY, runner_from=str(tmp_path / "runner.onnx"), runner_steps=0)
    result = train_dqn("csb", tmp_path / "run", max_steps=10, settings=settings)
    assert result["checkpoints"][0]["phase"] == "blocker"


def test_arena_train_dqn_options_shape_a_new_run(tmp_path):
    from arena_platform import cli

    options = ["--demo-steps", "7", "--blocker-epsilon-steps", "9", "--learning-rate", "1e-4"]
    options += ["--batch-size", "32", "--races", "4", "--epsilon-steps", "11", "--runner-steps", "5"]
    run = ["train", "dqn", "--game", "csb", "--out", str(tmp_path / "run"), "--max-steps", "0"]
    assert cli.main([*run, *options]) == 0
    saved = DqnSettings.from_dict(json.loads((tmp_path / "run" / "config.json").read_text())["settings"])
    assert (saved.demo_steps, saved.races, saved.runner_steps) == (7, 4, 5)
    assert (saved.learn.learning_rate, saved.learn.batch_size) == (1e-4, 32)
    assert saved.learn.gamma == DqnSettings().learn.gamma  # what was not given keeps its default
    assert (saved.epsilon.decay_steps, saved.blocker_epsilon.decay_steps) == (11, 9)
    assert saved.blocker_epsilon.start == DqnSettings().blocker_epsilon.start
    assert settings_with() == DqnSettings()
