"""The DQN loop for Coders Strike Back, resumable from its run folder; `train_dqn` is what the CLI calls.

One environment step: every pod of `races` races chooses epsilon-greedily (`dqn`), the batch
advances one turn on the vectorised physics (`racing`), the pod transitions go into the role's
replay memory, then `updates_per_step` minibatch updates. Phase 1 (`runner_steps` environment
steps) trains the runner on endless races; its exploratory moves come from the house racer with
probability `guide` (a curriculum: the memory holds decent racing lines from the start, which
Q-learning, off-policy, improves on), else uniformly at random. A run may instead start from the
runner of a trained bot (`runner_from`, phase 1 skipped). Phase 2 trains the blocker against the
frozen runner-only bot and the house racer (`racing.BlockerTrack`), exploring from the heuristic
blocker (`playouts.blocker_actions`) with probability `blocker_guide`. Its first `demo_steps` are
the heuristic blocker's own play, kept for good in a demonstration memory as in DQfD (Hester et
al., "Deep Q-learning from Demonstrations", 2018): every blocker minibatch after them draws
`demo_share` of its rows from the demonstrations, and those rows add the large-margin loss that
keeps the greedy blocker at least as good as its demonstrator. Every `checkpoint_every`
steps the network becomes a checkpoint (torch state and an ONNX bot, player greedy, head q) and
plays `eval_pairs` seat-swapped pairs against the house racer (and, in phase 2, the
runner+blocker bot against the runner-only bot), batched on the physics; the curve plots the win
rates against the step.

Run folder `out_dir` (e.g. /work/runs/csb-dqn):
  config.json     the DqnSettings (written once; a resumed run keeps them)
  state.pt        learner (online, target, optimiser), random generator and counters: the resume point
  memory-<role>.npz, track-<role>.npz   replay memories and the environments' races
  progress.json   counters (step, updates, episodes, wall seconds) and the checkpoints with results
  checkpoints/    <name>.pt and <name>.onnx per checkpoint;  curve.png  win rate against step
Files are replaced atomically, so an interrupted run resumes from its last save (each checkpoint
and the end of each call), and continues exactly as an uninterrupted run would.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arena_bots.export import export_bot
from arena_bots.manifest import Manifest
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
from arena_bots.training.racing import BlockerTrack, RunnerTrack, new_races
from arena_bots.training.run import _atomic, _from_json, _write_json
from arena_games.csb import encoding, physics, playouts, rules
from arena_games.registry import get_game


@dataclass(frozen=True)
class DqnSettings:
    layers: int = 3  # hidden tanh layers per role (the seed: 3 to 5 of 16 units, 8-12 inputs)
    width: int = 64
    races: int = 32  # races stepped at once (4 pod transitions each)
    memory: int = 200_000  # transitions per role (the seed: steps / 100)
    warmup: int = 5_000  # transitions in a memory before its role learns
    updates_per_step: int = 2
    learn: LearnSettings = field(default_factory=LearnSettings)
    epsilon: EpsilonSchedule = field(default_factory=lambda: EpsilonSchedule(1.0, 0.02, 100_000))
    guide: float = 0.5  # share of the runner's exploratory moves taken from the house racer
    episode_turns: int = 300  # phase 1 races are cut (not terminal) after this many turns
    runner_steps: int = 180_000  # environment steps of phase 1; then the blocker learns
    runner_from: str = ""  # a CSB bot (.onnx) whose runner starts the run (then runner_steps is 0)
    blocker_epsilon: EpsilonSchedule = field(default_factory=lambda: EpsilonSchedule(0.5, 0.02, 20_000))
    blocker_guide: float = 0.5  # share of the blocker's exploratory moves from the heuristic blocker
    demo_steps: int = 5_000  # first blocker steps played by the heuristic blocker, kept as demonstrations
    demo_share: float = 0.25  # share of each blocker minibatch drawn from the demonstrations
    checkpoint_every: int = 10_000  # environment steps
    eval_pairs: int = 50  # seat-swapped pairs per evaluation
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DqnSettings:
        return cls(
            **{
                **data,
                "learn": LearnSettings(**data["learn"]),
                "epsilon": EpsilonSchedule(**data["epsilon"]),
                "blocker_epsilon": EpsilonSchedule(**data["blocker_epsilon"]),
            }
        )


def settings_with(
    learning_rate: float | None = None,
    batch_size: int | None = None,
    epsilon_steps: int | None = None,
    blocker_epsilon_steps: int | None = None,
    **given: Any,
) -> DqnSettings:
    """The default settings with those given replaced (None: keep the default): DqnSettings' own
    fields by name, Adam's `learning_rate` and the minibatch's `batch_size` (LearnSettings), and the
    environment steps over which the runner's and the blocker's epsilon decay."""
    defaults = DqnSettings()
    chosen = {key: value for key, value in given.items() if value is not None}
    learn = {"learning_rate": learning_rate, "batch_size": batch_size}
    chosen["learn"] = dataclasses.replace(
        defaults.learn, **{key: value for key, value in learn.items() if value is not None}
    )
    for name, steps in (("epsilon", epsilon_steps), ("blocker_epsilon", blocker_epsilon_steps)):
        if steps is not None:
            chosen[name] = dataclasses.replace(getattr(defaults, name), decay_steps=steps)
    return dataclasses.replace(defaults, **chosen)


@dataclass
class DqnProgress:
    step: int = 0  # environment steps (each: one turn of `races` races)
    updates: int = 0
    episodes: int = 0  # races started
    wall_seconds: float = 0.0
    td_error: float = float("nan")  # mean |TD error| over the last log interval
    checkpoints: list[dict[str, Any]] = field(default_factory=list)


def train_dqn(
    game_name: str,
    out_dir: str | os.PathLike[str],
    hours: float | None = None,
    *,
    max_steps: int | None = None,
    settings: DqnSettings | None = None,
) -> dict[str, Any]:
    """Train (or resume) the CSB DQN bots in `out_dir` for `hours` of wall time or up to `max_steps`
    environment steps in all (at least one must be given); a log line per checkpoint on stdout.
    Returns the final progress as a dict."""
    if game_name != rules.GAME_NAME:
        raise ValueError(f"the DQN kit trains {rules.GAME_NAME} only, not {game_name}")
    if hours is None and max_steps is None:
        raise ValueError("give hours or max_steps (or both)")
    torch.set_num_threads(1)
    run = DqnRun.open(Path(out_dir), settings)
    deadline = time.monotonic() + (hours * 3600.0 if hours is not None else float("inf"))
    errors: list[float] = []
    while time.monotonic() < deadline and (max_steps is None or run.progress.step < max_steps):
        errors += run.step()
        if run.progress.step % run.settings.checkpoint_every == 0:
            run.progress.td_error = float(np.mean(errors)) if errors else float("nan")
            errors = []
            print(run.checkpoint(), flush=True)
    run.save()
    return dataclasses.asdict(run.progress)


class DqnRun:
    """The live state of a run and its folder."""

    def __init__(self, folder: Path, settings: DqnSettings) -> None:
        self.folder, self.settings = folder, settings
        self.game = get_game(rules.GAME_NAME)
        torch.manual_seed(settings.seed)
        network = CsbQNet(settings.layers, settings.width, blocker=True)
        if settings.runner_from:
            load_runner(network, settings.runner_from)
        self.learner = Learner(network, settings.learn)
        self.rng = np.random.default_rng(settings.seed)
        self.memories = {name: ReplayMemory(settings.memory) for name in ("runner", "blocker", "demos")}
        self.runner_track = RunnerTrack(settings.races, settings.seed, settings.episode_turns)
        self.blocker_track: BlockerTrack | None = None
        self.progress = DqnProgress()
        self.started, self.wall_at_start = time.monotonic(), 0.0

    @classmethod
    def open(cls, folder: Path, settings: DqnSettings | None) -> DqnRun:
        """A new run in `folder`, or the run already there resumed (its saved settings win)."""
        config = folder / "config.json"
        if config.exists():
            run = cls(folder, DqnSettings.from_dict(json.loads(config.read_text())["settings"]))
            run.resume()
            return run
        run = cls(folder, settings or DqnSettings())
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        _write_json(config, {"game": rules.GAME_NAME, "kit": "dqn", "settings": run.settings.to_dict()})
        return run

    # --- stepping -----------------------------------------------------------------------------------

    @property
    def phase(self) -> str:
        return "runner" if self.progress.step < self.settings.runner_steps else "blocker"

    def step(self) -> list[float]:
        """One environment step and its updates; the updates' mean |TD error|s."""
        role, memory, demonstrating = self.phase, self.memories[self.phase], self.demonstrating
        if role == "runner":
            memory.add(**self.runner_track.step(self.runner_moves()))
        elif demonstrating:
            track = self.blocker()
            self.memories["demos"].add(**track.step(track.guide_heads()))
        else:
            track = self.blocker()
            epsilon = self.settings.blocker_epsilon(self.blocker_steps - self.settings.demo_steps)
            heads = self.explore(self.learner.network.blocker, track.blocker_rows(), epsilon)
            guide = epsilon * self.settings.blocker_guide
            memory.add(**track.step(self.guided(heads, track.guide_heads(), guide)))
        self.progress.step += 1
        self.progress.episodes = self.runner_track.resets + (
            self.blocker_track.resets if self.blocker_track else 0
        )
        errors = [self.update(role, demonstrating) for _ in range(self.settings.updates_per_step)]
        self.progress.updates = self.learner.updates
        return [error for error in errors if error is not None]

    @property
    def blocker_steps(self) -> int:
        return self.progress.step - self.settings.runner_steps

    @property
    def demonstrating(self) -> bool:
        """Whether this blocker step is one of the heuristic blocker's demonstrations."""
        return self.phase == "blocker" and self.blocker_steps < self.settings.demo_steps

    def update(self, role: str, demonstrating: bool) -> float | None:
        """One minibatch update of `role` (None while its memories are warming up). The blocker's
        minibatches mix in `demo_share` demonstrations, all of them while it is `demonstrating`."""
        size, memory, demos = self.settings.learn.batch_size, self.memories[role], self.memories["demos"]
        if demonstrating:
            from_demos = size
        elif role == "blocker" and len(demos):
            from_demos = round(size * self.settings.demo_share)
        else:
            from_demos = 0
        if len(memory) + len(demos) < self.settings.warmup or (from_demos < size and not len(memory)):
            return None
        counts = ((memory, size - from_demos), (demos, from_demos))
        parts = [source.sample(count, self.rng) for source, count in counts if count]
        batch = {name: np.concatenate([part[name] for part in parts]) for name in ReplayMemory.FIELDS}
        return self.learner.update(role, batch, demonstrated=np.arange(size) >= size - from_demos)

    def runner_moves(self) -> np.ndarray:
        """(B, 4, 2) the runners' heads: epsilon-greedy, exploring from the racer with prob. guide."""
        track = self.runner_track
        rows = track.rows.reshape(-1, encoding.FEATURES)
        epsilon = self.settings.epsilon(self.progress.step)
        heads = self.explore(self.learner.network.runner, rows, epsilon)
        racer = np.concatenate(
            [playouts.racer_actions(track.races, player).reshape(-1, 2, 2) for player in (0, 1)], axis=1
        ).reshape(-1, 2)
        return self.guided(heads, racer, epsilon * self.settings.guide).reshape(-1, 4, 2)

    def guided(self, heads: np.ndarray, guide: np.ndarray, share: float) -> np.ndarray:
        """(n, 2) `heads` with each row replaced by the guide's with probability `share`."""
        return np.where((self.rng.random(len(heads)) < share)[:, None], guide, heads)

    def explore(self, module: torch.nn.Module, rows: np.ndarray, epsilon: float) -> np.ndarray:
        """(n, 2) epsilon-greedy heads: uniformly random legal ones with probability epsilon."""
        random = self.rng.random(len(rows)) < epsilon
        return np.where(random[:, None], random_heads(self.rng, rows), greedy_heads(module, rows))

    def blocker(self) -> BlockerTrack:
        if self.blocker_track is None:
            runner = self.learner.network.runner
            self.blocker_track = BlockerTrack(
                self.settings.races, self.settings.seed + 1, lambda rows: greedy_heads(runner, rows)
            )
        return self.blocker_track

    # --- checkpoints and evaluation -----------------------------------------------------------------

    def checkpoint(self) -> str:
        """Saves a checkpoint (torch state, ONNX bot), evaluates it, redraws the curve, saves; a log line."""
        progress = self.progress
        name = f"csb-dqn-step{progress.step:07d}"
        blocker = progress.step > self.settings.runner_steps  # the blocker has had a step
        self.export(name, blocker, self.folder / "checkpoints" / f"{name}.onnx")
        torch.save(self.learner.network.state_dict(), self.folder / "checkpoints" / f"{name}.pt")
        entry: dict[str, Any] = {
            "name": name,
            "phase": "blocker" if blocker else "runner",
            "step": progress.step,
            "updates": progress.updates,
            "episodes": progress.episodes,
            "wall_seconds": round(self.wall_seconds(), 1),
            "td_error": round(progress.td_error, 3),
            "epsilon": round(self.settings.epsilon(progress.step), 3),
        }
        seed = self.settings.seed + 7919  # the same races at every checkpoint
        runner_only = network_policy(self.learner.network, blocker=False)
        entry["runner_vs_racer"] = win_rate(
            runner_only, playouts.racer_actions, self.settings.eval_pairs, seed
        )
        if blocker:
            team = network_policy(self.learner.network, blocker=True)
            entry["team_vs_racer"] = win_rate(team, playouts.racer_actions, self.settings.eval_pairs, seed)
            entry["team_vs_runner_only"] = win_rate(team, runner_only, self.settings.eval_pairs, seed)
        progress.checkpoints.append(entry)
        self.save()
        plot_win_rates(progress.checkpoints, self.folder / "curve.png")
        results = {key: value for key, value in entry.items() if "_vs_" in key}
        return (
            f"step {progress.step} updates {progress.updates} episodes {progress.episodes} "
            f"td {progress.td_error:.2f} | {name}: {results}"
        )

    def export(self, name: str, blocker: bool, path: Path | None = None) -> bytes:
        return export_network(self.learner.network, name, blocker, path)

    # --- saving and resuming ------------------------------------------------------------------------

    def wall_seconds(self) -> float:
        return self.wall_at_start + time.monotonic() - self.started

    def save(self) -> None:
        """The resume point, each file replaced atomically."""
        state = {"learner": self.learner.state_dict(), "rng": self.rng.bit_generator.state}
        _atomic(self.folder / "state.pt", lambda path: torch.save(state, path))
        tracks = {"runner": self.runner_track, "blocker": self.blocker_track}
        for role, memory in self.memories.items():
            if len(memory):
                _atomic(self.folder / f"memory-{role}.npz", memory.save)
            if tracks.get(role) is not None:
                _atomic(self.folder / f"track-{role}.npz", lambda p, t=tracks[role]: np.savez(p, **t.state()))
        self.progress.wall_seconds = round(self.wall_seconds(), 1)
        _write_json(self.folder / "progress.json", dataclasses.asdict(self.progress))

    def resume(self) -> None:
        if not (self.folder / "state.pt").exists():
            return
        state = torch.load(self.folder / "state.pt", weights_only=False)
        self.learner.load_state_dict(state["learner"])
        self.rng.bit_generator.state = state["rng"]
        for role, memory in self.memories.items():
            if (self.folder / f"memory-{role}.npz").exists():
                memory.load(self.folder / f"memory-{role}.npz")
        with np.load(self.folder / "track-runner.npz") as data:
            self.runner_track.load(dict(data))
        if (self.folder / "track-blocker.npz").exists():
            with np.load(self.folder / "track-blocker.npz") as data:
                self.blocker().load(dict(data))
        self.progress = _from_json(DqnProgress, json.loads((self.folder / "progress.json").read_text()))
        self.wall_at_start = self.progress.wall_seconds


def export_network(
    network: CsbQNet, name: str, blocker: bool, path: str | os.PathLike[str] | None = None
) -> bytes:
    """The runner+blocker bot (`blocker`) or the runner-only bot of `network` as a valid ONNX bot."""
    game = get_game(rules.GAME_NAME)
    bot = network
    if not blocker:
        bot = CsbQNet(len(network.runner.trunk) // 2, network.runner.angle.in_features)
        bot.runner.load_state_dict(network.runner.state_dict())
    manifest = Manifest(game=game.name, game_version=game.spec.version, name=name, player="greedy", head="q")
    return export_bot(bot, game, manifest, path)


def network_policy(network: CsbQNet, blocker: bool) -> playouts.Policy:
    """A batched `playouts.Policy` of the network's greedy heads: the runner-only bot, or with
    `blocker` its pod 1 played by the blocker."""
    second = network.blocker if blocker else network.runner

    def policy(races: physics.Races, player: int, ids: np.ndarray) -> np.ndarray:
        rows = encoding.encode_races(races, player)
        first, other = greedy_heads(network.runner, rows[:, 0]), greedy_heads(second, rows[:, 1])
        return np.concatenate([first, other], axis=1)

    return policy


def win_rate(ours: playouts.Policy, theirs: playouts.Policy, pairs: int, seed: int) -> float:
    """`ours`' share of wins in `pairs` seat-swapped pairs of races on the seeded maps of `seed`."""
    seeds = np.random.default_rng(seed).integers(2**31, size=pairs)
    first = playouts.play_races(new_races(seeds, endless=False), (ours, theirs))
    second = playouts.play_races(new_races(seeds, endless=False), (theirs, ours))
    return float(((first.winner == 0).sum() + (second.winner == 1).sum()) / (2 * pairs))


def plot_win_rates(checkpoints: list[dict[str, Any]], path: Path, title: str = "CSB DQN checkpoints") -> None:
    """PNG of each checkpoint's win rates against its environment step."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    labels = {
        "runner_vs_racer": "runner-only vs racer",
        "team_vs_racer": "runner+blocker vs racer",
        "team_vs_runner_only": "runner+blocker vs runner-only",
    }
    for key, label in labels.items():
        points = [(c["step"], c[key]) for c in checkpoints if key in c]
        if points:
            axes.plot(*zip(*points, strict=True), marker="o", label=label)
    axes.axhline(0.9, linestyle="--", color="grey", label="90% bar")
    axes.set_xlabel("environment step (turns of the race batch)")
    axes.set_ylabel("win rate, seat-swapped pairs")
    axes.set_ylim(0, 1)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    _atomic(path, lambda name: figure.savefig(name, dpi=100, format="png"))
    pyplot.close(figure)
