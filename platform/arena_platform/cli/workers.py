"""`arena worker`, `arena beat` and `arena sweep`: the Celery side (ARENA_BROKER_URL)."""

from __future__ import annotations

import argparse

from arena_platform.cli.common import UsageError
from arena_platform.queue import DEFAULT_QUEUE, TRAINING_QUEUE


def add_commands(commands: argparse._SubParsersAction) -> None:
    worker = commands.add_parser(
        "worker", help="run a Celery worker on ARENA_BROKER_URL (ARENA_WORKER_CONCURRENCY processes)"
    )
    worker.add_argument(
        "--beat", action="store_true", help="also run the sweeper beside it (one per deployment, like `beat`)"
    )
    worker.add_argument("--loglevel", default="INFO", help="Celery's log level (default: %(default)s)")
    worker.add_argument(
        "--queues",
        default=DEFAULT_QUEUE,
        help=f"comma-separated queues to consume: {DEFAULT_QUEUE} (matches, the default) and/or "
        f"{TRAINING_QUEUE} (training sessions, which need the 'train' extra)",
    )
    worker.set_defaults(run=_run_worker)

    beat = commands.add_parser("beat", help="run the sweeper: one sweep every ARENA_HEARTBEAT_SECONDS")
    beat.set_defaults(run=_run_beat)

    sweep = commands.add_parser("sweep", help="recover silent workers' pairings and lost messages once, now")
    sweep.set_defaults(run=_run_sweep)


def _broker_settings():  # -> Settings; imported lazily: the worker stack is heavy
    from arena_platform.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as error:
        raise UsageError(str(error)) from None
    if settings.embedded_worker:
        raise UsageError(
            "set ARENA_BROKER_URL (e.g. redis://localhost:6379/0): the default in-memory broker "
            "only reaches the worker inside `arena serve`"
        )
    return settings


def _run_worker(args: argparse.Namespace) -> int:
    from arena_bots.warm import warm_up_or_log
    from arena_platform.db import make_engine
    from arena_workers.celery_app import create_celery_app, worker_argv
    from arena_workers.sweeper import start_sweeper_process
    from arena_workers.training import WorkerBeater, training_available

    queues = _queues(args.queues)
    if TRAINING_QUEUE in queues and not training_available():
        raise UsageError(f"the {TRAINING_QUEUE} queue needs the 'train' extra (pip install -e '.[train]')")
    settings = _broker_settings()
    if args.beat:
        start_sweeper_process(settings)  # a daemon: it ends with this process
    # Here, before the pool forks: its processes inherit the compiled kernels, loaded once for all
    # (a process that warmed up itself spent about 1 CPU-s on it; ARCHITECTURE §9).
    warm_up_or_log()
    engine = make_engine(settings.resolved_database_url, pooled=False)  # the pool is forked from here
    beater = WorkerBeater(settings, engine, ",".join(queues)).start()
    try:
        create_celery_app(settings).worker_main(worker_argv(settings, loglevel=args.loglevel, queues=queues))
    finally:
        beater.stop()
    return 0


def _queues(given: str) -> tuple[str, ...]:
    queues = tuple(dict.fromkeys(name.strip() for name in given.split(",") if name.strip()))
    unknown = [name for name in queues if name not in (DEFAULT_QUEUE, TRAINING_QUEUE)]
    if unknown or not queues:
        raise UsageError(f"--queues takes {DEFAULT_QUEUE} and/or {TRAINING_QUEUE}, got {given!r}")
    return queues


def _run_beat(_: argparse.Namespace) -> int:
    import logging

    from arena_workers.sweeper import sweep_forever

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sweep_forever(_broker_settings())
    return 0


def _run_sweep(_: argparse.Namespace) -> int:
    from arena_workers.celery_app import create_celery_app
    from arena_workers.sweeper import sweep

    swept = sweep(create_celery_app(_broker_settings()).context)
    print(f"requeued {swept.requeued}, failed {swept.failed}, resent {swept.resent}")
    return 0
