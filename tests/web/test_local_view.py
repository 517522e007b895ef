"""`arena view` in real Chromium: the replay viewer draws a replay file written by `arena play`."""

from __future__ import annotations

from playwright.sync_api import expect

from arena_games.replay import Replay
from arena_platform import cli
from arena_platform.local_view import local_view_app

TIMEOUT_MS = 10_000


def test_the_local_viewer_plays_a_replay_file_written_by_arena_play(tmp_path, serving, page, capsys):
    out = tmp_path / "replays"
    command = ["play", "--game", "pente", "--players", "uct", "random", "--seed", "3", "--games", "2"]
    assert cli.main([*command, "--simulations", "4", "--out", str(out)]) == 0
    files = sorted(out.iterdir())
    steps = len(Replay.from_json(files[1].read_text()).steps)
    with serving(local_view_app(files)) as url:
        page.goto(f"{url}/games/2")
        expect(page.locator("#replay")).to_have_attribute("data-ready", "true", timeout=TIMEOUT_MS)
        expect(page.locator(".seats [data-seat='0']")).to_contain_text("random")
        assert page.locator("#board [data-cell]").count() > 0
        page.locator("[data-go=last]").click()
        expect(page.locator("#replay")).to_have_attribute("data-ply", str(steps))
        expect(page.locator("#result")).not_to_be_empty()
        links = page.eval_on_selector_all("a[href]", "links => links.map(link => link.href)")
        assert links  # the brand at least; none to the server's pages, which the viewer lacks
        assert [link for link in links if page.request.get(link).status == 404] == []
