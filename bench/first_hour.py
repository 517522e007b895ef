"""A bot author's first hour (issue 25), measured on the demo as `make demo` runs it: its ladders
loaded from the zoo, one play process per core, the API in this process; every figure beside its
target, and the machine's load beside them.

1. Every ladder has rated games (a rating row with games) within RATED_TARGET_S of the start (the
   start: before the zoo is loaded and validated, as the command's user waits for it too).
2. A new upload on each ladder (a zoo bot under a new name, through `POST /api/v1/bots`, sent at
   once when every ladder is rated) plays its first game within FIRST_GAME_TARGET_S of its upload
   (from the request's start to its first recorded game).
3. A new version's SPRT reaches a verdict on a difference of about 1,000 Elo within
   VERDICT_TARGET_S of its upload: version 1 is Bobail's early zoo bot playing `greedy` (no
   search), version 2 the final one at the ladder's search budget; the pairs' score says how far
   apart they played.

These are latencies on a machine that others may share, so they are wall-clock seconds; the load
average before and during the run is printed with them (on 2 cores, a load above 2 means the run
shared its cores).

    .venv/bin/python bench/first_hour.py [--quick]

`--quick` (the CI smoke run, under a minute): Bobail only, at 8 simulations per move, played by the
embedded worker in this process (no play processes to start), with an SPRT of wide hypotheses (a
verdict in a few pairs) and a sweep every 2 s.

The first ratings come from the sweeper's refit (every heartbeat, 30 s by default): the refit
messages the play processes send wait behind the play messages in the embedded worker's queue.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one single-threaded BLAS per process (§8)

import argparse
import contextlib
import io
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import col, select

from arena_platform.api import create_app
from arena_platform.cli.serve import DEMO_GAMES, ZOO, Services, load_zoo_ladder, services
from arena_platform.db import session
from arena_platform.models import GameRecord, Rating, SprtTest
from arena_platform.queue import SCHEDULE_LADDER
from arena_platform.settings import Settings
from arena_platform.store import users
from arena_platform.store.sprt_tests import RUNNING
from arena_workers.processes import available_cores

RATED_TARGET_S = 180.0
FIRST_GAME_TARGET_S = 120.0
VERDICT_TARGET_S = 600.0
POLL_S = 0.5
# The uploaded newcomer of each ladder: a zoo bot of the game (a second copy, under a new name).
NEWCOMERS = {
    "bobail": "az-bobail-middle",
    "pente": "az-pente-middle",
    "spring2021": "az-spring2021-middle",
    "smash": "ac-smash-middle",
    "csb": "dqn-csb-middle",
}
OLD_VERSION = ("az-bobail-early", "greedy")  # (zoo bot, player): no search
NEW_VERSION = ("az-bobail-final", "mcts")


@dataclass(frozen=True)
class Plan:
    games: tuple[str, ...]
    settings: Settings  # besides the data folder
    processes: int  # the embedded worker's play processes; 1: it plays in this process
    # the waits give up after this long, printing what they have: for ratings, then for the uploads
    timeouts_s: tuple[float, float]


FULL = Plan(
    DEMO_GAMES, Settings(), available_cores(), timeouts_s=(2 * RATED_TARGET_S, 1.5 * VERDICT_TARGET_S)
)
QUICK = Plan(
    ("bobail",),
    Settings(
        ladder_simulations=8,
        sprt_elo1=400.0,
        sprt_alpha=0.2,
        sprt_beta=0.2,
        heartbeat_seconds=2,  # the sweeper's refits: the first rating after seconds, not half a minute
        lease_seconds=60,
    ),
    processes=1,
    timeouts_s=(120.0, 120.0),
)


class Load:
    """The 1-minute load average: before the run, and sampled during it."""

    def __init__(self) -> None:
        self.before = os.getloadavg()[0]
        self.samples: list[float] = []

    def sample(self) -> None:
        self.samples.append(os.getloadavg()[0])

    def line(self) -> str:
        during = sum(self.samples) / max(len(self.samples), 1)
        peak = max(self.samples, default=self.before)
        return (
            f"load: {available_cores()} cores; 1-min load average {self.before:.2f} before, "
            f"{during:.2f} on average during the run, {peak:.2f} at its peak"
        )


def wait_for(done, load: Load, timeout_s: float) -> None:
    """Polls `done()` (True: stop) every POLL_S, sampling the load, for at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        load.sample()
        time.sleep(POLL_S)


def verdict(seconds: float | None, target: float) -> str:
    if seconds is None:
        return f"none within the run (target {target:.0f} s): MISSED"
    met = "met" if seconds <= target else "MISSED"
    return f"{seconds:6.1f} s (target {target:.0f} s, {seconds / target:.2f} of it): {met}"


def rated_ladders(running: Services, ladder_ids: dict[str, int]) -> set[str]:
    with session(running.engine) as db:
        rated = db.exec(select(Rating.ladder_id).where(col(Rating.games) > 0).distinct()).all()
    return {game for game, ladder_id in ladder_ids.items() if ladder_id in rated}


def upload(client: TestClient, token: str, game: str, bot: str, name: str, player: str | None = None) -> int:
    """Uploads the zoo's `bot` of `game` as `name`; its bot id."""
    form = {"game": game, "name": name} | ({"player": player} if player else {})
    model = (ZOO / game / f"{bot}.onnx").read_bytes()
    answer = client.post(
        "/api/v1/bots",
        files={"model": (f"{bot}.onnx", model)},
        data=form,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 201, f"upload of {bot} as {name}: {answer.status_code} {answer.text}"
    return answer.json()["id"]


def first_game_of(running: Services, bot_id: int) -> bool:
    either = (col(GameRecord.first_bot_id) == bot_id) | (col(GameRecord.second_bot_id) == bot_id)
    with session(running.engine) as db:
        return db.exec(select(GameRecord.id).where(either).limit(1)).first() is not None


def sprt_of(running: Services, new_bot_id: int) -> SprtTest:
    with session(running.engine) as db:
        return db.exec(select(SprtTest).where(col(SprtTest.new_bot_id) == new_bot_id)).one()


def run(plan: Plan) -> None:
    load = Load()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        settings = replace(plan.settings, data_dir=Path(folder)).check()
        with services(settings, processes=plan.processes) as running:
            with contextlib.redirect_stdout(io.StringIO()):  # the zoo's validation lines
                ladders = {game: load_zoo_ladder(running, game).id for game in plan.games}
            running.enqueue(SCHEDULE_LADDER, *ladders.values())
            loaded = time.monotonic() - start
            players = f"{plan.processes} play processes" if plan.processes > 1 else "played in this process"
            described = f"{len(ladders)} ladders ({', '.join(ladders)}), {players}"
            print(f"{described}; zoo loaded in {loaded:.1f} s")
            rated: dict[str, float] = {}

            def all_rated() -> bool:
                for game in rated_ladders(running, ladders) - set(rated):
                    rated[game] = time.monotonic() - start
                return len(rated) == len(ladders)

            wait_for(all_rated, load, plan.timeouts_s[0])
            print("1. rated games, from the start:")
            for game in ladders:
                print(f"   {game:<11} {verdict(rated.get(game), RATED_TARGET_S)}")
            app = create_app(settings, engine=running.engine, blobs=running.blobs, enqueue=running.enqueue)
            with TestClient(app) as client:
                measure_uploads(running, client, ladders, load, plan)
    print(load.line())


def measure_uploads(
    running: Services, client: TestClient, ladders: dict[str, int], load: Load, plan: Plan
) -> None:
    """Items 2 and 3: every ladder's newcomer and Bobail's new version, uploaded at once."""
    with session(running.engine) as db:
        _, token = users.create_user(db, name="author")
        db.commit()
    uploaded: dict[str, tuple[int, float]] = {}  # game -> (bot id, upload start)
    for game in ladders:
        sent = time.monotonic()
        uploaded[game] = (upload(client, token, game, NEWCOMERS[game], f"new-{game}"), sent)
    upload(client, token, "bobail", *OLD_VERSION[:1], "versioned", OLD_VERSION[1])
    version_sent = time.monotonic()
    new_version = upload(client, token, "bobail", NEW_VERSION[0], "versioned", NEW_VERSION[1])
    first_games: dict[str, float] = {}
    ended: list[float] = []

    def all_done() -> bool:
        for game, (bot_id, sent) in uploaded.items():
            if game not in first_games and first_game_of(running, bot_id):
                first_games[game] = time.monotonic() - sent
        if not ended and sprt_of(running, new_version).status != RUNNING:
            ended.append(time.monotonic() - version_sent)
        return len(first_games) == len(uploaded) and bool(ended)

    wait_for(all_done, load, plan.timeouts_s[1])
    print("2. a new upload's first game, from its upload:")
    for game in ladders:
        print(f"   {game:<11} {verdict(first_games.get(game), FIRST_GAME_TARGET_S)}")
    test = sprt_of(running, new_version)
    pairs = (test.pairs_0, test.pairs_05, test.pairs_1, test.pairs_15, test.pairs_2)
    points = sum(count * score for count, score in zip(pairs, (0, 0.5, 1, 1.5, 2), strict=True))
    described = f"{OLD_VERSION[0]} ({OLD_VERSION[1]}) -> {NEW_VERSION[0]} ({NEW_VERSION[1]})"
    scored = f"{test.status} after {sum(pairs)} pairs, {points:g} of {2 * sum(pairs)} points"
    print(f"3. a new version's SPRT, {described}: {scored}")
    print(f"   verdict     {verdict(ended[0] if ended else None, VERDICT_TARGET_S)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Bobail only, cheap moves, one process")
    run(QUICK if parser.parse_args().quick else FULL)


if __name__ == "__main__":
    main()
