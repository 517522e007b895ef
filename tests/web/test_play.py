"""Playing a bot in Chromium: a whole Bobail game by clicking the board (pieces, then squares),
the bot's search shown on demand, resignation, a new game, the replay of a game against a person,
and Pente's one-click moves."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from sqlmodel import select

from arena_platform.db import session
from arena_platform.models import Bot, HumanGame

MOVE_MS = 15_000  # the bot's answer (8 simulations) and the redraw
MAX_CLICKS = 600  # a Bobail game against a random bot is far shorter


def _house_bot(site, ladder_id: int, name: str) -> int:
    with session(site.engine) as db:
        return db.exec(select(Bot.id).where(Bot.ladder_id == ladder_id, Bot.name == name)).one()


def _start(page: Page, site, bot_id: int, *, bot_first: bool = False) -> None:
    page.goto(f"{site.url}/bots/{bot_id}")
    if bot_first:
        page.get_by_label("The bot moves first").check()
    page.locator("#play-form button").click()
    page.wait_for_url("**/play/*")
    expect(page.locator("#play")).to_have_attribute("data-ready", "true")


def _wait_for_turn(page: Page) -> str:
    """Waits until the person may move or the game is over; returns the page's status."""
    page.wait_for_function(
        "() => { const p = document.getElementById('play');"
        " return p.dataset.status === 'over' || p.dataset.yourTurn === 'true'; }",
        timeout=MOVE_MS,
    )
    return page.locator("#play").get_attribute("data-status")


def _click_bobail_move(page: Page) -> None:
    """One Bobail move by clicking: a piece (unless the bobail is picked already), then an empty square."""
    if not page.locator("#board .cell.picked").count():
        page.locator("#board .cell.pickable").first.click()
    page.locator('#board .cell.pickable[data-piece="."]').first.click()


def test_a_whole_bobail_game_is_played_by_clicking(page, site, screenshot):
    _start(page, site, _house_bot(site, site.bobail_ladder, "random"))
    for _ in range(MAX_CLICKS):
        if _wait_for_turn(page) == "over":
            break
        ply = page.locator("#play").get_attribute("data-ply")
        _click_bobail_move(page)
        page.wait_for_function(
            f"() => document.getElementById('play').dataset.ply !== '{ply}'", timeout=MOVE_MS
        )
    expect(page.locator("#status")).to_contain_text(": ")  # "You won: ..." / "The bot won: ..."
    expect(page.locator("#resign")).to_be_disabled()
    screenshot(page, "play-bobail-over")
    game_id = int(page.url.rsplit("/", 1)[1])
    with session(site.engine) as db:
        stored = db.get(HumanGame, game_id)
    assert stored.status == "over"
    assert stored.human_score is not None

    page.locator("#replay-link").click()  # the game in the replay viewer
    expect(page.locator("#replay")).to_have_attribute("data-ready", "true")
    expect(page.locator("#scrub")).to_have_attribute("max", str(stored.ply))
    expect(page.locator(".seats [data-seat='0']")).to_contain_text("a person")
    page.locator("[data-go=first]").click()
    expect(page.locator("#ply")).to_contain_text("P1 a person to move")  # as the header names them

    page.goto(f"{site.url}/bots/{stored.bot_id}")  # the bot page lists it, with its result
    row = page.locator(f'#human-games [data-human-game-id="{game_id}"]')
    expect(row).to_contain_text({1.0: "the person won", 0.5: "draw", 0.0: "the bot won"}[stored.human_score])


def test_the_bots_search_is_shown_on_demand_and_a_game_can_be_resigned_and_restarted(page, site):
    _start(page, site, _house_bot(site, site.bobail_ladder, "uct"), bot_first=True)
    assert _wait_for_turn(page) == "playing"
    expect(page.locator("#board [data-heat]")).to_have_count(0)
    page.get_by_label("Show what the bot thinks").check()
    expect(page.locator("#board [data-heat]").first).to_be_visible()
    expect(page.locator("#search .top-moves")).to_be_visible()
    first_game = page.url
    page.locator("#resign").click()
    expect(page.locator("#resign")).to_have_text("Click again to resign")
    page.locator("#resign").click()
    expect(page.locator("#play")).to_have_attribute("data-status", "over")
    expect(page.locator("#status")).to_contain_text("The bot won: player 2 resigns.")
    page.locator("#new-game").click()
    page.wait_for_url(lambda url: url != first_game and "/play/" in url)
    expect(page.locator("#play")).to_have_attribute("data-ready", "true")


def test_pente_moves_are_one_click_and_a_watcher_cannot_move(page, site, browser):
    _start(page, site, _house_bot(site, site.pente_ladder, "random"))
    _wait_for_turn(page)
    page.locator("#board .stone.pickable").first.click()
    page.wait_for_function("() => document.getElementById('play').dataset.ply === '2'", timeout=MOVE_MS)
    expect(page.locator("#board .stone.black")).to_have_count(1)
    expect(page.locator("#board .stone.white")).to_have_count(1)

    watcher = browser.new_context().new_page()  # another browser: no key, so it only watches
    watcher.goto(page.url)
    expect(watcher.locator("#status")).to_contain_text("You are watching")
    expect(watcher.locator("#board .pickable")).to_have_count(0)
    watcher.context.close()


def test_spring2021_moves_are_one_click_on_a_cell_or_on_wait(page, site):
    _start(page, site, _house_bot(site, site.spring_ladder, "random"))
    _wait_for_turn(page)
    page.locator('#board [data-cell="wait"].pickable').click()  # the person waits; the bot acts alone
    page.wait_for_function("() => document.getElementById('play').dataset.ply !== '0'", timeout=MOVE_MS)
    _wait_for_turn(page)
    before = page.locator("#play").get_attribute("data-ply")
    page.locator("#board .cell.pickable").first.click()
    page.wait_for_function(
        f"() => document.getElementById('play').dataset.ply !== '{before}'", timeout=MOVE_MS
    )
