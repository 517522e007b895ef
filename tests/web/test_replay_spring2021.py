"""The Spring 2021 replay in real Chromium: the hex board drawn from the engine's view, stepping
through days, the two seats' heat maps and value estimates.

The site (conftest.py) holds a Spring 2021 game between two tiny networks, one greedy and one
sampling, whose insights carry their policies' top moves and a value.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from test_pages import TIMEOUT_MS, frames_of, open_replay, searched_plies

GAME = "spring2021"
CELLS = 37


def cell_text(cell: dict[str, Any]) -> str:
    """The engine's text picture of a cell (render.py): . empty, # hole, else owner, size, z, ~."""
    tree = cell["tree"]
    if tree is None:
        return "." if cell["richness"] else "#"
    marks = ("z" if tree["dormant"] else "") + ("~" if tree["spooky"] else "")
    return "AB"[tree["owner"]] + str(tree["size"]) + marks


def drawn_cells(page: Page) -> dict[int, dict[str, str]]:
    """Cell index -> the data the page drew it with (piece, richness, shadow)."""
    cells = page.locator("#board g.cell[data-cell]").evaluate_all(
        "cells => cells.map(cell => [Number(cell.dataset.cell), {piece: cell.dataset.piece,"
        " richness: cell.dataset.richness, shadow: cell.dataset.shadow}])"
    )
    return dict(cells)


def drawn_standing(page: Page) -> dict[str, Any]:
    """The day, the sun's direction and both players' sun and score as drawn."""
    board = page.locator("#board svg")
    cards = page.locator("#board .player-card").evaluate_all(
        "cards => cards.map(card => [Number(card.dataset.sun), Number(card.dataset.score)])"
    )
    return {
        "day": int(board.get_attribute("data-day")),
        "sun_direction": int(board.get_attribute("data-sun-direction")),
        "players": [tuple(card) for card in cards],
    }


def expected_standing(view: dict[str, Any]) -> dict[str, Any]:
    return {
        "day": view["day"],
        "sun_direction": view["sun_direction"],
        "players": [(player["sun"], player["score"]) for player in view["players"]],
    }


def test_the_board_draws_every_hex_and_tree_of_the_engines_view(page, site):
    frames = frames_of(site, GAME)["frames"]
    open_replay(page, site, GAME)
    for ply in (0, len(frames) // 2, len(frames) - 1):
        page.evaluate(f"location.hash = '#ply={ply}'")
        expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))
        view = frames[ply]["view"]
        drawn = drawn_cells(page)
        assert len(drawn) == CELLS
        for cell in view["cells"]:
            assert drawn[cell["index"]] == {
                "piece": cell_text(cell),
                "richness": str(cell["richness"]),
                "shadow": str(cell["shadow"]),
            }, (ply, cell)
        trees = sum(cell["tree"] is not None for cell in view["cells"])
        assert page.locator("#board .cells .tree").count() == trees
        holes = sum(cell["richness"] == 0 for cell in view["cells"])
        assert page.locator("#board .hole-cross").count() == holes
        assert drawn_standing(page) == expected_standing(view)
    expect(page.locator("#board .player-card[data-seat='1']")).to_contain_text("final score")


def test_stepping_changes_the_day_and_the_standing(page, site):
    frames = frames_of(site, GAME)["frames"]
    new_day = next(ply for ply, frame in enumerate(frames) if frame["view"]["day"] > frames[0]["view"]["day"])
    open_replay(page, site, GAME)
    replay = page.locator("#replay")
    forward = page.get_by_role("button", name="Forward one step")
    for ply in range(1, new_day + 1):
        forward.click()
        expect(replay).to_have_attribute("data-ply", str(ply))
        assert drawn_standing(page) == expected_standing(frames[ply]["view"])
    expect(page.locator("#board-caption")).to_contain_text(f"Day {frames[new_day]['view']['day']} of 0..23")
    page.keyboard.press("ArrowLeft")
    expect(replay).to_have_attribute("data-ply", str(new_day - 1))
    assert drawn_standing(page) == expected_standing(frames[new_day - 1]["view"])
    actions = frames[new_day - 1]["view"]["day_actions"]["frames"]
    assert page.locator("#board .day-actions").get_attribute("data-frames") == str(len(actions))
    for command in actions[-1]:
        if command:
            expect(page.locator("#board .day-actions")).to_contain_text(command[:20])
    page.keyboard.press("End")
    last = len(frames) - 1
    expect(replay).to_have_attribute("data-ply", str(last))
    assert drawn_standing(page) == expected_standing(frames[last]["view"])


def test_the_heat_map_gives_each_seat_its_half_of_the_hexes(page, site):
    frames = frames_of(site, GAME)["frames"]
    both = [ply for ply in searched_plies({"frames": frames}) if len(frames[ply]["actors"]) == 2]
    ply = both[0]
    frame = frames[ply]
    expected: dict[tuple[int, str], float] = {}
    for seat, insight in zip(frame["actors"], frame["insights"], strict=True):
        for move in insight["top"]:
            at = frame["view"]["moves"][str(move["action"][0])]
            key = (seat, "wait" if at["cell"] is None else str(at["cell"]))
            if move["share"] > 0:
                expected[key] = expected.get(key, 0) + move["share"]
    open_replay(page, site, GAME, ply)
    heat = page.locator("#board [data-heat]").evaluate_all(
        "shapes => shapes.map(shape =>"
        " [Number(shape.dataset.seat), shape.dataset.heat, Number(shape.dataset.share)])"
    )
    assert {(seat, at): share for seat, at, share in heat} == pytest.approx(expected)
    fills = page.locator("#board .heat-layer [data-heat]").evaluate_all(
        "shapes => shapes.map(shape => [Number(shape.dataset.seat), getComputedStyle(shape).fill])"
    )
    assert len({fill for _, fill in fills}) == len({seat for seat, _ in fills}) == 2  # a colour per seat
    assert page.locator("#board [data-played]").count() == len(frame["actions"])
    played = " ".join(
        f"P{seat + 1} " + frame["view"]["moves"][str(action[0])]["commands"][str(seat)]
        for seat, action in zip(frame["actors"], frame["actions"], strict=True)
    )
    expect(page.locator("#ply")).to_contain_text(played.replace(" P2", ", P2"))
    expect(page.locator("#search table.top-moves")).to_have_count(2)
    page.get_by_label("Show the search heat map").uncheck()
    expect(page.locator("#board [data-heat]")).to_have_count(0)
    expect(page.locator("#board [data-played]")).to_have_count(0)


def test_the_value_plot_has_both_seats(page, site):
    frames = frames_of(site, GAME)["frames"]
    open_replay(page, site, GAME)
    for seat in (0, 1):
        count = sum(
            1
            for frame in frames
            for actor, insight in zip(frame["actors"], frame["insights"] or (), strict=True)
            if actor == seat and insight and "value" in insight
        )
        line = page.locator(f"svg.value-plot polyline[data-seat='{seat}']")
        expect(line).to_have_attribute("data-count", str(count), timeout=TIMEOUT_MS)


@pytest.mark.parametrize(("ply", "scheme"), [("first-day", "light"), ("busy", "light"), ("busy", "dark")])
def test_screenshot_of_the_spring_replay(page, site, screenshot, ply, scheme):
    """The page and the board alone under artifacts/screenshots/, for people to look at."""
    frames = frames_of(site, GAME)["frames"]
    trees = [sum(cell["tree"] is not None for cell in frame["view"]["cells"]) for frame in frames]
    at = 0 if ply == "first-day" else max(range(len(frames) - 1), key=trees.__getitem__)
    page.emulate_media(color_scheme=scheme)
    open_replay(page, site, GAME, at)
    whole = screenshot(page, f"replay-spring2021-{ply}-{scheme}")
    board = whole.with_name(f"replay-spring2021-{ply}-{scheme}-board.png")
    page.locator("#board").screenshot(path=str(board))  # the board alone, at full resolution
    assert whole.stat().st_size > 0
    assert board.stat().st_size > 0
