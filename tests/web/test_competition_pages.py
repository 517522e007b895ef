"""The competitions' pages in Chromium, on a site of their own (no games: competitions, their
entries and their ladders' ratings written as the API and the workers would): the list (open,
then upcoming, then closed) under a nav link; a competition's page with its description as text,
its terms, a countdown that ticks and turns into "entries closed" at the deadline, its entrants
and its live ranking, or the notice of a hidden one; its ladder's page linking back to it."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from played import placeholder_game
from playwright.sync_api import expect
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Pairing, Rating, User
from arena_platform.settings import Settings
from arena_platform.store import competitions, users
from arena_platform.store.competitions import CompetitionTerms
from arena_platform.store.results import record_pairing
from arena_platform.store.scheduling import book_rounds
from arena_platform.store.sprt_tests import SprtParameters

XSS_TEXT = "<img src=x onerror=alert(1)> read the rules"  # a description that must show as text
LIVE_MS = 15_000  # the page refreshes its ranking every 3 s
SPRT = SprtParameters(elo0=0.0, elo1=10.0, alpha=0.05, beta=0.05)
REPLAY = b'{"a replay": "as the runner stores it"}'  # every final game's, for the zip


@dataclass
class CompetitionSite:
    url: str
    engine: Engine
    blobs: BlobStore

    def create(self, title: str, *, opens: timedelta, deadline: timedelta, **terms: object) -> dict:
        """A bobail competition opening and closing at these offsets from now, created as if
        before both (an organiser may not create one already closed: the test may); its view."""
        now = datetime.now(UTC)
        with session(self.engine) as db:
            olga = db.exec(select(User).where(User.name == "olga")).one()
            made = competitions.create_competition(
                db,
                organiser=olga,
                terms=CompetitionTerms(
                    game="bobail", title=title, opens_at=now + opens, deadline=now + deadline, **terms
                ),
                default_simulations=8,
                now=now + min(opens, deadline) - timedelta(seconds=1),
            )
            db.commit()
            return competitions.get_competition(db, competition_id=made.id, now=now).model_dump()

    def enter(self, competition: dict, author: str, name: str, *, at: datetime | None = None) -> int:
        """A bot of `author`'s entered into the competition `at` (now), as an accepted upload; its id."""
        with session(self.engine) as db:
            user = db.exec(select(User).where(User.name == author)).one()
            found, ladder = competitions.competition_ladder(db, competition_id=competition["id"])
            entry = competitions.begin_entry(
                db, competition=found, user_id=user.id, kind=competitions.UPLOAD, now=at or datetime.now(UTC)
            )
            bot = competitions.enter_bot(
                db,
                entry=entry,
                competition=found,
                ladder=ladder,
                manifest=Manifest(game="bobail", game_version=1, name=name, player="greedy"),
                report={},
                model_sha256="0" * 64,  # no game plays it
                sprt=SPRT,
            )
            db.commit()
            return bot.id

    def book_final(self, competition: dict) -> list[int]:
        """The final's next round booked now, as a worker's or the sweeper's scheduling does (the
        competition's deadline is past its grace); the pairings' ids, [] once it is finished."""
        return book_rounds(self.engine, lambda *_: None, [competition["ladder_id"]], redelivery_seconds=60)

    def play(self, pairing_id: int, strength: dict[int, int]) -> None:
        """The pairing's two games recorded as a worker would: the stronger bot wins both (a draw
        between equals), each game's replay in the blob store."""
        replay = self.blobs.put(REPLAY)
        with session(self.engine) as db:
            pairing = db.get(Pairing, pairing_id)
            a, b = pairing.bot_a_id, pairing.bot_b_id
            score = 0.5 + 0.5 * ((strength[a] > strength[b]) - (strength[a] < strength[b]))
            games = [placeholder_game(0, a, b, score), placeholder_game(1, b, a, 1 - score)]
            games = [dataclasses.replace(game, replay_sha256=replay) for game in games]
            assert record_pairing(db, pairing=pairing, games=games)

    def play_final(self, competition: dict, strength: dict[int, int]) -> int:
        """Every round of the final booked and played until it is finished; the games played."""
        played = 0
        while booked := self.book_final(competition):
            for pairing_id in booked:
                self.play(pairing_id, strength)
            played += 2 * len(booked)
        return played

    def rate(self, ladder_id: int, bot_id: int, rating: float) -> None:
        """The bot's rating on the ladder, as a refit writes it (interval ±50, 10 games)."""
        with session(self.engine) as db:
            row = db.get(Rating, (ladder_id, bot_id)) or Rating(ladder_id=ladder_id, bot_id=bot_id)
            row.rating, row.low, row.high = rating, rating - 50, rating + 50
            row.games, row.wins, row.draws, row.losses, row.provisional = 10, 6, 1, 3, False
            db.add(row)
            db.commit()


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, serving: Callable[[FastAPI], AbstractContextManager[str]]
) -> Iterator[CompetitionSite]:
    folder = tmp_path_factory.mktemp("competitions")
    engine = make_engine(f"sqlite:///{folder / 'arena.db'}")
    blobs = BlobStore(str(folder / "blobs"))
    migrate(engine)
    with session(engine) as db:
        users.create_user(db, name="olga", organiser=True)
        for name in ("alice", "bob"):
            users.create_user(db, name=name)
        db.commit()
    app = create_app(
        Settings(data_dir=folder),
        engine=engine,
        blobs=blobs,
        enqueue=lambda *_: None,
    )
    with serving(app) as url:
        yield CompetitionSite(url, engine, blobs)
    engine.dispose()


def test_the_list_shows_open_then_upcoming_then_closed_competitions(page, site, screenshot):
    closed = site.create("Autumn cup", opens=-timedelta(days=3), deadline=-timedelta(days=1))
    upcoming = site.create("Winter cup", opens=timedelta(days=1), deadline=timedelta(days=2))
    running = site.create("Blitz", opens=-timedelta(hours=1), deadline=timedelta(hours=2))
    site.enter(running, "alice", "first")
    site.enter(running, "bob", "second")

    page.goto(f"{site.url}/")
    page.get_by_role("link", name="Competitions").click()
    expect(page).to_have_url(f"{site.url}/competitions")
    expect(page.locator(".site-nav a[aria-current=page]")).to_have_text("Competitions")
    rows = page.locator("#competitions tbody tr")
    expect(rows.locator("td.title")).to_have_text(["Blitz", "Winter cup", "Autumn cup"])
    expect(rows.locator(".badge.phase")).to_have_text(["open", "upcoming", "closed"])
    expect(rows.locator("td.entrants")).to_have_text(["2", "0", "0"])
    expect(rows.first).to_contain_text("Bobail v1")
    screenshot(page, "competitions")
    ids = [running["id"], upcoming["id"], closed["id"]]
    assert [int(row.get_attribute("data-competition-id")) for row in rows.all()] == ids
    rows.first.get_by_role("link", name="Blitz").click()
    expect(page.locator("h1")).to_contain_text("Blitz")
    expect(page.locator(".site-nav a[aria-current=page]")).to_have_text("Competitions")


def test_a_competition_page_shows_its_terms_entrants_and_live_ranking(page, site, screenshot):
    leagues = [{"name": "wood", "boss": "random"}, {"name": "bronze", "boss": "uct"}]
    cup = site.create(
        "Spring cup",
        opens=-timedelta(hours=1),
        deadline=timedelta(hours=2),
        description=XSS_TEXT,
        leagues=leagues,
    )
    first = site.enter(cup, "alice", "ace")
    site.rate(cup["ladder_id"], first, 120.0)

    page.goto(f"{site.url}/competitions/{cup['id']}")
    expect(page.locator("h1")).to_contain_text("Spring cup")
    expect(page.locator("#phase")).to_have_text("open")
    expect(page.locator("#description")).to_have_text(XSS_TEXT)  # text, never markup
    expect(page.locator("#description img")).to_have_count(0)
    expect(page.locator("#leagues-link")).to_have_attribute("href", f"/competitions/{cup['id']}/leagues")
    terms = page.locator("#terms")
    expect(terms).to_contain_text("8 network evaluations per move")
    expect(terms).to_contain_text("3 active bots, 5 entries in any 24 hours")
    expect(terms).to_contain_text("4 pairs per pair of entrants")
    expect(terms).to_contain_text("live, from the competition's ladder")
    expect(page.locator("#countdown")).to_have_text(re.compile(r"^Entries close in 0[12]:\d\d:\d\d$"))
    expect(page.locator("#timeline li[data-state]")).to_have_count(3)
    states = [item.get_attribute("data-state") for item in page.locator("#timeline li").all()]
    assert states == ["past", "next", "later"]

    entrants = page.locator("#entrants tbody tr")
    expect(entrants).to_have_count(1)
    expect(page.locator("#entrant-counts")).to_have_text("(1 bot by 1 author)")
    expect(entrants.first.locator(".bot-link")).to_have_text("ace\u00a0v1")
    expect(entrants.first.locator(".author")).to_have_text("alice")
    expect(entrants.first.locator(".kind")).to_have_text("an upload")
    ranking = page.locator("#ranking tbody tr")
    expect(ranking.first.locator(".bot-link")).to_have_text("ace\u00a0v1")
    expect(ranking.first.locator(".rating")).to_have_text("120")
    expect(ranking.first.locator(".interval")).to_have_text("70 to 170")

    second = site.enter(cup, "bob", "bolt")  # arrives and overtakes while the page is open
    site.rate(cup["ladder_id"], second, 300.0)
    expect(entrants).to_have_count(2, timeout=LIVE_MS)
    expect(page.locator("#entrant-counts")).to_have_text("(2 bots by 2 authors)")
    expect(ranking.first.locator(".bot-link")).to_have_text("bolt\u00a0v1", timeout=LIVE_MS)
    expect(ranking.first.locator(".author")).to_have_text("bob")
    expect(page.locator("#ranking-updated")).to_contain_text("live: updated")
    screenshot(page, "competition-open")


def test_the_countdown_ticks_and_says_entries_closed_after_the_deadline(page, site, screenshot):
    soon = site.create("Sprint", opens=timedelta(seconds=2), deadline=timedelta(seconds=5))
    page.goto(f"{site.url}/competitions/{soon['id']}")
    countdown = page.locator("#countdown")
    expect(countdown).to_have_text(re.compile(r"^Entries open in 00:00:0[12]$"))
    expect(page.locator("#phase")).to_have_text("upcoming")
    expect(countdown).to_have_text(re.compile(r"^Entries close in 00:00:0\d$"), timeout=5_000)
    expect(page.locator("#phase")).to_have_text("open")
    before = countdown.text_content()
    expect(countdown).not_to_have_text(before, timeout=2_000)  # it ticks every second
    expect(countdown).to_have_text("Entries closed: the final comes next.", timeout=6_000)
    expect(page.locator("#phase")).to_have_text("closed")
    states = [item.get_attribute("data-state") for item in page.locator("#timeline li").all()]
    assert states == ["past", "past", "next"]
    screenshot(page, "competition-closed")


def test_a_hidden_ranking_is_on_neither_the_competition_page_nor_its_ladder_page(page, site, screenshot):
    secret = site.create(
        "Secret cup", opens=-timedelta(hours=1), deadline=timedelta(hours=2), hidden_ranking=True
    )
    bot = site.enter(secret, "alice", "sly")
    site.rate(secret["ladder_id"], bot, 222.0)

    page.goto(f"{site.url}/competitions/{secret['id']}")
    expect(page.locator("#ranking-hidden")).to_contain_text("hidden until the final")
    expect(page.locator("#ranking")).to_have_count(0)
    expect(page.locator("#terms")).to_contain_text("hidden until the final")
    expect(page.locator("#entrants tbody tr")).to_have_count(1)  # who entered is no secret
    page.wait_for_timeout(3_500)  # a refresh of the entrants passes; the ranking is never asked for
    expect(page.locator("main")).not_to_contain_text("222")
    screenshot(page, "competition-hidden-ranking")

    page.get_by_role("link", name=secret["ladder"]).click()
    expect(page.locator("#competition-of a")).to_have_text("Secret cup")
    expect(page.locator("#ranking-hidden")).to_be_visible()
    expect(page.locator("#leaderboard")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("222")

    page.goto(f"{site.url}/bots/{bot}")  # nor on its bot's page
    expect(page.locator(".fact.rating-hidden .value")).to_have_text("hidden")
    expect(page.locator("#history")).to_contain_text("no rating until the final")
    expect(page.locator("main")).not_to_contain_text("222")


def test_a_competition_ladder_page_links_to_its_competition(page, site):
    cup = site.create("Linked cup", opens=-timedelta(hours=1), deadline=timedelta(hours=2))
    page.goto(f"{site.url}/ladders/{cup['ladder_id']}")
    link = page.locator("#competition-of a")
    expect(link).to_have_text("Linked cup")
    expect(page.locator("#leaderboard tbody tr")).not_to_have_count(0)  # its house bots
    link.click()
    expect(page).to_have_url(f"{site.url}/competitions/{cup['id']}")


def test_an_unknown_competition_is_the_404_page(page, site, watched):
    for key in ("999", "abc"):
        response = page.goto(f"{site.url}/competitions/{key}")
        assert response.status == 404
        expect(page.locator("main")).to_contain_text(f"competition {key}")
    watched.errors.clear()  # Chromium logs the expected 404s


def test_the_final_shows_its_progress_live_then_its_result_and_downloads(page, site, screenshot):
    cup = site.create(
        "Grand final", opens=-timedelta(days=2), deadline=-timedelta(hours=1), final={"pairs": 1}
    )
    entered_at = datetime.now(UTC) - timedelta(days=1)
    ace, bolt, ant = (
        site.enter(cup, author, name, at=entered_at)
        for author, name in (("alice", "ace"), ("bob", "bolt"), ("alice", "ant"))
    )
    strength = {ace: 3, bolt: 2, ant: 1}

    page.goto(f"{site.url}/competitions/{cup['id']}")  # past the deadline, before the final starts
    expect(page.locator("#phase")).to_have_text("closed")
    expect(page.locator("#final-terms")).to_contain_text("1 pairs per pair of entrants")
    expect(page.locator("#final-progress")).to_be_hidden()
    expect(page.locator("#final-ranking tbody tr")).to_have_count(0)

    first_round = site.book_final(cup)  # the round robin: 3 pairings
    counts, state = page.locator("#final-counts"), page.locator("#final-state")
    expect(counts).to_have_text("0 of 3 pairings done · 3 in flight · 1 round", timeout=LIVE_MS)
    expect(page.locator("#phase")).to_have_text("final")
    expect(page.locator("#countdown")).to_have_text("Entries closed: the final is being played.")
    expect(state).to_have_text("provisional")

    site.play(first_round[0], strength)
    expect(counts).to_have_text("1 of 3 pairings done · 2 in flight · 1 round", timeout=LIVE_MS)
    expect(page.locator("#final-bar")).to_have_attribute("value", "1")
    rows = page.locator("#final-ranking tbody tr")
    expect(rows).to_have_count(3)  # every entrant, those without games too
    expect(page.locator("#final-downloads")).to_be_hidden()  # the result is not out yet
    screenshot(page, "competition-final-provisional")

    for pairing_id in first_round[1:]:
        site.play(pairing_id, strength)
    played = 6 + site.play_final(cup, strength)  # the extra rounds for unsettled neighbours
    expect(state).to_have_text("final", timeout=LIVE_MS)
    expect(page.locator("#phase")).to_have_text("finished")
    expect(counts).to_contain_text(f"{played // 2} of {played // 2} pairings done")
    expect(rows.locator(".bot-link")).to_have_text(["ace\u00a0v1", "bolt\u00a0v1", "ant\u00a0v1"])
    expect(rows.locator(".author")).to_have_text(["alice", "bob", "alice"])
    expect(rows.first.locator(".rank")).to_have_text(re.compile(r"^1=?$"))  # "1=" when shared
    expect(rows.first.locator(".rating")).to_have_text(re.compile(r"^\+\d+$"))  # above the mean
    expect(rows.first.locator(".stronger")).to_have_text(re.compile(r"^\d+%$"))
    expect(rows.last.locator(".stronger")).to_have_text("–")  # nobody below the last
    expect(page.locator("#final-downloads")).to_be_visible()
    screenshot(page, "competition-final-finished")

    links = page.locator("#final-downloads a")
    expect(links).to_have_count(3)
    urls = [site.url + link.get_attribute("href") for link in links.all()]
    table, document, archive = (page.request.get(url) for url in urls)
    lines = list(csv.DictReader(io.StringIO(table.text())))
    assert [int(line["entrant_id"]) for line in lines] == [ace, bolt, ant]
    assert [row["entrant_id"] for row in document.json()["entrants"]] == [ace, bolt, ant]
    with zipfile.ZipFile(io.BytesIO(archive.body())) as opened:
        assert len(opened.namelist()) == played
        assert opened.read(opened.namelist()[0]) == REPLAY


def test_a_hidden_ranking_comes_out_when_the_final_is_finished(page, site):
    secret = site.create(
        "Secret final", opens=-timedelta(days=2), deadline=-timedelta(hours=1), hidden_ranking=True
    )
    entered_at = datetime.now(UTC) - timedelta(days=1)
    sly = site.enter(secret, "alice", "sly", at=entered_at)
    shy = site.enter(secret, "bob", "shy", at=entered_at)
    site.rate(secret["ladder_id"], sly, 222.0)
    strength = {sly: 2, shy: 1}
    first, *others = site.book_final(secret)  # 4 pairings, as the terms' default says
    site.play(first, strength)

    page.goto(f"{site.url}/competitions/{secret['id']}")
    expect(page.locator("#final-counts")).to_contain_text("pairings done")
    expect(page.locator("#final-ranking-hidden")).to_be_visible()
    expect(page.locator("#final-ranking tbody tr")).to_have_count(0)
    expect(page.locator("#ranking-hidden")).to_be_visible()
    for path in (f"/ladders/{secret['ladder_id']}", f"/bots/{sly}"):  # hidden everywhere meanwhile
        page.goto(site.url + path)
        expect(page.locator("main")).not_to_contain_text("222")

    for pairing_id in others:
        site.play(pairing_id, strength)
    site.play_final(secret, strength)
    page.goto(f"{site.url}/competitions/{secret['id']}")
    expect(page.locator("#final-state")).to_have_text("final")
    expect(page.locator("#final-ranking-hidden")).to_be_hidden()
    expect(page.locator("#final-ranking tbody tr .bot-link")).to_have_text(["sly\u00a0v1", "shy\u00a0v1"])
    expect(page.locator("#ranking-hidden")).to_have_count(0)  # the ladder's ranking is out too
    expect(page.locator("#ranking .rating").first).to_have_text("222")
    page.goto(f"{site.url}/ladders/{secret['ladder_id']}")
    expect(page.locator("#leaderboard")).to_contain_text("222")
    page.goto(f"{site.url}/bots/{sly}")
    expect(page.locator(".fact.rating-hidden")).to_have_count(0)
