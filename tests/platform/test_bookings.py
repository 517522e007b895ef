"""Where a bot stands in its ladder's queue (GET /bots/{id}'s `queue`), the ladder's measured pace
(the leaderboard's `pace`), and GET /me/bots: the caller's bots with their state (issue 25)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_platform.db import session
from arena_platform.human_play import new_game
from arena_platform.models import Bot, Ladder, Pairing, utc_now
from arena_platform.store import bots, human_games, training


@pytest.fixture
def paced(engine: Engine, seeded):
    """The seeded ladder an hour old, with 3 pairings finished 2 minutes ago and one 30 minutes ago
    (outside the pace's window), and two queued beta-random pairings booked after alpha's."""
    now = utc_now()
    with session(engine) as db:
        ladder = db.get(Ladder, seeded.ladder_id)
        ladder.created_at = now - timedelta(hours=1)
        db.add(ladder)
        for minutes in (2, 2, 2, 30):
            db.add(
                Pairing(
                    ladder_id=seeded.ladder_id,
                    bot_a_id=seeded.beta,
                    bot_b_id=seeded.uct,
                    seed=0,
                    status="done",
                    finished_at=now - timedelta(minutes=minutes),
                )
            )
        for _ in range(2):
            db.add(Pairing(ladder_id=seeded.ladder_id, bot_a_id=seeded.random, bot_b_id=seeded.beta, seed=0))
        db.commit()
    return seeded


def test_the_leaderboard_gives_the_ladders_pace_over_the_last_ten_minutes(client, paced):
    board = client.get(f"/api/v1/ladders/{paced.ladder_id}/leaderboard").json()
    assert board["pace"] == {"finished": 3, "minutes": 10.0, "per_minute": 0.3}


def test_a_bot_says_what_is_booked_for_it_and_when_it_plays(client, paced):
    alpha = client.get(f"/api/v1/bots/{paced.alpha}").json()["queue"]
    assert (alpha["running"], alpha["queued"], alpha["ahead"]) == (1, 2, 0)  # its queued ones came first
    assert [(booked["status"], booked["opponent"]["name"]) for booked in alpha["booked"]] == [
        ("running", "uct"), ("queued", "uct"), ("queued", "uct"),
    ]  # fmt: skip
    assert alpha["starts_in_minutes"] == 0
    beta = client.get(f"/api/v1/bots/{paced.beta}").json()["queue"]
    assert (beta["running"], beta["queued"], beta["ahead"]) == (0, 2, 2)  # alpha's two go first
    assert [booked["opponent"]["name"] for booked in beta["booked"]] == ["random", "random"]
    assert beta["starts_in_minutes"] == pytest.approx(2 / 0.3)
    assert beta["pace"] == {"finished": 3, "minutes": 10.0, "per_minute": 0.3}
    house = client.get(f"/api/v1/bots/{paced.random}").json()["queue"]
    assert (house["queued"], house["ahead"]) == (2, 2)


def test_a_bot_with_nothing_booked_or_a_ladder_without_pace_has_no_estimate(client, seeded):
    alpha = client.get(f"/api/v1/bots/{seeded.alpha}").json()["queue"]
    assert alpha["pace"] == {"finished": 0, "minutes": 1.0, "per_minute": 0.0}  # a new ladder: a minute
    assert (alpha["ahead"], alpha["starts_in_minutes"]) == (0, None)
    beta = client.get(f"/api/v1/bots/{seeded.beta}").json()["queue"]
    assert beta == {**beta, "running": 0, "queued": 0, "booked": [], "ahead": None, "starts_in_minutes": None}


def test_my_bots_needs_a_token(client):
    response = client.get("/api/v1/me/bots")
    assert (response.status_code, response.json()["code"]) == (401, "unauthorized")
    bad = client.get("/api/v1/me/bots", headers={"Authorization": "Bearer arena_nope"})
    assert (bad.status_code, bad.json()["code"]) == (401, "bad_token")


def test_my_bots_lists_the_callers_bots_versions_sprts_training_and_games_against_people(
    client, engine: Engine, seeded
):
    with session(engine) as db:
        alpha = db.get(Bot, seeded.alpha)
        manifest = Manifest(game="bobail", game_version=1, name="alpha", player="mcts")
        second = bots.create_network_bot(
            db,
            ladder_id=seeded.ladder_id,
            owner_id=alpha.owner_id,
            manifest=manifest,
            report={},
            model_sha256="b" * 64,
        )
        training.create_session(
            db, owner_id=alpha.owner_id, game="bobail", kit="dqn", bot_name="learner", settings={}
        )
        db.commit()
        second_id = second.id
        names = ["a person", "alpha"]  # the person moves first: the bot is not asked
        replay = new_game(get_game("bobail"), seed=1, human_seat=0, names=names, bot_move=pytest.fail)
        human_games.record_new_game(
            db,
            bot_id=seeded.alpha,
            ladder_id=seeded.ladder_id,
            human_seat=0,
            simulations=16,
            key="k",
            replay=replay,
        )
    answer = client.get("/api/v1/me/bots", headers={"Authorization": f"Bearer {seeded.alice_token}"})
    assert answer.status_code == 200, answer.text
    mine = answer.json()
    assert mine["user"] == "alice"
    [bot] = mine["bots"]  # bob's beta is not hers
    assert (bot["name"], bot["ladder_id"], bot["game"]) == ("alpha", seeded.ladder_id, "bobail")
    newest, first = bot["versions"]
    assert (newest["id"], newest["version"], newest["status"], newest["rating"]) == (
        second_id,
        2,
        "active",
        None,
    )
    assert (newest["sprt"]["status"], newest["sprt"]["old_bot"]["id"]) == ("running", seeded.alpha)
    assert (first["version"], first["rating"]["rating"], first["sprt"]) == (1, 150.0, None)
    assert (first["running"], first["queued"]) == (1, 2)
    assert [(run["bot_name"], run["kit"], run["status"]) for run in mine["training_sessions"]] == [
        ("learner", "dqn", "queued")
    ]
    [played] = mine["human_games"]
    assert (played["bot"]["id"], played["status"], played["human_seat"]) == (seeded.alpha, "playing", 0)


def test_urgent_pairings_are_ahead_of_the_round_in_the_queue(client, engine: Engine, paced):
    """A newcomer's urgent pairings (store.pairings.most_urgent) go before the round's queued ones."""
    with session(engine) as db:
        urgent = Pairing(
            ladder_id=paced.ladder_id, bot_a_id=paced.random, bot_b_id=paced.uct, seed=0, urgent=True
        )
        db.add(urgent)
        db.commit()
    house = client.get(f"/api/v1/bots/{paced.uct}").json()["queue"]
    assert (house["queued"], house["ahead"]) == (3, 0)  # alpha's two were booked before, not urgent
    assert [(booked["status"], booked["opponent"]["name"]) for booked in house["booked"]] == [
        ("running", "alpha"), ("queued", "random"), ("queued", "alpha"), ("queued", "alpha"),
    ]  # fmt: skip
    alpha = client.get(f"/api/v1/bots/{paced.alpha}").json()["queue"]
    assert alpha["ahead"] == 1
