"""The Coders Strike Back replay in real Chromium: the track drawn from the engine's view (numbered
checkpoints, four pods with heading, trails, counters, collision flashes, shield rings), pods
gliding during playback and when stepping, and the Q-values of each head for the pod selected.

The site (conftest.py) holds a CSB race between a tiny greedy Q-network (P1) and the racer (P2):
P1's insights carry each head's Q-values, P2's nothing.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect
from test_pages import TIMEOUT_MS, frames_of, open_replay

from arena_games.csb.rules import THRUST_LEVELS

GAME = "csb"
HEAD_SIZES = {"angle": 37, "thrust": 52}


def described(action: list[int], seat: int) -> str:
    """How the viewer names a CSB action of `seat`: per pod its turn and its thrust."""
    thrusts = [*THRUST_LEVELS, "BOOST", "SHIELD"]

    def pod(index: int) -> str:
        turn, thrust = action[2 * index] - 18, thrusts[action[2 * index + 1]]
        return f"{'ABCD'[2 * seat + index]} turn {'+' if turn > 0 else ''}{turn}°, " + (
            f"thrust {thrust}" if isinstance(thrust, int) else thrust
        )

    return f"{pod(0)}; {pod(1)}"


def drawn_pods(page: Page) -> list[dict[str, Any]]:
    """The data each pod was drawn with, pod 0..3."""
    return page.locator("#board g.pod").evaluate_all(
        "pods => pods.map(pod => ({x: Number(pod.dataset.x), y: Number(pod.dataset.y),"
        " angle: Number(pod.dataset.angle), lap: Number(pod.dataset.lap), shield: Number(pod.dataset.shield),"
        " seat: pod.classList.contains('seat1') ? 1 : 0, transform: pod.querySelector('.pod-body')"
        ".getAttribute('transform')}))"
    )


def expected_pods(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {key: pod[key] for key in ("x", "y", "angle", "lap", "shield")} | {"seat": pod["owner"]}
        for pod in view["pods"]
    ]


def without_transform(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in pod.items() if key != "transform"} for pod in pods]


def test_the_track_draws_checkpoints_pods_trails_and_counters_of_the_engines_view(page, site):
    frames = frames_of(site, GAME)["frames"]
    collided = next(ply for ply, frame in enumerate(frames) if frame["view"]["collisions"])
    open_replay(page, site, GAME)
    for ply in (0, collided, len(frames) - 1):
        page.evaluate(f"location.hash = '#ply={ply}'")
        expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))
        view = frames[ply]["view"]
        numbers = page.locator("#board .checkpoint-number").all_text_contents()
        assert numbers == [str(index) for index in range(len(view["checkpoints"]))]
        assert without_transform(drawn_pods(page)) == expected_pods(view)
        trails = page.locator("#board .trail").evaluate_all(
            "lines => lines.map(l => Number(l.dataset.points))"
        )
        assert trails == [min(ply, 8) + 1] * 4
        timeouts = page.locator("#board .counter[data-seat]").evaluate_all(
            "texts => texts.map(t => Number(t.dataset.timeout))"
        )
        assert timeouts == view["timeouts"]
        expect(page.locator("#board .counter.turn")).to_have_text(f"Turn {view['turn']}")
        flashes = page.locator("#board .collision").evaluate_all("c => c.map(c => c.dataset.collision)")
        assert flashes == [f"{a}-{b}" for a, b in view["collisions"]]
    expect(page.locator("#board-caption")).to_contain_text("Race over")


def test_a_boost_shows_a_flame_on_its_turn(page, site):
    frames = frames_of(site, GAME)["frames"]
    ply, pod = next(
        (ply, index)
        for ply in range(1, len(frames))
        for index, pod in enumerate(frames[ply]["view"]["pods"])
        if pod["boosted"] and not frames[ply - 1]["view"]["pods"][index]["boosted"]
    )
    open_replay(page, site, GAME, ply)
    expect(page.locator(f"#board g.pod[data-pod='{pod}'] .boost-flame.on")).to_have_count(1)
    expect(page.locator("#board .boost-flame.on")).to_have_count(
        sum(
            p["boosted"] and not before["boosted"]
            for p, before in zip(frames[ply]["view"]["pods"], frames[ply - 1]["view"]["pods"], strict=True)
        )
    )


def test_a_raised_shield_rings_its_pod_until_the_timer_runs_out(page, site):
    frames = frames_of(site, GAME)["frames"]
    ply = next(ply for ply, frame in enumerate(frames) if any(pod["shield"] for pod in frame["view"]["pods"]))
    open_replay(page, site, GAME, ply)
    expect(page.locator("#replay")).to_have_attribute("data-ply", str(ply))
    for index, pod in enumerate(frames[ply]["view"]["pods"]):
        ring = page.locator(f"#board g.pod[data-pod='{index}'] .shield-ring")
        classes = ring.get_attribute("class").split()
        assert ("up" in classes) == (pod["shield"] > 0)  # the ring while its shield timer runs
        assert ("fresh" in classes) == (pod["shield"] == 4)  # ...bolder on the turn it was raised


def test_playback_and_stepping_glide_the_pods_to_the_next_turn(page, site):
    frames = frames_of(site, GAME)["frames"]
    open_replay(page, site, GAME, 10)
    start = drawn_pods(page)
    page.get_by_role("button", name="Forward one step").click()
    expect(page.locator("#replay")).to_have_attribute("data-ply", "11")
    assert without_transform(drawn_pods(page)) == expected_pods(frames[11]["view"])  # data at once
    page.wait_for_timeout(600)  # the glide is over
    settled = drawn_pods(page)
    assert [pod["transform"] for pod in settled] != [pod["transform"] for pod in start]
    x, y = frames[11]["view"]["pods"][0]["x"] * 0.05, 44 + frames[11]["view"]["pods"][0]["y"] * 0.05
    assert settled[0]["transform"].startswith(f"translate({x:.1f} {y:.1f})")
    page.get_by_role("button", name="Play").click()
    expect(page.locator("#replay")).not_to_have_attribute("data-ply", "11", timeout=TIMEOUT_MS)
    # while playing, the pods are seen between turns: a transform that is no turn's end position
    samples = set()
    for _ in range(12):
        samples.add(tuple(pod["transform"] for pod in drawn_pods(page)))
        page.wait_for_timeout(40)
    assert len(samples) > 3
    page.get_by_role("button", name="Pause").click()


def test_the_overlay_shows_the_q_values_of_the_pod_selected(page, site):
    frames = frames_of(site, GAME)["frames"]
    ply = 5
    frame = frames[ply]
    open_replay(page, site, GAME, ply)
    panel = page.locator("#board .values-panel")
    expect(panel).to_have_attribute("data-pod", "0")  # P1's first pod: its player has values
    for pod in (1, 0):
        page.locator(f"#board g.pod[data-pod='{pod}']").click()
        expect(panel).to_have_attribute("data-pod", str(pod))
        expect(panel).to_have_attribute("data-kind", "q")
        expect(page.locator(f"#board g.pod[data-pod='{pod}']")).to_have_attribute("data-selected", "")
        heads = frame["insights"][0]["heads"]
        for kind, size in HEAD_SIZES.items():
            head = f"{kind}{pod}"
            chart = page.locator(f"#board .q-chart[data-head='{head}']")
            expect(chart).to_have_count(1)
            values = chart.locator(".q-bar").evaluate_all(
                "bars => bars.map(bar => bar.dataset.value === undefined ? null : Number(bar.dataset.value))"
            )
            assert len(values) == size
            assert values == heads[head]
            played = frame["actions"][0][2 * pod + (0 if kind == "angle" else 1)]  # angle0 thrust0 angle1 ...
            expect(chart).to_have_attribute("data-chosen", str(played))
            expect(chart.locator(".q-bar.chosen")).to_have_attribute("data-index", str(played))
            expect(chart.locator(".chart-base")).to_have_count(0)  # values around 0: bars from 0
    played = [described(action, seat) for seat, action in zip(frame["actors"], frame["actions"], strict=True)]
    expect(page.locator("#ply")).to_contain_text(f"P1 {played[0]}, P2 {played[1]}")
    expect(page.locator("#search tr.chosen")).to_contain_text(played[0])
    table = page.locator("#search table.top-moves")
    expect(table.locator("th")).to_have_text(["Move", "Q-value"])  # a DQN has neither visits nor priors
    expect(page.locator("#search-heading")).to_have_text("Q-values of the move to play")
    best = frame["insights"][0]["top"][0]["q"]
    expect(table.locator("tbody tr").first.locator("td").nth(1)).to_have_text(
        f"{'+' if best > 0 else '−' if best < 0 else ''}{abs(best):.2f}"
    )
    page.locator("#board g.pod[data-pod='2']").click()  # the racer's pod: no network, no values
    expect(panel).to_have_attribute("data-pod", "2")
    expect(panel).to_contain_text("no values recorded")
    expect(page.locator("#board .q-chart")).to_have_count(0)
    page.get_by_label("Show the search heat map").uncheck()
    expect(panel).to_be_hidden()


def test_screenshot_of_the_csb_replay(page, site, screenshot):
    frames = frames_of(site, GAME)["frames"]
    collided = next(ply for ply, frame in enumerate(frames) if frame["view"]["collisions"] and ply > 3)
    open_replay(page, site, GAME, collided)
    page.wait_for_timeout(100)
    assert screenshot(page, "replay-csb").stat().st_size > 0


def test_a_csb_bots_page_offers_no_hand_play(page, site):
    """A CSB turn is four heads: the board offers no move to click, so the page offers no game."""
    pilot = frames_of(site, GAME)["seats"][0]
    page.goto(f"{site.url}/bots/{pilot['id']}")
    expect(page.get_by_role("heading", name=pilot["name"])).to_be_visible()
    expect(page.locator("#play-form")).to_have_count(0)


def test_q_bars_far_from_zero_are_scaled_to_their_spread(page, site, screenshot):
    """A trained DQN's Q-values sit near its returns (34 ± 0.1): the bars show their differences."""

    def shifted(route):
        replay = route.fetch().json()
        for frame in replay["frames"]:
            for insight in frame["insights"] or ():
                for head, values in (insight or {}).get("heads", {}).items():
                    if head != "kind":
                        insight["heads"][head] = [None if v is None else 34 + v / 100 for v in values]
        route.fulfill(json=replay)

    page.route("**/api/v1/games/*/frames", shifted)
    open_replay(page, site, GAME, 5)
    chart = page.locator("#board .q-chart[data-head='angle0']")
    bars = chart.locator(".q-bar:not(.illegal)")
    tops = bars.evaluate_all("bars => bars.map(bar => Number(bar.getAttribute('y')))")
    assert max(tops) - min(tops) > 93  # of the chart's 186 px: not a flat row at 34's height
    base = float(chart.locator("line.zero").get_attribute("data-base"))
    assert 33 < base < 34
    expect(chart.locator(".chart-base")).to_have_text(re.compile(r"^bars from 33\.99\d+$"))
    screenshot(page, "replay-csb-q-near-34")
