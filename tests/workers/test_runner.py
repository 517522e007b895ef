"""The runner and its store: claims, leases, heartbeats, the sweeper, exactly-once recording, refits
and scheduling rounds, on SQLite and on PostgreSQL (without a broker: enqueued tasks are recorded)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from played import placeholder_game
from sqlalchemy import Engine, update
from sqlalchemy.exc import OperationalError
from sqlmodel import col, func, select

from arena_bots import host as host_module
from arena_bots.host import ModelFault
from arena_bots.manifest import Manifest
from arena_bots.match import PlatformFault, play_many
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states, step_to_dict
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import (
    Bot,
    GameRecord,
    Ladder,
    LiveGame,
    PairCount,
    Pairing,
    Rating,
    RatingHistory,
    utc_now,
)
from arena_platform.queue import PLAY_PAIRINGS, SCHEDULE_LADDER
from arena_platform.scheduling import SchedulePolicy
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import live as live_store
from arena_platform.store import pairings as store
from arena_platform.store import training as training_store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import PAIRINGS_PER_TASK
from arena_platform.store.ratings import fit_ladder, refit_ladder
from arena_platform.store.results import PlayedGame, record_pairing, recount_pairs
from arena_platform.store.scheduling import QUARANTINE_FAILURES, ladder_state
from arena_workers import ladders, model_cache, runner
from arena_workers import leases as leases_module
from arena_workers import sweeper as sweeper_module
from arena_workers.context import REFIT, WorkerContext
from arena_workers.leases import LeaseKeeper
from arena_workers.sweeper import Sweeper

LEASE = 60  # seconds; tests that need time to pass move `now` instead of sleeping
LEASE_DELTA = timedelta(seconds=LEASE)


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


def _sweep(engine: Engine, now, **options) -> store.Sweep:
    with session(engine) as db:
        return store.sweep_pairings(db, max_attempts=2, now=now, **options)


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
            assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("running", owner, 0)


def test_a_live_lease_cannot_be_claimed_but_a_lapsed_one_can(engine, new_pairings):
    (pairing_id,) = new_pairings(1)
    now = utc_now()
    assert _claim(engine, pairing_id, "a", now=now)
    assert not _claim(engine, pairing_id, "b", now=now + timedelta(seconds=LEASE - 1))
    assert _claim(engine, pairing_id, "b", now=now + timedelta(seconds=LEASE + 1))
    pairing = _pairing(engine, pairing_id)
    assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("running", "b", 0)  # claims are free
    with session(engine) as db:  # the first owner's heartbeat now finds its lease gone
        assert not store.renew_lease(db, pairing_id=pairing_id, owner="a", lease_seconds=LEASE)


def test_the_sweep_takes_back_a_lapsed_lease_at_no_cost_however_often(engine, new_pairings):
    (pairing_id,) = new_pairings(1)
    now = utc_now()
    for number in range(3):  # more than max_attempts: a silent worker may be cut from the database
        assert _claim(engine, pairing_id, f"silent-{number}", now=now)
        assert _sweep(engine, now + timedelta(seconds=LEASE - 1), resend_overdue=False).to_send == []
        now += timedelta(seconds=LEASE + 1)
        assert _sweep(engine, now) == store.Sweep(requeued=[pairing_id], failed=[], resent=[])
        pairing = _pairing(engine, pairing_id)
        assert (pairing.status, pairing.lease_owner, pairing.attempts, pairing.isolated) == (
            "queued",
            None,
            0,
            False,
        )
        assert pairing.lease_expires_at is None  # no message out: the caller sends one
        assert "lease lapsed" in pairing.error


def test_a_dead_worker_costs_a_pairing_an_attempt_only_when_it_played_alone(engine, new_pairings):
    """The rule of store.pairings: a death with others isolates; max_attempts deaths alone fail."""
    suspect, mate = new_pairings(2)
    for pairing_id in (suspect, mate):  # one batch
        assert _claim(engine, pairing_id, "worker-1/claim")
    assert _sweep(engine, utc_now(), dead_owners=["worker-1/claim"]).requeued == [suspect, mate]
    for pairing_id in (suspect, mate):
        pairing = _pairing(engine, pairing_id)
        assert (pairing.status, pairing.attempts, pairing.isolated) == ("queued", 0, True)
        assert "died" in pairing.error
    assert _claim(engine, suspect, "worker-2/claim")  # alone now: its death is its own
    assert _sweep(engine, utc_now(), dead_owners=["worker-2/claim"]).requeued == [suspect]
    assert _pairing(engine, suspect).attempts == 1
    assert _claim(engine, suspect, "worker-3/claim")
    swept = _sweep(engine, utc_now(), dead_owners=["worker-3/claim"])
    assert (swept.requeued, swept.failed) == ([], [suspect])
    failed = _pairing(engine, suspect)
    assert (failed.status, failed.attempts) == ("failed", 2)
    assert "2 times while played alone" in failed.error
    assert not _claim(engine, suspect, "worker-4/claim")
    assert _claim(engine, mate, "worker-4/claim")  # its batch-mate goes on


def test_a_queued_pairing_is_sent_when_no_message_is_out_or_once_its_message_is_probably_lost(
    engine, new_pairings
):
    (pairing_id,) = new_pairings(1)  # booked and sent: due again a lease from now
    overdue = utc_now() + timedelta(seconds=LEASE + 1)
    assert _sweep(engine, overdue, waiting={pairing_id}).resent == []  # its message waits behind others
    assert _sweep(engine, overdue, resend_overdue=False).resent == []  # the broker cannot be read
    assert _sweep(engine, overdue).resent == [pairing_id]  # no message names it: lost
    with session(engine) as db:
        store.mark_sent(db, pairing_ids=[pairing_id], redelivery_seconds=LEASE)
    assert _sweep(engine, utc_now()).resent == []  # once per lease at most
    with session(engine) as db:
        db.exec(update(Pairing).values(lease_expires_at=None))  # given back: no message out
        db.commit()
    assert _sweep(engine, utc_now(), resend_overdue=False).resent == [pairing_id]
    assert _pairing(engine, pairing_id).status == "queued"


def test_what_a_sweep_took_back_but_could_not_send_is_sent_by_the_next_one(
    context, ladder, new_pairings, enqueued
):
    _measured(context.engine, ladder, seconds=1.0)  # a fast ladder: tasks of a whole block
    ids = new_pairings(2)
    for pairing_id in ids:
        assert _claim(
            context.engine, pairing_id, "silent/1/0123456789ab/claim", now=utc_now() - 2 * LEASE_DELTA
        )

    def broker_away(*_: object) -> None:
        raise ConnectionError("the broker is away")

    context.enqueue = broker_away
    with pytest.raises(ConnectionError):
        sweeper_module.sweep(context)
    assert [_pairing(context.engine, pairing_id).lease_expires_at for pairing_id in ids] == [None, None]
    context.enqueue = lambda name, *args: enqueued.append((name, *args))
    assert sweeper_module.sweep(context).resent == ids  # no message out: sent, whatever the queue holds
    assert _played(enqueued) == [ids]  # in one block
    enqueued.clear()
    sweeper_module.sweep(context)
    assert _played(enqueued) == []  # sent once


def test_resent_pairings_go_in_blocks_an_isolated_one_alone_and_a_waiting_one_not_at_all(
    context, ladder, new_pairings, enqueued
):
    _measured(context.engine, ladder, seconds=1.0)  # a fast ladder: tasks of a whole block
    ids = new_pairings(6)
    with session(context.engine) as db:  # every message overdue; the last pairing isolated
        db.exec(
            update(Pairing).where(col(Pairing.id).in_(ids)).values(lease_expires_at=utc_now() - LEASE_DELTA)
        )
        db.exec(update(Pairing).where(col(Pairing.id) == ids[5]).values(isolated=True))
        db.commit()
    context.waiting_pairings = lambda: {ids[0]}  # its message waits in the queue
    sweeper_module.sweep(context)
    assert _played(enqueued) == [ids[1:5], ids[5:]]
    enqueued.clear()
    sweeper_module.sweep(context)
    assert _played(enqueued) == []  # each resent once: due again a lease later


def _played(enqueued: list[tuple]) -> list[list[int]]:
    """The pairing ids of the play messages among `enqueued`, message by message."""
    return [args[0] for name, *args in enqueued if name == PLAY_PAIRINGS]


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


def test_a_renewal_that_finds_its_pairing_recorded_by_its_holder_has_not_lost_it(
    engine, new_pairings, context, monkeypatch
):
    (pairing_id,) = new_pairings(1)
    assert _claim(engine, pairing_id, "me")
    leases = LeaseKeeper(engine, [pairing_id], "me", context.settings)

    def recorded_meanwhile(db, *, pairing_id, owner, lease_seconds):
        """The record lands between the beat's choice of leases to renew and the renewal."""
        leases.finished(pairing_id)
        store.mark_done(db, pairing_id=pairing_id)
        db.commit()
        return store.renew_lease(db, pairing_id=pairing_id, owner=owner, lease_seconds=lease_seconds)

    monkeypatch.setattr(leases_module, "renew_lease", recorded_meanwhile)
    with leases:
        time.sleep(1.5)  # a heartbeat
    assert leases.lost == set()


def test_a_lost_lease_is_logged_with_what_became_of_its_pairing(context, new_pairings, monkeypatch, caplog):
    class LostAtOnce(LeaseKeeper):
        def __enter__(self) -> LeaseKeeper:
            self.lost = set(self._pairing_ids)
            return self

        def __exit__(self, *_: object) -> None:
            pass

    monkeypatch.setattr(runner, "LeaseKeeper", LostAtOnce)
    recorded, given_back = new_pairings(2)
    runner.play_pairings(context, [recorded])
    context.stopping.set()
    runner.play_pairings(context, [given_back])
    assert [record.getMessage() for record in caplog.records if "lost its lease" in record.getMessage()] == [
        f"pairing {recorded} lost its lease while playing: this holder recorded it all the same "
        "(its games count once)",
        f"pairing {given_back} lost its lease while playing: this holder recorded nothing",
    ]


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
                games = [placeholder_game(0, random, uct, score), placeholder_game(1, uct, random, 1 - score)]
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


def test_a_lease_taken_over_after_it_lapsed_still_counts_each_game_once(context, new_pairings):
    (pairing_id,) = new_pairings(1)
    assert _claim(context.engine, pairing_id, "silent-worker", now=utc_now() - timedelta(seconds=2 * LEASE))
    assert runner.play_pairings(context, [pairing_id]) == [runner.PairingOutcome(pairing_id, "recorded")]
    pairing = _pairing(context.engine, pairing_id)
    assert (pairing.status, pairing.attempts) == ("done", 0)


def test_an_error_while_playing_gives_the_claims_back_charged_only_when_played_alone(
    context, new_pairings, enqueued
):
    ids = new_pairings(2)
    with session(context.engine) as db:
        db.exec(update(Ladder).values(game_version=99))  # as if this worker ran older rules
        db.commit()
    with pytest.raises(runner.RunnerError, match="v99"):
        runner.play_pairings(context, ids)
    for pairing_id in ids:  # a batch's error: none is charged, each is played alone from now on
        pairing = _pairing(context.engine, pairing_id)
        assert (pairing.status, pairing.lease_owner, pairing.attempts, pairing.isolated) == (
            "queued",
            None,
            0,
            True,
        )
        assert "RunnerError" in pairing.error
    with pytest.raises(runner.RunnerError):
        runner.play_pairings(context, ids[:1])
    assert _pairing(context.engine, ids[0]).attempts == 1
    assert enqueued == []


def test_refits_cover_every_game_once_and_skip_when_nothing_is_new(context, new_pairings, ladder):
    runner.play_pairings(context, new_pairings(3))
    assert ladders.refit(context, ladder.id)
    assert not ladders.refit(context, ladder.id)
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
    _measured(context.engine, ladder, seconds=1.0)  # a fast ladder: tasks of a whole block
    booked = ladders.schedule_ladder(context, ladder.id)
    cap, size = SchedulePolicy().max_in_flight, PAIRINGS_PER_TASK
    assert size == SchedulePolicy().block  # a task carries one block: both bots batch its games
    assert len(booked) == cap  # the house bots' two introduction pairings, then blocks of their pair
    assert enqueued == [(PLAY_PAIRINGS, booked[start : start + size]) for start in range(0, cap, size)]
    assert ladders.schedule_ladder(context, ladder.id) == []  # both bots are at the in-flight cap
    with session(context.engine) as db:
        seeds = [db.get(Pairing, pairing_id).seed for pairing_id in booked]
    assert seeds == [store.pairing_seed(ladder.seed, pairing_id) for pairing_id in booked]
    runner.play_pairings(context, booked)
    assert len(ladders.schedule_ladder(context, ladder.id)) == cap  # the ladder goes on


def test_a_round_of_several_ladders_sends_their_messages_in_turn(context, ladder, enqueued, engine: Engine):
    with session(engine) as db:
        other = ensure_ladder(db, game="bobail", simulations=8).id
        db.commit()
    booked = ladders.schedule_ladder(context, ladder.id, other)
    cap = SchedulePolicy().max_in_flight
    assert len(booked) == 2 * cap  # each ladder of two house bots: both at their cap
    with session(engine) as db:
        ladder_ids = [db.get(Pairing, message[1][0]).ladder_id for message in enqueued]
    assert ladder_ids == [ladder.id, other] * cap  # unmeasured: one pairing a message; not one ladder first


def _measured(engine: Engine, ladder: Ladder, seconds: float, count: int = 2) -> None:
    """`count` pairings of the ladder's house bots recorded as having cost `seconds` each."""
    with session(engine) as db:
        random, uct = _house_bots(db, ladder.id)
        for pairing in store.create_pairings(
            db, ladder=ladder, pairs=[(random, uct)] * count, redelivery_seconds=LEASE
        ):
            store.mark_done(db, pairing_id=pairing.id, play_seconds=seconds)
        db.commit()


@pytest.mark.parametrize(
    ("seconds", "size"), [(None, 1), (0.5, 4), (store.TASK_SECONDS / 2.5, 2), (3 * store.TASK_SECONDS, 1)]
)
def test_a_ladder_s_task_carries_what_it_plays_in_about_task_seconds(context, ladder, seconds, size):
    if seconds is not None:
        _measured(context.engine, ladder, seconds)
    with session(context.engine) as db:
        assert store.task_size(db, ladder_id=ladder.id) == size


def test_a_played_pairing_records_what_it_cost_its_worker(context, new_pairings):
    ids = new_pairings(2)
    started = time.perf_counter()
    runner.play_pairings(context, ids)
    elapsed = time.perf_counter() - started
    costs = [_pairing(context.engine, pairing_id).play_seconds for pairing_id in ids]
    assert costs[0] == costs[1]  # one batch: its seconds shared
    assert 0 < 2 * costs[0] <= elapsed


def test_a_slow_ladder_does_not_block_a_fast_one(context, ladder, enqueued, engine: Engine):
    """A slow ladder's tasks carry one pairing each, sent in turn with a fast ladder's blocks: the
    fast ladder's first task waits for one slow pairing, and a slow ladder's urgent pairings taken
    in place of a fast task are one pairing too."""
    with session(engine) as db:
        fast = ensure_ladder(db, game="pente", simulations=4)
        db.commit()
    _measured(engine, ladder, seconds=4 * store.TASK_SECONDS)
    _measured(engine, fast, seconds=1.0)
    ladders.schedule_ladder(context, ladder.id, fast.id)
    with session(engine) as db:
        messages = [(db.get(Pairing, ids[0]).ladder_id, len(ids)) for _, ids in enqueued]
    assert messages[:4] == [(ladder.id, 1), (fast.id, 4), (ladder.id, 1), (fast.id, 4)]
    with session(engine) as db:
        db.exec(update(Pairing).where(col(Pairing.ladder_id) == ladder.id).values(urgent=True))
        db.commit()
        fast_message = next(ids for _, ids in enqueued if db.get(Pairing, ids[0]).ladder_id == fast.id)
        assert len(store.most_urgent(db, instead_of=fast_message)) == 1


def test_a_newcomer_is_booked_ahead_of_the_round_in_progress_and_played_by_the_next_task(
    context, ladder, enqueued, engine: Engine, onnx_bot
):
    ladders.schedule_ladder(context, ladder.id)  # the house bots' round: both at their in-flight cap
    (_, round_message), *_ = enqueued
    newcomer = _network_bot(engine, context, ladder, onnx_bot(), "newcomer")
    enqueued.clear()
    booked = ladders.schedule_ladder(context, ladder.id)  # the upload's round (the API books it so)
    with session(engine) as db:
        introduction = [db.get(Pairing, pairing_id) for pairing_id in booked]
    assert len(introduction) == 2 * SchedulePolicy().house_pairings  # not held back by the house bots' cap
    assert all(
        pairing.urgent and newcomer in (pairing.bot_a_id, pairing.bot_b_id) for pairing in introduction
    )
    enqueued.clear()
    outcomes = runner.play_pairings(context, round_message)  # the next task taken: one of the round's
    assert {outcome.status for outcome in outcomes} == {runner.NOT_CLAIMED}
    with session(engine) as db:
        played = db.exec(select(Pairing).where(Pairing.status == "done")).all()
        assert played
        assert {pairing.id for pairing in played} <= set(booked)  # the newcomer's games
        assert all(db.get(Pairing, pairing_id).status == "queued" for pairing_id in round_message)
    assert (PLAY_PAIRINGS, round_message) in enqueued  # the round's pairings are sent again
    statuses = [runner.play_pairings(context, round_message)[0].status for _ in introduction]
    assert runner.RECORDED in statuses  # and played once the newcomer's are (a task of one each here)


def test_a_task_of_urgent_pairings_plays_its_own_and_a_spent_one_the_oldest_urgent_ones(
    context, ladder, enqueued, engine: Engine, onnx_bot
):
    ladders.schedule_ladder(context, ladder.id)
    first_messages = []  # each newcomer's first message, booked when it arrived
    for name in ("first", "second"):
        _network_bot(engine, context, ladder, onnx_bot(), name)
        enqueued.clear()
        ladders.schedule_ladder(context, ladder.id)
        first_messages.append(enqueued[0][1])
    first_message, second_message = first_messages
    outcomes = runner.play_pairings(context, second_message)  # urgent itself: plays its own, not older ones
    assert {outcome.status for outcome in outcomes} == {runner.RECORDED}
    outcomes = runner.play_pairings(context, second_message)  # spent (a duplicate): the oldest urgent ones
    assert {outcome.status for outcome in outcomes} == {runner.NOT_CLAIMED}
    with session(engine) as db:
        assert {db.get(Pairing, pairing_id).status for pairing_id in first_message} == {"done"}


def _network_bot(
    engine: Engine,
    context: WorkerContext,
    ladder: Ladder,
    model_bytes: bytes,
    name: str,
    player: str = "greedy",
) -> int:
    """A network bot (`player`: greedy by default) of `model_bytes` uploaded to the ladder now; its id."""
    with session(engine) as db:
        owner, _ = users.create_user(db, name=f"author-{name}")
        manifest = Manifest(game="bobail", game_version=1, name=name, player=player)
        model = context.blobs.put(model_bytes)
        bot = bot_store.create_network_bot(
            db, ladder_id=ladder.id, owner_id=owner.id, manifest=manifest, report={}, model_sha256=model
        )
        db.commit()
        return bot.id


def test_the_sweeper_resends_lost_pairings_refits_and_books_lost_rounds_itself(
    context, new_pairings, ladder, enqueued
):
    (played, lost) = new_pairings(2)
    runner.play_pairings(context, [played])  # its refit and scheduling messages get lost
    with session(context.engine) as db:
        db.exec(update(Pairing).where(col(Pairing.id) == lost).values(lease_expires_at=utc_now()))
        db.commit()
    enqueued.clear()
    swept = sweeper_module.sweep(context)
    assert swept == store.Sweep(requeued=[], failed=[], resent=[lost])
    assert enqueued == [(PLAY_PAIRINGS, [lost])]  # the ladder is not stalled: one pairing queued
    assert not ladders.refit(context, ladder.id)  # the sweep refitted it, not a message in the queue
    runner.play_pairings(context, [lost])
    enqueued.clear()
    sweeper_module.sweep(context)  # played, nothing in flight: a lost round, booked by the sweep
    assert [name for name, *_ in enqueued] == [PLAY_PAIRINGS] * len(enqueued)
    assert enqueued
    with session(context.engine) as db:
        assert db.exec(select(func.count()).select_from(Pairing).where(Pairing.status == "queued")).one() > 0


# ---- platform faults are never a bot's loss ---------------------------------------------------


@pytest.fixture
def network_bots(engine: Engine, ladder: Ladder, context: WorkerContext, onnx_bot) -> list[int]:
    """Six tiny network bots on the ladder (greedy and mcts in turn), each with its own model."""
    with session(engine) as db:
        owner, _ = users.create_user(db, name="author")
        ids = []
        for number in range(6):
            player = ("greedy", "mcts")[number % 2]
            manifest = Manifest(game="bobail", game_version=1, name=f"net-{number}", player=player)
            model = context.blobs.put(onnx_bot(seed=number))
            bot = bot_store.create_network_bot(
                db, ladder_id=ladder.id, owner_id=owner.id, manifest=manifest, report={}, model_sha256=model
            )
            ids.append(bot.id)
        db.commit()
    return ids


def test_the_pairings_of_one_bot_in_a_task_share_its_player_and_its_model_calls(
    context, engine, ladder, onnx_bot
):
    """Issue 24 item 5: a bot in several pairings of one task is one player object, so each round's
    positions of all its games go to its model in one call: the same rows as the pairings played
    task by task (the same games), in fewer calls."""
    network = _network_bot(engine, context, ladder, onnx_bot(seed=3), "net", player="mcts")
    with session(engine) as db:
        random = _house_bots(db, ladder.id)[0]
        pairs = [(network, random), (random, network)]
        together = store.create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=LEASE)
        alone = store.create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=LEASE)
        for pairing, twin in zip(together, alone, strict=True):
            twin.seed = pairing.seed
        db.commit()
        together_ids, alone_ids = [p.id for p in together], [p.id for p in alone]
    batches, _ = runner._prepare(context, together_ids)
    players = [player for setup in batches["bobail"].setups for player in setup.players]
    assert len({id(player) for player in players if player.name == "net"}) == 1
    calls: list[int] = []
    plain_get = context.models.get

    def counted_get(sha256: str):
        host = plain_get(sha256)
        return SimpleNamespace(run=lambda inputs: calls.append(len(inputs["board"])) or host.run(inputs))

    context.models.get = counted_get
    runner.play_pairings(context, together_ids)
    in_one_task = list(calls)
    calls.clear()
    for pairing_id in alone_ids:
        runner.play_pairings(context, [pairing_id])
    assert sum(in_one_task) == sum(calls)  # the same games: the same positions evaluated
    assert len(in_one_task) < len(calls)
    assert max(in_one_task) > max(calls)  # several games' positions in one call


def test_more_network_bots_than_the_model_cache_holds_play_without_a_forfeit(
    context, engine, ladder, network_bots
):
    context.models = model_cache.ModelCache(context.blobs, capacity=2)  # a batch of six models
    with session(engine) as db:
        pairings = store.create_pairings(
            db, ladder=ladder, pairs=list(itertools.pairwise(network_bots))[::2], redelivery_seconds=LEASE
        )
        db.commit()
        ids = [pairing.id for pairing in pairings]
    outcomes = runner.play_pairings(context, ids)
    assert [outcome.status for outcome in outcomes] == ["recorded"] * 3
    with session(engine) as db:
        games = db.exec(select(GameRecord)).all()
    assert len(games) == 6
    assert [(game.forfeit_seat, game.end_reason) for game in games if game.forfeit_seat is not None] == []
    assert len(context.models._hosts) == 2  # unpinned after the batch: back within capacity


def test_model_hosts_killed_from_outside_cost_no_game_and_change_no_result(
    context, engine, ladder, network_bots, monkeypatch
):
    """SIGKILLs of model hosts during real play (one while starting, one in a call, and one of a
    fresh host too, which gives the batch back) end with every game recorded, no forfeit, and the
    same replays as a clean play of the same pairings."""
    with session(engine) as db:
        pairs = list(itertools.pairwise(network_bots))[::2]
        ids = [p.id for p in store.create_pairings(db, ladder=ladder, pairs=pairs, redelivery_seconds=LEASE)]
        db.commit()
    batches, _ = runner._prepare(context, ids)
    clean = {
        hashlib.sha256(result.replay.to_json().encode()).hexdigest()
        for batch in batches.values()
        for result in play_many(batch.game, batch.setups)
    }
    context.models.close()
    context.models = model_cache.ModelCache(context.blobs)  # every host starts afresh
    spawns, calls = _kill_hosts(monkeypatch, at_spawns={2}, at_calls={10, 20, 21})
    rounds = [[o.status for o in runner.play_pairings(context, ids)] for _ in range(2)]
    assert rounds == [["given_back"] * 3, ["recorded"] * 3]
    assert (spawns[0], calls[0]) > (2, 21)  # every kill happened
    with session(engine) as db:
        games = db.exec(select(GameRecord)).all()
    assert [game.forfeit_seat for game in games] == [None] * 6
    assert {game.replay_sha256 for game in games} == clean


def _kill_hosts(monkeypatch, *, at_spawns: set[int], at_calls: set[int]) -> tuple[list[int], list[int]]:
    """SIGKILLs model hosts from outside: the `at_spawns`-th started (1 is the first) right after it
    spawns, and the host of each `at_calls`-th model call just before the call. Returns the counts
    of spawns and calls so far, each in a one-item list."""
    spawns, calls = [0], [0]
    spawn, run = host_module._ChildResources.spawn, host_module.ModelHost.run

    def spawn_then_kill(child):
        spawn(child)
        spawns[0] += 1
        if spawns[0] in at_spawns:
            os.kill(child.process.pid, signal.SIGKILL)

    def kill_then_run(host, inputs):
        calls[0] += 1
        if calls[0] in at_calls:
            os.kill(host.pid, signal.SIGKILL)
        return run(host, inputs)

    monkeypatch.setattr(host_module._ChildResources, "spawn", spawn_then_kill)
    monkeypatch.setattr(host_module.ModelHost, "run", kill_then_run)
    return spawns, calls


def test_a_platform_fault_gives_the_pairings_back_without_using_an_attempt(context, new_pairings, enqueued):
    ids = new_pairings(2)
    context.stopping.set()  # the worker shuts down: the batch stops before its first round
    outcomes = runner.play_pairings(context, ids)
    assert [outcome.status for outcome in outcomes] == ["given_back"] * 2
    for pairing_id in ids:
        pairing = _pairing(context.engine, pairing_id)
        assert (pairing.status, pairing.lease_owner, pairing.attempts) == ("queued", None, 0)
        assert "PlatformFault: the worker is shutting down" in pairing.error
        assert pairing.lease_expires_at is None  # no message out: the next sweep sends one
    with session(context.engine) as db:
        assert db.exec(select(func.count()).select_from(GameRecord)).one() == 0
    assert enqueued == []
    assert _sweep(context.engine, utc_now()).resent == sorted(ids)


def _aware(moment):
    """SQLite hands timestamps back without their zone (they are stored as UTC)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class _FakeHost:
    """Answers with `outputs`, or raises `fault` (a ModelFault or any exception)."""

    def __init__(self, fault: BaseException | None = None) -> None:
        self.fault = fault

    def run(self, inputs):
        if self.fault is not None:
            raise self.fault
        return {"policy": np.zeros((1, 3), np.float32)}


class _FakeModels:
    """A ModelCache stand-in handing out the given hosts in turn and recording the discarded ones."""

    def __init__(self, *hosts: _FakeHost) -> None:
        self.hosts = list(hosts)
        self.discarded: list[_FakeHost] = []

    def get(self, sha256):
        return self.hosts[0]

    def discard(self, sha256, host):
        self.discarded.append(self.hosts.pop(0))


def _served(*hosts: _FakeHost) -> tuple[model_cache.ServedModel, _FakeModels]:
    models = _FakeModels(*hosts)
    return model_cache.ServedModel(models, "f" * 64), models


KILLED = ModelFault("host_died", "the model host was killed by SIGKILL from outside", blame="platform")
CRASHED = ModelFault("host_died", "the model host was killed by SIGSEGV.")  # blame unknown


@pytest.mark.parametrize("death", [KILLED, CRASHED])
def test_a_dead_model_host_is_replaced_and_the_call_answered(death):
    served, models = _served(_FakeHost(death), _FakeHost())
    assert served.run({}).keys() == {"policy"}
    assert len(models.discarded) == 1


def test_a_model_that_crashes_a_fresh_host_too_is_at_fault():
    served, models = _served(_FakeHost(CRASHED), _FakeHost(CRASHED))
    with pytest.raises(ModelFault, match="crashed a fresh host too") as raised:
        served.run({})
    assert raised.value.blame == "model"
    assert len(models.discarded) == 2


@pytest.mark.parametrize("deaths", [(KILLED, KILLED), (KILLED, CRASHED), (CRASHED, KILLED)])
def test_a_kill_from_outside_in_either_try_is_never_the_models_fault(deaths):
    served, models = _served(*map(_FakeHost, deaths))
    with pytest.raises(PlatformFault, match="from outside"):
        served.run({})
    assert len(models.discarded) == 2


@pytest.mark.parametrize(
    "fault",
    [
        ModelFault("host_died", "the model host was closed", blame="platform"),
        ModelFault("timeout", "no answer, but the model got 0.0 s of CPU", blame="platform"),
        AttributeError("'NoneType' object has no attribute 'receive_outputs'"),
    ],
)
def test_a_fault_of_the_platform_or_of_our_code_becomes_a_platform_fault(fault):
    served, _ = _served(_FakeHost(fault), _FakeHost(fault))
    with pytest.raises(PlatformFault):
        served.run({})


def test_a_fault_of_the_model_is_raised_for_the_player_to_forfeit():
    served, models = _served(_FakeHost(ModelFault("non_finite", "output 'policy' contains NaN")), _FakeHost())
    with pytest.raises(ModelFault, match="NaN"):
        served.run({})
    assert len(models.discarded) == 1  # the next call starts a fresh host


# ---- leases and the sweeper ------------------------------------------------------------------


def test_a_paused_owner_cannot_renew_its_lapsed_lease(engine, new_pairings):
    (pairing_id,) = new_pairings(1)
    assert _claim(engine, pairing_id, "paused-worker", now=utc_now() - timedelta(seconds=2 * LEASE))
    with session(engine) as db:  # nobody took it over yet, but it lapsed: the sweeper may at any time
        assert not store.renew_lease(db, pairing_id=pairing_id, owner="paused-worker", lease_seconds=LEASE)


def test_the_sweep_takes_back_at_once_the_pairings_of_a_process_whose_heartbeat_stopped(
    context, new_pairings, enqueued
):
    silent, beating = new_pairings(2)
    with session(context.engine) as db:  # a process on another host, silent for three heartbeats
        training_store.beat_worker(db, name="elsewhere/7/0123456789ab", queues="")
        three_beats_ago = utc_now() - timedelta(seconds=3 * context.settings.heartbeat_seconds)
        db.exec(update(training_store.WorkerBeat).values(last_seen=three_beats_ago))
        db.commit()
    assert _claim(context.engine, silent, "elsewhere/7/0123456789ab/claim")  # live for a minute yet
    assert _claim(context.engine, beating, leases_module.new_owner(context))  # this process beats
    assert sweeper_module.sweep(context).requeued == []  # the sweeper has not watched the beats long enough
    assert sweeper_module.sweep(context, detect_deaths=True).requeued == [silent]
    assert (PLAY_PAIRINGS, [silent]) in enqueued
    assert _pairing(context.engine, beating).status == "running"


def test_the_sweeper_looks_for_dead_workers_only_after_reaching_the_database_for_two_beats(
    context, monkeypatch
):
    """After a database outage every worker is silent for a while, and none of them is dead."""
    clock, detected = [0.0], []

    def fake_sweep(_, *, resend_all_queued, detect_deaths):
        detected.append(detect_deaths)
        if clock[0] == 3:
            raise OperationalError("SELECT 1", {}, Exception("the database is away"))

    monkeypatch.setattr(sweeper_module, "sweep", fake_sweep)
    monkeypatch.setattr(sweeper_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    sweeper = Sweeper(context, interval_s=1)
    for tick in range(8):  # heartbeat_seconds is 1
        clock[0] = tick
        sweeper.sweep_once()
    assert detected == [False, False, True, True, False, False, True, True]


def test_a_failed_pairing_is_booked_again_until_its_pair_is_quarantined(engine, ladder):
    with session(engine) as db:
        random, uct = _house_bots(db, ladder.id)
        for number in range(QUARANTINE_FAILURES):
            assert ladder_state(db, ladder=ladder).played[str(random), str(uct)] == 0  # still owed
            db.add(Pairing(ladder_id=ladder.id, bot_a_id=random, bot_b_id=uct, seed=number, status="failed"))
            db.commit()
        assert ladder_state(db, ladder=ladder).played[str(random), str(uct)] == QUARANTINE_FAILURES


def test_the_sweeper_takes_back_a_lapsed_lease_on_its_own_clock(context, new_pairings, enqueued):
    (pairing_id,) = new_pairings(1)
    assert _claim(context.engine, pairing_id, "silent-worker", now=utc_now() - timedelta(seconds=2 * LEASE))
    sweeper = Sweeper(context, interval_s=0.1).start()  # no broker, no queue: straight to the database
    try:
        deadline = time.monotonic() + 10
        while (PLAY_PAIRINGS, [pairing_id]) not in enqueued:
            assert time.monotonic() < deadline, "the sweeper did not take the pairing back"
            time.sleep(0.05)
    finally:
        sweeper.stop()
    assert _pairing(context.engine, pairing_id).status == "queued"


def test_the_games_of_a_batch_are_written_as_they_go_and_go_with_their_recording(context, new_pairings):
    """The real path: a worker writes its games in progress before every round (live_seconds 0),
    a viewer sees them grow step by step, and the recording leaves none behind."""
    context.settings = dataclasses.replace(context.settings, live_seconds=0)
    (pairing_id,) = new_pairings(1)
    ladder_id = _pairing(context.engine, pairing_id).ladder_id
    seen: list[list[tuple[int, int, bool]]] = []  # per round: (index, ply, over) of the listed games
    steps_seen: list[dict] = []  # game 0's steps as a viewer last read them

    def peek() -> None:  # called before every round, before that round's write
        with session(context.engine) as db:
            seen.append([(g.index, g.ply, g.over) for g in live_store.ladder_games(db, ladder_id=ladder_id)])
            held = live_store.held_game(db, pairing_id=pairing_id, index=0)
            if held is not None:
                steps_seen[:] = held.steps

    context.check_running = peek
    assert [o.status for o in runner.play_pairings(context, [pairing_id])] == ["recorded"]
    assert seen[0] == []  # nothing before the first round
    opening = len(get_game("bobail").opening(_pairing(context.engine, pairing_id).seed, None))
    assert seen[1] == [(0, opening, False), (1, opening, False)]
    plies = [[ply for _, ply, _ in games] for games in seen[1:]]
    assert all(
        later >= earlier for a, b in itertools.pairwise(plies) for earlier, later in zip(a, b, strict=True)
    )
    assert plies[-1] > plies[0]
    with session(context.engine) as db:
        assert db.exec(select(func.count()).select_from(LiveGame)).one() == 0
        record = db.exec(
            select(GameRecord).where(GameRecord.pairing_id == pairing_id, GameRecord.index == 0)
        ).one()
    replay = Replay.from_json(context.blobs.get(record.replay_sha256).decode())
    assert len(steps_seen) > opening
    assert steps_seen == [step_to_dict(step) for step in replay.steps[: len(steps_seen)]]


def test_the_sweeper_deletes_the_games_in_progress_of_a_claim_given_back(context, new_pairings):
    (pairing_id,) = new_pairings(1)
    assert _claim(context.engine, pairing_id, "gone/1")
    pairing = _pairing(context.engine, pairing_id)
    new = live_store.NewLiveGame(pairing_id, 0, pairing.ladder_id, pairing.bot_a_id, pairing.bot_b_id, {})
    with session(context.engine) as db:
        live_store.open_games(db, owner="gone/1", games=[new])
        store.release_pairing(
            db, pairing_id=pairing_id, owner="gone/1", error="shutdown", max_attempts=2, charge=False
        )
    sweeper_module.sweep(context)
    with session(context.engine) as db:
        assert db.exec(select(func.count()).select_from(LiveGame)).one() == 0
