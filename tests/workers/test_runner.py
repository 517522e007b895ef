"""The runner and its store: claims, leases, heartbeats, the sweeper, exactly-once recording, refits
and scheduling rounds, on SQLite and on PostgreSQL (without a broker: enqueued tasks are recorded)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from sqlmodel import col, func, select

from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, Ladder, PairCount, Pairing, Rating, RatingHistory, utc_now
from arena_platform.queue import SCHEDULE_LADDER
from arena_platform.scheduling import SchedulePolicy
from arena_platform.settings import Settings
from arena_platform.store import pairings as store
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import fit_ladder, refit_ladder
from arena_platform.store.results import PlayedGame, record_pairing, recount_pairs
from arena_workers import runner
from arena_workers.runner import PLAY_PAIRING, PLAY_PAIRINGS, REFIT, LeaseKeeper, WorkerContext

LEASE = 60  # seconds; tests that need time to pass move `now` instead of sleeping


@pytest.fixture
def enqueued() -> list[tuple]:
    """The tasks the runner enqueued: (task name, *args)."""
    return []


@pytest.fixture
def context(engine: Engine, tmp_path: Path, enqueued: list[tuple]) -> Iterator[WorkerContext]:
    settings = Settings(data_dir=tmp_path, lease_seconds=LEASE, heartbeat_seconds=1, max_attempts=2)
    worker = WorkerContext(
        settings=settings,
        engine=engine,
        blobs=BlobStore(str(tmp_path / "blobs")),
        enqueue=lambda name, *args: enqueued.append((name, *args)),
    )
    yield worker
    worker.close()


@pytest.fixture
def ladder(engine: Engine) -> Ladder:
    """A bobail ladder at 4 simulations with its house bots, random and uct."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=11)
        db.commit()
    return ladder


@pytest.fixture
def new_pairings(engine: Engine, ladder: Ladder) -> Callable[[int], list[int]]:
    """`new_pairings(n)`: n queued pairings random (first) against uct on the ladder; their ids."""

    def create(count: int) -> list[int]:
        with session(engine) as db:
            random, uct = _house_bots(db, ladder.id)
            created = store.create_pairings(
                db, ladder=ladder, pairs=[(random, uct)] * count, redelivery_seconds=LEASE
            )
            db.commit()
            return [pairing.id for pairing in created]

    return create


def _house_bots(db, ladder_id: int) -> tuple[int, int]:
    bots = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder_id))}
    return bots["random"], bots["uct"]


def _pairing(engine: Engine, pairing_id: int) -> Pairing:
    with session(engine) as db:
        return db.get(Pairing, pairing_id)


def _claim(engine: Engine, pairing_id: int, owner: str, now=None, max_attempts: int = 2) -> bool:
    with session(engine) as db:
        return store.claim_pairing(
            db, pairing_id=pairing_id, owner=owner, lease_seconds=LEASE, max_attempts=max_attempts, now=now
        )


def _sweep(engine: Engine, now) -> store.Sweep:
    with session(engine) as db:
        return store.sweep_pairings(db, lease_seconds=LEASE, max_attempts=2, now=now)


def test_of_two_racing_claimers_exactly_one_wins_each_pairing(engine, new_pairings):
    ids = new_pairings(12)
    start = threading.Barrier(2)
    won: dict[str, list[int]] = {"a": [], "b": []}

    def claimer(owner: str) -> None:
        for pairing_id in ids:
            start.wait()
            if _claim(engine, pairing_id, owner):
                won[owner].append(pairing_id)

    threads = [threading.Thread(target=claimer, args=(owner,)) for owner in won]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won["a"] + won["b"]) == ids
    for owner, pairing_ids in won.items():
        for pairing_id in pairing_ids:
            pairing = _pairing(engine, pairing_id)
            assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("running", owner, 1)


def test_a_live_lease_cannot_be_claimed_but_a_lapsed_one_can(engine, new_pairings):
    (pairing_id,) = new_pairings(1)
    now = utc_now()
    assert _claim(engine, pairing_id, "a", now=now)
    assert not _claim(engine, pairing_id, "b", now=now + timedelta(seconds=LEASE - 1))
    assert _claim(engine, pairing_id, "b", now=now + timedelta(seconds=LEASE + 1))
    pairing = _pairing(engine, pairing_id)
    assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("running", "b", 2)
    with session(engine) as db:  # the first owner's heartbeat now finds its lease gone
        assert not store.renew_lease(db, pairing_id=pairing_id, owner="a", lease_seconds=LEASE)


def test_the_sweep_requeues_a_lapsed_lease_and_fails_a_pairing_out_of_attempts(engine, new_pairings):
    (pairing_id,) = new_pairings(1)
    now = utc_now()
    assert _claim(engine, pairing_id, "a", now=now)
    assert _sweep(engine, now + timedelta(seconds=LEASE - 1)) == store.Sweep([], [], [])
    later = now + timedelta(seconds=LEASE + 1)
    assert _sweep(engine, later) == store.Sweep(requeued=[pairing_id], failed=[], resent=[])
    pairing = _pairing(engine, pairing_id)
    assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("queued", None, 1)

    assert _claim(engine, pairing_id, "b", now=later)  # the second and last attempt
    much_later = later + timedelta(seconds=LEASE + 1)
    assert _sweep(engine, much_later) == store.Sweep(requeued=[], failed=[pairing_id], resent=[])
    pairing = _pairing(engine, pairing_id)
    assert (pairing.status, pairing.attempts) == ("failed", 2)
    assert "silent" in pairing.error
    assert pairing.finished_at is not None
    assert not _claim(engine, pairing_id, "c", now=much_later)


def test_the_sweep_resends_a_queued_pairing_once_per_lease_while_its_message_may_be_lost(
    engine, new_pairings
):
    (pairing_id,) = new_pairings(1)
    overdue = utc_now() + timedelta(seconds=LEASE + 1)
    assert _sweep(engine, overdue) == store.Sweep(requeued=[], failed=[], resent=[pairing_id])
    assert _sweep(engine, overdue) == store.Sweep([], [], [])
    assert _pairing(engine, pairing_id).status == "queued"


def test_heartbeats_renew_the_lease_until_it_is_lost(engine, new_pairings, context):
    (pairing_id,) = new_pairings(1)
    assert _claim(engine, pairing_id, "me")
    first_expiry = _pairing(engine, pairing_id).lease_expires_at
    with LeaseKeeper(engine, [pairing_id], "me", context.settings) as leases:
        time.sleep(1.5)
        assert _pairing(engine, pairing_id).lease_expires_at > first_expiry
        _sweep(engine, utc_now() + timedelta(seconds=2 * LEASE))  # as if the lease had lapsed meanwhile
        time.sleep(1.5)
    assert leases.lost == {pairing_id}
    assert _pairing(engine, pairing_id).status == "queued"


def test_a_pairing_is_played_as_two_seat_swapped_games_from_one_opening(context, new_pairings, enqueued):
    ids = new_pairings(2)
    outcomes = runner.play_pairings(context, ids)
    assert [(o.pairing_id, o.status) for o in outcomes] == [(i, "recorded") for i in ids]
    game = get_game("bobail")
    with session(context.engine) as db:
        random, uct = _house_bots(db, _pairing(context.engine, ids[0]).ladder_id)
        for pairing_id in ids:
            pairing = db.get(Pairing, pairing_id)
            assert (pairing.status, pairing.lease_owner, pairing.lease_expires_at) == ("done", None, None)
            games = db.exec(
                select(GameRecord).where(GameRecord.pairing_id == pairing_id).order_by("index")
            ).all()
            assert [(g.index, g.first_bot_id, g.second_bot_id) for g in games] == [
                (0, random, uct),
                (1, uct, random),
            ]
            replays = [Replay.from_json(context.blobs.get(g.replay_sha256).decode()) for g in games]
            opening = game.opening(pairing.seed, None)
            for record, replay in zip(games, replays, strict=True):
                assert replay.seed == pairing.seed
                assert replay.opening_length == len(opening) > 0
                assert [step.actions for step in replay.steps[: len(opening)]] == list(opening)
                assert record.steps == len(replay.steps)
                assert record.score == (replay.returns[0] + 1) / 2
                assert replay.meta["pairing_id"] == pairing_id
                replay_states(game, replay)  # re-plays through the engine
            assert replays[0].players == ("random", "uct")
            assert replays[1].players == ("uct", "random")
    ladder_id = pairing.ladder_id
    assert enqueued == [(REFIT, ladder_id), (SCHEDULE_LADDER, ladder_id)]


def test_recording_a_pairing_twice_counts_its_games_once(context, new_pairings, enqueued):
    (pairing_id,) = new_pairings(1)
    runner.play_pairings(context, [pairing_id])
    enqueued.clear()
    assert runner.play_pairings(context, [pairing_id]) == [runner.PairingOutcome(pairing_id, "not_claimed")]
    assert enqueued == []
    with session(context.engine) as db:
        pairing = db.get(Pairing, pairing_id)
        recorded = db.exec(select(GameRecord).where(GameRecord.pairing_id == pairing_id)).all()
        games = [
            PlayedGame(
                index=g.index,
                first_bot_id=g.first_bot_id,
                second_bot_id=g.second_bot_id,
                score=g.score,
                end_reason=g.end_reason,
                forfeit_seat=g.forfeit_seat,
                steps=g.steps,
                replay_sha256=g.replay_sha256,
            )
            for g in recorded
        ]
        # A worker whose lease lapsed while it played finishes after the pairing was recorded.
        assert not record_pairing(db, pairing=pairing, games=games)
        # Even if the pairing were not marked done, the unique (pairing, index) guard holds.
        db.exec(update(Pairing).where(col(Pairing.id) == pairing_id).values(status="running"))
        db.commit()
        assert not record_pairing(db, pairing=pairing, games=games)
        count = db.exec(select(func.count()).select_from(GameRecord)).one()
        assert count == 2
        assert db.get(Pairing, pairing_id).status == "running"


def test_pair_counts_add_up_concurrent_recordings_of_one_pair_exactly_once(engine, new_pairings):
    ids = new_pairings(16)
    start = threading.Barrier(2)

    def recorder(pairing_ids: list[int]) -> None:
        with session(engine) as db:
            random, uct = _house_bots(db, db.get(Pairing, pairing_ids[0]).ladder_id)
        for pairing_id in pairing_ids:
            start.wait()
            with session(engine) as db:
                pairing = db.get(Pairing, pairing_id)
                score = (pairing_id % 3) / 2  # 0, 0.5 or 1 for random in the first seat
                games = [_played(0, random, uct, score), _played(1, uct, random, 1 - score)]
                assert record_pairing(db, pairing=pairing, games=games)
                assert not record_pairing(db, pairing=pairing, games=games)  # a re-delivery adds nothing

    threads = [threading.Thread(target=recorder, args=(ids[half::2],)) for half in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with session(engine) as db:
        (counted,) = db.exec(select(PairCount)).all()
        random, uct = _house_bots(db, counted.ladder_id)
        random_points = [(pairing_id % 3) / 2 for pairing_id in ids] * 2
        assert (counted.low_bot_id, counted.high_bot_id) == (min(random, uct), max(random, uct))
        low_points = random_points if counted.low_bot_id == random else [1 - p for p in random_points]
        assert (counted.low_wins, counted.draws, counted.high_wins) == tuple(
            low_points.count(points) for points in (1.0, 0.5, 0.0)
        )
        incremental = counted.model_dump()
        recount_pairs(db, ladder_id=counted.ladder_id)
        db.expire_all()
        assert db.exec(select(PairCount)).one().model_dump() == incremental


def _played(index: int, first: int, second: int, score: float) -> PlayedGame:
    return PlayedGame(
        index=index,
        first_bot_id=first,
        second_bot_id=second,
        score=score,
        end_reason="test",
        forfeit_seat=None,
        steps=1,
        replay_sha256="0" * 64,
    )


def test_a_lease_taken_over_after_it_lapsed_still_counts_each_game_once(context, new_pairings):
    (pairing_id,) = new_pairings(1)
    assert _claim(context.engine, pairing_id, "silent-worker", now=utc_now() - timedelta(seconds=2 * LEASE))
    assert runner.play_pairings(context, [pairing_id]) == [runner.PairingOutcome(pairing_id, "recorded")]
    pairing = _pairing(context.engine, pairing_id)
    assert (pairing.status, pairing.attempts) == ("done", 2)


def test_an_error_while_playing_gives_the_claims_back(context, new_pairings, enqueued):
    ids = new_pairings(2)
    with session(context.engine) as db:
        db.exec(update(Ladder).values(game_version=99))  # as if this worker ran older rules
        db.commit()
    with pytest.raises(runner.RunnerError, match="v99"):
        runner.play_pairings(context, ids)
    for pairing_id in ids:
        pairing = _pairing(context.engine, pairing_id)
        assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("queued", None, 1)
        assert "RunnerError" in pairing.error
    assert enqueued == []


def test_refits_cover_every_game_once_and_skip_when_nothing_is_new(context, new_pairings, ladder):
    runner.play_pairings(context, new_pairings(3))
    assert runner.refit(context, ladder.id)
    assert not runner.refit(context, ladder.id)
    with session(context.engine) as db:
        ratings = {row.bot_id: row for row in db.exec(select(Rating))}
        random, uct = _house_bots(db, ladder.id)
        assert ratings.keys() == {random, uct}
        games = db.exec(select(GameRecord)).all()
        for bot_id, row in ratings.items():
            points = [g.score if g.first_bot_id == bot_id else 1 - g.score for g in games]
            assert (row.games, row.wins, row.draws, row.losses) == (
                6,
                points.count(1.0),
                points.count(0.5),
                points.count(0.0),
            )
        assert ratings[random].rating == pytest.approx(-ratings[uct].rating)  # the house mean is 0
        assert {(h.bot_id, h.games) for h in db.exec(select(RatingHistory))} == {(random, 6), (uct, 6)}
        assert fit_ladder(db, ladder_id=ladder.id).estimates()[str(uct)][0] == pytest.approx(
            ratings[uct].rating
        )
        assert not refit_ladder(db, ladder_id=ladder.id)


def test_a_scheduling_round_books_the_introduction_within_the_in_flight_cap(context, ladder, enqueued):
    booked = runner.schedule_ladder(context, ladder.id)
    cap, size = SchedulePolicy().max_in_flight, runner.PAIRINGS_PER_TASK
    assert size == SchedulePolicy().block  # a task carries one block: both bots batch its games
    assert len(booked) == cap  # the house bots' two introduction pairings, then blocks of their pair
    assert enqueued == [(PLAY_PAIRINGS, booked[start : start + size]) for start in range(0, cap, size)]
    assert runner.schedule_ladder(context, ladder.id) == []  # both bots are at the in-flight cap
    with session(context.engine) as db:
        seeds = [db.get(Pairing, pairing_id).seed for pairing_id in booked]
    assert seeds == [store.pairing_seed(ladder.seed, pairing_id) for pairing_id in booked]
    runner.play_pairings(context, booked)
    assert len(runner.schedule_ladder(context, ladder.id)) == cap  # the ladder goes on


def test_the_sweeper_enqueues_lost_pairings_refits_and_scheduling_rounds(
    context, new_pairings, ladder, enqueued
):
    (played, lost) = new_pairings(2)
    runner.play_pairings(context, [played])  # its refit and scheduling messages get lost
    with session(context.engine) as db:
        db.exec(update(Pairing).where(col(Pairing.id) == lost).values(lease_expires_at=utc_now()))
        db.commit()
    enqueued.clear()
    swept = runner.sweep(context)
    assert swept == store.Sweep(requeued=[], failed=[], resent=[lost])
    assert enqueued == [(PLAY_PAIRING, lost), (REFIT, ladder.id)]  # the ladder is not stalled: one queued
    runner.play_pairings(context, [lost])
    runner.refit(context, ladder.id)
    enqueued.clear()
    runner.sweep(context)
    assert enqueued == [(SCHEDULE_LADDER, ladder.id)]  # played, nothing in flight: a lost round
