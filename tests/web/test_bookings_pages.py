"""The bot page's queue (what is booked for the bot, its place and expected start) and the "My bots"
page, in real Chromium against the seeded site (tests/web/conftest.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import expect
from sqlmodel import delete

from arena_platform.db import session
from arena_platform.models import Pairing

TIMEOUT_MS = 10_000  # for what a page does on its own (the bot page polls its queue every 5 s)


@pytest.fixture
def book(site) -> Iterator[Callable[[int, int], None]]:
    """`book(bot_a, bot_b)`: queues a bobail pairing, as a scheduling round would; removed after the test."""
    booked: list[int] = []

    def add(bot_a: int, bot_b: int) -> None:
        with session(site.engine) as db:
            pairing = Pairing(ladder_id=site.bobail_ladder, bot_a_id=bot_a, bot_b_id=bot_b, seed=1)
            db.add(pairing)
            db.commit()
            booked.append(pairing.id)

    yield add
    with session(site.engine) as db:
        db.exec(delete(Pairing).where(Pairing.id.in_(booked)))
        db.commit()


def test_the_bot_page_says_what_is_booked_and_where_its_next_pairing_stands(page, site, book):
    page.goto(f"{site.url}/bots/{site.alpha}")  # 2 running and 6 queued against the XSS bot
    queue = page.locator("#queue")
    expect(queue.locator(".queue-summary")).to_have_text("Pairings booked: 2 playing now, 6 waiting.")
    expect(queue.locator(".queue-next")).to_have_attribute("data-ahead", "0")
    expect(queue.locator(".queue-next")).to_contain_text("first in the ladder's queue")
    expect(queue.locator("tbody tr[data-status=running]")).to_have_count(2)
    expect(queue.locator("tbody tr[data-status=queued]")).to_have_count(6)
    expect(queue.locator("tbody tr").first.locator("a.bot-link")).to_contain_text(site.xss_name)

    page.goto(f"{site.url}/bots/{site.unrated}")
    expect(queue.locator(".queue-summary")).to_contain_text("Nothing is booked for it right now")
    book(site.unrated, site.alpha)  # booked after alpha's 6: the page follows without reloading
    expect(queue.locator(".queue-next")).to_have_attribute("data-ahead", "6", timeout=TIMEOUT_MS)
    next_start = re.compile(r"6 pairings of the ladder are ahead of its next one: it should start in .+/min")
    expect(queue.locator(".queue-next")).to_contain_text(next_start)
    expect(queue.locator(".queue-summary")).to_have_text("Pairings booked: 1 waiting.")


def test_my_bots_signs_in_with_a_token_kept_in_the_browser_and_lists_the_users_bots(watched, site):
    page = watched.page
    page.goto(f"{site.url}/me/bots")
    expect(page.locator("#nav-me")).to_have_text("Sign in")
    page.get_by_label("API token").fill("arena_not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#sign-in-error")).to_contain_text("unknown or revoked")
    assert [error.split("status of ")[-1] for error in watched.errors] == ["401 (Unauthorized)"]
    watched.errors.clear()

    page.get_by_label("API token").fill(site.token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".signed-in .user")).to_have_text("alice")
    names = ["alpha", "rookie", "stone-cold", "sprout", "twinkle", "pod-dqn"]  # by ladder; not mallory's
    expect(page.locator(".owned-bot h3")).to_contain_text(names)
    alpha = page.locator(f'.versions tr[data-bot-id="{site.alpha}"]')
    expect(alpha.locator(".pairings")).to_have_text("2 playing, 6 waiting")
    expect(alpha.locator(".rating")).to_contain_text("250 (170 to 330)")
    expect(page.locator("#sign-in")).to_be_hidden()
    expect(page.locator("#nav-me")).to_have_text("My bots")

    page.goto(f"{site.url}/upload")  # signed in on every page of this browser
    expect(page.get_by_label("API token")).to_have_value(site.token)
    page.locator("#nav-me").click()
    expect(page.locator(".signed-in .user")).to_have_text("alice")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#nav-me")).to_have_text("Sign in")
    assert page.evaluate("localStorage.length") == 0
