"""Rated games per CPU-hour on each of the five ladders, the reference and the compiled core side by
side, and the mean batch per model call that the worker reached for each network bot (issue 24).

Each ladder is the demo's: the game's zoo bots (bots/zoo/<game>/*.onnx, their manifests from the
models' metadata) and its house bots, at the ladders' default budget (Settings.ladder_simulations).
Its round is a round robin, every pair once (a pairing: two seat-swapped games from one opening),
grouped into task messages as scheduling groups them (`task_messages`, pairings that share a bot),
PAIRINGS_PER_TASK to a message: a fast ladder's `task_size` (a ladder whose pairings take longer
than TASK_SECONDS / PAIRINGS_PER_TASK of a worker's wall time gets smaller messages, so smaller
batches). The real runner plays them (`runner.play_pairings`: claim, play every pairing of the
message in one `play_many`, record, on SQLite and a blob folder), as a Celery worker would.

Every pairing is booked twice, with the same seed: one twin is played with ARENA_CORE=reference and
the other with ARENA_CORE=compiled, message by message, the cores interleaved (which goes first
alternates), in one process sharing its model hosts; so the two cores play the same games (checked
at the end, replay by replay). Untimed first: the model hosts start, and a task in which every bot
plays once runs on the compiled core (loading the compiled code from Numba's cache). The messages
go in a seeded random order, and a ladder stops once the reference core has used its CPU budget
(--budget): a sample of the round robin's messages, whose size is printed. CPU time: this process
(time.process_time, all threads) plus its model hosts' children (ModelHost.cpu_seconds), so load
slows the clock, not the figure. Refits and the next rounds that a task asks for are not run (they
are not games).

After the sample, the rest of the round robin is played on the compiled core alone (cheap), so
that the compiled figure covers the whole ladder's mix of pairings.

Printed per ladder: rated games per CPU-hour on each core over the sample and compiled/reference;
the compiled core's over the whole round robin against issue 24's "today" (measured before the
compiled core) and its 4x target; the mean rows per model call of each network bot over the whole
round robin (the same on both cores: the same searches).

--quick (the bench test's): 4 simulations, one zoo bot per ladder, one pairing per ladder (the zoo
bot against the first house bot, random) instead of the round robin, no warm-up task.

Run: .venv/bin/python bench/ladders.py [--quick] [--budget 40] [--only bobail pente ...]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlmodel import Session, col, select
from timing import temporary_worker, zoo_bot

from arena_bots.evaluators import encode_batch
from arena_games.registry import get_game
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, Ladder
from arena_platform.settings import Settings
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import PAIRINGS_PER_TASK, create_pairings
from arena_platform.store.scheduling import task_messages
from arena_workers import runner
from arena_workers.context import WorkerContext

ZOO = Path(__file__).resolve().parent.parent / "bots" / "zoo"
GAMES = ("bobail", "pente", "spring2021", "smash", "csb")
CORES = ("reference", "compiled")
# Issue 24's rated games per CPU-hour before the compiled core ("today"); Smash was not measured.
TODAY = {"bobail": 6_900, "pente": 410, "spring2021": 3_600, "csb": 14_500}
TARGET = 4.0  # issue 24: >= 4x today's
BUDGET_S = 40.0  # CPU seconds of the reference core per ladder (then the ladder stops)
QUICK_SIMULATIONS = 4
WARM_UP = "warm-up"  # the tally of the untimed first message
REST = "rest"  # the tally of the round robin's messages past the sample, played on the compiled core only


@dataclass
class ModelMeter:
    """Calls and rows of one model on one core (a worker's batches)."""

    calls: int = 0
    rows: int = 0

    @property
    def batch(self) -> float:
        return self.rows / self.calls


@dataclass
class CoreTally:
    """What one core spent on one ladder: games recorded, CPU of this process and of the model hosts."""

    games: int = 0
    process_s: float = 0.0
    hosts_s: float = 0.0
    models: dict[str, ModelMeter] = field(default_factory=dict)  # by model SHA-256

    def plus(self, other: CoreTally) -> CoreTally:
        """The two tallies together."""
        models = {sha256: ModelMeter(meter.calls, meter.rows) for sha256, meter in self.models.items()}
        for sha256, meter in other.models.items():
            total = models.setdefault(sha256, ModelMeter())
            total.calls, total.rows = total.calls + meter.calls, total.rows + meter.rows
        return CoreTally(
            self.games + other.games, self.process_s + other.process_s, self.hosts_s + other.hosts_s, models
        )

    @property
    def cpu_s(self) -> float:
        return self.process_s + self.hosts_s

    @property
    def games_per_hour(self) -> float:
        return 3600 * self.games / self.cpu_s


class MeteredHosts:
    """Wraps a worker context's model cache: counts each model's calls and rows under the current
    `core`, and keeps every host it handed out, for their children's CPU time."""

    def __init__(self, context: WorkerContext) -> None:
        self.core = WARM_UP
        self.tallies = {core: CoreTally() for core in (WARM_UP, *CORES, REST)}
        self._hosts: dict[int, object] = {}  # id -> ModelHost
        self._get = context.models.get
        context.models.get = self._metered_get

    def hosts_cpu(self) -> float:
        """The CPU seconds every host handed out so far had used by its last answer."""
        return sum(host.cpu_seconds for host in self._hosts.values())

    def _metered_get(self, sha256: str) -> object:
        host = self._get(sha256)
        self._hosts[id(host)] = host
        meter = self.tallies[self.core].models.setdefault(sha256, ModelMeter())
        return _Counted(host, meter)


class _Counted:
    """A host whose `run` calls and rows go to `meter`."""

    def __init__(self, host: object, meter: ModelMeter) -> None:
        self._host, self._meter = host, meter

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs = self._host.run(inputs)
        self._meter.calls += 1
        self._meter.rows += len(next(iter(inputs.values())))
        return outputs


@contextlib.contextmanager
def core_selected(core: str) -> Iterator[None]:
    """ARENA_CORE=core while the block runs (the players read it as the runner makes them)."""
    previous = os.environ.get("ARENA_CORE")
    os.environ["ARENA_CORE"] = core
    try:
        yield
    finally:
        if previous is None:
            del os.environ["ARENA_CORE"]
        else:
            os.environ["ARENA_CORE"] = previous


def zoo_ladder(
    context: WorkerContext, game: str, simulations: int, zoo_bots: int | None
) -> tuple[int, dict[str, str]]:
    """The ladder of `game` at `simulations` with its house bots and the game's zoo bots (the first
    `zoo_bots` by name, or all; as `arena demo` loads them, without the validation); its id and the
    zoo bots' names by model SHA-256."""
    names: dict[str, str] = {}
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game=game, simulations=simulations, seed=1)
        for path in sorted((ZOO / game).glob("*.onnx"))[:zoo_bots]:
            bot = zoo_bot(context.blobs, ladder.id, path.read_bytes(), path.stem)
            names[bot.model_sha256] = path.stem
            db.add(bot)
        db.commit()
        return ladder.id, names


def twin_pairings(
    context: WorkerContext, ladder_id: int, pairs: list[tuple[int, int]], copies: int
) -> list[list[list[int]]]:
    """The pairings of `pairs` (bot ids) on the ladder booked `copies` times, every copy with the
    first's seeds; per copy its task messages (pairing ids), in one order."""
    with session(context.engine) as db:
        ladder = db.get(Ladder, ladder_id)
        booked = [
            create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=0) for _ in range(copies)
        ]
        for twin in booked[1:]:
            for original, pairing in zip(booked[0], twin, strict=True):
                pairing.seed = original.seed
        db.commit()
        messages = task_messages(booked[0], PAIRINGS_PER_TASK)
        position = {pairing.id: index for index, pairing in enumerate(booked[0])}
        return [[[twin[position[i]].id for i in message] for message in messages] for twin in booked]


def ladder_bots(db: Session, ladder_id: int) -> list[int]:
    return list(db.exec(select(Bot.id).where(col(Bot.ladder_id) == ladder_id).order_by(Bot.id)).all())


def start_hosts(context: WorkerContext, game_name: str, names: Mapping[str, str]) -> None:
    """Starts each zoo model's host with one call on the game's first position (untimed)."""
    game = get_game(game_name)
    state = game.init(0, None)
    inputs = encode_batch(game, [state], [game.to_move(state)[0]])
    for sha256 in names:
        context.models.get(sha256).run(inputs)


def warm_up(context: WorkerContext, ladder_id: int) -> None:
    """Plays on the compiled core one task of pairings in which every bot plays, untimed: loads each
    compiled search and house bot from Numba's cache (or compiles it)."""
    with session(context.engine) as db:
        bots = ladder_bots(db, ladder_id)
        pairs = list(itertools.zip_longest(bots[::2], bots[1::2], fillvalue=bots[0]))
        ladder = db.get(Ladder, ladder_id)
        pairing_ids = [p.id for p in create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=0)]
        db.commit()
    with core_selected("compiled"):
        runner.play_pairings(context, pairing_ids)


@dataclass
class LadderRun:
    game: str
    bots: list[str]
    pairings: int  # in the round robin
    played: int  # pairings played per core
    tallies: dict[str, CoreTally]  # the sample's, by core
    whole: CoreTally | None  # the compiled core's over the whole round robin (None: quick)
    names: dict[str, str]  # zoo bots by model SHA-256
    same_games: bool


def run_ladder(game: str, simulations: int, budget: float, quick: bool) -> LadderRun:
    """One ladder on both cores (the module's doc)."""
    with temporary_worker(lambda *task: None) as context:
        ladder_id, names = zoo_ladder(context, game, simulations, 1 if quick else None)
        meters = MeteredHosts(context)
        with session(context.engine) as db:
            bot_ids = ladder_bots(db, ladder_id)
        round_robin = list(itertools.combinations(bot_ids, 2))
        pairs = [(bot_ids[0], bot_ids[-1])] if quick else round_robin  # quick: the zoo bot (the last) alone
        reference, compiled = twin_pairings(context, ladder_id, pairs, copies=2)
        order = np.random.default_rng(24).permutation(len(reference)).tolist()
        start_hosts(context, game, names)
        if not quick:
            warm_up(context, ladder_id)
        played = []
        for turn, index in enumerate(order):
            messages = {"reference": reference[index], "compiled": compiled[index]}
            for core in CORES if turn % 2 == 0 else CORES[::-1]:
                play_timed(context, meters, core, messages[core])
            played.append(index)
            if quick or meters.tallies["reference"].cpu_s >= budget:
                break
        with session(context.engine) as db:
            bots = [bot.name for bot in db.exec(select(Bot).where(col(Bot.ladder_id) == ladder_id))]
        same = same_games(context, [reference[i] for i in played], [compiled[i] for i in played])
        for index in [] if quick else order[len(played) :]:
            play_timed(context, meters, "compiled", compiled[index], tally=REST)
        return LadderRun(
            game=game,
            bots=bots,
            pairings=len(round_robin),
            played=sum(len(reference[i]) for i in played),
            tallies={core: meters.tallies[core] for core in CORES},
            whole=None if quick else meters.tallies["compiled"].plus(meters.tallies[REST]),
            names=names,
            same_games=same,
        )


def play_timed(
    context: WorkerContext, meters: MeteredHosts, core: str, pairing_ids: Sequence[int], tally: str = ""
) -> None:
    """Plays one task message on `core`, its games and CPU (this process and the model hosts) to the
    tally named `tally` (default: the core's)."""
    meters.core = tally or core
    tally = meters.tallies[meters.core]
    with core_selected(core):
        hosts, start = meters.hosts_cpu(), time.process_time()
        outcomes = runner.play_pairings(context, pairing_ids)
        tally.process_s += time.process_time() - start
        tally.hosts_s += meters.hosts_cpu() - hosts
    tally.games += len(pairing_ids) * context.settings.games_per_pairing
    if any(outcome.status != runner.RECORDED for outcome in outcomes):
        raise RuntimeError(f"{core}: not every pairing was recorded: {outcomes}")


def same_games(context: WorkerContext, reference: list[list[int]], compiled: list[list[int]]) -> bool:
    """Whether the twins' games have the same replays: moves, insights, returns and end reasons."""
    pairs = list(zip(itertools.chain(*reference), itertools.chain(*compiled), strict=True))
    with session(context.engine) as db:
        games = {
            (game.pairing_id, game.index): game.replay_sha256 for game in db.exec(select(GameRecord)).all()
        }
    for first, second in pairs:
        for index in range(context.settings.games_per_pairing):
            if replay_of(context, games[first, index]) != replay_of(context, games[second, index]):
                return False
    return True


def replay_of(context: WorkerContext, replay_sha256: str) -> dict:
    """A stored replay without its meta (which names the pairing): moves, insights and result."""
    replay = json.loads(context.blobs.get(replay_sha256))
    del replay["meta"]
    return replay


def report(run: LadderRun, simulations: int, budget: float, quick: bool) -> None:
    reference, compiled = (run.tallies[core] for core in CORES)
    sample = "one pairing (quick)" if quick else f"seeded order, until {budget:g} CPU-s of the reference core"
    print(f"\n{run.game}: {len(run.bots)} bots ({', '.join(run.bots)}), {simulations} simulations")
    print(
        f"  {run.played} of the round robin's {run.pairings} pairings ({sample}): "
        f"{reference.games} games per core; the same games on both cores: {'yes' if run.same_games else 'NO'}"
    )
    for core, tally in run.tallies.items():
        print(
            f"  {core:<10} {tally.games_per_hour:>10,.0f} games per CPU-hour "
            f"(this process {tally.process_s:.1f} s + model hosts {tally.hosts_s:.1f} s)"
        )
    ratio = compiled.games_per_hour / reference.games_per_hour
    print(f"  {run.game}, compiled/reference core: {ratio:.1f}x")
    headline = compiled
    if run.whole is not None:
        headline = run.whole
        print(
            f"  compiled, the whole round robin ({run.pairings} pairings, {run.whole.games} games): "
            f"{run.whole.games_per_hour:,.0f} games per CPU-hour (this process {run.whole.process_s:.1f} s "
            f"+ model hosts {run.whole.hosts_s:.1f} s)"
        )
    today = TODAY.get(run.game)
    if today is None:
        print(f"  {run.game}, compiled/today's: (issue 24 measured no figure for this ladder)")
    else:
        gain = headline.games_per_hour / today
        print(
            f"  {run.game}, compiled/today's {today:,}: {gain:.1f}x "
            f"(target >= {TARGET:g}x: {TARGET * today:,.0f}; {'met' if gain >= TARGET else 'not met'})"
        )
    for sha256, name in run.names.items():
        meters = [tally.models.get(sha256, ModelMeter()) for tally in (reference, headline)]
        if not meters[1].calls:
            print(f"  mean batch (rows per model call) of {name}: not played")
            continue
        sample = f"the sample {meters[0].batch:.1f} on both cores" if meters[0].calls else "not in the sample"
        print(
            f"  mean batch (rows per model call) of {name}: {meters[1].batch:.1f} "
            f"({meters[1].calls} calls on the compiled core; {sample})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SIMULATIONS} simulations, one zoo bot, one pairing"
    )
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="reference CPU-s per ladder")
    parser.add_argument("--only", nargs="+", choices=GAMES, default=GAMES, help="these ladders")
    args = parser.parse_args()
    simulations = QUICK_SIMULATIONS if args.quick else Settings().ladder_simulations
    load = os.getloadavg()
    print(
        f"Ladders' rated games per CPU-hour (runner.play_pairings, SQLite; {PAIRINGS_PER_TASK} pairings "
        f"per task message); load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    for game in args.only:
        run = run_ladder(game, simulations, args.budget, args.quick)
        report(run, simulations, args.budget, args.quick)
    load = os.getloadavg()
    print(f"\nload at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
