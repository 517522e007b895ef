"""Games in progress (issue 25.4), on SQLite and PostgreSQL: the rows a worker writes while it plays
(store.live), shown only while its claim holds the pairing, gone with the recording or the sweeper;
the API that lists a ladder's games in progress and answers a game's frames `since` a ply."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, func
from sqlmodel import select

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_games.replay import Replay, step_to_dict
from arena_platform.db import session
from arena_platform.models import Bot, LiveGame, LiveStep, Pairing, utc_now
from arena_platform.store import live
from arena_platform.store import pairings as store
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.results import PlayedGame, record_pairing

OWNER = "worker-1/abc"
LEASE = 60


@pytest.fixture
def played() -> Replay:
    """A whole bobail game between two random players: the steps a worker would write."""
    game = get_game("bobail")
    return play(
        game, [RandomPlayer("one"), RandomPlayer("two")], seed=5, opening=game.opening(5, None)
    ).replay


@pytest.fixture
def pairing(engine: Engine) -> Pairing:
    """A pairing of the bobail ladder's random and uct house bots, claimed by OWNER."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        (created,) = store.create_pairings(
            db, ladder=ladder, pairs=[(house["random"], house["uct"])], redelivery_seconds=LEASE
        )
        db.commit()
        assert store.claim_pairing(
            db, pairing_id=created.id, owner=OWNER, lease_seconds=LEASE, max_attempts=2
        )
        db.refresh(created)
        return created


def _open(engine: Engine, pairing: Pairing, replay: Replay, owner: str = OWNER) -> int:
    """Opens game 0 of the pairing for `owner`, with `replay`'s header; its live game id."""
    header = replay.to_dict()
    del header["steps"], header["result"]
    new = live.NewLiveGame(
        pairing_id=pairing.id,
        index=0,
        ladder_id=pairing.ladder_id,
        first_bot_id=pairing.bot_a_id,
        second_bot_id=pairing.bot_b_id,
        header=header,
    )
    with session(engine) as db:
        (live_game_id,) = live.open_games(db, owner=owner, games=[new])
    return live_game_id


def _write(
    engine: Engine, live_game_id: int, replay: Replay, start: int, stop: int, *, over: bool = False
) -> None:
    """Writes `replay`'s steps start..stop-1 (and its result when `over`), as a worker would."""
    steps = [step_to_dict(step) for step in replay.steps[start:stop]]
    result = replay.to_dict()["result"] if over else None
    with session(engine) as db:
        live.add_progress(db, progress=[live.LiveProgress(live_game_id, start, steps, result)])


def _listed(client, pairing: Pairing) -> list[tuple[int, int, int, bool]]:
    response = client.get(f"/api/v1/ladders/{pairing.ladder_id}/live")
    assert response.status_code == 200, response.text
    return [(game["pairing_id"], game["index"], game["ply"], game["over"]) for game in response.json()]


def _live(client, pairing: Pairing, since: int = 0) -> dict:
    response = client.get(f"/api/v1/live/{pairing.id}/0", params={"since": since})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_game_in_progress_is_listed_and_followed_frame_by_frame_until_it_is_recorded(
    client, engine, pairing, played
):
    live_game_id = _open(engine, pairing, played)
    assert _listed(client, pairing) == [(pairing.id, 0, 0, False)]
    _write(engine, live_game_id, played, 0, 10)
    assert _listed(client, pairing) == [(pairing.id, 0, 10, False)]

    first = _live(client, pairing)
    assert (first["status"], first["ply"], first["run"], first["game_id"]) == (
        "playing",
        10,
        live_game_id,
        None,
    )
    assert [seat["name"] for seat in first["seats"]] == ["random", "uct"]
    assert [frame["ply"] for frame in first["frames"]] == list(range(11))
    assert first["frames"][9]["actions"] == [list(a) for a in played.steps[9].actions]
    assert first["frames"][10]["actions"] is None  # the position to play now
    assert first["opening_length"] == played.opening_length

    _write(engine, live_game_id, played, 10, 14)
    news = _live(client, pairing, since=10)  # the client's last frame had no action yet
    assert [frame["ply"] for frame in news["frames"]] == list(range(10, 15))
    assert news["frames"][0]["actions"] == [list(a) for a in played.steps[10].actions]
    assert _live(client, pairing, since=40)["frames"] == []

    _write(engine, live_game_id, played, 14, len(played.steps), over=True)
    over = _live(client, pairing, since=14)
    assert (over["status"], over["ply"], over["end_reason"]) == ("over", len(played.steps), played.end_reason)
    assert over["returns"] == list(played.returns)
    assert over["frames"][-1]["actions"] is None  # the final position
    assert _listed(client, pairing) == [(pairing.id, 0, len(played.steps), True)]

    with session(engine) as db:
        game = PlayedGame(0, pairing.bot_a_id, pairing.bot_b_id, 0.5, played.end_reason, None, 0, "0" * 64)
        assert record_pairing(db, pairing=db.get(Pairing, pairing.id), games=[game])
        assert db.exec(select(func.count()).select_from(LiveGame)).one() == 0
        assert db.exec(select(func.count()).select_from(LiveStep)).one() == 0
        game_id = live.recorded_game_id(db, pairing_id=pairing.id, index=0)
    recorded = _live(client, pairing)
    assert (recorded["status"], recorded["game_id"], recorded["frames"]) == ("recorded", game_id, [])
    assert game_id is not None
    assert _listed(client, pairing) == []


def test_a_given_back_or_lapsed_claim_shows_nothing_and_the_sweeper_deletes_its_rows(engine, pairing, played):
    live_game_id = _open(engine, pairing, played)
    _write(engine, live_game_id, played, 0, 5)
    with session(engine) as db:
        assert [g.ply for g in live.ladder_games(db, ladder_id=pairing.ladder_id)] == [5]
        lapsed = utc_now() + timedelta(seconds=LEASE + 1)
        assert live.ladder_games(db, ladder_id=pairing.ladder_id, now=lapsed) == []
        assert live.held_game(db, pairing_id=pairing.id, index=0, now=lapsed) is None
        live.drop_stale(db)  # still held now: kept
        assert db.exec(select(func.count()).select_from(LiveStep)).one() == 5

        store.release_pairing(
            db, pairing_id=pairing.id, owner=OWNER, error="shutdown", max_attempts=2, charge=False
        )
        assert live.ladder_games(db, ladder_id=pairing.ladder_id) == []
        assert store.claim_pairing(
            db, pairing_id=pairing.id, owner="worker-2/def", lease_seconds=LEASE, max_attempts=2
        )
    second = _open(engine, pairing, played, owner="worker-2/def")  # played again from the start
    with session(engine) as db:
        (shown,) = live.ladder_games(db, ladder_id=pairing.ladder_id)
        assert shown.ply == 0
        assert live.held_game(db, pairing_id=pairing.id, index=0).row.id == second
        live.drop_stale(db)
        assert db.exec(select(LiveGame.id)).all() == [second]
        assert db.exec(select(func.count()).select_from(LiveStep)).one() == 0


def test_refusals_of_the_live_api(client, engine, pairing):
    missing = client.get(f"/api/v1/live/{pairing.id}/0")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_in_progress")
    assert client.get("/api/v1/live/0/0").status_code == 422
    assert client.get(f"/api/v1/live/{pairing.id}/-1").status_code == 422
    assert client.get(f"/api/v1/live/{pairing.id}/0", params={"since": -1}).status_code == 422
    unknown = client.get("/api/v1/ladders/999999/live")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")
    for page in (f"/live/{pairing.id}/0", "/live/x/0", f"/live/{pairing.id}/-1"):  # the live page: 404 page
        response = client.get(page)
        assert (response.status_code, response.headers["content-type"][:9]) == (404, "text/html"), page
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {"/api/v1/ladders/{ladder_id}/live", "/api/v1/live/{pairing_id}/{index}"} <= set(paths)
