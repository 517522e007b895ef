"""The competitions' pages in Chromium, on a site of their own (no games: competitions, their
entries and their ladders' ratings written as the API and the workers would): the list (open,
then upcoming, then closed) under a nav link; a competition's page with its description as text,
its terms, a countdown that ticks and turns into "entries closed" at the deadline, its entrants
and its live ranking, or the notice of a hidden one; its ladder's page linking back to it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from playwright.sync_api import expect
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Rating, User
from arena_platform.settings import Settings
from arena_platform.store import competitions, users
from arena_platform.store.competitions import CompetitionTerms
from arena_platform.store.sprt_tests import SprtParameters

XSS_TEXT = "<img src=x onerror=alert(1)> read the rules"  # a description that must show as text
LIVE_MS = 15_000  # the page refreshes its ranking every 3 s
SPRT = SprtParameters(elo0=0.0, elo1=10.0, alpha=0.05, beta=0.05)


@dataclass
class CompetitionSite:
    url: str
    engine: Engine

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

    def enter(self, competition: dict, author: str, name: str) -> int:
        """A bot of `author`'s entered into the competition now, as an accepted upload; its id."""
        with session(self.engine) as db:
            user = db.exec(select(User).where(User.name == author)).one()
            found, ladder = competitions.competition_ladder(db, competition_id=competition["id"])
            now = datetime.now(UTC)
            entry = competitions.begin_entry(
                db, competition=found, user_id=user.id, kind=competitions.UPLOAD, now=now
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
    migrate(engine)
    with session(engine) as db:
        users.create_user(db, name="olga", organiser=True)
        for name in ("alice", "bob"):
            users.create_user(db, name=name)
        db.commit()
    app = create_app(
        Settings(data_dir=folder),
        engine=engine,
        blobs=BlobStore(str(folder / "blobs")),
        enqueue=lambda *_: None,
    )
    with serving(app) as url:
        yield CompetitionSite(url, engine)
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
