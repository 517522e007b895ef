"""Smash the Code in real Chromium: both wells and the queue drawn from the engine's view, the heat
map of each seat's placements, a chain stepped through one clearing at a time, the skulls that
arrived outlined, and a few moves played against a bot on /play by clicking a column.

The site (conftest.py) holds a Smash game between a tiny network playing greedy (its insights carry
its policy's top placements) and the chain house bot, which sets off chains of up to 6 steps.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from test_pages import TIMEOUT_MS, frames_of, open_replay, searched_plies
from test_play import MOVE_MS, _house_bot, _start, _wait_for_turn

GAME = "smash"
EMPTY = ["." * 6] * 12


def drawn_well(page: Page, seat: int) -> list[str]:
    """The rows of `seat`'s well as the page drew them (top row first, as in the view)."""
    blocks = page.locator(f"#board .well[data-seat='{seat}'] .blocks .block").evaluate_all(
        "blocks => blocks.map(b => [Number(b.dataset.row), Number(b.dataset.col), b.dataset.piece])"
    )
    rows = [list(row) for row in EMPTY]
    for row, column, piece in blocks:
        rows[row][column] = piece
    return ["".join(row) for row in rows]


def show(page: Page, ply: int) -> None:
    page.evaluate(f"location.hash = '#ply={ply}'")
    expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))


def played_outcomes(frame: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Seat -> the outcome of the placement it played from `frame` (the engine's placement_view)."""
    return {
        seat: frame["view"]["moves"][str(action[0])]["outcomes"][seat]
        for seat, action in zip(frame["actors"], frame["actions"] or (), strict=True)
    }


def arrived_skulls(rows: list[str], settled: list[str]) -> int:
    """Skulls in `rows` where the well was empty once the seat's own turn settled."""
    return sum(
        piece == "0" and before == "."
        for row, old in zip(rows, settled, strict=True)
        for piece, before in zip(row, old, strict=True)
    )


def test_both_wells_the_queue_and_the_scores_are_drawn_from_the_engines_view(page, site):
    frames = frames_of(site, GAME)["frames"]
    open_replay(page, site, GAME)
    for ply in (0, len(frames) // 2, len(frames) - 1):
        show(page, ply)
        view = frames[ply]["view"]
        for seat in (0, 1):
            assert drawn_well(page, seat) == view["wells"][seat], (ply, seat)
            card = page.locator(f"#board .player-card[data-seat='{seat}']")
            expect(card).to_have_attribute("data-score", str(view["players"][seat]["score"]))
        pairs = " ".join(f"{a}{b}" for a, b in view["queue"])
        expect(page.locator("#board .queue")).to_have_attribute("data-pairs", pairs)
    assert any(piece == "0" for row in frames[-1]["view"]["wells"][0] for piece in row)  # buried
    expect(page.locator("#board-caption")).to_contain_text("Game over")
    expect(page.locator("#board .player-card[data-seat='1']")).to_contain_text("wins")


def test_the_heat_map_shades_where_each_seats_placements_would_land(page, site):
    frames = frames_of(site, GAME)["frames"]
    ply = searched_plies({"frames": frames})[3]
    frame = frames[ply]
    expected: dict[tuple[int, str], float] = {}
    for seat, insight in zip(frame["actors"], frame["insights"], strict=True):
        for move in insight["top"] if insight else ():
            outcome = frame["view"]["moves"][str(move["action"][0])]["outcomes"][seat]
            cells = "|".join(sorted(f"{row},{column}" for row, column in outcome["landing"]))
            if move["share"] > 0:
                expected[seat, cells] = expected.get((seat, cells), 0) + move["share"]
    open_replay(page, site, GAME, ply)
    shaded = page.locator("#board [data-heat]").evaluate_all(
        "boxes => boxes.map(box => [Number(box.dataset.seat), Number(box.dataset.share)])"
    )
    assert len(shaded) == len(expected)
    for seat in (0, 1):
        want = sum(share for (at_seat, _), share in expected.items() if at_seat == seat)
        assert sum(share for at_seat, share in shaded if at_seat == seat) == pytest.approx(want)
    expect(page.locator("#board [data-played]")).to_have_count(2)
    expect(page.locator("#search table.top-moves")).to_have_count(1)  # the chain bot does not search
    page.get_by_label("Show the search heat map").uncheck()
    expect(page.locator("#board [data-heat]")).to_have_count(0)


def test_a_chain_is_stepped_through_one_clearing_at_a_time(page, site, screenshot):
    frames = frames_of(site, GAME)["frames"]
    ply, seat, outcome = max(
        (
            (ply + 1, seat, outcome)
            for ply, frame in enumerate(frames[:-1])
            for seat, outcome in played_outcomes(frame).items()
        ),
        key=lambda found: len(found[2]["steps"]),
    )
    steps = outcome["steps"]
    assert len(steps) >= 3
    open_replay(page, site, GAME, ply)
    row = page.locator(f"#board .chain-row[data-seat='{seat}']")
    well = page.locator(f"#board .well[data-seat='{seat}']")
    expect(row).to_have_attribute("data-steps", str(len(steps)))
    expect(row).to_contain_text(f"chain of {len(steps)}")
    expect(row).to_contain_text(f"the chain scored +{outcome['points']}")
    expect(well).to_have_attribute("data-stage", "now")
    for index, step in enumerate(steps):
        row.locator(f"[data-chain-stage='{index}']").click()
        expect(well).to_have_attribute("data-stage", str(index))
        assert drawn_well(page, seat) == step["well"]
        cleared = sum(len(group) for group in step["groups"]) + len(step["skulls"])
        expect(well.locator(".block.clearing")).to_have_count(cleared)
        expect(row).to_contain_text(f"Step {index + 1}: {step['blocks']} ")
        expect(row).to_contain_text(f"= {step['points']}")
        if index == 1:
            page.locator("#board").screenshot(path=str(screenshot(page, "replay-smash-chain-step")))
    row.locator("[data-chain-stage='now']").click()
    expect(well).to_have_attribute("data-stage", "now")
    assert drawn_well(page, seat) == frames[ply]["view"]["wells"][seat]
    row.locator("[data-chain-stage='play']").click()  # the animation runs from the first step on
    expect(well).to_have_attribute("data-stage", "0")
    expect(well).to_have_attribute("data-stage", "1", timeout=TIMEOUT_MS)
    page.keyboard.press("ArrowLeft")  # another position opens on now, with its own chain or none
    expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply - 1))
    expect(well).to_have_attribute("data-stage", "now")


def test_the_skulls_that_arrived_this_turn_are_outlined(page, site):
    frames = frames_of(site, GAME)["frames"]
    arrivals = [
        (ply + 1, seat, arrived_skulls(frames[ply + 1]["view"]["wells"][seat], outcome["well"]))
        for ply, frame in enumerate(frames[:-1])
        for seat, outcome in played_outcomes(frame).items()
    ]
    ply, seat, count = next(found for found in arrivals if found[2])
    open_replay(page, site, GAME, ply)
    expect(page.locator(f"#board .well[data-seat='{seat}'] .block.arrived")).to_have_count(count)
    expect(page.locator(f"#board .chain-row[data-seat='{seat}']")).to_contain_text(f"{count} skulls arrived")
    show(page, 0)
    expect(page.locator("#board .block.arrived")).to_have_count(0)


def test_the_whole_game_steps_through_without_errors(page, site, screenshot):
    frames = frames_of(site, GAME)["frames"]
    open_replay(page, site, GAME)
    for ply in range(1, len(frames)):
        page.keyboard.press("ArrowRight")
        expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))
    busiest = max(
        range(len(frames)), key=lambda ply: sum(r.count(".") == 0 for r in frames[ply]["view"]["wells"][1])
    )
    show(page, busiest)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.locator("#board").screenshot(path=str(screenshot(page, f"replay-smash-{scheme}")))


def test_a_person_places_pairs_by_picking_a_column_and_rotating(page, site, screenshot):
    _start(page, site, _house_bot(site, site.smash_ladder, "random"))
    assert _wait_for_turn(page) == "playing"
    targets = page.locator("#board .column-target.pickable")
    expect(targets).to_have_count(6)  # B on top of A fits every column of an empty well
    targets.nth(2).hover()
    expect(page.locator("#board .well[data-seat='0'] .block.ghost")).to_have_count(2)
    targets.nth(2).click()
    page.wait_for_function("() => document.getElementById('play').dataset.ply === '1'", timeout=MOVE_MS)
    _wait_for_turn(page)
    assert [row[2] for row in drawn_well(page, 0)[-2:]] != [".", "."]  # the pair stands in column 2
    page.get_by_role("button", name="Rotate the pair").click()  # B left of A: not in column 0
    expect(page.locator("#board svg")).to_have_attribute("data-rotation", "2")
    expect(targets).to_have_count(5)
    targets.first.click()
    page.wait_for_function("() => document.getElementById('play').dataset.ply === '2'", timeout=MOVE_MS)
    game = page.request.get(f"{site.url}/api/v1/human-games/{page.url.rsplit('/', 1)[-1]}").json()
    standing = sum(piece != "." for row in game["view"]["wells"][0] for piece in row)
    assert standing in (0, 4)  # 0: the game's random pairs were one colour, and the four cleared
    expect(page.locator("#board .well[data-seat='0'] .blocks .block")).to_have_count(standing)
    _wait_for_turn(page)
    expect(page.locator("#board svg")).to_have_attribute("data-rotation", "2")  # kept for the next pair
    targets.nth(3).hover()
    screenshot(page, "play-smash")
