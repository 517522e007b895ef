"""Pairs of seat-swapped games in Chromium. The bot page's SPRT: a new version shows its test (LLR
bar, pentanomial counts, verdict in words, Elo difference with its interval) and follows it live
to the verdict; a first version shows none. A challenge's page: its progress, W/D/L and Elo
difference follow its games live until it finishes, its games link to the replay viewer, and the
opponent's page lists it. A bot page's challenge form books one for the signed-in user."""

from __future__ import annotations

import re

from played import placeholder_game
from playwright.sync_api import expect
from sqlmodel import col, select

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing, User
from arena_platform.store import bots, challenges, sprt_tests
from arena_platform.store.pairings import create_pairings
from arena_platform.store.results import record_pairing

QUICK = sprt_tests.SprtParameters(elo0=0.0, elo1=400.0, alpha=0.2, beta=0.2)  # a verdict in a few pairs
LIVE_MS = 15_000  # the page refreshes a running test every 5 s, an open challenge every 3 s
CHALLENGE_LIMITS = challenges.Limits(max_pairs=10, open=10, per_day=10)


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


def _play_one(site, challenge_id: int, scores: tuple[float, float]) -> None:
    """Records the challenge's next queued pairing as a worker would (first-seat `scores`)."""
    with session(site.engine) as db:
        pairing = db.exec(
            select(Pairing)
            .where(Pairing.challenge_id == challenge_id, Pairing.status == "queued")
            .order_by(Pairing.id)
        ).first()
        seats = ((pairing.bot_a_id, pairing.bot_b_id), (pairing.bot_b_id, pairing.bot_a_id))
        games = [
            placeholder_game(index, *seat, score)
            for index, (seat, score) in enumerate(zip(seats, scores, strict=True))
        ]
        assert record_pairing(db, pairing=pairing, games=games)


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


def test_a_challenge_page_follows_its_games_live_and_the_opponent_lists_it(page, site, screenshot):
    with session(site.engine) as db:  # alice's first active bobail bot (the SPRT above retires alpha)
        alice = db.exec(select(User).where(User.name == "alice")).one()
        active = select(Bot.id).where(Bot.ladder_id == site.bobail_ladder, Bot.status == "active")
        mine = db.exec(active.where(Bot.owner_id == alice.id).order_by(Bot.id)).first()
        opponent = db.exec(active.where(col(Bot.owner_id) != alice.id).order_by(Bot.id)).first()
        challenge, _ = challenges.create_challenge(
            db,
            user_id=alice.id,
            bot_id=mine,
            opponent_id=opponent,
            pairs=2,
            rated=False,
            limits=CHALLENGE_LIMITS,
            redelivery_seconds=60,
        )
        db.commit()
    page.goto(f"{site.url}/challenges/{challenge.id}")
    expect(page.locator("h1")).to_contain_text(f"Challenge #{challenge.id}")
    expect(page.locator("h1 .badge.unrated")).to_have_text("unrated")
    expect(page.locator("#challenge-status")).to_have_text("open")
    expect(page.locator("#pairs-text")).to_have_text("0 / 2 pairs")
    expect(page.locator("#pairs-states")).to_have_text("2 waiting")
    expect(page.locator(".elo-value")).to_have_text("–")

    _play_one(site, challenge.id, (1.0, 0.5))  # alice's bot wins with the first seat, draws with the second
    expect(page.locator("#pairs-text")).to_have_text("1 / 2 pairs", timeout=LIVE_MS)
    expect(page.locator(".fact .wdl")).to_have_text("1 / 1 / 0")
    expect(page.locator("table.pentanomial tbody td")).to_have_text(["0", "0", "0", "1", "0"])
    _play_one(site, challenge.id, (0.0, 0.0))  # loses the first seat, wins the second
    expect(page.locator("#challenge-status")).to_have_text("finished", timeout=LIVE_MS)
    expect(page.locator(".fact .wdl")).to_have_text("2 / 1 / 1")
    expect(page.locator(".elo-value")).to_have_text(re.compile(r"^\+\d"))  # 1.5 + 1 points of 4
    expect(page.locator(".fact").nth(1)).to_contain_text("95%:")
    links = page.locator("#games table.games td.game a")
    expect(links).to_have_count(4)
    assert re.fullmatch(r"/games/\d+", links.first.get_attribute("href"))
    expect(page.locator("#challenge-updated")).to_have_text("")  # no more polling once finished
    screenshot(page, "challenge-finished")

    page.goto(f"{site.url}/bots/{opponent}")  # what the opponent's owner sees
    row = page.locator(f"#challenges tr[data-challenge-id='{challenge.id}']")
    expect(row).to_contain_text("by alice")
    expect(row).to_contain_text("2 / 2 pairs")
    expect(row.locator(".badge.unrated")).to_have_count(1)
    row.locator(f"a[href='/challenges/{challenge.id}']").click()
    expect(page).to_have_url(re.compile(rf"/challenges/{challenge.id}$"))


def test_the_bot_page_books_a_challenge_for_a_signed_in_user(page, site, screenshot):
    with session(site.engine) as db:
        uct = db.exec(select(Bot.id).where(Bot.ladder_id == site.bobail_ladder, Bot.name == "uct")).one()
        alice = db.exec(select(User).where(User.name == "alice")).one()
        owned = select(Bot).where(
            Bot.ladder_id == site.bobail_ladder, Bot.owner_id == alice.id, Bot.status == "active"
        )
        newest_first = owned.order_by(Bot.name, col(Bot.version).desc())
        choices = [f"{bot.name} v{bot.version}" for bot in db.exec(newest_first)]
    page.goto(f"{site.url}/bots/{uct}")
    expect(page.locator("#challenge-invite")).to_contain_text("Sign in to challenge this bot")
    expect(page.locator("#challenge-form")).to_be_hidden()

    page.evaluate("token => localStorage.setItem('arena.token', token)", site.token)
    page.reload()
    form = page.locator("#challenge-form")
    expect(form).to_be_visible()
    expect(page.locator("#challenge-bot option")).to_have_text(choices)
    page.get_by_label("Pairs").fill("3")
    page.get_by_label("Rated").check()
    screenshot(page, "bot-page-challenge-form")
    page.get_by_role("button", name="Challenge uct").click()
    expect(page).to_have_url(re.compile(r"/challenges/\d+$"))
    expect(page.locator("h1 .badge.rated")).to_have_text("rated")
    expect(page.locator(".page-head .subtitle")).to_contain_text(f"{choices[0]} (by alice) against uct v1")
    expect(page.locator("#pairs-text")).to_have_text("0 / 3 pairs")
    screenshot(page, "challenge-booked-from-the-bot-page")
