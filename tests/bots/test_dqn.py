"""The DQN training kit for CSB: memory, epsilon, target network, rewards, learning, resume, export."""

from __future__ import annotations

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
    random_heads,
)
from arena_bots.training.dqn_run import DqnSettings, export_network, train_dqn
from arena_bots.training.racing import CHECKPOINT_REWARD, TIMEOUT_REWARD, RunnerTrack
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
