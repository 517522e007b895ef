"""The web pages in real Chromium (Playwright), against uvicorn serving a seeded SQLite site.

Fixtures (conftest.py): `site` (the seeded, served site), `page` / `watched` (a desktop page whose
script errors fail the test), `rerate`, `hostile_bot`, `screenshot`. Without Debian's Chromium
the browser tests skip outside CI.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from arena_platform.api import pages

TIMEOUT_MS = 10_000  # for anything the page does on its own (the leaderboard polls every 3 s)
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


def frames_of(site: Any, name: str) -> dict[str, Any]:
    response = httpx.get(f"{site.url}/api/v1/games/{site.games[name]}/frames")
    response.raise_for_status()
    return response.json()


def board_in_dom(page: Page) -> str:
    """The board as the page draws it: `data-piece` of the `[data-cell]` elements, by cell index."""
    cells = page.locator("#board [data-cell]").evaluate_all(
        "cells => cells.map(cell => [Number(cell.dataset.cell), cell.dataset.piece])"
    )
    return "".join(piece for _, piece in sorted(cells))


def open_replay(page: Page, site: Any, name: str, ply: int | None = None) -> None:
    page.goto(f"{site.url}/games/{site.games[name]}" + ("" if ply is None else f"#ply={ply}"))
    expect(page.locator("#replay")).to_have_attribute("data-ready", "true", timeout=TIMEOUT_MS)


def searched_plies(frames: dict[str, Any]) -> list[int]:
    return [
        frame["ply"] for frame in frames["frames"] if any(i and i.get("top") for i in frame["insights"] or ())
    ]


def test_a_missing_frontend_folder_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setattr(pages, "FRONTEND", tmp_path / "frontend")
    with pytest.raises(pages.FrontendMissing, match=r"frontend/templates: run Arena from its source tree"):
        pages.install_pages(FastAPI())


def test_the_frames_api_replays_the_game_through_the_engine(site):
    frames = frames_of(site, "pente")
    assert len(frames["frames"]) == site.steps["pente"] + 1
    final = frames["frames"][-1]
    assert final["view"]["board"] == site.final_boards["pente"]
    assert final["actions"] is None
    assert final["view"]["moves"] == {}
    for frame in frames["frames"][:-1]:
        named = {",".join(map(str, action)) for action in frame["actions"]}
        for insight in frame["insights"]:
            named |= {",".join(map(str, move["action"])) for move in (insight or {}).get("top", ())}
        assert set(frame["view"]["moves"]) <= named
        assert all(",".join(map(str, action)) in frame["view"]["moves"] for action in frame["actions"])
    missing = httpx.get(f"{site.url}/api/v1/games/999999/frames")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")


def test_the_leaderboard_ranks_the_bots_with_their_intervals_drawn(page, site):
    page.goto(site.url + "/")
    rows = page.locator("#leaderboard tbody tr")
    expect(rows).to_have_count(len(site.ranking) + 1)
    order = rows.evaluate_all("rows => rows.map(row => Number(row.dataset.botId))")
    assert order == [bot_id for bot_id, *_ in site.ranking] + [site.unrated]
    spans = []
    for bot_id, _, rating, low, high in site.ranking:
        row = page.locator(f'tr[data-bot-id="{bot_id}"]')
        expect(row.locator(".rating")).to_contain_text(str(round(rating)))
        expect(row.locator(".interval-text")).to_have_text(f"{round(low)} to {round(high)}")
        bar = row.locator("svg.interval-bar")
        assert [float(bar.get_attribute(name)) for name in ("data-low", "data-rating", "data-high")] == [
            low,
            rating,
            high,
        ]
        interval = bar.locator("rect.interval")
        start, width = (float(interval.get_attribute(name)) for name in ("x", "width"))
        estimate = float(bar.locator("line.estimate").get_attribute("x1"))
        assert start < estimate < start + width
        spans.append((start, width))
    # One scale for all bars: better bots sit further right, and bar widths follow the intervals.
    assert [start for start, _ in spans] == sorted((start for start, _ in spans), reverse=True)
    widths = [high - low for *_, low, high in site.ranking]
    assert spans[1][1] / spans[0][1] == pytest.approx(widths[1] / widths[0], rel=1e-3)
    expect(page.locator(f'tr[data-bot-id="{site.ranking[2][0]}"] .badge.house')).to_be_visible()
    expect(page.locator(f'tr[data-bot-id="{site.xss_bot}"] .provisional-mark')).to_be_visible()
    expect(page.locator(f'tr[data-bot-id="{site.unrated}"] .rating')).to_have_text("unrated")
    progress = page.locator("#progress")
    for text in ("3 done", "2 running", "6 queued", "1 failed", "pairings/min"):
        expect(progress).to_contain_text(text)


def test_the_leaderboard_and_its_tabs_read_the_games_titles(page, site):
    page.goto(f"{site.url}/ladders/{site.csb_ladder}")
    expect(page.locator("h1")).to_have_text("Coders Strike Back leaderboard")
    titles = ["Bobail", "Pente", "Spring Challenge 2021", "Smash the Code", "Coders Strike Back"]
    expect(page.locator(".ladder-switch a")).to_contain_text(titles)  # not bobail-v1-8, ...
    expect(page.locator(".ladder-switch a[aria-current=page]")).to_have_text("Coders Strike Back")


def test_leaderboard_columns_sort(page, site):
    page.goto(site.url + "/")
    page.get_by_role("button", name="Bot").click()
    names = page.locator("#leaderboard tbody .bot-link").all_inner_texts()
    assert names == sorted(names, key=str.lower)
    page.get_by_role("button", name="Rating").click()
    order = page.locator("#leaderboard tbody tr").evaluate_all(
        "rows => rows.map(row => Number(row.dataset.botId))"
    )
    assert order[: len(site.ranking)] == [bot_id for bot_id, *_ in site.ranking]
    expect(page.locator("th", has=page.get_by_role("button", name="Rating"))).to_have_attribute(
        "aria-sort", "descending"
    )


def test_the_leaderboard_follows_a_refit_without_reloading(page, site, rerate):
    page.goto(site.url + "/")
    page.evaluate("window.sameDocument = true")
    random_bot = site.ranking[-1][0]
    rerate(random_bot, 400.0)
    first_row = page.locator("#leaderboard tbody tr").first
    expect(first_row).to_have_attribute("data-bot-id", str(random_bot), timeout=TIMEOUT_MS)
    expect(first_row.locator(".interval-text")).to_have_text("320 to 480")
    expect(first_row.locator(".trend.up")).to_contain_text("440")
    assert page.evaluate("window.sameDocument") is True
    expect(page.locator("#updated")).to_contain_text("updated")


def test_the_progress_line_estimates_the_time_left_at_the_ladders_pace_from_the_first_view(
    page, site, finish_pairings
):
    page.goto(site.url + "/")
    progress = page.locator("#progress")
    eta = re.compile(r"left at \d+(\.\d)? pairings/min")
    expect(progress.locator(".eta")).to_contain_text(eta, timeout=1000)  # at once: the first poll is in 3 s
    finish_pairings(2)
    expect(progress).to_contain_text("5 done", timeout=TIMEOUT_MS)
    expect(progress).to_contain_text("4 queued")
    expect(progress.locator(".eta")).to_contain_text(eta)


def test_hostile_bot_names_are_shown_as_text(watched, site):
    """Names are data everywhere: visible as typed, never markup (no <img>, no script, no dialog)."""
    page = watched.page
    pages = {
        site.xss_name: [
            "/",
            f"/bots/{site.xss_bot}",
            f"/games?bot={site.xss_bot}",
            f"/games/{site.games['illegal']}",
        ],
        site.script_name: [f"/ladders/{site.pente_ladder}", f"/bots/{site.script_bot}"],
    }
    for name, paths in pages.items():
        for path in paths:
            page.goto(site.url + path)
            expect(page.get_by_text(name).filter(visible=True).first).to_be_visible()
            assert page.locator("main img").count() == 0, path
            assert page.locator("script:not([src]):not([type='application/json'])").count() == 0, path
    page.goto(f"{site.url}/games/{site.games['illegal']}")
    expect(page.locator("#replay")).to_have_attribute("data-ready", "true")
    expect(page.locator(".seats")).to_contain_text(site.xss_name)
    assert watched.dialogs == []


@pytest.mark.parametrize(("name", "step"), [("bobail", "button"), ("pente", "keyboard")])
def test_the_replay_steps_to_the_engines_final_position(page, site, name, step):
    open_replay(page, site, name)
    replay = page.locator("#replay")
    expect(replay).to_have_attribute("data-ply", "0")
    forward = page.get_by_role("button", name="Forward one step")
    for _ in range(site.steps[name]):
        if step == "keyboard":
            page.keyboard.press("ArrowRight")
        else:
            forward.click()
    expect(replay).to_have_attribute("data-ply", str(site.steps[name]))
    page.keyboard.press("ArrowRight")  # past the end: stays
    expect(replay).to_have_attribute("data-ply", str(site.steps[name]))
    assert board_in_dom(page) == site.final_boards[name]
    expect(page).to_have_url(re.compile(f"#ply={site.steps[name]}$"))


@pytest.mark.parametrize("name", ["bobail", "pente"])
def test_the_search_overlay_shows_at_every_searched_move(page, site, name):
    searched = searched_plies(frames_of(site, name))
    open_replay(page, site, name)
    for ply in searched[:: max(1, len(searched) // 8)]:
        page.evaluate(f"location.hash = '#ply={ply}'")
        expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))
        expect(page.locator("#board [data-heat]").first).to_be_attached()
        expect(page.locator("#search table.top-moves tbody tr").first).to_be_visible()
        headings = page.locator("#search table.top-moves").first.locator("th")
        expect(headings).to_have_text(["Move", "Visits", "Prior"])
        expect(page.locator("#search-heading")).to_have_text("Search of the move to play")
    lines = page.locator("svg.value-plot polyline.value-line")
    expect(lines).to_have_count(1)
    assert int(lines.get_attribute("data-count")) == len(searched)


def test_the_heat_map_puts_bobail_shares_on_destination_squares(page, site):
    frames = frames_of(site, "bobail")
    ply = searched_plies(frames)[0]
    frame = frames["frames"][ply]
    expected: dict[int, float] = {}
    for move in frame["insights"][0]["top"]:
        destination = frame["view"]["moves"][str(move["action"][0])][1]
        if move["share"] > 0:
            expected[destination - 1] = expected.get(destination - 1, 0) + move["share"]
    open_replay(page, site, "bobail", ply)
    heat = page.locator("#board [data-heat]").evaluate_all(
        "cells => cells.map(cell => [Number(cell.dataset.heat) - 1, Number(cell.dataset.share)])"
    )
    assert dict(heat) == pytest.approx(expected)
    page.get_by_label("Show the search heat map").uncheck()
    expect(page.locator("#board [data-heat]")).to_have_count(0)


def test_pentes_replay_strikes_the_winning_five_and_shows_each_seats_stones(page, site, screenshot):
    final = frames_of(site, "pente")["frames"][-1]["view"]
    assert final["ending"] == "five in a row"
    open_replay(page, site, "pente", ply=site.steps["pente"])
    expect(page.locator(".seats [data-seat='0'] .swatch")).to_have_class(re.compile(r"piece-black"))
    expect(page.locator(".seats [data-seat='1'] .swatch")).to_have_class(re.compile(r"piece-white"))
    line = page.locator("#board .winning-line")
    expect(line).to_have_count(1)
    assert int(line.get_attribute("data-length")) >= 5
    screenshot(page, "replay-pente-five")
    page.locator("[data-go=back]").click()  # before the last stone: no five yet
    expect(line).to_have_count(0)


def test_the_value_plot_shows_each_seats_own_estimate(page, site):
    """Values are the mover's: the bobail game's searcher sits second, the pente one first."""
    for name in ("bobail", "pente"):
        frames = frames_of(site, name)
        open_replay(page, site, name)
        series = [
            (frame["ply"], insight["value"], seat)
            for frame in frames["frames"]
            for seat, insight in zip(frame["actors"], frame["insights"] or (), strict=True)
            if insight and "value" in insight
        ]
        (seat,) = {seat for *_, seat in series}
        line = page.locator(f"svg.value-plot polyline[data-seat='{seat}']")
        drawn = [tuple(map(float, point.split(","))) for point in line.get_attribute("points").split()]
        assert len(drawn) == len(series)
        assert [x for x, _ in drawn] == sorted(x for x, _ in drawn)
        for (_, y1), (_, y2), (_, v1, _), (_, v2, _) in zip(
            drawn, drawn[1:], series, series[1:], strict=False
        ):
            if v1 != v2:
                assert (y1 > y2) == (v1 < v2)  # higher values are drawn higher up (smaller y)


def test_a_ply_in_the_url_opens_there_and_follows_the_player(page, site):
    frames = frames_of(site, "bobail")
    open_replay(page, site, "bobail", ply=5)
    replay = page.locator("#replay")
    expect(replay).to_have_attribute("data-ply", "5")
    expect(page.locator("#scrub")).to_have_value("5")
    assert board_in_dom(page) == frames["frames"][5]["view"]["board"]
    page.evaluate("location.hash = '#ply=2'")
    expect(replay).to_have_attribute("data-ply", "2")
    page.keyboard.press("ArrowRight")
    expect(replay).to_have_attribute("data-ply", "3")
    expect(page).to_have_url(re.compile("#ply=3$"))
    page.keyboard.press("End")
    expect(replay).to_have_attribute("data-ply", str(site.steps["bobail"]))
    page.keyboard.press("Home")
    expect(replay).to_have_attribute("data-ply", "0")
    page.locator("#speed").select_option("10")
    page.keyboard.press(" ")
    expect(replay).not_to_have_attribute("data-ply", "0", timeout=TIMEOUT_MS)
    page.keyboard.press(" ")
    paused_at = replay.get_attribute("data-ply")
    page.wait_for_timeout(300)
    assert replay.get_attribute("data-ply") == paused_at


def test_the_games_list_filters_and_says_how_games_ended(page, site):
    page.goto(f"{site.url}/games")
    rows = page.locator("#games tbody tr")
    expect(rows).to_have_count(len(site.games))
    illegal = page.locator(f'tr[data-game-id="{site.games["illegal"]}"] td.end')
    expect(illegal.locator(".badge")).to_have_text("illegal move")
    expect(illegal).to_contain_text("P1: illegal action 10000 on head 'move'")
    fault = page.locator(f'tr[data-game-id="{site.games["fault"]}"] td.end')
    expect(fault.locator(".badge")).to_have_text("forfeit")
    expect(fault).to_contain_text("P2: the model took longer than the 5 s safety limit")
    expect(page.locator(f'tr[data-game-id="{site.games["pente"]}"] td.end .badge')).to_have_text("normal end")
    page.locator("select[name=ladder]").select_option(str(site.pente_ladder))
    expect(rows).to_have_count(1)
    expect(page.locator(f'tr[data-game-id="{site.games["pente"]}"]')).to_be_visible()
    page.locator("select[name=ladder]").select_option("")
    page.locator("select[name=bot]").select_option(str(site.alpha))
    expect(rows).to_have_count(2)
    assert set(rows.evaluate_all("rows => rows.map(row => Number(row.dataset.gameId))")) == {
        site.games["bobail"],
        site.games["illegal"],
    }


def test_the_bot_page_plots_its_history_and_lists_its_opponents(page, site):
    page.goto(f"{site.url}/bots/{site.alpha}")
    expect(page.locator("#history polyline.rating-line")).to_have_attribute("data-count", "3")
    expect(page.locator("#history polygon.band")).to_have_count(1)
    opponents = page.locator("#opponents tbody tr")
    expect(opponents).to_have_count(2)
    expect(page.locator("#games tbody tr")).to_have_count(2)
    expect(page.locator("h1")).to_contain_text("alpha")


def test_the_upload_page_shows_the_validation_rejection(watched, site, hostile_bot, screenshot):
    page = watched.page
    page.goto(f"{site.url}/upload")
    page.get_by_label("API token").fill(site.token)
    page.get_by_label("Model file").set_input_files(
        files=[{"name": "evil.onnx", "mimeType": "application/octet-stream", "buffer": hostile_bot}]
    )
    page.get_by_label("Game").select_option("bobail")
    page.get_by_label("Name", exact=True).fill("evil")
    page.get_by_label("Player").select_option("greedy")
    page.get_by_role("button", name="Upload and validate").click()
    report = page.locator("#report")
    expect(report.locator(".code")).to_have_text("custom_domain", timeout=TIMEOUT_MS)
    expect(report.locator(".detail")).to_contain_text("operator set domain 'evil.ops'")
    expect(report.locator("h2")).to_have_text("Rejected by validation")
    screenshot(page, "upload-rejected-desktop")
    page.get_by_label("API token").fill("arena_not-a-token")
    page.get_by_role("button", name="Upload and validate").click()
    expect(report.locator(".code")).to_have_text("bad_token", timeout=TIMEOUT_MS)
    assert [error.split("status of ")[-1] for error in watched.errors] == [
        "422 (Unprocessable Entity)",
        "401 (Unauthorized)",
    ]
    watched.errors.clear()


@pytest.mark.parametrize(
    "path", ["/bots/999999", "/games/999999", "/ladders/999999", "/bots/not-an-id", "/no/such/page"]
)
def test_unknown_ids_get_the_not_found_page(watched, site, path):
    response = watched.page.goto(site.url + path)
    assert response.status == 404
    expect(watched.page.locator("h1")).to_have_text("Not found")
    assert [error.split("status of ")[-1] for error in watched.errors] == ["404 (Not Found)"]
    watched.errors.clear()


def test_screenshots_of_every_page(browser: Browser, site, screenshot: Callable[[Page, str], Path]):
    """Every page at laptop and phone size under artifacts/screenshots/, for people to look at."""
    bobail_ply = searched_plies(frames_of(site, "bobail"))[2]
    pente_ply = searched_plies(frames_of(site, "pente"))[-1]
    pages = {
        "leaderboard": "/",
        "ladder-pente": f"/ladders/{site.pente_ladder}",
        "bot": f"/bots/{site.alpha}",
        "games": "/games",
        "replay-bobail": f"/games/{site.games['bobail']}#ply={bobail_ply}",
        "replay-pente": f"/games/{site.games['pente']}#ply={pente_ply}",
        "replay-spring2021": f"/games/{site.games['spring2021']}#ply={site.steps['spring2021'] // 2}",
        "upload": "/upload",
        "my-bots": "/me/bots",  # signed out: it asks for a token
        "not-found": "/bots/999999",
    }
    for device, options in (("desktop", DESKTOP), ("phone", PHONE)):
        context = browser.new_context(**options)
        page = context.new_page()
        for name, path in pages.items():
            page.goto(site.url + path)  # the modules draw before "load", the replay once its frames come
            if name.startswith("replay"):
                expect(page.locator("#replay")).to_have_attribute("data-ready", "true")
            assert screenshot(page, f"{name}-{device}").stat().st_size > 0
        context.close()


def test_the_api_docs_render_with_no_access_beyond_this_server(watched, site):
    """Swagger UI's files come from Arena itself: with every other host cut off, /docs still draws
    the API and the bot contract."""
    page = watched.page
    outside: list[str] = []

    def only_this_server(route) -> None:
        if route.request.url.startswith(site.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_server)
    page.goto(f"{site.url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Arena", timeout=TIMEOUT_MS)
    expect(page.locator(".swagger-ui .info h2", has_text="A bot")).to_be_visible()
    expect(page.locator(".swagger-ui .info", has_text="43 x 5 x 5")).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/predict")).to_be_visible()
    assert outside == []


@pytest.mark.parametrize(
    ("frames", "reason"),
    [
        ("unreachable", "Arena could not be reached"),
        ('{"game": "bobail", "frames": null}', "this viewer failed to draw it"),  # breaks the viewer
        ("<html>proxy error</html>", "the server's answer was not readable"),
    ],
)
def test_the_replay_viewer_says_in_words_why_it_cannot_show_a_game(watched, site, frames, reason):
    page = watched.page

    def answer(route) -> None:
        if frames == "unreachable":
            route.abort()
        else:
            route.fulfill(status=200, content_type="application/json", body=frames)

    page.route("**/api/v1/games/*/frames", answer)
    page.goto(f"{site.url}/games/{site.games['bobail']}")
    expect(page.locator("#replay")).to_have_attribute("data-ready", "error", timeout=TIMEOUT_MS)
    shown = page.locator("#ply").text_content()
    assert shown.startswith("The replay cannot be shown: ")
    assert reason in shown
    assert not re.search(r"TypeError|Failed to fetch|JSON|null|undefined|properties", shown), shown
    watched.errors.clear()  # the failed request, and the viewer's bug logged for developers


def test_the_games_list_names_each_games_ladder(page, site):
    page.goto(f"{site.url}/games")
    expect(page.locator("#games thead th", has_text="Ladder")).to_have_count(1)
    for name, ladder_id in (("bobail", site.bobail_ladder), ("pente", site.pente_ladder)):
        cell = page.locator(f'tr[data-game-id="{site.games[name]}"] td.ladder a')
        expect(cell).to_have_attribute("href", f"/ladders/{ladder_id}")
        expect(cell).to_contain_text(name)


def test_a_bot_with_games_but_no_rating_yet_does_not_say_it_has_none(page, site, unrate):
    unrate(site.alpha)
    page.goto(f"{site.url}/bots/{site.alpha}")
    expect(page.locator("#games tbody tr")).to_have_count(2)
    expect(page.locator("#history")).to_contain_text("its games count from the next refit")
    expect(page.locator(".facts")).to_contain_text("rated at the next refit")
    expect(page.locator("main")).not_to_contain_text("no games yet")
    expect(page.locator("main")).not_to_contain_text("has not finished a game")
