"""A competition's leagues page in Chromium: every league, the highest first, with its boss and
members (a hostile name shown as text), and a promotion appearing live, without a reload, at the
refit that earns it (games recorded as a worker would)."""

from __future__ import annotations

from datetime import timedelta

from played import placeholder_bot, placeholder_game
from playwright.sync_api import expect
from sqlmodel import select

from arena_platform.db import session
from arena_platform.models import Bot, Ladder, utc_now
from arena_platform.store import competitions, users
from arena_platform.store.competitions import CompetitionTerms, League
from arena_platform.store.leagues import PLACEMENT_GAMES
from arena_platform.store.pairings import create_pairings
from arena_platform.store.ratings import refit_ladder
from arena_platform.store.results import record_pairing

LIVE_MS = 15_000  # the page refreshes an open competition's leagues every 3 s


def _cup(site) -> tuple[int, int, dict[str, int]]:
    """An open bobail competition with leagues wood (boss random) and bronze (boss uct), and two
    entrants: alice's ace and mallory's bot of the hostile name; (its id, its ladder, bot ids)."""
    with session(site.engine) as db:
        organiser, _ = users.create_user(db, name="olga", organiser=True)
        terms = CompetitionTerms(
            game="bobail",
            title="Leagues cup",
            opens_at=utc_now() - timedelta(days=1),
            deadline=utc_now() + timedelta(days=7),
            leagues=[League(name="wood", boss="random"), League(name="bronze", boss="uct")],
        )
        made = competitions.create_competition(
            db, organiser=organiser, terms=terms, default_simulations=8, now=utc_now()
        )
        _, ladder = competitions.competition_ladder(db, competition_id=made.id)
        ids = dict(db.exec(select(Bot.name, Bot.id).where(Bot.ladder_id == ladder.id)).all())
        for owner, name in (("alice", "ace"), ("mallory", site.xss_name)):
            ids[name] = placeholder_bot(db, ladder.id, owner, name)
        db.commit()
        return made.id, ladder.id, ids


def _ace_beats_the_boss(site, ladder_id: int, ace: int, boss: int) -> None:
    """Ace wins its placement games against wood's boss, recorded as a worker would."""
    with session(site.engine) as db:
        pairings = create_pairings(
            db,
            ladder=db.get(Ladder, ladder_id),
            pairs=[(ace, boss)] * (PLACEMENT_GAMES // 2),
            redelivery_seconds=60,
        )
        db.commit()
        for pairing in pairings:
            games = [placeholder_game(0, ace, boss, 1.0), placeholder_game(1, boss, ace, 0.0)]
            assert record_pairing(db, pairing=pairing, games=games)


def test_the_leagues_page_shows_bosses_members_and_a_promotion_live(watched, site, screenshot):
    page = watched.page
    competition_id, ladder_id, ids = _cup(site)
    page.goto(f"{site.url}/competitions/{competition_id}/leagues")
    leagues = page.locator("section.league")
    expect(leagues).to_have_count(2)
    expect(leagues.locator("h2")).to_contain_text(["bronze", "wood"])  # the highest first
    wood, bronze = page.locator('[data-league="wood"]'), page.locator('[data-league="bronze"]')
    expect(wood.locator(".boss .bot-link")).to_contain_text("random")
    expect(bronze.locator(".boss")).to_contain_text("no one rises above it")
    expect(wood.locator("tr.member")).to_have_count(2)
    expect(wood.locator("tr.member").nth(1)).to_contain_text(site.xss_name)  # text, never markup
    expect(bronze.locator(".members-empty")).to_be_visible()
    expect(page.locator("#promotions")).to_contain_text("No promotions yet.")
    expect(page.locator("#league-rule")).to_contain_text(f"after {PLACEMENT_GAMES} games there")

    _ace_beats_the_boss(site, ladder_id, ids["ace"], ids["random"])
    with session(site.engine) as db:
        assert refit_ladder(db, ladder_id=ladder_id)  # the refit promotes ace
    expect(page.locator("li.promotion")).to_contain_text("ace rose from wood to bronze", timeout=LIVE_MS)
    expect(bronze.locator("tr.member")).to_have_count(1)
    expect(bronze.locator("tr.member .rating")).to_contain_text("(")  # rated, with its interval
    expect(wood.locator("tr.member")).to_have_count(1)
    expect(page.locator("#leagues-updated")).to_contain_text("live")
    screenshot(page, "competition-leagues")

    assert page.goto(f"{site.url}/competitions/99999/leagues").status == 404
    assert watched.errors == [
        "Failed to load resource: the server responded with a status of 404 (Not Found)"
    ]
    watched.errors.clear()
