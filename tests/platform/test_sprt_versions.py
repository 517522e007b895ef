"""Versions judged by SPRT: a re-upload starts a test against the previous version, recording a
pairing between the two adds its pairs to the test exactly once, and a verdict is frozen and retires
the old version. On SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient
from played import placeholder_game
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing, SprtTest
from arena_platform.scheduling import DEFAULT_POLICY, LadderBot, LadderState, SchedulePolicy, next_pairings
from arena_platform.scheduling import Pairing as SchedulingPairing
from arena_platform.settings import Settings
from arena_platform.sprt import pentanomial_from_points, sprt, wald_bounds
from arena_platform.store import bots, sprt_tests, users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import create_pairings
from arena_platform.store.results import record_pairing
from arena_platform.store.scheduling import schedule_round

QUICK = sprt_tests.SprtParameters(elo0=0.0, elo1=400.0, alpha=0.2, beta=0.2)  # a verdict in a few pairs


def _upload(db: Session, ladder: Ladder, owner_id: int, name: str, parameters=QUICK) -> Bot:
    manifest = Manifest(game="bobail", game_version=1, name=name, player="greedy")
    return bots.create_network_bot(
        db,
        ladder_id=ladder.id,
        owner_id=owner_id,
        manifest=manifest,
        report={},
        model_sha256="a" * 64,
        sprt=parameters,
    )


def _versions(engine: Engine, parameters: sprt_tests.SprtParameters) -> tuple[Ladder, int, int]:
    """A ladder with alpha v1 and alpha v2 (under test against v1): (ladder, v1 id, v2 id)."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=3)
        alice, _ = users.create_user(db, name="alice")
        first = _upload(db, ladder, alice.id, "alpha", parameters)
        second = _upload(db, ladder, alice.id, "alpha", parameters)
        db.commit()
        return ladder, first.id, second.id


@pytest.fixture
def versions(engine: Engine) -> tuple[Ladder, int, int]:
    """Two versions under the default test (no verdict within a few pairs)."""
    return _versions(engine, sprt_tests.DEFAULT_PARAMETERS)


@pytest.fixture
def quick_versions(engine: Engine) -> tuple[Ladder, int, int]:
    """Two versions under a test that reaches its verdict within a few pairs."""
    return _versions(engine, QUICK)


def _record(engine: Engine, ladder: Ladder, a: int, b: int, a_points: list[float]) -> int:
    """Books and records one pairing a-b whose games give `a` these points in turn (a first in even
    games); returns the pairing's id."""
    with session(engine) as db:
        (pairing,) = create_pairings(db, ladder=ladder, pairs=[(a, b)], redelivery_seconds=60)
        db.commit()
        games = [
            placeholder_game(k, a, b, points) if k % 2 == 0 else placeholder_game(k, b, a, 1.0 - points)
            for k, points in enumerate(a_points)
        ]
        assert record_pairing(db, pairing=pairing, games=games)
        return pairing.id


def _test(engine: Engine, new_bot_id: int) -> SprtTest:
    with session(engine) as db:
        return sprt_tests.find_test(db, new_bot_id=new_bot_id)


def _status(engine: Engine, bot_id: int) -> str:
    with session(engine) as db:
        return db.get(Bot, bot_id).status


def test_a_new_version_starts_a_test_against_the_previous_one_which_keeps_playing(engine, versions):
    _, first, second = versions
    test = _test(engine, second)
    assert (test.old_bot_id, test.status, test.finished_at) == (first, "running", None)
    assert sprt_tests.counts(test) == (0, 0, 0, 0, 0)
    assert (test.elo0, test.elo1, test.alpha, test.beta, test.model) == (0.0, 25.0, 0.05, 0.05, "normalized")
    assert (test.lower, test.upper) == pytest.approx(wald_bounds(0.05, 0.05))
    assert (_status(engine, first), _status(engine, second)) == ("active", "active")
    assert _test(engine, first) is None  # the first version has nothing to be tested against


def test_the_settings_give_a_test_its_parameters(engine):
    settings = Settings(sprt_elo0=1.0, sprt_elo1=9.0, sprt_alpha=0.1, sprt_beta=0.05)
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=3)
        alice, _ = users.create_user(db, name="alice")
        _upload(db, ladder, alice.id, "alpha")
        parameters = sprt_tests.SprtParameters.from_settings(settings)
        second = _upload(db, ladder, alice.id, "alpha", parameters)
        db.commit()
        test = sprt_tests.find_test(db, new_bot_id=second.id)
        assert (test.elo0, test.elo1, test.alpha, test.beta) == (1.0, 9.0, 0.1, 0.05)


def test_a_third_version_retires_the_first_and_stops_its_test(engine, versions):
    ladder, first, second = versions
    with session(engine) as db:
        third = _upload(db, ladder, db.get(Bot, first).owner_id, "alpha")
        db.commit()
        third_id = third.id
    assert [_status(engine, bot) for bot in (first, second, third_id)] == ["retired", "active", "active"]
    stopped = _test(engine, second)
    assert stopped.status == "stopped"
    assert stopped.finished_at is not None
    assert (_test(engine, third_id).old_bot_id, _test(engine, third_id).status) == (second, "running")


def test_a_new_version_is_tested_against_the_newest_active_one(engine, versions):
    ladder, first, second = versions
    with session(engine) as db:
        owner = db.get(Bot, first).owner_id
        bots.retire_bot(db, bot=db.get(Bot, second), user_id=owner)  # its owner keeps v1 playing
        third = _upload(db, ladder, owner, "alpha")
        db.commit()
        assert third.version == 3
        assert sprt_tests.find_test(db, new_bot_id=third.id).old_bot_id == first
        bots.retire_bot(db, bot=db.get(Bot, first), user_id=owner)
        bots.retire_bot(db, bot=third, user_id=owner)
        fourth = _upload(db, ladder, owner, "alpha")  # no active version: nothing to test against
        db.commit()
        assert (fourth.version, sprt_tests.find_test(db, new_bot_id=fourth.id)) == (4, None)


def test_each_seat_swapped_pair_adds_the_new_versions_points(engine, versions):
    ladder, first, second = versions
    _record(engine, ladder, second, first, [1.0, 0.5])  # new first: pair of 1.5
    _record(engine, ladder, first, second, [1.0, 1.0])  # old first, wins both: the new scores 0
    _record(engine, ladder, first, second, [0.5, 1.0])  # a draw and an old win: the new scores 0.5
    test = _test(engine, second)
    assert sprt_tests.counts(test) == (1, 1, 0, 1, 0)
    assert test.llr == pytest.approx(sprt_tests.result(test).llr)
    assert test.status == "running"


def test_pairings_of_other_bots_count_nothing(engine, versions):
    ladder, first, second = versions
    with session(engine) as db:
        house = db.exec(select(Bot.id).where(Bot.ladder_id == ladder.id, Bot.name == "random")).one()
    _record(engine, ladder, second, house, [1.0, 1.0])
    _record(engine, ladder, first, house, [0.0, 0.0])
    assert sprt_tests.counts(_test(engine, second)) == (0, 0, 0, 0, 0)


def test_a_re_recorded_pairing_counts_nothing_twice(engine, versions):
    ladder, first, second = versions
    pairing_id = _record(engine, ladder, second, first, [1.0, 0.5])
    with session(engine) as db:
        pairing = db.get(Pairing, pairing_id)
        games = [placeholder_game(0, second, first, 1.0), placeholder_game(1, first, second, 0.5)]
        assert not record_pairing(db, pairing=pairing, games=games)  # marked done already
        db.exec(update(Pairing).where(col(Pairing.id) == pairing_id).values(status="running"))
        db.commit()
        assert not record_pairing(db, pairing=pairing, games=games)  # the unique game guard
    assert sprt_tests.counts(_test(engine, second)) == (0, 0, 0, 1, 0)


@pytest.mark.parametrize(("new_points", "verdict"), [(1.0, "H1"), (0.0, "H0")])
def test_a_verdict_is_frozen_and_retires_the_old_version(engine, quick_versions, new_points, verdict):
    ladder, first, second = quick_versions

    def record() -> int:
        return _record(engine, ladder, second, first, [new_points] * 2)

    for _ in range(50):
        record()
        if _test(engine, second).status != "running":
            break
    test = _test(engine, second)
    assert test.status == verdict
    assert test.finished_at is not None
    assert test.llr >= test.upper if verdict == "H1" else test.llr <= test.lower
    assert (_status(engine, first), _status(engine, second)) == ("retired", "active")
    frozen = sprt_tests.counts(test)
    record()  # a pairing the old version still had in flight: recorded, not counted
    assert sprt_tests.counts(_test(engine, second)) == frozen
    assert _test(engine, second).status == verdict


def test_concurrent_recordings_of_one_test_add_up(engine, versions):
    ladder, first, second = versions
    with session(engine) as db:
        pairings = create_pairings(db, ladder=ladder, pairs=[(second, first)] * 12, redelivery_seconds=60)
        db.commit()
        ids = [pairing.id for pairing in pairings]
    start = threading.Barrier(2)

    def recorder(pairing_ids: list[int]) -> None:
        for pairing_id in pairing_ids:
            start.wait()
            with session(engine) as db:
                pairing = db.get(Pairing, pairing_id)
                points = (pairing_id % 3) / 2  # the new version's points in each game
                games = [
                    placeholder_game(0, second, first, points),
                    placeholder_game(1, first, second, 1.0 - points),
                ]
                assert record_pairing(db, pairing=pairing, games=games)

    threads = [threading.Thread(target=recorder, args=(ids[half::2],)) for half in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = pentanomial_from_points([2 * (pairing_id % 3) / 2 for pairing_id in ids])
    assert sprt_tests.counts(_test(engine, second)) == expected


# ---- scheduling: a new version's first games are its test ---------------------------------------


def test_priority_pairs_are_booked_first_up_to_the_in_flight_cap():
    bots = (LadderBot("random", is_house=True), LadderBot("old", created=1), LadderBot("new", created=2))
    state = LadderState(bots, played={}, in_flight={("old", "new"): 3}, ratings={})
    policy = SchedulePolicy(max_in_flight=8)
    rng = np.random.default_rng(0)
    pairings = next_pairings(state, 10, rng, policy, priority=[("new", "old"), ("new", "gone")])
    assert [(p.first, p.second, p.reason) for p in pairings[:5]] == [("new", "old", "priority")] * 5
    assert all(p.reason != "priority" for p in pairings[5:])
    assert all("new" not in (p.first, p.second) for p in pairings[5:])  # at its cap
    assert (
        next_pairings(state, 3, rng, policy, priority=[("new", "old")])
        == [SchedulingPairing("new", "old", "priority")] * 3
    )


def test_a_round_books_the_running_test_first_and_then_the_ladder(engine, versions):
    ladder, first, second = versions
    with session(engine) as db:
        booked = schedule_round(db, ladder_id=ladder.id, count=12, redelivery_seconds=60)
        pairs = [(pairing.bot_a_id, pairing.bot_b_id) for pairing in booked]
    cap = DEFAULT_POLICY.max_in_flight
    assert pairs[:cap] == [(second, first)] * cap
    assert all(second not in pair and first not in pair for pair in pairs[cap:])  # both at the cap
    with session(engine) as db:  # a test that ended is no priority
        db.exec(update(SprtTest).values(status="H0"))
        db.exec(update(Pairing).values(status="done"))
        db.commit()
        booked = schedule_round(db, ladder_id=ladder.id, count=4, redelivery_seconds=60)
        pairs = [{pairing.bot_a_id, pairing.bot_b_id} for pairing in booked]
    assert len(pairs) == 4
    assert all(pair & {first, second} and not pair >= {first, second} for pair in pairs)  # introductions


# ---- the API ------------------------------------------------------------------------------------


def test_an_uploaded_version_s_test_is_served_with_the_settings_parameters(
    make_app, new_user, onnx_bot, engine
):
    token = {"Authorization": f"Bearer {new_user('alice')}"}
    app = make_app(sprt_elo0=0.0, sprt_elo1=400.0, sprt_alpha=0.2, sprt_beta=0.2)
    with TestClient(app) as client:

        def upload(seed: int) -> dict:
            files = {"model": ("bot.onnx", onnx_bot(seed=seed))}
            form = {"game": "bobail", "name": "alpha", "player": "greedy"}
            response = client.post("/api/v1/bots", files=files, data=form, headers=token)
            assert response.status_code == 201, response.text
            return response.json()

        first, second = upload(0), upload(1)
        assert client.get(f"/api/v1/bots/{first['id']}").json()["status"] == "active"
        served = client.get(f"/api/v1/bots/{second['id']}/sprt")
        assert served.status_code == 200, served.text
        test = served.json()
        assert test["new_bot"] == {"id": second["id"], "name": "alpha", "version": 2}
        assert test["old_bot"] == {"id": first["id"], "name": "alpha", "version": 1}
        assert (test["status"], test["verdict"], test["pairs"], test["pentanomial"]) == (
            "running", "continue", 0, [0, 0, 0, 0, 0]
        )  # fmt: skip
        assert (test["elo0"], test["elo1"], test["alpha"], test["beta"]) == (0.0, 400.0, 0.2, 0.2)
        assert (test["lower_bound"], test["upper_bound"]) == pytest.approx(wald_bounds(0.2, 0.2))
        assert (test["elo"], test["elo_low"], test["elo_high"], test["finished_at"]) == (
            None,
            None,
            None,
            None,
        )

        ladder = Ladder(id=second["ladder_id"], seed=0)
        _record(engine, ladder, second["id"], first["id"], [1.0, 0.5])
        test = client.get(f"/api/v1/bots/{second['id']}/sprt").json()
        assert (test["pentanomial"], test["pairs"]) == ([0, 0, 0, 1, 0], 1)
        assert test["elo_low"] < test["elo"] < test["elo_high"]
        assert test["llr"] == pytest.approx(sprt(
            (0, 0, 0, 1, 0), elo0=0.0, elo1=400.0, alpha=0.2, beta=0.2
        ).llr)  # fmt: skip

        detail = client.get(f"/api/v1/bots/{second['id']}").json()
        assert detail["sprt"] == test  # the bot's detail carries its test
        assert client.get(f"/api/v1/bots/{first['id']}").json()["sprt"] is None
        none = client.get(f"/api/v1/bots/{first['id']}/sprt")
        assert (none.status_code, none.json()["code"]) == (404, "no_sprt")
        unknown = client.get("/api/v1/bots/999999/sprt")
        assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("retired", ["old", "new"])
def test_retiring_either_version_stops_the_test_and_leaves_the_other_playing(engine, versions, retired):
    _, first, second = versions
    gone, other = (first, second) if retired == "old" else (second, first)
    with session(engine) as db:
        bot = db.get(Bot, gone)
        bots.retire_bot(db, bot=bot, user_id=bot.owner_id)
        db.commit()
    test = _test(engine, second)
    assert test.status == "stopped"
    assert test.finished_at is not None
    assert (_status(engine, gone), _status(engine, other)) == ("retired", "active")


def test_a_recording_waits_for_an_open_recording_of_the_same_test(engine, versions):
    """The test row is locked while a recording adds to it: a second recording reads the counts
    after the first commits, so no pair is lost. (On SQLite the pairing's done mark, written
    first, already serializes recordings.)"""
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite runs one writer at a time")
    ladder, first, second = versions
    with session(engine) as db:
        (pairing,) = create_pairings(db, ladder=ladder, pairs=[(second, first)], redelivery_seconds=60)
        db.commit()
        other_id = pairing.id
    wins = [
        placeholder_game(0, second, first, 1.0),
        placeholder_game(1, first, second, 0.0),
    ]  # a pair of 2 for the new
    with session(engine) as held:
        assert sprt_tests.add_pairing(held, bot_a_id=second, bot_b_id=first, games=wins) is not None
        held.flush()  # the first recording holds the test row, not yet committed

        def record_other() -> None:
            with session(engine) as db:
                assert record_pairing(db, pairing=db.get(Pairing, other_id), games=wins)

        other = threading.Thread(target=record_other)
        other.start()
        other.join(timeout=0.5)  # it waits for the row (or, had it read already, it would lose a pair)
        held.commit()
        other.join()
    assert sprt_tests.counts(_test(engine, second)) == (0, 0, 0, 0, 2)
