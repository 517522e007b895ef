"""Training sessions on a worker of the `training` queue: what `arena.train_session` runs.

A task claims the session (store.training), unpacks its resume point from the blob store into a
scratch folder, and drives the kit's run one generation at a time (`open_run`; alphazero:
self-play, replay window, training, arena_bots.training.run; actor-critic: a segment of play, then
V-trace learning, arena_bots.training.actor_critic; dqn: environment steps and their updates,
arena_bots.training.dqn_run). After each generation it saves, in one transaction,
the new resume point's blob key, the counters and, every `checkpoint_every` generations and after
the last one, a checkpoint: the network exported with export_bot, validated as an upload is, and
entered into the game's ladder as the next version of the session's bot (then the ladder is
scheduled, so the checkpoint gets its first games at once). A worker killed mid-generation loses
that generation only: the sweeper sends the session again once its lease lapses, and the next
worker plays the generation again from the same seeds; a checkpoint is unique per generation.
A resume point that a save superseded is deleted from the blob store (a long session would
otherwise keep every generation's replay window); the sweeper deletes an ended session's.

The session stops, before a generation, when its episodes (training games) or its time limit
(training time over all its workers, so it holds to within a generation) are used up, or when its
owner paused or cancelled it (the heartbeat reads its status). A task trains for one time slice
(`Settings.training_slice_seconds`), then puts the session back in the queue and sends it again:
a long session never outlives the broker's visibility timeout, and sessions of several users (and
on the embedded worker, the matches) take turns on a worker.

PyTorch (the `train` extra) is imported inside the task only: match workers never load it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import logging
import math
import os
import socket
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from arena_bots.manifest import ContractError
from arena_bots.match import PlatformFault
from arena_games.registry import get_game
from arena_platform.db import session
from arena_platform.models import TrainingCheckpoint, TrainingSession
from arena_platform.queue import TRAIN_SESSION
from arena_platform.settings import Settings
from arena_platform.store import training
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.training import FAILED, FINISHED, QUEUED, RUNNING, LossPoint, Progress
from arena_workers.context import WorkerContext, is_database_lost
from arena_workers.ladders import schedule_ladder
from arena_workers.leases import new_owner
from arena_workers.sweeper import discard_state

log = logging.getLogger(__name__)

SLICE_SHARE = 0.5  # a task's slice is at most this share of the task time limit
MAX_PARALLEL = 64  # self-play games in lockstep


def training_available() -> bool:
    """Whether this process can train (PyTorch, the `train` extra, is installed)."""
    return importlib.util.find_spec("torch") is not None


def train_session(context: WorkerContext, session_id: int) -> str:
    """Trains the session for one slice if it can be claimed; what became of it (its status, or
    "not claimed" when it is ended, paused or held by another worker)."""
    settings, owner = context.settings, new_owner(context)
    with session(context.engine) as db:
        row = training.claim_session(
            db,
            session_id=session_id,
            owner=owner,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
        )
    if row is None:
        return "not claimed"
    status, error, redelivery = QUEUED, None, 0.0
    try:
        with SessionLease(context, session_id, owner) as lease:
            status = _train(context, row, owner, lease)
    except PlatformFault as fault:  # the worker is shutting down: the next one goes on
        log.warning("training session %s given back: %s", session_id, fault)
    except Exception as failure:  # a session's own failure ends it, with the reason
        if is_database_lost(failure):
            redelivery = settings.heartbeat_seconds
        else:
            log.exception("training session %s failed", session_id)
            status, error = FAILED, f"{type(failure).__name__}: {failure}"
    with session(context.engine) as db:
        training.finish(
            db, session_id=session_id, owner=owner, status=status, error=error, redelivery_seconds=redelivery
        )
    if status == QUEUED:
        context.enqueue(TRAIN_SESSION, session_id)
    return status


class SessionLease:
    """Renews `owner`'s lease of a session every heartbeat from a daemon thread, while in a `with`;
    `status` is the session's status as last read (its owner may pause or cancel it), None once
    the lease is lost."""

    def __init__(self, context: WorkerContext, session_id: int, owner: str) -> None:
        self._context, self._session_id, self._owner = context, session_id, owner
        self.status: str | None = RUNNING
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"session-lease-{session_id}", daemon=True)

    def __enter__(self) -> SessionLease:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        settings = self._context.settings
        while not self._stop.wait(settings.heartbeat_seconds):
            try:
                with session(self._context.engine) as db:
                    self.status = training.renew_session_lease(
                        db,
                        session_id=self._session_id,
                        owner=self._owner,
                        lease_seconds=settings.lease_seconds,
                    )
            except Exception as error:  # a missed beat: the lease outlives three
                log.warning("heartbeat of training session %s skipped: %s", self._session_id, error)
            if self.status is None:
                return


def _train(context: WorkerContext, row: TrainingSession, owner: str, lease: SessionLease) -> str:
    """Generations until the session is done, stopped or its slice is over; the status to leave."""
    import torch

    settings = context.settings
    torch.set_num_threads(settings.training_threads)
    slice_seconds = min(settings.training_slice_seconds, settings.task_time_limit_seconds * SLICE_SHARE)
    slice_ends = time.monotonic() + slice_seconds
    with tempfile.TemporaryDirectory(prefix=f"arena-training-{row.id}-") as scratch:
        folder = Path(scratch)
        if row.state_sha256 is not None:
            _unpack(context.blobs.get(row.state_sha256), folder)
        run = open_run(row, folder)
        if row.state_sha256 is None and row.settings.get("base_network_sha256"):
            run.load_network(context.blobs.get(row.settings["base_network_sha256"]))
        losses = Progress.model_validate(row.progress).losses
        resume_point = row.state_sha256
        while True:
            if lease.status != RUNNING:
                return lease.status or RUNNING  # paused, cancelled, or no longer ours (finish refuses)
            if _used_up(row, run):
                return FINISHED
            if time.monotonic() >= slice_ends:
                return QUEUED
            context.check_running()
            run.train_generation()
            point = _loss_point(run.progress)
            if point is not None:
                losses.append(point)
            saved, state_sha256 = _save(context, row, owner, run, losses)
            discard_state(context, resume_point if saved else state_sha256)
            if not saved:
                return RUNNING  # the lease was lost: another worker has it
            resume_point = state_sha256


def _loss_point(progress: Any) -> LossPoint | None:
    """The losses of the generation just trained; None while they are NaN (JSON has no NaN). A kit
    without a policy loss (dqn) has policy_loss None."""
    policy, value = progress.policy_loss, progress.value_loss
    if not math.isfinite(value) or (policy is not None and not math.isfinite(policy)):
        return None
    return LossPoint(step=progress.step, policy=policy, value=value)


def _used_up(row: TrainingSession, run: Any) -> bool:
    """Whether the session's episodes or training time are spent (as of its last saved generation)."""
    progress = run.progress
    return (
        progress.games >= row.settings["episodes"]
        or progress.wall_seconds >= row.settings["time_limit_seconds"]
    )


def _save(
    context: WorkerContext, row: TrainingSession, owner: str, run: Any, losses: list[LossPoint]
) -> tuple[bool, str]:
    """Saves the generation just played (and its checkpoint when due): whether it was saved (False
    if the lease was lost) and the blob key of its resume point."""
    progress = run.progress
    state_sha256 = context.blobs.put(_pack(run))
    counters = Progress(
        generation=progress.generation,
        step=progress.step,
        games=progress.games,
        positions=progress.positions,
        elapsed_seconds=progress.wall_seconds,
        losses=losses,
    )
    every = row.settings["checkpoint_every"]
    entry: dict[str, Any] = {}
    if progress.generation % every == 0 or _used_up(row, run):
        entry = _checkpoint(context, row, run)
    with session(context.engine) as db:
        saved, bot_id = training.save_generation(
            db, session_id=row.id, owner=owner, state_sha256=state_sha256, progress=counters, **entry
        )
    if bot_id is not None:
        schedule_ladder(context, entry["ladder_id"])  # booked at once: urgent, played by the next task
    return saved, state_sha256


def _checkpoint(context: WorkerContext, row: TrainingSession, run: Any) -> dict[str, Any]:
    """The checkpoint of the run's network, validated as an upload: save_generation's arguments."""
    from arena_bots.validation import validate

    settings, progress, game = context.settings, run.progress, run.game
    checkpoint = TrainingCheckpoint(
        session_id=row.id,
        generation=progress.generation,
        step=progress.step,
        games=progress.games,
        network_sha256=context.blobs.put(run.network_bytes()),
    )
    try:
        report = validate(run.export(row.bot_name), game, simulations=settings.ladder_simulations)
    except ContractError as error:
        checkpoint.error = f"{error}"
        return {"checkpoint": checkpoint}
    if not report.ok:
        checkpoint.error = f"{report.code}: {report.message}"
        log.warning("training session %s: checkpoint refused: %s", row.id, checkpoint.error)
        return {"checkpoint": checkpoint}
    with session(context.engine) as db:
        ladder_id = ensure_ladder(db, game=game.name, simulations=settings.ladder_simulations).id
        db.commit()
    return {
        "checkpoint": checkpoint,
        "manifest": report.manifest,
        "report": report.to_dict(),
        "model_sha256": context.blobs.put(report.model_bytes),
        "ladder_id": ladder_id,
    }


def open_run(row: TrainingSession, folder: Path) -> Any:
    """The session's run of its kit in `folder`: new, or resumed from the files there. What `_train`
    drives: `train_generation()`, `progress` (the alphazero kit's Progress counters), `export(name)`,
    `network_bytes()` / `load_network(data)`, `game`, `folder`, and the `resume_files` to keep."""
    if row.kit == "actor-critic":
        return ActorCriticRun(folder, row.settings)
    if row.kit == "dqn":
        return DqnSessionRun(folder, row.settings)
    from arena_bots.training.run import Run

    return Run.open(folder, get_game(row.game), run_settings(row.game, row.settings), _no_fit)


class _KitRun:
    """What the actor-critic and dqn session runs share: their torch network's weights as bytes
    (`network`, set by each), as the alphazero Run's `network_bytes` / `load_network` give them."""

    network: Any

    def network_bytes(self) -> bytes:
        from arena_bots.training.networks import weights_bytes

        return weights_bytes(self.network)

    def load_network(self, data: bytes) -> None:
        from arena_bots.training.networks import load_weights

        load_weights(self.network, data)


class ActorCriticRun(_KitRun):
    """The actor-critic kit's run (Smash the Code, arena_bots.training.actor_critic) as a session
    drives a run: a generation is one segment (the lanes play, then V-trace learns from it), and
    its losses are the segment's policy and value terms. Sessions record no demonstrations."""

    resume_files = ("config.json", "state.pt", "environments.npz", "progress.json")

    def __init__(self, folder: Path, asked: dict[str, Any]) -> None:
        from arena_bots.training import actor_critic

        shape = {"blocks": asked["blocks"], "filters": asked["filters"]}
        self.run = actor_critic.Run.open(folder, actor_critic.settings_with(**shape, seed=asked["seed"]))
        self.folder, self.game, self.network = folder, actor_critic.GAME, self.run.trainer.network

    @property
    def progress(self) -> Any:
        from arena_bots.training.run import Progress

        counters = self.run.trainer.progress
        return Progress(
            generation=counters.segment,
            step=counters.step,
            games=counters.games,
            positions=counters.positions,
            wall_seconds=self.run.wall_seconds(),
            policy_loss=counters.recent.get("policy", math.nan),
            value_loss=counters.recent.get("value", math.nan),
        )

    def train_generation(self) -> None:
        self.run.trainer.segment()
        self.run.save()

    def export(self, name: str) -> bytes:
        return self.run.trainer.export(name)


class DqnSessionRun(_KitRun):
    """The DQN kit's run (Coders Strike Back, arena_bots.training.dqn_run) as a session drives a run:
    a generation is `GENERATION_STEPS` environment steps (each one turn of every race) with their
    updates; the runner learns first, then the blocker (the kit's phases), and a checkpoint plays
    the pair once the blocker learns. Blocks and filters are the Q-nets' hidden layers and units;
    its one loss is the generation's mean |TD error| (no policy loss)."""

    GENERATION_STEPS = 2_000

    def __init__(self, folder: Path, asked: dict[str, Any]) -> None:
        from arena_bots.training import dqn_run

        shape = {"layers": asked["blocks"], "width": asked["filters"], "seed": asked["seed"]}
        self.run = dqn_run.DqnRun.open(folder, dataclasses.replace(dqn_run.DqnSettings(), **shape))
        self.folder, self.game, self.network = folder, self.run.game, self.run.learner.network
        self.td_error = math.nan

    @property
    def resume_files(self) -> list[str]:
        """What `DqnRun.resume` reads: the memories and tracks exist once their role has played."""
        return sorted(path.name for path in self.folder.iterdir() if path.is_file())

    @property
    def progress(self) -> Any:
        from arena_bots.training.run import Progress

        counters = self.run.progress
        return Progress(
            generation=counters.step // self.GENERATION_STEPS,
            step=counters.updates,
            games=counters.episodes,
            positions=counters.step * self.run.settings.races,
            wall_seconds=self.run.wall_seconds(),
            policy_loss=None,
            value_loss=self.td_error,
        )

    def train_generation(self) -> None:
        errors: list[float] = []
        for _ in range(self.GENERATION_STEPS):
            errors += self.run.step()
        self.td_error = float(np.mean(errors)) if errors else math.nan
        self.run.save()

    def export(self, name: str) -> bytes:
        return self.run.export(name, blocker=self.run.phase == "blocker")

    def load_network(self, data: bytes) -> None:
        super().load_network(data)
        self.run.learner.sync_target()


def run_settings(game: str, asked: dict[str, Any]) -> Any:
    """The alphazero kit's RunSettings for a session's settings (store.training.TrainingRequest's fields)."""
    from arena_bots.training.run import settings_for

    games = asked["games_per_generation"]
    return settings_for(
        game,
        blocks=asked["blocks"],
        filters=asked["filters"],
        simulations=asked.get("simulations"),
        games=games,
        parallel=min(games, MAX_PARALLEL),
        checkpoint_every=asked["checkpoint_every"],
        seed=asked["seed"],
    )


def _no_fit(*_: Any) -> Any:
    raise AssertionError("a platform session's checkpoints are rated by the ladder, not by the kit")


def _pack(run: Any) -> bytes:
    """The run's resume files as one uncompressed tar (the replay window is compressed already)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in run.resume_files:
            archive.add(run.folder / name, arcname=name)
    return buffer.getvalue()


def _unpack(data: bytes, folder: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(folder, filter="data")


class WorkerBeater:
    """Records every heartbeat that this worker process consumes `queues` (store.training's
    WorkerBeat), from a daemon thread: the API refuses sessions while no training worker beats.
    `stop` removes the record."""

    def __init__(self, settings: Settings, engine: Any, queues: str) -> None:
        self._settings, self._engine, self._queues = settings, engine, queues
        self.name = f"{socket.gethostname()}/{os.getpid()}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="arena-worker-beat", daemon=True)

    def start(self) -> WorkerBeater:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        try:
            with session(self._engine) as db:
                training.forget_worker(db, name=self.name)
        except Exception as error:  # the record lapses by itself
            log.warning("could not remove worker record %s: %s", self.name, error)

    def _beat(self) -> None:
        while True:
            try:
                with session(self._engine) as db:
                    training.beat_worker(db, name=self.name, queues=self._queues)
            except Exception as error:  # tried again at the next beat
                log.warning("worker beat skipped: %s", error)
            if self._stop.wait(self._settings.heartbeat_seconds):
                return
