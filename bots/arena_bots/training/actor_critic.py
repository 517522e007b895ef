"""The actor-critic (V-trace) kit for Smash the Code (seed 003), resumable from its run folder.

One segment: the parallel games (`environments`) play `segment_steps` turns with the current
network sampling its policy (one batched forward per turn over every lane), then the network is
trained for `iterations` passes over the segment. Each pass first recomputes the value of every
position with the current network (the seed's "recalculate V1 every time") and the V-trace
targets and advantages (`vtrace`; one-step by default, n-step by setting), then makes gradient
steps on the actor-critic loss over shuffled minibatches of `minibatch` positions. The first pass
is on-policy, the others near-on-policy (V-trace's importance weights correct them): the seed's
"1 iteration on policy, 5 near-on-policy".

The seed's two-phase schedule is the default: phase 1 (the seed's batch 2048, entropy weight
0.01), then from `phase_two_at` segments phase 2 (batch halved: segments half as long; learning
rate x 0.7, the seed's 5e-6 -> 3.5e-6; entropy weight 0.001). The seed's learning rates were for
its own optimiser and scale; ours is Adam at 1e-3 (phase 1). Options the seed did not have:
`imitation_segments`, a kick-start that adds the cross-entropy to the chain bot's choice for the
lanes' positions to the loss (weight `imitation_weight`) in the first segments, so the policy
starts where the baseline is instead of at random; and the mix of opponents: the chain bot in
`against_chain` games, the learner itself in `self_play` games.

Every `checkpoint_every` segments the network becomes a checkpoint (torch state + ONNX bot, greedy
over the policy) that plays `eval_pairs` seat-swapped pairs against the chain bot; curve.png plots
its win share (95% interval) against the positions trained on.

Run folder: config.json (settings, written once: a resumed run keeps them), state.pt (network,
optimiser), environments.npz (every game in play and the random generator's state), progress.json
(counters, checkpoints and their results), checkpoints/<name>.pt|.onnx, curve.png. Files are
replaced atomically at the end of every segment, so a stopped run resumes exactly there.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arena_bots.export import export_bot
from arena_bots.manifest import Manifest
from arena_bots.players import GreedyPlayer
from arena_bots.runtime import InProcessSession
from arena_bots.training.demonstrations import Demonstrations, record
from arena_bots.training.environments import SmashEnvironments
from arena_bots.training.evaluate import house_player, play_pairs, win_draw_loss
from arena_bots.training.networks import TwoTowerNet
from arena_bots.training.run import _atomic, _from_json, _write_json
from arena_bots.training.vtrace import VtraceSettings, actor_critic_loss, masked_log_policy, vtrace
from arena_games.smash import GAME

CHAIN = "chain"
DEMONSTRATIONS = "demonstrations.npz"  # in the run folder


@dataclass(frozen=True)
class ActorCriticSettings:
    blocks: int = 2  # residual blocks of the own tower (the opponent's has half, at least 1)
    filters: int = 32
    against_chain: int = 64  # games against the chain house bot (one lane each)
    self_play: int = 32  # self-play games (two lanes each)
    segment_steps: int = 16  # turns per segment in phase 1 (x 128 lanes: the seed's batch 2048)
    iterations: int = 6  # passes over each segment: 1 on-policy + 5 near-on-policy
    minibatch: int = 256  # positions per gradient step within a pass
    vtrace: VtraceSettings = field(default_factory=VtraceSettings)
    learning_rate: float = 1e-3
    entropy_weight: float = 0.01
    value_weight: float = 1.0  # the seed's "AC weight"
    phase_two_at: int = 200  # segments; then half-length segments, lr x 0.7, entropy 0.001
    phase_two_lr_factor: float = 0.7
    phase_two_entropy_weight: float = 0.001
    imitation_segments: int = 0
    imitation_weight: float = 1.0
    demonstration_games: int = 0  # the lookahead bot's games recorded before the first segment
    pretrain_passes: int = 0  # supervised passes over them (policy: its choice; value: the result)
    demonstration_share: float = 0.25  # then: demonstrations per minibatch, as a share of it
    checkpoint_every: int = 20  # segments
    eval_pairs: int = 16  # seat-swapped pairs against the chain bot per checkpoint
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActorCriticSettings:
        return cls(**{**data, "vtrace": VtraceSettings(**data["vtrace"])})


def settings_with(n_step: int | None = None, **given: Any) -> ActorCriticSettings:
    """The default settings with those given replaced (None: keep the default)."""
    settings = dataclasses.replace(
        ActorCriticSettings(), **{key: value for key, value in given.items() if value is not None}
    )
    if n_step is not None:
        settings = dataclasses.replace(settings, vtrace=dataclasses.replace(settings.vtrace, steps=n_step))
    return settings


@dataclass
class Progress:
    segment: int = 0
    step: int = 0  # gradient steps
    games: int = 0  # games finished by the lanes (a self-play game counts for both lanes)
    positions: int = 0  # lane positions played and trained on
    wall_seconds: float = 0.0
    pretrain_passes: int = 0  # passes over the demonstrations done
    recent: dict[str, float] = field(default_factory=dict)  # the last segment's losses and results
    checkpoints: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Segment:
    """What the lanes played: time-major, T steps of L lanes (inputs have T + 1 rows)."""

    inputs: dict[str, np.ndarray]  # float32 (T + 1, L, ...)
    legal: np.ndarray  # bool (T, L, A)
    actions: np.ndarray  # int64 (T, L)
    behaviour_log_prob: np.ndarray  # float32 (T, L): log mu(a)
    rewards: np.ndarray  # float32 (T, L)
    dones: np.ndarray  # bool (T, L)
    guide: np.ndarray  # int64 (T, L): the chain bot's choice (-1 when not asked)


def build_network(settings: ActorCriticSettings) -> TwoTowerNet:
    own, _, pieces = GAME.spec.inputs.values()
    return TwoTowerNet(tuple(own), pieces[0], GAME.spec.heads["place"], settings.blocks, settings.filters)


def phase(settings: ActorCriticSettings, segment: int) -> tuple[int, float, float]:
    """(segment steps, learning rate, entropy weight) of segment number `segment` (from 0)."""
    if segment < settings.phase_two_at:
        return settings.segment_steps, settings.learning_rate, settings.entropy_weight
    return (
        max(settings.segment_steps // 2, 1),
        settings.learning_rate * settings.phase_two_lr_factor,
        settings.phase_two_entropy_weight,
    )


class Trainer:
    """The live state of a run: network, optimiser, games, generator, counters, and the
    demonstrations once recorded. `device` is where the network trains ("cpu", "cuda")."""

    def __init__(self, settings: ActorCriticSettings, device: str = "cpu") -> None:
        torch.manual_seed(settings.seed)
        self.settings = settings
        self.device = torch.device(device)
        self.network = build_network(settings).to(self.device)
        self.demonstrations: Demonstrations | None = None
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=settings.learning_rate)
        self.environments = SmashEnvironments(settings.against_chain, settings.self_play, settings.seed << 32)
        self.rng = np.random.default_rng(settings.seed)
        self.progress = Progress()

    def collect(self, steps: int, imitate: bool) -> tuple[Segment, int]:
        """`steps` turns of every game with the current policy (sampled); the segment and the games
        the lanes finished."""
        envs, lanes = self.environments, self.environments.lanes
        rows: list[dict[str, np.ndarray]] = []
        legal, actions, log_mu, rewards, dones, guide = [], [], [], [], [], []
        finished = 0
        self.network.eval()
        for _ in range(steps):
            inputs, mask = envs.observe()
            with torch.no_grad():
                logits, _ = self.network(*self._tensors(inputs.values()))
                log_policy = masked_log_policy(logits, self._tensor(mask)).cpu().numpy()
            chosen = _sample(np.exp(log_policy), self.rng)
            result = envs.step(chosen, imitate=imitate)
            rows.append(inputs)
            legal.append(mask)
            actions.append(chosen)
            log_mu.append(log_policy[np.arange(lanes), chosen])
            rewards.append(result.rewards)
            dones.append(result.dones)
            guide.append(result.chain_actions)
            finished += int(result.dones.sum())
        rows.append(envs.observe()[0])
        segment = Segment(
            inputs={name: np.stack([row[name] for row in rows]) for name in rows[0]},
            legal=np.stack(legal),
            actions=np.stack(actions).astype(np.int64),
            behaviour_log_prob=np.stack(log_mu).astype(np.float32),
            rewards=np.stack(rewards),
            dones=np.stack(dones),
            guide=np.stack(guide).astype(np.int64),
        )
        return segment, finished

    def learn(
        self, segment: Segment, learning_rate: float, entropy_weight: float, imitate: bool
    ) -> dict[str, float]:
        """`iterations` passes over the segment (the module's doc), each in minibatches; the mean losses."""
        settings = self.settings
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        steps, lanes = segment.actions.shape
        inputs = self._tensors(a.reshape(-1, *a.shape[2:]) for a in segment.inputs.values())
        legal = self._tensor(segment.legal.reshape(steps * lanes, -1))
        actions = self._tensor(segment.actions.reshape(-1))
        guide = self._tensor(segment.guide.reshape(-1)).clamp(min=0)
        demonstrated = self._demonstration_rows()
        sums: dict[str, float] = {}
        updates = 0
        for _ in range(settings.iterations):
            targets, advantages = self.targets(segment, inputs, legal, actions)
            order = self._tensor(self.rng.permutation(steps * lanes))
            for batch in torch.split(order, settings.minibatch):
                self.network.train()
                logits, values = self.network(*(tensor[batch] for tensor in inputs))
                log_policy = masked_log_policy(logits, legal[batch])
                loss = actor_critic_loss(
                    log_policy,
                    actions[batch],
                    values,
                    targets[batch],
                    advantages[batch],
                    value_weight=settings.value_weight,
                    entropy_weight=entropy_weight,
                )
                total, parts = (
                    loss.total,
                    {"policy": loss.policy, "value": loss.value, "entropy": loss.entropy},
                )
                if imitate:
                    imitation = -log_policy.gather(1, guide[batch, None]).mean()
                    total = total + settings.imitation_weight * imitation
                    parts["imitation"] = imitation.item()
                if demonstrated:
                    rows = self.rng.choice(len(self.demonstrations), demonstrated)
                    copying, _ = self._demonstration_loss(rows)  # its value term: V-trace's, above
                    total = total + settings.imitation_weight * copying
                    parts["demonstrations"] = copying.item()
                self.optimizer.zero_grad()
                total.backward()
                self.optimizer.step()
                updates += 1
                for key, value in parts.items():
                    sums[key] = sums.get(key, 0.0) + value
        self.network.eval()
        self.progress.step += updates
        return {key: value / updates for key, value in sums.items()}

    def targets(
        self, segment: Segment, inputs: list[torch.Tensor], legal: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """V-trace targets and advantages (T * L,) of the segment under the current network: every
        position's value recomputed (the bootstrap row included), no gradient."""
        steps, lanes = segment.actions.shape
        self.network.eval()
        with torch.no_grad():
            logits, values = self.network(*inputs)
            log_pi = masked_log_policy(logits[: steps * lanes], legal).gather(1, actions[:, None])
        log_ratio = log_pi.reshape(steps, lanes) - self._tensor(segment.behaviour_log_prob)
        targets, advantages = vtrace(
            values.reshape(steps + 1, lanes),
            self._tensor(segment.rewards),
            self._tensor(segment.dones),
            log_ratio,
            self.settings.vtrace,
        )
        return targets.reshape(-1), advantages.reshape(-1)

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def _tensors(self, arrays: Iterable[np.ndarray]) -> list[torch.Tensor]:
        return [self._tensor(array) for array in arrays]

    def _demonstration_rows(self) -> int:
        """Demonstrations added to each minibatch of a segment's passes (0 when there are none)."""
        if self.demonstrations is None or not len(self.demonstrations):
            return 0
        return round(self.settings.minibatch * self.settings.demonstration_share)

    def _demonstration_loss(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(cross-entropy to the demonstrator's choice, squared error of the value to the game's
        result) over demonstration positions `rows`, each a mean with gradient."""
        demonstrations = self.demonstrations
        inputs, legal = demonstrations.inputs(rows)
        self.network.train()
        logits, values = self.network(*self._tensors(inputs.values()))
        log_policy = masked_log_policy(logits, self._tensor(legal))
        chosen = log_policy.gather(1, self._tensor(demonstrations.action[rows])[:, None])
        return -chosen.mean(), torch.mean((values - self._tensor(demonstrations.outcome[rows])) ** 2)

    def pretrain_pass(self) -> dict[str, float]:
        """One supervised pass over the demonstrations in shuffled minibatches: the policy learns
        the demonstrator's choice, the value the game's result. The mean losses."""
        settings = self.settings
        sums = {"imitation": 0.0, "value": 0.0}
        batches = np.array_split(
            self.rng.permutation(len(self.demonstrations)),
            max(len(self.demonstrations) // settings.minibatch, 1),
        )
        for group in self.optimizer.param_groups:
            group["lr"] = settings.learning_rate
        for rows in batches:
            imitation, value = self._demonstration_loss(rows)
            self.optimizer.zero_grad()
            (imitation + settings.value_weight * value).backward()
            self.optimizer.step()
            sums["imitation"] += imitation.item()
            sums["value"] += value.item()
        self.network.eval()
        self.progress.step += len(batches)
        self.progress.pretrain_passes += 1
        return {key: round(value / len(batches), 4) for key, value in sums.items()}

    def segment(self) -> dict[str, float]:
        """One segment: play, then learn; the counters move on. Returns what to log."""
        settings, progress = self.settings, self.progress
        steps, learning_rate, entropy_weight = phase(settings, progress.segment)
        imitate = progress.segment < settings.imitation_segments
        played, finished = self.collect(steps, imitate)
        parts = self.learn(played, learning_rate, entropy_weight, imitate)
        ended = played.dones
        wins = float(played.rewards[ended].mean()) if ended.any() else float("nan")
        chain_lanes = ended[:, : settings.against_chain]
        versus_chain = played.rewards[:, : settings.against_chain][chain_lanes]
        progress.segment += 1
        progress.games += finished
        progress.positions += played.actions.size
        progress.recent = {
            **{key: round(value, 4) for key, value in parts.items()},
            "score_vs_chain": round(float(versus_chain.mean()), 3) if versus_chain.size else float("nan"),
            "score_all": round(wins, 3),
        }
        return progress.recent

    def export(self, name: str, path: Path | None = None, player: str = "greedy") -> bytes:
        """The network as a bot of `player` kind (sigmoid value), validated statically."""
        manifest = Manifest(
            game=GAME.name, game_version=GAME.spec.version, name=name, player=player, value="sigmoid"
        )
        return export_bot(copy.deepcopy(self.network).cpu(), GAME, manifest, path)

    def state(self) -> dict[str, Any]:
        return {"network": self.network.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])


def _sample(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """intp (L,): one action per row of probabilities (L, A), by inverse CDF of one uniform each."""
    cumulative = np.cumsum(probabilities, axis=1)
    drawn = rng.random(probabilities.shape[0])[:, None] * cumulative[:, -1:]
    return np.minimum((cumulative <= drawn).sum(axis=1), probabilities.shape[1] - 1)


# --- the run folder ----------------------------------------------------------------------------------


class Run:
    """A Trainer bound to its folder: open (new or resumed), save, checkpoint."""

    def __init__(self, folder: Path, trainer: Trainer) -> None:
        self.folder, self.trainer = folder, trainer
        self.started = time.monotonic()
        self.wall_at_start = trainer.progress.wall_seconds

    @classmethod
    def open(cls, folder: Path, settings: ActorCriticSettings | None, device: str = "cpu") -> Run:
        config = folder / "config.json"
        if config.exists():
            saved = json.loads(config.read_text())
            if saved["game"] != GAME.name:
                raise ValueError(f"{folder} holds a {saved['game']} run, not an actor-critic {GAME.name} run")
            trainer = Trainer(ActorCriticSettings.from_dict(saved["settings"]), device)
            if (folder / DEMONSTRATIONS).exists():
                with np.load(folder / DEMONSTRATIONS) as arrays:
                    trainer.demonstrations = Demonstrations.from_arrays(dict(arrays))
            if (folder / "state.pt").exists():
                trainer.load_state(
                    torch.load(folder / "state.pt", map_location=trainer.device, weights_only=True)
                )
                with np.load(folder / "environments.npz") as arrays:
                    trainer.environments.load_arrays(dict(arrays))
                progress = json.loads((folder / "progress.json").read_text())
                trainer.progress = _from_json(Progress, {k: v for k, v in progress.items() if k != "rng"})
                trainer.rng.bit_generator.state = progress["rng"]
            return cls(folder, trainer)
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        trainer = Trainer(settings or ActorCriticSettings(), device)
        _write_json(
            config, {"game": GAME.name, "kit": "actor-critic", "settings": trainer.settings.to_dict()}
        )
        return cls(folder, trainer)

    def wall_seconds(self) -> float:
        return self.wall_at_start + time.monotonic() - self.started

    def save(self) -> None:
        """The resume point, each file replaced atomically."""
        trainer = self.trainer
        _atomic(self.folder / "state.pt", lambda path: torch.save(trainer.state(), path))
        _atomic(
            self.folder / "environments.npz", lambda path: np.savez(path, **trainer.environments.to_arrays())
        )
        self.save_progress()

    def demonstrate(self, processes: int, log: Callable[[str], None]) -> None:
        """Records the settings' demonstration games once (kept in the folder), then makes the
        pretraining passes not made yet, saving after each, and checkpoints the pretrained network."""
        trainer, settings = self.trainer, self.trainer.settings
        if settings.demonstration_games and trainer.demonstrations is None:
            started = time.monotonic()
            trainer.demonstrations = record(settings.demonstration_games, settings.seed << 40, processes)
            arrays = trainer.demonstrations.to_arrays()
            _atomic(self.folder / DEMONSTRATIONS, lambda path: np.savez_compressed(path, **arrays))
            log(
                f"demonstrations: {settings.demonstration_games} games of the lookahead bot, "
                f"{len(trainer.demonstrations)} positions in {time.monotonic() - started:.0f} s "
                f"({processes} processes)"
            )
        if trainer.progress.pretrain_passes >= settings.pretrain_passes:
            return
        while trainer.progress.pretrain_passes < settings.pretrain_passes:
            losses = trainer.pretrain_pass()
            self.save()
            log(f"pretraining pass {trainer.progress.pretrain_passes}: " + _fields(losses))
        log(self.checkpoint())  # the pretrained network, before any self-play

    def save_progress(self) -> None:
        progress = self.trainer.progress
        progress.wall_seconds = round(self.wall_seconds(), 1)
        data = {**dataclasses.asdict(progress), "rng": self.trainer.rng.bit_generator.state}
        _write_json(self.folder / "progress.json", data)

    def checkpoint(self) -> str:
        """Saves and evaluates a checkpoint against the chain bot; a log line."""
        trainer, progress = self.trainer, self.trainer.progress
        name = f"{GAME.name}-ac-seg{progress.segment:05d}"
        model = trainer.export(name, self.folder / "checkpoints" / f"{name}.onnx")
        torch.save(trainer.network.state_dict(), self.folder / "checkpoints" / f"{name}.pt")
        wins, draws, losses = versus_chain(model, name, trainer.settings.eval_pairs, seed=progress.segment)
        progress.checkpoints.append(
            {
                "name": name,
                "segment": progress.segment,
                "step": progress.step,
                "games": progress.games,
                "positions": progress.positions,
                "wall_seconds": round(self.wall_seconds(), 1),
                "versus_chain": {"wins": wins, "draws": draws, "losses": losses},
            }
        )
        self.save_progress()
        plot_curve(progress.checkpoints, str(self.folder / "curve.png"))
        return f"checkpoint {name}: {wins}-{draws}-{losses} against chain"


def _fields(values: dict[str, float]) -> str:
    return " ".join(f"{key} {value}" for key, value in values.items())


def versus_chain(model: bytes, name: str, pairs: int, seed: int) -> tuple[int, int, int]:
    """(wins, draws, losses) of the greedy bot `model` in `pairs` seat-swapped pairs against the
    chain bot (each pair: one seed, so the same pieces, for both seatings)."""
    player = GreedyPlayer(InProcessSession(model, threads=1), name=name)
    chain = house_player(CHAIN, 1)
    return win_draw_loss(play_pairs(GAME, player, chain, pairs, seed), name, chain.name)


def wilson(successes: float, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95% interval of a share (draws may count half)."""
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    spread = (
        z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    )
    return centre - spread, centre + spread


def plot_curve(checkpoints: list[dict[str, Any]], path: str) -> None:
    """PNG: each checkpoint's score against the chain bot (wins + draws / 2, 95% interval) by positions."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    x, y, low, high = [], [], [], []
    for checkpoint in checkpoints:
        result = checkpoint["versus_chain"]
        games = result["wins"] + result["draws"] + result["losses"]
        score = result["wins"] + result["draws"] / 2
        lower, upper = wilson(score, games)
        x.append(checkpoint["positions"])
        y.append(score / games)
        low.append(score / games - lower)
        high.append(upper - score / games)
    axes.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label="checkpoint (greedy) vs chain")
    axes.axhline(0.9, linestyle="--", color="grey", label="bar: 90%")
    axes.axhline(0.5, linestyle=":", color="grey", label="even")
    axes.set_ylim(0, 1)
    axes.set_xlabel("positions trained on")
    axes.set_ylabel("score against chain, 95% interval")
    axes.set_title("Smash the Code: actor-critic (V-trace) checkpoints")
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def train_actor_critic(
    out_dir: str | os.PathLike[str],
    hours: float | None = None,
    *,
    max_segments: int | None = None,
    settings: ActorCriticSettings | None = None,
    processes: int = 1,
    device: str = "cpu",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train (or resume) the actor-critic Smash bot in `out_dir` for `hours` of wall time in this
    call or until the run has `max_segments` segments in all (one at least must be given); ends
    with a checkpoint. A new run first records its demonstrations (on `processes` processes) and
    pretrains on them, as its settings say. Returns the progress as a dict."""
    if hours is None and max_segments is None:
        raise ValueError("give hours or max_segments (or both)")
    torch.set_num_threads(1)
    run = Run.open(Path(out_dir), settings, device)
    trainer, progress = run.trainer, run.trainer.progress
    deadline = time.monotonic() + (hours * 3600.0 if hours is not None else math.inf)
    run.demonstrate(processes, log)
    started, positions_at_start = time.monotonic(), progress.positions
    while time.monotonic() < deadline and (max_segments is None or progress.segment < max_segments):
        recent = trainer.segment()
        run.save()
        rate = (progress.positions - positions_at_start) / (time.monotonic() - started)
        line = (
            f"segment {progress.segment} step {progress.step} games {progress.games} "
            f"positions {progress.positions} ({rate:.0f}/s) | " + _fields(recent)
        )
        if progress.segment % trainer.settings.checkpoint_every == 0:
            line += " | " + run.checkpoint()
        log(line)
    last = progress.checkpoints[-1]["segment"] if progress.checkpoints else 0
    if progress.segment > last:
        log(run.checkpoint())
    return dataclasses.asdict(progress)
