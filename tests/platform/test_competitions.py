"""Competitions through the API, on SQLite and PostgreSQL, with an injected clock (no worker: the
enqueue is recorded): the organiser role, creation and every refused term, the competition's own
ladder beside the open one, entries by upload and by copy, the opening, the deadline decided by
each entry's start (two uploads racing it), the per-user limits, and the CLI."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from competitions_setup import Clock
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_platform import cli
from arena_platform.api import create_app
from arena_platform.api.routes import bots as bot_routes
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, Entry, Ladder, Rating
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.settings import Settings
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder, find_ladder, house_bots
from arena_platform.store.reads import as_utc

OPENS = datetime(2027, 1, 1, 12, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=7)


@dataclass(frozen=True)
class Arena:
    client: TestClient
    clock: Clock
    organiser: dict[str, str]  # an Authorization header
    alice: dict[str, str]
    bob: dict[str, str]


@pytest.fixture
def arena(
    settings: Settings, engine: Engine, blobs: BlobStore, enqueued: list[tuple[str, tuple]]
) -> Iterator[Arena]:
    clock = Clock(OPENS - timedelta(days=1))
    headers = {}
    with session(engine) as db:
        for name in ("olga", "alice", "bob"):
            _, token = users.create_user(db, name=name, organiser=name == "olga")
            headers[name] = {"Authorization": f"Bearer {token}"}
        db.commit()
    app = create_app(
        settings,
        engine=engine,
        blobs=blobs,
        enqueue=lambda name, *args: enqueued.append((name, args)),
        clock=clock,
    )
    with TestClient(app) as client:
        yield Arena(client, clock, headers["olga"], headers["alice"], headers["bob"])


TERMS = {
    "game": "bobail",
    "title": "Bobail winter cup",
    "description": "A week of bobail.",
    "opens_at": OPENS.isoformat(),
    "deadline": DEADLINE.isoformat(),
    "max_active_bots": 2,
    "uploads_per_day": 3,
    "simulations": 8,
    "final": {"pairs": 4},
}


def _create(arena: Arena, **changes: object) -> dict:
    response = arena.client.post("/api/v1/competitions", json=TERMS | changes, headers=arena.organiser)
    assert response.status_code == 201, response.text
    return response.json()


def _upload(arena: Arena, competition_id: int, model: bytes, user: dict[str, str], **form: str):
    return arena.client.post(
        f"/api/v1/competitions/{competition_id}/entries",
        files={"model": ("bot.onnx", model)},
        data={"name": "tiny", "player": "greedy"} | form,
        headers=user,
    )


def _refusal(response) -> tuple[int, str]:
    return response.status_code, response.json()["code"]


def test_an_organiser_creates_a_competition_on_a_ladder_of_its_own(arena: Arena, engine: Engine):
    with session(engine) as db:
        open_ladder = ensure_ladder(db, game="bobail", simulations=8)  # the same game, version and budget
        db.commit()
    refused = arena.client.post("/api/v1/competitions", json=TERMS, headers=arena.alice)
    assert _refusal(refused) == (403, "not_organiser")

    made = _create(arena)
    assert (made["title"], made["organiser"], made["game"], made["game_version"], made["simulations"]) == (
        "Bobail winter cup",
        "olga",
        "bobail",
        1,
        8,
    )
    assert (made["phase"], made["entrants"], made["final"]) == (
        "upcoming",
        0,
        {"pairs": 4, "seconds": None, "stop": None, "confidence": None},
    )
    assert made["ladder_id"] != open_ladder.id
    assert arena.client.get(f"/api/v1/competitions/{made['id']}").json() == made
    assert [listed["id"] for listed in arena.client.get("/api/v1/competitions").json()] == [made["id"]]
    assert _refusal(arena.client.get("/api/v1/competitions/999")) == (404, "not_found")
    arena.clock.now = OPENS
    assert arena.client.get(f"/api/v1/competitions/{made['id']}").json()["phase"] == "open"
    arena.clock.now = DEADLINE
    assert arena.client.get(f"/api/v1/competitions/{made['id']}").json()["phase"] == "closed"

    ladders = arena.client.get("/api/v1/ladders").json()  # the open ladder first
    assert [(ladder["id"], ladder["competition_id"]) for ladder in ladders] == [
        (open_ladder.id, None),
        (made["ladder_id"], made["id"]),
    ]
    with session(engine) as db:  # uploads, training and the demo still find the open ladder
        assert ensure_ladder(db, game="bobail", simulations=8).id == open_ladder.id
        assert find_ladder(db, game="bobail", simulations=8).id == open_ladder.id
        house = db.exec(select(Bot.name).where(Bot.ladder_id == made["ladder_id"])).all()
        assert sorted(house) == sorted(house_bots("bobail"))  # the anchors of its ratings
        db.add(Ladder(name="another", game="bobail", game_version=1, simulations=8, seed=1))
        with pytest.raises(IntegrityError):  # one open ladder per game version and budget
            db.flush()


# Terms an organiser may not ask for: (changes to TERMS, the 422 code).
REFUSED_TERMS = [
    ({"game": "chess"}, "unknown_game"),
    ({"deadline": OPENS.isoformat()}, "bad_schedule"),
    ({"opens_at": "2026-01-01T00:00:00Z", "deadline": "2026-02-01T00:00:00Z"}, "bad_schedule"),
    ({"simulations": 0}, "out_of_range"),
    ({"max_active_bots": 0}, "out_of_range"),
    ({"uploads_per_day": 10_000}, "out_of_range"),
    ({"final": {"pairs": 4, "seconds": 600}}, "invalid_final"),
    ({"final": {}}, "invalid_final"),
    ({"final": {"pairs": 0}}, "out_of_range"),
    ({"final": {"pairs": 4, "stop": "settled"}}, "invalid_final"),
    ({"final": {"seconds": 600}}, "invalid_final"),
    ({"final": {"seconds": 600, "stop": "budget", "confidence": 0.9}}, "invalid_final"),
    ({"final": {"seconds": 600, "stop": "settled", "confidence": 0.4}}, "out_of_range"),
    ({"leagues": [{"name": "wood", "boss": "stockfish"}]}, "invalid_leagues"),
    (
        {"leagues": [{"name": "wood", "boss": "random"}, {"name": "wood", "boss": "uct"}]},
        "invalid_leagues",
    ),
    (
        {"leagues": [{"name": "wood", "boss": "random"}, {"name": "bronze", "boss": "random"}]},
        "invalid_leagues",
    ),
    ({"opens_at": "2027-01-01T12:00:00"}, "invalid_request"),  # no zone
]


def test_every_refused_term_has_its_code(arena: Arena):
    for changes, code in REFUSED_TERMS:
        response = arena.client.post("/api/v1/competitions", json=TERMS | changes, headers=arena.organiser)
        assert _refusal(response) == (422, code), (changes, response.text)
    assert arena.client.get("/api/v1/competitions").json() == []


def test_a_timed_final_and_leagues_are_stored(arena: Arena):
    final = {"seconds": 3600, "stop": "settled", "confidence": 0.95}
    leagues = [{"name": "wood", "boss": "random"}, {"name": "bronze", "boss": "uct"}]
    made = _create(arena, final=final, leagues=leagues)
    assert (made["final"], made["leagues"]) == ({"pairs": None} | final, leagues)


def test_entries_open_at_the_opening_and_close_at_the_deadline(arena: Arena, onnx_bot, enqueued):
    competition = _create(arena)["id"]
    before = _upload(arena, competition, onnx_bot(), arena.alice)
    assert _refusal(before) == (409, "not_open")
    assert OPENS.isoformat() in before.json()["detail"]

    arena.clock.now = OPENS
    entered = _upload(arena, competition, onnx_bot(), arena.alice)
    assert entered.status_code == 201, entered.text
    bot = entered.json()
    assert (bot["name"], bot["author"], bot["ladder"]) == ("tiny", "alice", f"bobail-v1-8-c{competition}")
    assert any(name == PLAY_PAIRINGS for name, _ in enqueued)  # its ladder's round is booked and sent

    arena.clock.now = DEADLINE
    for late in (_upload(arena, competition, onnx_bot(), arena.alice), _copy(arena, competition, bot["id"])):
        assert _refusal(late) == (409, "deadline_passed")
        assert DEADLINE.isoformat() in late.json()["detail"]
    assert arena.client.get(f"/api/v1/competitions/{competition}").json()["entrants"] == 1


def test_the_entrants_are_listed_and_a_hidden_ranking_is_shown_to_nobody(
    arena: Arena, engine: Engine, onnx_bot
):
    hidden = _create(arena, hidden_ranking=True)
    shown = _create(arena, title="Bobail open cup")
    assert (hidden["hidden_ranking"], shown["hidden_ranking"]) == (True, False)
    arena.clock.now = OPENS + timedelta(minutes=5)
    entered = _upload(arena, hidden["id"], onnx_bot(), arena.alice).json()
    with session(engine) as db:  # a refit rated it
        record = {"games": 4, "wins": 3, "draws": 0, "losses": 1, "provisional": False}
        interval = {"rating": 90, "low": 10, "high": 170}
        db.add(Rating(ladder_id=hidden["ladder_id"], bot_id=entered["id"], **interval, **record))
        db.commit()

    (entrant,) = arena.client.get(f"/api/v1/competitions/{hidden['id']}/entries").json()
    assert (entrant["bot"]["name"], entrant["bot"]["version"], entrant["author"]) == ("tiny", 1, "alice")
    assert (entrant["status"], entrant["kind"]) == ("active", "upload")
    assert entrant["entered_at"] == "2027-01-01T12:05:00Z"  # when the request arrived
    assert arena.client.get(f"/api/v1/competitions/{shown['id']}/entries").json() == []
    assert _refusal(arena.client.get("/api/v1/competitions/999/entries")) == (404, "not_found")

    for user in ({}, arena.alice, arena.organiser):  # the organiser sees no more than the entrants
        answer = arena.client.get(f"/api/v1/ladders/{hidden['ladder_id']}/leaderboard", headers=user)
        assert _refusal(answer) == (403, "ranking_hidden")
        assert "hidden until the final" in answer.json()["detail"]
    board = arena.client.get(f"/api/v1/ladders/{shown['ladder_id']}/leaderboard").json()
    assert board["ladder"]["competition_id"] == shown["id"]

    for user in ({}, arena.alice):  # nor its bots' ratings, to their author either
        bot = arena.client.get(f"/api/v1/bots/{entered['id']}", headers=user).json()
        assert (bot["rating"], bot["rating_hidden"]) == (None, True)
    history = arena.client.get(f"/api/v1/bots/{entered['id']}/history")
    assert _refusal(history) == (403, "ranking_hidden")
    (mine,) = arena.client.get("/api/v1/me/bots", headers=arena.alice).json()["bots"]
    assert [(version["rating"], version["rating_hidden"]) for version in mine["versions"]] == [(None, True)]


def _copy(arena: Arena, competition_id: int, bot_id: int, user: dict[str, str] | None = None):
    return arena.client.post(
        f"/api/v1/competitions/{competition_id}/entries", json={"bot_id": bot_id}, headers=user or arena.alice
    )


def test_uploads_racing_the_deadline_are_decided_by_their_start(arena: Arena, onnx_bot, engine, monkeypatch):
    """The first upload starts before the deadline and is still validating when it passes; the
    second starts after it and is refused; then the first is entered."""
    competition = _create(arena)["id"]
    arena.clock.now = DEADLINE - timedelta(seconds=1)
    validating, release = threading.Event(), threading.Event()
    real_validate = bot_routes.validate

    def slow_validate(*args, **kwargs):
        validating.set()
        assert release.wait(30)
        return real_validate(*args, **kwargs)

    monkeypatch.setattr(bot_routes, "validate", slow_validate)
    answers = {}
    first = threading.Thread(
        target=lambda: answers.setdefault("first", _upload(arena, competition, onnx_bot(), arena.alice))
    )
    first.start()
    assert validating.wait(30)
    arena.clock.now = DEADLINE  # the deadline passes while the first upload validates
    second = _upload(arena, competition, onnx_bot(seed=1), arena.bob, name="late")
    assert _refusal(second) == (409, "deadline_passed")
    release.set()
    first.join(30)
    assert answers["first"].status_code == 201, answers["first"].text
    with session(engine) as db:
        entries = db.exec(select(Entry)).all()
        assert [(as_utc(entry.started_at), entry.bot_id is not None) for entry in entries] == [
            (DEADLINE - timedelta(seconds=1), True)
        ]


def test_a_copy_enters_the_same_model_and_every_refusal_has_its_code(
    arena: Arena, engine: Engine, blobs: BlobStore, onnx_bot
):
    competition = _create(arena)["id"]
    arena.clock.now = OPENS
    with session(engine) as db:

        def network_bot(game: str, simulations: int, owner: str, name: str | None = None) -> int:
            ladder = ensure_ladder(db, game=game, simulations=simulations)
            return bots.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=users.get_user_by_name(db, name=owner).id,
                manifest=Manifest(game=game, game_version=1, name=name or f"{owner}-{game}", player="greedy"),
                report={"ok": True},
                model_sha256=blobs.put(onnx_bot(game)),
            ).id

        mine, small = network_bot("bobail", 100, "alice"), network_bot("bobail", 4, "bob")
        pente = network_bot("pente", 100, "alice")
        theirs = network_bot("bobail", 200, "bob")
        namesake = network_bot("bobail", 200, "bob", name="alice-bobail")  # alice's bot's name
        db.commit()
    assert _refusal(_copy(arena, competition, 999_999)) == (404, "not_found")
    assert _refusal(_copy(arena, competition, theirs)) == (403, "not_owner")
    assert _refusal(_copy(arena, competition, pente)) == (422, "wrong_game")
    assert _refusal(_copy(arena, competition, small, arena.bob)) == (422, "budget_not_validated")
    assert _refusal(
        arena.client.post(f"/api/v1/competitions/{competition}/entries", json={}, headers=arena.alice)
    ) == (
        422,
        "invalid_request",
    )

    copied = _copy(arena, competition, mine)
    assert copied.status_code == 201, copied.text
    assert _refusal(_copy(arena, competition, namesake, arena.bob)) == (409, "name_taken")
    with session(engine) as db:
        source, copy = db.get(Bot, mine), db.get(Bot, copied.json()["id"])
        assert (copy.model_sha256, copy.manifest, copy.owner_id, copy.name) == (
            source.model_sha256,
            source.manifest,
            source.owner_id,
            source.name,
        )
        assert db.get(Ladder, copy.ladder_id).competition_id == competition
        assert len(db.exec(select(Entry)).all()) == 1  # the refused copies counted nothing


def test_the_limits_per_user_name_their_rule_and_challenges_there_are_unrated(arena: Arena, onnx_bot):
    competition = _create(arena, max_active_bots=1, uploads_per_day=2)["id"]
    arena.clock.now = OPENS
    assert _upload(arena, competition, onnx_bot(), arena.alice, name="one").status_code == 201
    second_name = _upload(arena, competition, onnx_bot(seed=1), arena.alice, name="two")
    assert _refusal(second_name) == (409, "active_bots_reached")
    arena.clock.now = OPENS + timedelta(hours=1)
    third = _upload(arena, competition, onnx_bot(seed=2), arena.alice, name="one")  # its next version
    assert _refusal(third) == (429, "uploads_per_day_reached")
    assert int(third.headers["Retry-After"]) == 23 * 3600 + 1
    arena.clock.now = OPENS + timedelta(days=1, seconds=1)
    renewed = _upload(arena, competition, onnx_bot(seed=2), arena.alice, name="one")
    assert renewed.status_code == 201, renewed.text
    assert renewed.json()["version"] == 2
    theirs = _upload(arena, competition, onnx_bot(), arena.bob, name="bobs")  # his own limits
    assert theirs.status_code == 201

    # a challenge on the competition's ladder is unrated: its ratings come from its own schedule
    challenge = {"bot_id": renewed.json()["id"], "opponent_id": theirs.json()["id"], "pairs": 1}
    rated = arena.client.post("/api/v1/challenges", json=challenge | {"rated": True}, headers=arena.alice)
    assert _refusal(rated) == (409, "competition_ladder")
    assert arena.client.post("/api/v1/challenges", json=challenge, headers=arena.alice).status_code == 201


def test_the_cli_grants_the_role_creates_lists_shows_and_enters(
    engine: Engine, live_server, onnx_bot, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("ARENA_DATABASE_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    assert cli.main(["user", "create", "dora"]) == 0
    token = capsys.readouterr().out.strip()
    assert cli.main(["user", "create", "olga", "--organiser"]) == 0
    organiser = capsys.readouterr().out.strip()
    url = live_server()
    now = datetime.now(UTC)
    create = ["competition", "create", "--game", "bobail", "--title", "Cup", "--url", url]
    create += ["--opens", now.isoformat(), "--deadline", (now + timedelta(days=1)).isoformat()]
    assert cli.main([*create, "--token", token]) == 2
    assert "not an organiser" in capsys.readouterr().err
    assert cli.main(["user", "organiser", "dora"]) == 0
    assert capsys.readouterr().out.strip() == "dora is an organiser"
    assert cli.main(["user", "organiser", "nobody"]) == 2
    assert "no user named 'nobody'" in capsys.readouterr().err
    timed = ["--final-seconds", "600", "--final-stop", "budget", "--hidden-ranking"]
    assert cli.main([*create, "--token", organiser, *timed]) == 0
    created = capsys.readouterr().out
    assert re.match(r"competition \d+ created: Cup \(open\)", created)
    competition = created.split()[1]

    assert cli.main(["competition", "list", "--url", url]) == 0
    assert "Cup  [open]  bobail v1" in capsys.readouterr().out
    path = tmp_path / "bot.onnx"
    path.write_bytes(onnx_bot())
    enter = [
        "competition",
        "enter",
        competition,
        str(path),
        "--name",
        "mine",
        "--player",
        "greedy",
        "--url",
        url,
    ]
    assert cli.main([*enter, "--token", token]) == 0
    assert "entered 'mine' version 1" in capsys.readouterr().out
    assert cli.main(["competition", "show", competition, "--url", url]) == 0
    shown = capsys.readouterr().out
    assert "final: 600 s, stopping rule budget" in shown
    assert "ranking: hidden until the final" in shown
    assert "1 entrants, 1 bots entered" in shown
    assert cli.main(["competition", "enter", competition, "--url", url, "--token", token]) == 2
    assert "an ONNX file or --bot ID" in capsys.readouterr().err
