"""The AlphaZero loop, resumable from its run folder; `train_alphazero` is what the CLI calls.

One generation: export the current network to ONNX bytes in memory -> self-play a batch of games
with it (`selfplay`) -> add their positions to the replay window (`buffer`) -> train
`steps_for(new positions)` minibatches (`trainer`) -> save the resumable state. Every
`checkpoint_every` generations (and when the time is up) the network becomes a checkpoint: its
torch state and its ONNX bot, which then plays seat-swapped pairs against the previous checkpoint,
UCT and (the first checkpoint only) the random bot, under the self-play game config (its caps);
all games so far are refitted into ratings
(anchor: uct = 0 Elo) and the curve is redrawn.

Run folder `out_dir` (e.g. runs/bobail-az/):
  config.json     the RunSettings; a resumed run keeps them, except the RESUMABLE ones it is asked
                  to change, each change listed in "changes" with the generation it starts from
  state.pt        network + optimiser after the latest generation (resume point)
  buffer.npz      the replay window after the latest generation (compressed); a resume point
                  without it (a small one committed to a repository) resumes with an empty window
  progress.json   counters (generation, step, games, positions, wall seconds) and the checkpoints
  checkpoints/    <name>.pt (torch state) and <name>.onnx (a valid bot) per checkpoint
  ratings.json    every evaluation game and the fitted ratings;  curve.png  rating against step
  teacher.onnx    a bot-file teacher (RunSettings.teacher), as validated when it was given
  log.txt         written by whoever starts `arena train` in the background
Files are replaced atomically, so an interrupted run resumes from its last finished generation.
`RESUME_FILES` are what a resume needs: the platform's training sessions (arena_workers.training)
keep them in the blob store and drive `Run` one `train_generation` at a time, with the ladder
rating their checkpoints instead of `checkpoint`'s own evaluation.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from tqdm import tqdm

from arena_bots import loading
from arena_bots.export import export_bot
from arena_bots.manifest import Manifest
from arena_bots.match import Player
from arena_bots.runtime import InProcessSession
from arena_bots.training.augment import symmetries_for
from arena_bots.training.buffer import ReplayBuffer
from arena_bots.training.evaluate import (
    RANDOM,
    UCT,
    GameRecord,
    RatingFit,
    fit,
    house_player,
    network_player,
    play_pairs,
    plot_curve,
)
from arena_bots.training.networks import AlphaZeroNet, MlpNet, build_network, load_weights, weights_bytes
from arena_bots.training.selfplay import SelfPlaySettings, play_generation, play_teacher_generation
from arena_bots.training.trainer import TrainSettings, make_optimizer, steps_for, train_steps
from arena_games.api import Game
from arena_games.registry import get_game

RESUME_FILES = ("config.json", "state.pt", "buffer.npz", "progress.json")
TEACHER_FILE = "teacher.onnx"  # a bot-file teacher as validated when it was given (Run.open)


@dataclass(frozen=True)
class RunSettings:
    blocks: int = 4
    filters: int = 32
    selfplay: SelfPlaySettings = field(default_factory=SelfPlaySettings)
    train: TrainSettings = field(default_factory=TrainSettings)
    buffer_capacity: int = 50_000  # positions in the replay window
    checkpoint_every: int = 5  # generations
    eval_pairs: int = 8  # seat-swapped pairs per opponent of a new checkpoint
    eval_simulations: int = 64  # per move, for checkpoints and UCT alike
    # The first `teacher_generations` generations are demonstrations instead of self-play: games of
    # the house bot `teacher` against itself (selfplay.play_teacher_generation), `teacher_explore`
    # of their moves random. "" (the default) has none. `teacher_dagger` of the other moves are the
    # learner's (its policy's most likely legal move; DAgger), still labelled with the teacher's.
    # `teacher_opponent`: the later generations play the teacher instead of the network itself
    # (selfplay.play_generation's `teacher`, its seat alternating game by game). A `teacher` that
    # ends in .onnx is the path of a bot file of the game instead of a house bot: validated as an
    # upload when given, kept in the run folder (TEACHER_FILE, so the path need not last) and
    # played as its manifest says at `eval_simulations`, e.g. a run's own earlier final bot.
    teacher: str = ""
    teacher_generations: int = 0
    teacher_explore: float = 0.1
    teacher_dagger: float = 0.0
    teacher_opponent: bool = False
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSettings:
        return cls(
            **{
                **data,
                "selfplay": SelfPlaySettings(**data["selfplay"]),
                "train": TrainSettings(**data["train"]),
            }
        )


# CPU-practical defaults per game (ARCHITECTURE §8): 4 blocks x 32 filters, 64 simulations.
# Dirichlet alpha ~ 10 / typical legal moves (Bobail ~15, Pente ~350); Pente self-play is capped.
DEFAULT_SETTINGS = {
    "bobail": RunSettings(
        selfplay=SelfPlaySettings(games=64, parallel=64, dirichlet_alpha=0.5, temperature_moves=8),
        buffer_capacity=60_000,
    ),
    "pente": RunSettings(
        selfplay=SelfPlaySettings(
            games=32, parallel=32, dirichlet_alpha=0.05, temperature_moves=8, game_config={"ply_cap": 160}
        ),
        buffer_capacity=40_000,
        checkpoint_every=2,
    ),
    # Seed 001's MLP (534 -> 96 -> 96) with 2 hidden layers of 96 units; ~12 legal moves a frame.
    "spring2021": RunSettings(
        blocks=2,
        filters=96,
        selfplay=SelfPlaySettings(
            games=64, parallel=64, dirichlet_alpha=0.8, temperature_moves=30, opening_fraction=0.0
        ),
        buffer_capacity=100_000,
        checkpoint_every=8,
        eval_pairs=4,
        eval_simulations=32,  # UCT's random playouts of whole games make evaluations slow
    ),
}


class SettingsError(ValueError):
    """Settings a run cannot take, named with the reason (the CLI shows it as a usage error)."""


# settings_for's names of the self-play and the training settings, the RunSettings fields (PARTS)
# that hold them, and the run's settings named otherwise.
SELFPLAY_NAMES = frozenset({"simulations", "games", "parallel", "temperature_moves", "opening_fraction"})
TRAIN_NAMES = frozenset({"learning_rate"})
PARTS = {"selfplay": SELFPLAY_NAMES, "train": TRAIN_NAMES}
RENAMED = {"capacity": "buffer_capacity"}
# What a resumed run may change from its next generation; the other settings define the run (its
# network, replay window and seed) and stay as its config.json has them.
RESUMABLE = (
    SELFPLAY_NAMES
    | TRAIN_NAMES
    | {
        "checkpoint_every",
        "eval_pairs",
        "eval_simulations",
        "teacher",
        "teacher_generations",
        "teacher_explore",
        "teacher_dagger",
        "teacher_opponent",
    }
)


def settings_for(
    game_name: str,
    *,
    blocks: int | None = None,
    filters: int | None = None,
    simulations: int | None = None,
    games: int | None = None,
    parallel: int | None = None,
    temperature_moves: int | None = None,
    opening_fraction: float | None = None,
    learning_rate: float | None = None,
    capacity: int | None = None,
    checkpoint_every: int | None = None,
    eval_pairs: int | None = None,
    eval_simulations: int | None = None,
    teacher: str | None = None,
    teacher_generations: int | None = None,
    teacher_explore: float | None = None,
    teacher_dagger: float | None = None,
    teacher_opponent: bool | None = None,
    seed: int | None = None,
) -> RunSettings:
    """The game's default settings with the given ones replaced (None: keep the default).
    SettingsError names a bad value: a teacher that cannot teach this game, demonstrations without a
    teacher, a share outside [0, 1], a negative count."""
    given = {
        "blocks": blocks,
        "filters": filters,
        "simulations": simulations,
        "games": games,
        "parallel": parallel,
        "temperature_moves": temperature_moves,
        "opening_fraction": opening_fraction,
        "learning_rate": learning_rate,
        "capacity": capacity,
        "checkpoint_every": checkpoint_every,
        "eval_pairs": eval_pairs,
        "eval_simulations": eval_simulations,
        "teacher": teacher,
        "teacher_generations": teacher_generations,
        "teacher_explore": teacher_explore,
        "teacher_dagger": teacher_dagger,
        "teacher_opponent": teacher_opponent,
        "seed": seed,
    }
    return _replaced(DEFAULT_SETTINGS.get(game_name, RunSettings()), game_name, given)


def resumed_settings(saved: RunSettings, game_name: str, changes: Mapping[str, Any]) -> RunSettings:
    """A resumed run's `saved` settings with `changes` (settings_for's names; None: unchanged)
    replaced. SettingsError names a change that only a new run can make, or a bad value."""
    fixed = sorted(
        name
        for name, value in _given(changes).items()
        if name not in RESUMABLE and value != _setting(saved, name)
    )
    if fixed:
        kept = ", ".join(f"{name}={_setting(saved, name)!r}" for name in fixed)
        raise SettingsError(f"a resumed run keeps {kept}: start a new run (another --out) to change that")
    return _replaced(saved, game_name, changes)


def _replaced(base: RunSettings, game_name: str, given: Mapping[str, Any]) -> RunSettings:
    """`base` with the given settings (settings_for's names; None: keep) replaced, then checked."""
    given = _given(given)
    parts = {
        part: dataclasses.replace(
            getattr(base, part), **{name: value for name, value in given.items() if _part(name) == part}
        )
        for part in PARTS
    }
    top = {RENAMED.get(name, name): value for name, value in given.items() if _part(name) is None}
    settings = dataclasses.replace(base, **parts, **top)
    _check_settings(settings, game_name)
    return settings


def _part(name: str) -> str | None:
    """The RunSettings field (PARTS) that holds settings_for's `name`; None: RunSettings itself."""
    return next((part for part, names in PARTS.items() if name in names), None)


def _setting(settings: RunSettings, name: str) -> Any:
    """One setting by settings_for's name."""
    part = _part(name)
    holder = settings if part is None else getattr(settings, part)
    return getattr(holder, RENAMED.get(name, name))


def _check_settings(settings: RunSettings, game_name: str) -> None:
    """SettingsError if a value is out of its range or the teacher cannot teach `game_name`."""
    if settings.teacher_generations < 0:
        raise SettingsError(f"teacher generations must be 0 or more, got {settings.teacher_generations}")
    if not 0.0 <= settings.teacher_explore <= 1.0:
        raise SettingsError(f"the teacher's exploration is a share in [0, 1], got {settings.teacher_explore}")
    if not 0.0 <= settings.teacher_dagger <= 1.0:
        raise SettingsError(
            f"the learner's share of the teacher's games is in [0, 1], got {settings.teacher_dagger}"
        )
    if (settings.teacher_generations or settings.teacher_opponent) and not settings.teacher:
        raise SettingsError("teacher generations need a teacher (a house bot of the game, or its bot file)")
    if not settings.train.learning_rate > 0:
        raise SettingsError(f"the learning rate must be above 0, got {settings.train.learning_rate}")
    if not 0.0 <= settings.selfplay.opening_fraction <= 1.0:
        raise SettingsError(
            f"the share of games from seeded openings is in [0, 1], got {settings.selfplay.opening_fraction}"
        )
    if settings.selfplay.temperature_moves < 0:
        raise SettingsError(f"temperature moves must be 0 or more, got {settings.selfplay.temperature_moves}")
    if settings.teacher and not is_bot_file(settings.teacher):
        try:
            house_player(settings.teacher, settings.eval_simulations, game=game_name)
        except ValueError as error:  # a house bot that does not play this game
            raise SettingsError(str(error)) from None


def is_bot_file(teacher: str) -> bool:
    """Whether the setting `teacher` is the path of an ONNX bot file rather than a house bot."""
    return teacher.endswith(".onnx")


def _validated_teacher(given: str | None, game: Game, settings: RunSettings) -> bytes | None:
    """The sanitized model of the bot-file teacher `given` (a new run's `teacher`, or one a resumed
    run is given), validated as an upload of `game` would be; None for a house bot or none.
    SettingsError names a file that cannot be read or is refused."""
    if not given or not is_bot_file(given):
        return None
    from arena_bots.validation import validate_file  # onnx is heavy: only bot-file teachers need it

    try:  # checks the size before reading
        report = validate_file(given, game, simulations=settings.eval_simulations)
    except OSError as error:
        raise SettingsError(f"cannot read the teacher {given}: {error.strerror}") from None
    if not report.ok:
        raise SettingsError(
            f"the teacher {given} was refused as an upload would be [{report.code}]: {report.message}"
        )
    return report.model_bytes


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


@dataclass
class Progress:
    """Counters over the whole run, all sessions together."""

    generation: int = 0
    step: int = 0  # gradient steps
    games: int = 0
    positions: int = 0
    wall_seconds: float = 0.0
    policy_loss: float = float("nan")
    value_loss: float = float("nan")
    checkpoints: list[dict[str, Any]] = field(default_factory=list)  # name, generation, step, games, ...


def train_alphazero(
    game_name: str,
    out_dir: str | os.PathLike[str],
    hours: float | None = None,
    *,
    max_steps: int | None = None,
    settings: RunSettings | None = None,
    changes: Mapping[str, Any] | None = None,
    fit_ratings: RatingFit,
    progress: bool = True,
) -> dict[str, Any]:
    """Train (or resume training) an AlphaZero bot for `game_name` in `out_dir`.

    `changes` (settings_for's names; None: unchanged) apply over a new run's `settings` (the game's
    defaults if None), or over a resumed run's saved ones (`resumed_settings`); SettingsError before
    anything runs if the run cannot take them. Stops after
    `hours` of wall time in this call or once the run has made `max_steps` gradient steps in all (at
    least one must be given); the current generation is finished first. Returns the final progress
    as a dict. `fit_ratings` is `arena_platform.ratings.fit_ratings`.
    """
    if hours is None and max_steps is None:
        raise ValueError("give hours or max_steps (or both)")
    torch.set_num_threads(1)
    run = Run.open(Path(out_dir), get_game(game_name), settings, fit_ratings, changes)
    deadline = time.monotonic() + (hours * 3600.0 if hours is not None else float("inf"))
    bar = tqdm(desc=f"{game_name} self-play", unit="game", disable=not progress, initial=run.progress.games)
    while time.monotonic() < deadline and (max_steps is None or run.progress.step < max_steps):
        line = run.generation()
        bar.update(run.last_games)
        bar.set_postfix_str(line)
        _report(bar, line, progress)
    if run.needs_checkpoint():
        _report(bar, run.checkpoint(), progress)
    bar.close()
    return dataclasses.asdict(run.progress)


def _report(bar: tqdm, line: str, progress: bool) -> None:
    """One log line: above the bar, or printed when there is no bar (a background run's log)."""
    if progress:
        bar.write(line)
    else:
        print(line, flush=True)


class Run:
    """The live state of a run and its folder."""

    resume_files = RESUME_FILES

    def __init__(self, folder: Path, game: Game, settings: RunSettings, fit_ratings: RatingFit) -> None:
        self.folder, self.game, self.settings, self.fit_ratings = folder, game, settings, fit_ratings
        torch.manual_seed(settings.seed)  # the network's first weights: a run is reproducible from its seed
        self.network: AlphaZeroNet | MlpNet = build_network(game.spec, settings.blocks, settings.filters)
        self.optimizer = make_optimizer(self.network, settings.train)
        self.buffer = ReplayBuffer(
            settings.buffer_capacity, game.spec.inputs, next(iter(game.spec.heads.values()))
        )
        self.symmetries = symmetries_for(game.spec)
        self.progress = Progress()
        self.records: list[GameRecord] = []
        self.last_games = 0
        self.started = time.monotonic()
        self.wall_at_start = 0.0

    @classmethod
    def open(
        cls,
        folder: Path,
        game: Game,
        settings: RunSettings | None,
        fit_ratings: RatingFit,
        changes: Mapping[str, Any] | None = None,
    ) -> Run:
        """A new run in `folder` with `settings` (the game's defaults if None) and `changes`, or the
        run already there resumed: its saved settings win over `settings`, and take `changes`
        (resumed_settings) from its next generation, each change recorded in config.json's
        "changes" with that generation."""
        config = folder / "config.json"
        if config.exists():
            saved = json.loads(config.read_text())
            if saved["game"] != game.name:
                raise ValueError(f"{folder} holds a {saved['game']} run, not {game.name}")
            old = RunSettings.from_dict(saved["settings"])
            new = resumed_settings(old, game.name, changes or {})
            teacher = _validated_teacher((changes or {}).get("teacher"), game, new)
            run = cls(folder, game, new, fit_ratings)
            run.keep_teacher(teacher)
            run.resume()
            if new != old:
                changed = {
                    name: _setting(new, name)
                    for name in sorted(RESUMABLE)
                    if _setting(new, name) != _setting(old, name)
                }
                record = {"generation": run.progress.generation + 1, "settings": changed}
                saved.update(settings=new.to_dict(), changes=[*saved.get("changes", []), record])
                _write_json(config, saved)
            return run
        base = settings or DEFAULT_SETTINGS.get(game.name, RunSettings())
        new = _replaced(base, game.name, changes or {})
        teacher = _validated_teacher(new.teacher, game, new)
        run = cls(folder, game, new, fit_ratings)
        (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
        run.keep_teacher(teacher)
        _write_json(config, {"game": game.name, "settings": run.settings.to_dict()})
        return run

    def keep_teacher(self, model: bytes | None) -> None:
        """Keeps `model`, a bot-file teacher just given and validated, as the run's TEACHER_FILE;
        SettingsError if the run has a bot-file teacher but no copy of it."""
        path = self.folder / TEACHER_FILE
        if model is not None:
            _atomic(path, lambda name: Path(name).write_bytes(model))
        elif is_bot_file(self.settings.teacher) and not path.exists():
            raise SettingsError(
                f"{self.folder} has no copy of its teacher ({TEACHER_FILE}): give --teacher "
                f"{self.settings.teacher} again"
            )

    def teacher_player(self) -> Player | None:
        """The run's teacher at `eval_simulations`: a house bot, or the bot of TEACHER_FILE as its
        manifest says; None without one."""
        teacher, simulations = self.settings.teacher, self.settings.eval_simulations
        if not teacher:
            return None
        if not is_bot_file(teacher):
            return house_player(teacher, simulations, game=self.game.name)
        model = (self.folder / TEACHER_FILE).read_bytes()
        backend = InProcessSession(model, threads=1)
        return loading.network_player(Manifest.from_model(model), backend, simulations=simulations)

    def resume(self) -> None:
        state_path = self.folder / "state.pt"
        if state_path.exists():
            state = torch.load(state_path, weights_only=True)
            self.network.load_state_dict(state["network"])
            self.optimizer.load_state_dict(state["optimizer"])
            for group in self.optimizer.param_groups:  # the saved state carries its learning rate
                group["lr"] = self.settings.train.learning_rate
            if (self.folder / "buffer.npz").exists():
                self.buffer.load(str(self.folder / "buffer.npz"))
            saved = json.loads((self.folder / "progress.json").read_text())
            self.progress = _from_json(Progress, saved)
        ratings = self.folder / "ratings.json"
        if ratings.exists():
            self.records = [GameRecord(**r) for r in json.loads(ratings.read_text())["games"]]
        self.wall_at_start = self.progress.wall_seconds

    def generation(self) -> str:
        """One generation (self-play, buffer, training, save) and a checkpoint when due; a log line."""
        line = self.train_generation()
        if self.progress.generation % self.settings.checkpoint_every == 0:
            line += " | " + self.checkpoint()
        return line

    def train_generation(self) -> str:
        """One generation: self-play, buffer, training, and the resume point saved; a log line."""
        settings, progress = self.settings, self.progress
        seed = settings.seed * 1_000_003 + progress.generation
        teacher = self.teacher_player()
        if progress.generation < settings.teacher_generations:
            learner = self.export("learner") if settings.teacher_dagger else None
            positions, stats = play_teacher_generation(
                self.game,
                teacher,
                settings.selfplay,
                seed,
                settings.teacher_explore,
                learner=learner,
                learner_share=settings.teacher_dagger,
            )
        else:
            opponent = teacher if settings.teacher_opponent else None
            positions, stats = play_generation(
                self.game, self.export("self-play"), settings.selfplay, seed, teacher=opponent
            )
        self.buffer.add(positions)
        steps = steps_for(len(positions), settings.train)
        rng = np.random.default_rng((settings.seed, progress.generation, 1))
        losses = train_steps(
            self.network, self.optimizer, self.buffer, steps, settings.train, rng, self.symmetries
        )
        progress.generation += 1
        progress.step += losses.steps
        progress.games += stats.games
        progress.positions += stats.positions
        progress.policy_loss, progress.value_loss = losses.policy, losses.value
        self.last_games = stats.games
        self.save_state()
        line = (
            f"gen {progress.generation} step {progress.step} games {progress.games} "
            f"positions {progress.positions} | wins {stats.wins[0]}/{stats.wins[1]} draws {stats.draws} "
            f"len {stats.mean_length:.1f} | loss p {losses.policy:.3f} v {losses.value:.3f}"
        )
        if stats.learner_wins is not None:
            line += f" | network won {stats.learner_wins} of {stats.games} against {settings.teacher}"
        return line

    def needs_checkpoint(self) -> bool:
        last = self.progress.checkpoints[-1]["generation"] if self.progress.checkpoints else 0
        return self.progress.generation > last

    def checkpoint(self) -> str:
        """Saves the network as a checkpoint, evaluates it, refits and redraws; a log line."""
        progress = self.progress
        name = f"{self.game.name}-step{progress.step:06d}"
        model = self.export(name, self.folder / "checkpoints" / f"{name}.onnx")
        torch.save(self.network.state_dict(), self.folder / "checkpoints" / f"{name}.pt")
        previous = progress.checkpoints[-1]["name"] if progress.checkpoints else None
        self.evaluate(name, model, previous)
        progress.checkpoints.append(
            {
                "name": name,
                "generation": progress.generation,
                "step": progress.step,
                "games": progress.games,
                "positions": progress.positions,
                "wall_seconds": round(self.wall_seconds(), 1),
            }
        )
        ratings = self.refit()
        self.save_progress()
        rating, half = ratings.get(name, (float("nan"), float("nan")))
        versus = f" ({rating - ratings[previous][0]:+.0f} vs previous)" if previous in ratings else ""
        return f"checkpoint {name}: {rating:+.0f} ± {half:.0f} Elo vs uct{versus}"

    def evaluate(self, name: str, model: bytes, previous: str | None) -> None:
        """Seat-swapped pairs of the new checkpoint against UCT, and the previous checkpoint (where it
        was kept) or, for the first, the random bot."""
        sims, pairs, c_puct = (
            self.settings.eval_simulations,
            self.settings.eval_pairs,
            self.settings.selfplay.c_puct,
        )
        player = network_player(name, model, self.game, sims, c_puct)
        opponents = [house_player(UCT, sims)]
        if previous is None:
            opponents.append(house_player(RANDOM, sims))
        elif (old := self.checkpoint_model(previous)) is not None:
            opponents.append(network_player(previous, old, self.game, sims, c_puct))
        seed = self.settings.seed * 1_000_003 + self.progress.generation
        config = self.settings.selfplay.game_config  # the self-play caps hold here too
        for opponent in opponents:
            self.records += play_pairs(self.game, player, opponent, pairs, seed, config)

    def refit(self) -> dict[str, tuple[float, float]]:
        ratings = fit(self.records, self.fit_ratings)
        _write_json(
            self.folder / "ratings.json",
            {"ratings": ratings, "games": [r.to_dict() for r in self.records]},
        )
        steps = {c["name"]: c["step"] for c in self.progress.checkpoints}
        curve = self.folder / "curve.png"
        plot_curve(ratings, steps, str(curve), f"{self.game.spec.title}: AlphaZero checkpoints")
        return ratings

    def export(self, name: str, path: Path | None = None, network: torch.nn.Module | None = None) -> bytes:
        """The network (or `network`, of the run's shape) as a bot (validated statically by
        export_bot), written to `path` if given."""
        manifest = Manifest(
            game=self.game.name,
            game_version=self.game.spec.version,
            name=name,
            player="mcts",
            simulations=self.settings.eval_simulations,
            c_puct=self.settings.selfplay.c_puct,
        )
        return export_bot(network or self.network, self.game, manifest, path)

    def checkpoint_model(self, name: str) -> bytes | None:
        """A checkpoint's ONNX bot; exported again from its torch state when only that was kept, None
        when neither was (a resume point committed without them: its next evaluation has no previous
        checkpoint to play)."""
        onnx = self.folder / "checkpoints" / f"{name}.onnx"
        if onnx.exists():
            return onnx.read_bytes()
        if not onnx.with_suffix(".pt").exists():
            return None
        network = build_network(self.game.spec, self.settings.blocks, self.settings.filters)
        load_weights(network, onnx.with_suffix(".pt").read_bytes())
        return self.export(name, onnx, network)

    def network_bytes(self) -> bytes:
        """The network's torch state (what `load_network` takes back)."""
        return weights_bytes(self.network)

    def load_network(self, data: bytes) -> None:
        """Starts from another run's network (a fine-tune): the same shape, from `network_bytes`."""
        load_weights(self.network, data)

    def wall_seconds(self) -> float:
        return self.wall_at_start + time.monotonic() - self.started

    def save_state(self) -> None:
        """The resume point: network, optimiser, buffer and progress, each replaced atomically."""
        state = {"network": self.network.state_dict(), "optimizer": self.optimizer.state_dict()}
        _atomic(self.folder / "state.pt", lambda path: torch.save(state, path))
        _atomic(self.folder / "buffer.npz", lambda path: self.buffer.save(path))
        self.save_progress()

    def save_progress(self) -> None:
        self.progress.wall_seconds = round(self.wall_seconds(), 1)
        _write_json(self.folder / "progress.json", dataclasses.asdict(self.progress))


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    """Writes through `write(temporary path)`, then renames onto `path`."""
    temporary = path.with_name("tmp-" + path.name)  # keeps the suffix: numpy appends .npz otherwise
    write(str(temporary))
    os.replace(temporary, path)


def _write_json(path: Path, data: Any) -> None:
    """`data` as strict JSON: a non-finite float (NaN: nothing measured yet) is written null, as
    strict parsers refuse NaN; `_from_json` reads it back."""
    text = json.dumps(_finite_or_null(data), indent=1, allow_nan=False)
    _atomic(path, lambda name: Path(name).write_text(text))


def _finite_or_null(value: Any) -> Any:
    """`value` with every non-finite float in it replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    return value


T = TypeVar("T")


def _from_json(kind: type[T], data: Mapping[str, Any]) -> T:
    """The dataclass `kind` from fields `_write_json` saved: a float (or a float of a dict of floats)
    saved as null is NaN again. Fields it lacks keep their defaults."""
    types = {field.name: field.type for field in dataclasses.fields(kind)}  # strings: postponed annotations

    def restored(name: str, value: Any) -> Any:
        if types.get(name) == "float" and value is None:
            return math.nan
        if types.get(name) == "dict[str, float]":
            return {key: math.nan if item is None else item for key, item in value.items()}
        return value

    return kind(**{name: restored(name, value) for name, value in data.items()})
