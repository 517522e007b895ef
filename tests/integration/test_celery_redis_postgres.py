"""Real services: `arena worker` processes on Redis and PostgreSQL play ladders and a challenge end to
end, and survive a worker killed with SIGKILL in the middle of a pairing without counting any game
twice.

Tiny budgets keep each test well under a minute: Bobail, a few UCT simulations, leases of three
seconds renewed every second, the sweeper every second.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, make_url
from sqlmodel import col, select
from waiting import wait_until

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, GameRecord, Ladder, PairCount, Pairing, Rating, utc_now
from arena_platform.queue import SCHEDULE_LADDER, celery_enqueue
from arena_platform.scheduling import DEFAULT_POLICY
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import pairing_seed
from arena_platform.store.ratings import fit_ladder, refit_ladder
from arena_workers import runner
from arena_workers.context import WorkerContext

WORKER_SETTINGS = {"lease_seconds": 3, "heartbeat_seconds": 1, "task_time_limit_seconds": 60}
TIMEOUT_S = 45.0
# The ladder budget whose uct games last long enough (seconds a pairing, on the compiled core) that a
# worker is caught in play: at 8-32 simulations the compiled games end before a test can act.
PLAYS_A_WHILE = 400


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    """The blob store the workers write to (see `worker_environment`)."""
    return BlobStore(str(tmp_path / "blobs"))


def _tiny_network_bot(name: str, player: str, seed: int) -> tuple[Manifest, bytes]:
    """A tiny bobail network (linear policy and tanh value over the board), exported as a bot author would."""
    import torch

    from arena_bots.export import export_bot

    game = get_game("bobail")
    ((_input_name, shape),) = game.spec.inputs.items()
    ((_, actions),) = game.spec.heads.items()
    torch.manual_seed(seed)

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            size = int(torch.tensor(shape).prod())
            self.policy = torch.nn.Linear(size, actions)
            self.value = torch.nn.Linear(size, 1)

        def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            features = board.flatten(1)
            return self.policy(features), torch.tanh(self.value(features))

    manifest = Manifest(game="bobail", game_version=game.spec.version, name=name, player=player)
    return manifest, export_bot(Tiny(), game, manifest)


def _done_pairs(db, ladder_id: int) -> list[frozenset[int]]:
    done = db.exec(select(Pairing).where(Pairing.ladder_id == ladder_id, Pairing.status == "done"))
    return [frozenset((pairing.bot_a_id, pairing.bot_b_id)) for pairing in done]


def test_workers_play_a_ladder_of_house_and_network_bots_end_to_end(
    engine, blobs, worker_environment, start_worker, redis_url
):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=8, seed=5)
        db.add(
            Bot(ladder_id=ladder.id, name="uct-2", kind="house", player="uct", manifest={"simulations": 2})
        )
        owner, _ = users.create_user(db, name="author")
        for seed, (name, player) in enumerate((("tiny-mcts", "mcts"), ("tiny-greedy", "greedy"))):
            manifest, model = _tiny_network_bot(name, player, seed)
            bot_store.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=manifest,
                report={},
                model_sha256=blobs.put(model),
            )
        db.commit()
        bots = {bot.id: bot for bot in db.exec(select(Bot))}
    environment = worker_environment(**WORKER_SETTINGS)
    start_worker(environment, beat=True)
    start_worker(environment)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)

    def introduced_and_rated() -> bool:
        with session(engine) as db:
            pairs = _done_pairs(db, ladder.id)
            rated = db.exec(select(Rating.bot_id)).all()
        owed = {
            frozenset((a, b)): DEFAULT_POLICY.house_pairings if "house" in (bots[a].kind, bots[b].kind) else 1
            for a in bots
            for b in bots
            if a < b
        }
        return all(pairs.count(pair) >= count for pair, count in owed.items()) and set(rated) == set(bots)

    wait_until(introduced_and_rated, "every bot played its introduction and has a rating", timeout=TIMEOUT_S)

    game = get_game("bobail")
    with session(engine) as db:
        pairings = db.exec(select(Pairing)).all()
        games = db.exec(select(GameRecord)).all()
        done = {pairing.id for pairing in pairings if pairing.status == "done"}
        assert not [pairing for pairing in pairings if pairing.status == "failed"]
        assert sorted((g.pairing_id, g.index) for g in games if g.pairing_id in done) == sorted(
            (pairing_id, index) for pairing_id in done for index in (0, 1)
        )
        for record in games:
            replay = Replay.from_json(blobs.get(record.replay_sha256).decode())
            assert replay.players == (bots[record.first_bot_id].name, bots[record.second_bot_id].name)
            assert len(replay_states(game, replay)) == record.steps + 1
            assert record.forfeit_seat is None, record.end_reason  # the network bots played every move
        ratings = db.exec(select(Rating)).all()
        fitted = fit_ladder(db, ladder_id=ratings[0].ladder_id)
        # The scale's zero: the house bots' mean, weighted as the fit weighs them. Of this fit: the
        # workers go on recording games, so the stored ratings may be a refit behind it.
        weights = {row.bot_id: fitted[str(row.bot_id)].anchor_weight for row in ratings}
        house_weights = [weights[row.bot_id] for row in ratings if bots[row.bot_id].kind == "house"]
        assert sum(house_weights) == pytest.approx(1.0)
        zero = sum(weights[row.bot_id] * fitted[str(row.bot_id)].rating for row in ratings)
        assert zero == pytest.approx(0.0, abs=1e-6)
        for row in ratings:
            assert row.low <= row.rating <= row.high
            assert row.games == row.wins + row.draws + row.losses > 0


def test_a_challenge_posted_to_the_api_is_played_by_a_worker_and_rates_nobody(
    engine, blobs, worker_environment, start_worker, redis_url, postgres_url, tmp_path, onnx_bot
):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=8, seed=5)
        owner, token = users.create_user(db, name="author")
        manifest = Manifest(game="bobail", game_version=1, name="tiny", player="greedy")
        mine = bot_store.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=owner.id,
            manifest=manifest,
            report={},
            model_sha256=blobs.put(onnx_bot()),
        )
        uct = db.exec(select(Bot.id).where(Bot.ladder_id == ladder.id, Bot.name == "uct")).one()
        db.commit()
        mine_id = mine.id
    start_worker(worker_environment(**WORKER_SETTINGS))
    settings = Settings(data_dir=tmp_path, database_url=postgres_url, broker_url=redis_url)
    with TestClient(create_app(settings, engine=engine, blobs=blobs)) as client:  # it sends to Redis
        body = {"bot_id": mine_id, "opponent_id": uct, "pairs": 3}
        made = client.post("/api/v1/challenges", json=body, headers={"Authorization": f"Bearer {token}"})
        assert made.status_code == 201, made.text
        url = f"/api/v1/challenges/{made.json()['id']}"
        wait_until(
            lambda: client.get(url).json()["status"] == "finished",
            "the worker played the challenge",
            timeout=TIMEOUT_S,
        )
        played = client.get(url).json()
    assert (played["progress"], played["games"]) == ({"queued": 0, "running": 0, "done": 3, "failed": 0}, 6)
    for summary in played["game_list"]:
        replay = Replay.from_json(blobs.get(summary["replay_sha256"]).decode())
        assert replay.meta["pairing_id"] == summary["pairing_id"]
    with session(engine) as db:  # the ladder's own rounds start after each task: only theirs count
        own = select(func.count(GameRecord.id)).join(Pairing).where(col(Pairing.challenge_id).is_(None))
        counted = select(
            func.coalesce(func.sum(PairCount.low_wins + PairCount.draws + PairCount.high_wins), 0)
        )
        assert db.exec(counted).one() == db.exec(own).one()


def test_a_pairing_killed_mid_play_is_finished_by_another_worker_and_counted_once(
    engine, blobs, worker_environment, start_worker, redis_url, tmp_path
):
    ladder = _chaos_ladder(engine, simulations=PLAYS_A_WHILE)
    environment = worker_environment(**WORKER_SETTINGS)
    doomed = start_worker(environment)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)

    wait_until(lambda: _in_play_for_a_while(engine), "the first worker plays a pairing", timeout=TIMEOUT_S)
    doomed.kill()
    with session(engine) as db:
        killed = db.exec(select(Pairing).where(Pairing.status == "running")).all()
        killed_ids = sorted(pairing.id for pairing in killed)
        assert killed_ids, "the worker finished its pairings before it was killed"
        assert not db.exec(select(GameRecord).where(col(GameRecord.pairing_id).in_(killed_ids))).all()
    for pairing in killed:  # the lease owner is "host/pid/token": the process that played dies
        pid = int(pairing.lease_owner.split("/")[1])
        wait_until(lambda pid=pid: _is_dead(pid), f"the worker's process {pid} is gone", timeout=5)

    rescuer = start_worker(environment, beat=True)  # its sweeper re-queues them once their leases lapse

    def rescued() -> bool:
        with session(engine) as db:
            return all(db.get(Pairing, pairing_id).status == "done" for pairing_id in killed_ids)

    wait_until(rescued, "the second worker finished the killed pairings", timeout=2 * TIMEOUT_S)
    rescuer.kill()
    print(f"killed {killed_ids}\n--- first worker\n{doomed.output()}\n--- second worker\n{rescuer.output()}")

    _assert_played_as_if_undisturbed(engine, ladder.id, tmp_path / "reference")
    with session(engine) as db:
        for pairing_id in killed_ids:  # a death in a batch costs none of its pairings an attempt
            assert db.get(Pairing, pairing_id).attempts == 0


def _in_play_for_a_while(engine) -> bool:
    """A pairing is running and was claimed (or last renewed) at least 0.3 s ago (WORKER_SETTINGS)."""
    soon = utc_now() + timedelta(seconds=WORKER_SETTINGS["lease_seconds"] - 0.3)
    with session(engine) as db:
        running = select(Pairing).where(Pairing.status == "running", Pairing.lease_expires_at < soon)
        return db.exec(running).first() is not None


def _chaos_ladder(engine, *, simulations: int) -> Ladder:
    """A ladder of two house bots, uct and uct at twice the ladder's `simulations`."""
    with session(engine) as db:
        game_version = get_game("bobail").spec.version
        ladder = Ladder(
            name="chaos", game="bobail", game_version=game_version, simulations=simulations, seed=7
        )
        db.add(ladder)
        db.flush()
        strong = {"simulations": 2 * simulations}
        db.add(Bot(ladder_id=ladder.id, name="uct", kind="house", player="uct"))
        db.add(Bot(ladder_id=ladder.id, name="uct-strong", kind="house", player="uct", manifest=strong))
        db.commit()
        db.refresh(ladder)
        return ladder


def _assert_played_as_if_undisturbed(engine, ladder_id: int, folder: Path) -> None:
    """No pairing of the ladder failed, each done one was played with its planned seed, and its games
    (replay hashes included) and the ratings are those of the same pairings played undisturbed."""
    with session(engine) as db:  # its own session: a refit that finds nothing new rolls back
        refit_ladder(db, ladder_id=ladder_id)
    with session(engine) as db:
        ladder = db.get(Ladder, ladder_id)
        assert db.exec(select(Pairing).where(Pairing.status == "failed")).all() == []
        done = db.exec(select(Pairing).where(Pairing.status == "done").order_by(Pairing.id)).all()
        assert [p.seed for p in done] == [pairing_seed(ladder.seed, p.id) for p in done]
        games = db.exec(select(GameRecord).order_by(GameRecord.pairing_id, GameRecord.index)).all()
        assert [(g.pairing_id, g.index) for g in games] == [(p.id, i) for p in done for i in (0, 1)]
        disturbed = _leaderboard(db), [_game_row(g) for g in games]
        bots = db.exec(select(Bot)).all()

    undisturbed = _undisturbed_run(folder, ladder, bots, done)
    assert disturbed[1] == undisturbed[1]  # every game, replay hash included, as without the faults
    assert disturbed[0].keys() == undisturbed[0].keys()
    for bot, row in disturbed[0].items():
        assert row == pytest.approx(undisturbed[0][bot])


# Leases long enough that a dead worker is always found by its silent heartbeat first (two beats,
# once the sweeper has watched the beats for two: its process may take seconds to start on a busy machine).
DEATH_SETTINGS = WORKER_SETTINGS | {"lease_seconds": 20}


# uct simulations at which a Bobail pairing runs long enough to be seen running and killed, again and
# again: on the compiled core a pairing at 48 is over in about 0.1 s, at 400 in half a second or more.
def test_a_pairing_whose_worker_dies_whenever_it_plays_alone_is_failed_and_booked_again(
    engine, worker_environment, start_worker, redis_url
):
    ladder = _chaos_ladder(engine, simulations=PLAYS_A_WHILE)
    environment = worker_environment(**DEATH_SETTINGS, max_attempts=1)  # one death alone fails it
    start_worker(environment, beat=True)
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)
    killed: set[str] = set()
    doomed = _kill_its_worker(engine, None, killed)  # in its batch: isolated, at no cost
    while (status := _pairing(engine, doomed.id).status) != "failed":  # alone: its own death, out of attempts
        assert status != "done", "the pairing was played to the end before its worker could be killed"
        _kill_its_worker(engine, doomed.id, killed, stop_when=lambda: _pairing(engine, doomed.id).finished_at)

    def replaced() -> bool:
        with session(engine) as db:
            return len(db.exec(select(Pairing).where(Pairing.status == "done")).all()) >= 2

    wait_until(replaced, "the failed pairing's pair is booked and played again", timeout=TIMEOUT_S)
    with session(engine) as db:
        failed = db.get(Pairing, doomed.id)
        assert (failed.attempts, failed.isolated) == (1, True)
        assert "while played alone" in failed.error
        done = [p.id for p in db.exec(select(Pairing).where(Pairing.status == "done"))]
        assert len(done) >= DEFAULT_POLICY.house_pairings  # the introduction owed, every game of it played
        games = db.exec(select(GameRecord).where(col(GameRecord.pairing_id).in_(done))).all()
        assert sorted((g.pairing_id, g.index) for g in games) == [
            (p, i) for p in sorted(done) for i in (0, 1)
        ]
        assert all(g.forfeit_seat is None for g in games)


def test_three_kills_of_one_pairings_worker_cost_it_nothing_and_change_no_result(
    engine, worker_environment, start_worker, redis_url, tmp_path
):
    ladder = _chaos_ladder(engine, simulations=PLAYS_A_WHILE)
    workers = [start_worker(worker_environment(**DEATH_SETTINGS), beat=True)]
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder.id)
    killed: set[str] = set()
    target = _kill_its_worker(engine, None, killed)
    for _ in range(2):
        _kill_its_worker(engine, target.id, killed)
    wait_until(
        lambda: _pairing(engine, target.id).status == "done",
        "the pairing was played at last",
        timeout=TIMEOUT_S,
    )
    workers[0].kill()
    print(f"killed {sorted(killed)}\n--- the worker\n{workers[0].output()}")
    played = _pairing(engine, target.id)
    assert (played.attempts, played.isolated) == (2, True)  # of max_attempts 3: a third would be its last
    _assert_played_as_if_undisturbed(engine, ladder.id, tmp_path / "reference")


def test_a_redis_outage_mid_play_costs_no_attempt_and_changes_no_result(
    engine, worker_environment, start_worker, redis_url, tcp_proxy, tmp_path
):
    ladder = _chaos_ladder(engine, simulations=PLAYS_A_WHILE)
    broker = make_url(redis_url)
    proxy = tcp_proxy(broker.port or 6379)
    proxied = f"redis://127.0.0.1:{proxy.port}/{broker.database}"
    worker = start_worker(worker_environment(**WORKER_SETTINGS, broker_url=proxied), beat=True)
    try:
        _outage_mid_play(engine, redis_url, ladder.id, proxy, seconds=3)
    finally:
        worker.kill()
        print(worker.output())
    _assert_played_as_if_undisturbed(engine, ladder.id, tmp_path / "reference")


def test_a_postgresql_outage_mid_play_costs_no_attempt_and_changes_no_result(
    engine, worker_environment, start_worker, redis_url, postgres_url, tcp_proxy, tmp_path
):
    ladder = _chaos_ladder(engine, simulations=PLAYS_A_WHILE)
    database = make_url(postgres_url)
    proxy = tcp_proxy(database.port or 5432)
    proxied = database.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    worker = start_worker(worker_environment(**WORKER_SETTINGS, database_url=proxied), beat=True)
    try:
        _outage_mid_play(engine, redis_url, ladder.id, proxy, seconds=2 * WORKER_SETTINGS["lease_seconds"])
    finally:
        worker.kill()
        print(worker.output())
    _assert_played_as_if_undisturbed(engine, ladder.id, tmp_path / "reference")


def _outage_mid_play(engine, redis_url: str, ladder_id: int, proxy: TcpProxy, *, seconds: float) -> None:
    """Books the ladder's first round, cuts `proxy` for `seconds` while a pairing plays, and waits
    until every pairing in flight then is done, none of them charged an attempt."""
    celery_enqueue(redis_url)(SCHEDULE_LADDER, ladder_id)
    wait_until(lambda: _in_play_for_a_while(engine), "a worker plays a pairing", timeout=TIMEOUT_S)
    with session(engine) as db:
        in_flight = [
            p.id for p in db.exec(select(Pairing).where(col(Pairing.status).in_(["queued", "running"])))
        ]
    proxy.cut()
    time.sleep(seconds)
    proxy.restore()

    def all_done() -> bool:
        return all(_pairing(engine, pairing_id).status == "done" for pairing_id in in_flight)

    wait_until(all_done, "the pairings in flight during the outage are played", timeout=2 * TIMEOUT_S)
    assert [_pairing(engine, pairing_id).attempts for pairing_id in in_flight] == [0] * len(in_flight)


def _running(engine, pairing_id: int | None = None) -> list[Pairing]:
    """The running pairings (only `pairing_id`, when given)."""
    statement = select(Pairing).where(Pairing.status == "running")
    if pairing_id is not None:
        statement = statement.where(Pairing.id == pairing_id)
    with session(engine) as db:
        return list(db.exec(statement))


def _pairing(engine, pairing_id: int) -> Pairing:
    with session(engine) as db:
        return db.get(Pairing, pairing_id)


def _kill_its_worker(
    engine, pairing_id: int | None, killed: set[str], stop_when: Callable[[], object] = lambda: False
) -> Pairing:
    """Waits until `pairing_id` (any pairing, when None) runs under a claim not in `killed`, and
    SIGKILLs the pool child that holds it (the lease owner is "<host>/<pid>/<token>/<claim>"),
    adding the claim to `killed`; the pairing. Returns early, without killing, once `stop_when`."""
    found: list[Pairing] = []

    def claimed_anew() -> bool:
        found[:] = [p for p in _running(engine, pairing_id) if p.lease_owner not in killed]
        return bool(found) or bool(stop_when())

    wait_until(claimed_anew, f"pairing {pairing_id or 'any'} is claimed again", timeout=2 * TIMEOUT_S)
    if not found:
        return _pairing(engine, pairing_id)
    os.kill(int(found[0].lease_owner.split("/")[1]), signal.SIGKILL)
    killed.add(found[0].lease_owner)
    return found[0]


class TcpProxy:
    """A loopback TCP forwarder to a local port that a test can `cut` (every connection closed, new
    ones closed at once) and `restore`: an outage of the server behind it for the clients that reach
    it through the proxy, while the shared server itself runs on for everyone else."""

    def __init__(self, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for connection in sockets:
            _close(connection)

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            try:
                if not self._open.is_set():
                    raise ConnectionRefusedError("the proxy is cut")
                upstream = socket.create_connection(self._target)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._sockets |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        _close(source)
        _close(sink)


def _close(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()


@pytest.fixture
def tcp_proxy() -> Iterator[Callable[[int], TcpProxy]]:
    """`tcp_proxy(port)`: a TcpProxy to 127.0.0.1:`port`, closed after the test."""
    proxies: list[TcpProxy] = []

    def start(port: int) -> TcpProxy:
        proxies.append(TcpProxy(port))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()


def _is_dead(pid: int) -> bool:
    """The process is gone or a zombie (killed, not yet reaped by its new parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _undisturbed_run(folder: Path, ladder: Ladder, bots: list[Bot], pairings: list[Pairing]):
    """The same pairings (same ids and seeds) played in this process without interruption, on SQLite."""
    engine = make_engine(f"sqlite:///{folder / 'arena.db'}")
    migrate(engine)
    with session(engine) as db:
        db.add(Ladder(**ladder.model_dump()))
        db.flush()
        db.add_all(Bot(**bot.model_dump()) for bot in bots)
        db.flush()
        db.add_all(
            Pairing(id=p.id, ladder_id=p.ladder_id, bot_a_id=p.bot_a_id, bot_b_id=p.bot_b_id, seed=p.seed)
            for p in pairings
        )
        db.commit()
    context = WorkerContext(
        settings=Settings(data_dir=folder),
        engine=engine,
        blobs=BlobStore(str(folder / "blobs")),
        enqueue=lambda *_: None,
    )
    runner.play_pairings(context, [pairing.id for pairing in pairings])
    context.close()  # the model hosts and the heartbeat of this process
    with session(engine) as db:
        refit_ladder(db, ladder_id=ladder.id)
        games = db.exec(select(GameRecord).order_by(GameRecord.pairing_id, GameRecord.index)).all()
        result = _leaderboard(db), [_game_row(g) for g in games]
    engine.dispose()
    return result


def _leaderboard(db) -> dict[int, tuple]:
    return {
        row.bot_id: (row.rating, row.low, row.high, row.games, row.wins, row.draws, row.losses)
        for row in db.exec(select(Rating))
    }


def _game_row(game: GameRecord) -> tuple:
    return (
        game.pairing_id,
        game.index,
        game.first_bot_id,
        game.second_bot_id,
        game.score,
        game.steps,
        game.end_reason,
        game.replay_sha256,
    )
