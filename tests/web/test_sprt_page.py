"""The bot page's SPRT in Chromium: a new version shows its test (LLR bar, pentanomial counts,
verdict in words, Elo difference with its interval) and follows it live to the verdict; a first
version shows none."""

from __future__ import annotations

import re

from played import placeholder_game
from playwright.sync_api import expect

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import Bot, Ladder
from arena_platform.store import bots, sprt_tests
from arena_platform.store.pairings import create_pairings
from arena_platform.store.results import record_pairing

QUICK = sprt_tests.SprtParameters(elo0=0.0, elo1=400.0, alpha=0.2, beta=0.2)  # a verdict in a few pairs
LIVE_MS = 15_000  # the page refreshes a running test every 5 s


def _record_pair(site, new_id: int, old_id: int, new_points: tuple[float, float]) -> None:
    """One pairing new-old recorded as a worker would: the new version scores `new_points`."""
    with session(site.engine) as db:
        ladder = db.get(Ladder, site.bobail_ladder)
        (pairing,) = create_pairings(db, ladder=ladder, pairs=[(new_id, old_id)], redelivery_seconds=60)
        db.commit()
        seats = ((new_id, old_id, new_points[0]), (old_id, new_id, 1.0 - new_points[1]))
        games = [placeholder_game(index, *seat) for index, seat in enumerate(seats)]
        assert record_pairing(db, pairing=pairing, games=games)


def _status(site, new_id: int) -> str:
    with session(site.engine) as db:
        return sprt_tests.find_test(db, new_bot_id=new_id).status


def _new_version(site, old_id: int) -> int:
    """A new version of bot `old_id` (same model, under the QUICK test); its id."""
    with session(site.engine) as db:
        old = db.get(Bot, old_id)
        manifest = Manifest(game="bobail", game_version=1, name=old.name, player="greedy")
        newer = bots.create_network_bot(
            db,
            ladder_id=old.ladder_id,
            owner_id=old.owner_id,
            manifest=manifest,
            report={},
            model_sha256=old.model_sha256,
            sprt=QUICK,
        )
        db.commit()
        return newer.id


def test_a_new_version_shows_its_test_live_until_the_verdict(page, site, screenshot):
    new_id = _new_version(site, site.alpha)
    _record_pair(site, new_id, site.alpha, (1.0, 0.5))

    page.goto(f"{site.url}/bots/{site.alpha}")  # the old version plays on while the test runs
    expect(page.locator(".notice.successor")).to_contain_text("is being tested against this one")
    expect(page.locator("#sprt-panel")).to_be_hidden()  # a first version has no test of its own

    page.goto(f"{site.url}/bots/{new_id}")
    panel = page.locator("#sprt-panel")
    expect(panel).to_be_visible()
    expect(panel.locator(".verdict")).to_have_text("running")
    expect(panel.locator("table.pentanomial tbody td")).to_have_text(["0", "0", "0", "1", "0"])
    expect(panel.locator(".llr-bar")).to_have_attribute("data-llr", re.compile(r"^-?\d"))
    expect(panel.locator(".llr-marker")).to_have_count(1)
    expect(panel.locator(".elo-value")).to_have_text(re.compile(r"^\+\d"))  # 1.5 points of 2: better
    expect(panel).to_contain_text("95%:")
    expect(panel.locator(".bot-link")).to_have_count(2)  # the new version against the old
    screenshot(page, "bot-sprt-running")

    while _status(site, new_id) == "running":  # the new version wins every game from now on
        _record_pair(site, new_id, site.alpha, (1.0, 1.0))
    expect(panel.locator(".verdict")).to_have_text("better (H1 accepted)", timeout=LIVE_MS)
    expect(page.locator("#sprt-updated")).to_have_text("")
    screenshot(page, "bot-sprt-verdict")

    page.goto(f"{site.url}/bots/{site.alpha}")  # the verdict retired the old version
    expect(page.locator("h1 .badge.retired")).to_have_text("retired")
    expect(page.locator(".notice.successor")).to_contain_text("This version is retired")


def test_a_perfect_score_shows_its_elo_as_a_bound(page, site, screenshot):
    old_id = site.xss_bot  # not alpha, whose test above retires it
    new_id = _new_version(site, old_id)
    _record_pair(site, new_id, old_id, (1.0, 1.0))
    page.goto(f"{site.url}/bots/{new_id}")
    panel = page.locator("#sprt-panel")
    expect(panel.locator(".elo-value")).to_have_text(re.compile(r"^≥ \+\d+\.\d$"))
    expect(panel).to_contain_text(re.compile(r"at least \+\d+\.\d Elo \(95%\): a perfect score so far"))
    screenshot(page, "bot-sprt-perfect")
