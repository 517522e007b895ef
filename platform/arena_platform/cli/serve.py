"""`arena serve` (the API, the web pages and, on the embedded default, an in-process worker) and
`arena demo` (the same, with the zoo's trained bots loaded into the ladders of DEMO_GAMES and their
tournament running in one worker process per core, with a progress bar in the terminal)."""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from sqlalchemy import Engine
from tqdm import tqdm

import arena_platform
from arena_platform.blobs import BlobStore, sha256_hex
from arena_platform.cli.common import UsageError
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Ladder
from arena_platform.queue import SCHEDULE_LADDER, Enqueue, celery_enqueue
from arena_platform.settings import Settings, SettingsError, load_settings
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder, house_bots
from arena_platform.store.reads import pairing_progress

ZOO = Path(arena_platform.__file__).resolve().parents[2] / "bots" / "zoo"  # <game>/<bot>.onnx
ZOO_OWNER = "zoo"
DEMO_GAMES = ("bobail", "pente", "spring2021", "smash", "csb")
PROGRESS_SECONDS = 2.0


def add_commands(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser("serve", help="serve the API and the web pages (ARENA_HOST:ARENA_PORT)")
    serve.set_defaults(run=_run_serve)
    demo = commands.add_parser("demo", help="load the zoo's bots, start their tournament and serve it")
    demo.set_defaults(run=_run_demo)


@dataclass
class Services:
    """What the API process runs on: the database, the blob store and the way work reaches workers."""

    settings: Settings
    engine: Engine
    blobs: BlobStore
    enqueue: Enqueue


@contextlib.contextmanager
def services(settings: Settings, *, processes: int = 1) -> Iterator[Services]:
    """Migrated database, blob store, and an in-process worker when the broker is the embedded one,
    playing in `processes` processes (arena_workers.embedded)."""
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    blobs = BlobStore(settings.resolved_blob_url)
    if not settings.embedded_worker:
        yield Services(settings, engine, blobs, celery_enqueue(settings.broker_url))
        return
    from arena_workers.embedded import EmbeddedWorker  # the CLI is the one place that wires workers in

    with EmbeddedWorker(settings, engine=engine, blobs=blobs, processes=processes) as worker:
        yield Services(settings, engine, blobs, worker.enqueue)


def serve_forever(running: Services) -> None:
    from arena_bots.warm import warm_up_or_log
    from arena_platform.api import create_app
    from arena_platform.api.server import uvicorn_config

    # predict's and people's games' first moves find the kernels loaded; beside the serving, so
    # that the server answers at once (the embedded worker warms up too: one does it, in turn).
    threading.Thread(target=warm_up_or_log, name="arena-warm-up", daemon=True).start()
    app = create_app(running.settings, engine=running.engine, blobs=running.blobs, enqueue=running.enqueue)
    print(f"Arena is at http://{running.settings.host}:{running.settings.port} (Ctrl-C stops it)", flush=True)
    uvicorn.Server(uvicorn_config(app, running.settings)).run()


def _settings() -> Settings:
    try:
        return load_settings()
    except SettingsError as error:
        raise UsageError(str(error)) from None


def _run_serve(_: argparse.Namespace) -> int:
    with services(_settings()) as running:
        serve_forever(running)
    return 0


def _run_demo(_: argparse.Namespace) -> int:
    from arena_workers.processes import available_cores

    settings = _settings()
    count = sum(len(list((ZOO / game).glob("*.onnx"))) for game in DEMO_GAMES)
    print(f"Arena demo: loading the zoo's {count} bots (each new one validated as an upload is)", flush=True)
    cores = available_cores()
    print(f"its games are played in {cores} worker processes, one per core", flush=True)
    with services(settings, processes=cores) as running:
        ladders = [load_zoo_ladder(running, game) for game in DEMO_GAMES]
        running.enqueue(SCHEDULE_LADDER, *(ladder.id for ladder in ladders))  # their games in turn
        threading.Thread(target=_show_progress, args=(running.engine, ladders), daemon=True).start()
        serve_forever(running)
    return 0


def load_zoo_ladder(running: Services, game: str) -> Ladder:
    """The demo ladder of `game` with every zoo bot of that game on it (validated, loaded once);
    a game without zoo bots (no folder, or no .onnx in it) gets a ladder of its house bots only."""
    from arena_bots.validation import validate
    from arena_games.registry import get_game

    with session(running.engine) as db:
        ladder = ensure_ladder(db, game=game, simulations=running.settings.ladder_simulations)
        owner = users.get_user_by_name(db, name=ZOO_OWNER) or users.create_user(db, name=ZOO_OWNER)[0]
        models = sorted((ZOO / game).glob("*.onnx"))
        if not models:
            house = ", ".join(house_bots(game))
            print(f"no zoo bots for {game} in {ZOO / game}: its ladder has its house bots only ({house})")
        for path in models:
            model = path.read_bytes()
            if bots.find_active_bot_by_model(db, ladder_id=ladder.id, model_sha256=sha256_hex(model)):
                continue
            print(f"validating {game} bot {path.name} ...", end=" ", flush=True)  # a second or more each
            report = validate(model, get_game(game))
            if not report.ok:
                print(f"skipped: {report.message}")
                continue
            key = running.blobs.put(report.model_bytes)
            bots.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=report.manifest,
                report=report.to_dict(),
                model_sha256=key,
            )
            print(f"loaded as {report.manifest.name!r}")
        db.commit()
    return ladder


def _show_progress(engine: Engine, ladders: list[Ladder]) -> None:
    """One bar per ladder: pairings done of those booked so far, refreshed every few seconds."""
    bars = {ladder.id: tqdm(desc=ladder.name, unit="pairing", position=i) for i, ladder in enumerate(ladders)}
    while True:
        with session(engine) as db:
            for ladder_id, bar in bars.items():
                progress = pairing_progress(db, ladder_id=ladder_id)
                bar.total = progress.done + progress.queued + progress.running + progress.failed
                bar.n = progress.done
                bar.refresh()
        time.sleep(PROGRESS_SECONDS)
