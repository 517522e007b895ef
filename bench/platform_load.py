"""Platform load on real services (PostgreSQL, Redis), printed as rates and ratios.

1. Games per hour through the full path (scheduling, Redis, `arena worker` processes, recording,
   refits) with one and with two worker processes, and the ratio (two cores would give at most
   2.0). The ladder's bots all cost the same per move (UCT at the ladder's budget; the random
   house bot retired), so the rate does not depend on which pairings the scheduler happens to be
   at: with bots of mixed budgets, a faster run reaches other pairings within its window and the
   ratio compares different workloads. Four windows, in the order 1, 2, 2, 1 workers.
2. A big ladder seeded with bulk SQL (default 1,000 bots and 1,000,000 games): the time of a
   refit (three, the median printed), and the latency (p50, p99) of the leaderboard endpoint
   under 50 concurrent clients for 10 s, each a lean keep-alive connection that asks for gzip as
   browsers do (see `_hammer`), with the server's cache and without it (every request reads the
   database).

Each part runs in a database of its own, dropped afterwards; Redis database 12 is flushed.

    .venv/bin/python bench/platform_load.py [--seconds 40] [--bots 1000] [--games 1000000]
        [--skip-throughput] [--cache-seconds 1.0] [--quick]

`--quick` (the CI smoke run, well under a minute): windows of 1 s after a 1 s warm-up in the order
1, 2 workers only, 100 bots and 5,000 games, one refit, 1 s of load from 10 clients with the
server's cache only.

(Not `bench/platform.py`: run as a script, that file would shadow the standard library's
`platform` module for everything it imports.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace

import httpx
import numpy as np
import redis
from sqlalchemy import Engine, create_engine, delete, make_url, text, update
from sqlmodel import col, func, select

from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, GameRecord, Rating
from arena_platform.queue import SCHEDULE_LADDER, celery_client
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import refit_ladder
from arena_platform.store.results import recount_pairs

POSTGRES_ADMIN_URL = os.environ.get(
    "ARENA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("ARENA_BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
WORKER_SETTINGS = {"lease_seconds": 60, "heartbeat_seconds": 10, "task_time_limit_seconds": 300}
LADDER_SIMULATIONS = 16  # the plain `uct` house bot's budget
REFERENCE_BOTS = 7  # more UCT bots at that budget, beside the `uct` house bot
WARMUP_S = 10.0
REFITS = 3  # the refit is timed this many times: one noisy moment does not make the figure
CLIENTS = 50
LOAD_SECONDS = 10.0  # long enough for ten refreshes of a one-second cache: their cost shows in the p99


@contextlib.contextmanager
def temporary_database() -> Iterator[str]:
    """The URL of a new PostgreSQL database, migrated, dropped on exit."""
    name = f"arena_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        engine = make_engine(url)
        migrate(engine)
        engine.dispose()
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@dataclass(frozen=True)
class Plan:
    """How long and how big each part runs."""

    seconds: float  # each throughput window
    warmup: float  # before each window
    order: tuple[int, ...]  # worker counts of the windows, in order
    bots: int
    games: int
    refits: int
    clients: int
    load_seconds: float
    uncached: bool  # the leaderboard under load without the server's cache too


FULL = Plan(40.0, WARMUP_S, (1, 2, 2, 1), 1000, 1_000_000, REFITS, CLIENTS, LOAD_SECONDS, uncached=True)
QUICK = Plan(1.0, 1.0, (1, 2), 100, 5_000, 1, 10, 1.0, uncached=False)


def games_per_hour(workers: int, seconds: float, warmup: float = WARMUP_S) -> np.ndarray:
    """Games and moves recorded per hour by `workers` worker processes, after a warm-up: (2,).

    Moves are the steadier measure of work: game lengths vary, and a minute holds a few hundred
    games, recorded a batch of pairings at a time."""
    redis.Redis.from_url(REDIS_URL).flushdb()
    with temporary_database() as url, tempfile.TemporaryDirectory() as folder:
        engine = make_engine(url)
        with session(engine) as db:
            ladder = ensure_ladder(db, game="bobail", simulations=LADDER_SIMULATIONS, seed=1)
            for number in range(REFERENCE_BOTS):
                db.add(
                    Bot(ladder_id=ladder.id, name=f"uct-{number}", kind="house", player="uct", manifest={})
                )
            db.exec(
                update(Bot)
                .where(col(Bot.ladder_id) == ladder.id, col(Bot.player) == "random")
                .values(status="retired")
            )
            db.commit()
        environment = {
            **os.environ,
            "ARENA_ENV": "production",
            "ARENA_DATABASE_URL": url,
            "ARENA_BROKER_URL": REDIS_URL,
            "ARENA_BLOB_URL": f"{folder}/blobs",
            "ARENA_DATA_DIR": folder,
            **{f"ARENA_{name.upper()}": str(value) for name, value in WORKER_SETTINGS.items()},
        }
        client = celery_client(REDIS_URL)
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "arena_platform.cli", "worker", "--loglevel=WARNING"],
                env=environment,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            for _ in range(workers)
        ]
        try:
            while len(client.control.ping(timeout=1.0)) < workers:
                time.sleep(0.5)
            client.send_task(SCHEDULE_LADDER, args=(ladder.id,))
            time.sleep(warmup)
            start, started = _games(engine), time.monotonic()
            time.sleep(seconds)
            played, elapsed = _games(engine) - start, time.monotonic() - started
        finally:
            for process in processes:
                os.killpg(process.pid, 9)
                process.wait()
            engine.dispose()
    return played / elapsed * 3600


def scaling_rates(plan: Plan) -> dict[int, np.ndarray]:
    """Games and moves per hour (2,) for one and for two workers, each the mean of its windows,
    measured in the plan's order (fully: 1, 2, 2, 1, so that a machine whose speed drifts during
    the runs, as these shared ones do, favours neither count; measured one after the other, one and
    two workers gave ratios from 1.7 to 2.4 on one machine)."""
    windows: dict[int, list[np.ndarray]] = {1: [], 2: []}
    for workers in plan.order:
        windows[workers].append(games_per_hour(workers, plan.seconds, plan.warmup))
    return {workers: np.mean(rates, axis=0) for workers, rates in windows.items()}


def _games(engine: Engine) -> np.ndarray:
    """(2,) games and moves recorded so far."""
    with session(engine) as db:
        games, moves = db.exec(select(func.count(), func.coalesce(func.sum(GameRecord.steps), 0))).one()
    return np.array([games, moves], dtype=np.float64)


SEED_BOTS = """
INSERT INTO bot (ladder_id, name, version, kind, player, manifest, report, status, created_at)
SELECT :ladder, 'bench-' || i, 1, 'network', 'greedy', '{}', '{}', 'active', now()
FROM generate_series(1, :bots) AS i
"""
# Each pairing: two distinct bots drawn at random; 2 games with the seats swapped.
SEED_PAIRINGS = """
INSERT INTO pairing (ladder_id, bot_a_id, bot_b_id, seed, status, attempts, created_at, finished_at)
SELECT :ladder, a, :low + (a - :low + 1 + floor(random() * (:count - 1))::int) % :count, i,
       'done', 1, now(), now()
FROM (SELECT i, :low + floor(random() * :count)::int AS a FROM generate_series(1, :pairings) AS i) AS drawn
"""
# A bot's true strength is (id % 100) * 8 Elo; the first seat wins with the Elo expectation.
SEED_GAMES = """
INSERT INTO game (pairing_id, ladder_id, index, first_bot_id, second_bot_id, score, end_reason,
                  forfeit_seat, steps, replay_sha256, created_at)
SELECT id, ladder_id, seat, first, second,
       CASE WHEN random() < 1 / (1 + power(10, ((second % 100) - (first % 100)) * 8 / 400.0))
            THEN 1 ELSE 0 END,
       'seeded', NULL, 40, md5(id::text || seat::text) || md5(seat::text || id::text), now()
FROM (SELECT p.id, p.ladder_id, s.seat,
             CASE WHEN s.seat = 0 THEN p.bot_a_id ELSE p.bot_b_id END AS first,
             CASE WHEN s.seat = 0 THEN p.bot_b_id ELSE p.bot_a_id END AS second
      FROM pairing AS p CROSS JOIN (VALUES (0), (1)) AS s (seat) WHERE p.ladder_id = :ladder) AS games
"""


def seed_big_ladder(engine: Engine, bots: int, games: int) -> int:
    """A bobail ladder of `bots` bots (two of them the house bots) and `games` games; its id."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=200, seed=1)
        db.commit()
    with engine.begin() as connection:
        connection.execute(text("SELECT setseed(0.5)"))
        connection.execute(text(SEED_BOTS), {"ladder": ladder.id, "bots": bots - 2})
        low, high = connection.execute(text("SELECT min(id), max(id) FROM bot")).one()
        arguments = {"ladder": ladder.id, "low": low, "count": high - low + 1, "pairings": games // 2}
        connection.execute(text(SEED_PAIRINGS), arguments)
        connection.execute(text(SEED_GAMES), {"ladder": ladder.id})
    with session(engine) as db:  # the pair counts that recording the games would have kept
        recount_pairs(db, ladder_id=ladder.id)
        db.commit()
    # What autovacuum keeps up in production (CI's server runs without it): statistics, and the
    # visibility map that lets counts read indexes alone.
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE"))
    return ladder.id


def refit_seconds(engine: Engine, ladder_id: int, refits: int = REFITS) -> list[float]:
    """The times of `refits` whole refits of the ladder, each after its Rating rows were cleared
    (with them in place and no new game, a refit rightly does nothing)."""
    times = []
    for _ in range(refits):
        with engine.begin() as connection:
            connection.execute(delete(Rating).where(col(Rating.ladder_id) == ladder_id))
        started = time.perf_counter()
        with session(engine) as db:
            assert refit_ladder(db, ladder_id=ladder_id)
        times.append(time.perf_counter() - started)
    return times


SERVER = """
import sys, uvicorn
from arena_platform.api import create_app
from arena_platform.db import make_engine
from arena_platform.settings import Settings
url, port, blobs, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
settings = Settings(database_url=url, blob_url=blobs, leaderboard_cache_seconds=cache)
app = create_app(settings, engine=make_engine(url), enqueue=lambda *args: None)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
"""


def leaderboard_latency(
    url: str, ladder_id: int, cache_seconds: float, clients: int = CLIENTS, seconds: float = LOAD_SECONDS
) -> tuple[float, float, float, int]:
    """p50 and p99 latency (ms) of GET /api/v1/ladders/{id}/leaderboard under `clients` clients for
    `seconds`, requests per second, failures; the server caches leaderboards for `cache_seconds`
    (0: every request reads the database)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as blobs:
        server = subprocess.Popen([sys.executable, "-c", SERVER, url, str(port), blobs, str(cache_seconds)])
        try:
            base = f"http://127.0.0.1:{port}"
            while True:
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{base}/api/v1/health").status_code == 200:
                        break
                time.sleep(0.2)
            latencies, failures, elapsed = asyncio.run(
                _hammer("127.0.0.1", port, f"/api/v1/ladders/{ladder_id}/leaderboard", clients, seconds)
            )
        finally:
            server.terminate()
            server.wait()
    p50, p99 = np.percentile(np.array(latencies) * 1000, [50, 99])
    return float(p50), float(p99), len(latencies) / elapsed, failures


async def _hammer(
    host: str, port: int, path: str, clients: int, seconds: float
) -> tuple[list[float], int, float]:
    """`clients` concurrent clients asking for `seconds`: each success's latency in seconds,
    the number of failures (errors and non-200 answers), and the wall time.

    Each client is one keep-alive HTTP/1.1 connection that asks for gzip, as browsers and HTTP
    libraries do, and reads the answer's Content-Length bytes without decoding them: a full client
    (httpx) costs more CPU per request than the server and, sharing the cores with it, measured
    itself. No If-None-Match: every answer is the whole leaderboard, never a 304. The warm-up
    answer is checked in full: gzip that decodes to the whole leaderboard.
    """
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept-Encoding: gzip\r\n\r\n".encode()
    reader, writer = await asyncio.open_connection(host, port)  # warms the server's cache and pools
    status, headers, body = await _exchange(reader, writer, request)
    writer.close()
    if status != 200 or headers.get("content-encoding") != "gzip":
        raise RuntimeError(f"the leaderboard answered {status} {headers}, not 200 in gzip")
    if not json.loads(gzip.decompress(body))["entries"]:
        raise RuntimeError("the leaderboard answered no entries")

    latencies: list[float] = []
    failures = 0
    begun = time.perf_counter()
    deadline = begun + seconds

    async def one_client() -> None:
        nonlocal failures
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while (started := time.perf_counter()) < deadline:
                try:
                    status, _, _ = await _exchange(reader, writer, request)
                except (OSError, EOFError, ValueError):
                    status = None
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
                if status == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    failures += 1
        finally:
            writer.close()

    await asyncio.gather(*(one_client() for _ in range(clients)))
    return latencies, failures, time.perf_counter() - begun


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, dict[str, str], bytes]:
    """Sends `request` and reads one answer with a Content-Length: status, headers (lowercase), body.
    EOFError (asyncio.IncompleteReadError) when the server closes the connection."""
    writer.write(request)
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ", 2)[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise ValueError(f"an answer without Content-Length: {head[0]}")
    return status, headers, await reader.readexactly(int(headers["content-length"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=FULL.seconds, help="the length of each of the throughput windows"
    )
    parser.add_argument("--bots", type=int, default=FULL.bots)
    parser.add_argument("--games", type=int, default=FULL.games)
    parser.add_argument("--skip-throughput", action="store_true", help="only the big ladder's part")
    parser.add_argument(
        "--cache-seconds", type=float, default=1.0, help="the server's leaderboard cache TTL; 0 disables it"
    )
    parser.add_argument("--quick", action="store_true", help="the short smoke run (see the docstring)")
    args = parser.parse_args()
    plan = QUICK if args.quick else replace(FULL, seconds=args.seconds, bots=args.bots, games=args.games)

    if not args.skip_throughput:
        rates = scaling_rates(plan)
        for workers, (games, moves) in rates.items():
            print(
                f"full path, {workers} worker process(es): {games:,.0f} games/hour ({moves:,.0f} moves/hour)"
            )
        games_ratio, moves_ratio = rates[2] / rates[1]
        print(f"two workers / one worker: {games_ratio:.2f}x in games, {moves_ratio:.2f}x in moves")

    with temporary_database() as url:
        engine = make_engine(url)
        started = time.perf_counter()
        ladder_id = seed_big_ladder(engine, plan.bots, plan.games)
        print(f"seeded {plan.bots:,} bots and {plan.games:,} games in {time.perf_counter() - started:.1f} s")
        times = refit_seconds(engine, ladder_id, plan.refits)
        print(
            f"refit of {plan.games:,} games (read pair counts, fit, write ratings): median "
            f"{np.median(times):.2f} s of {', '.join(f'{t:.2f}' for t in times)}"
        )
        engine.dispose()
        uncached = (0.0,) if plan.uncached else ()  # 0 s: every request reads the database
        for cache_seconds in dict.fromkeys((args.cache_seconds, *uncached)):
            p50, p99, throughput, failures = leaderboard_latency(
                url, ladder_id, cache_seconds, plan.clients, plan.load_seconds
            )
            print(
                f"leaderboard (cache {cache_seconds:g} s), {plan.clients} concurrent clients for "
                f"{plan.load_seconds:g} s: p50 {p50:.0f} ms, p99 {p99:.0f} ms, {throughput:.0f} requests/s, "
                f"{failures} failed"
            )


if __name__ == "__main__":
    main()
