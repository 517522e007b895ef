"""Watching a game in progress in real Chromium (issue 25.4): the ladder page lists it, the viewer
opened from there follows its moves as the worker writes them, and goes on to the recorded replay.

The worker is played by this test: it writes the steps of a real game through the store
(store.live), as `arena_workers.live.LiveWriter` does, on a SQLite site served by uvicorn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Page, expect
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_games.replay import Replay, step_to_dict
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, Pairing
from arena_platform.settings import Settings
from arena_platform.store import live
from arena_platform.store import pairings as store
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.results import PlayedGame, record_pairing

TIMEOUT_MS = 10_000  # the live page polls every second
OWNER = "worker-1/abc"


@dataclass
class LiveSite:
    url: str
    engine: Engine
    blobs: BlobStore
    ladder_id: int
    pairing: Pairing
    replay: Replay  # the game the "worker" plays, written step by step
    live_game_id: int

    def write(self, start: int, stop: int, *, over: bool = False) -> None:
        steps = [step_to_dict(step) for step in self.replay.steps[start:stop]]
        result = self.replay.to_dict()["result"] if over else None
        with session(self.engine) as db:
            live.add_progress(db, progress=[live.LiveProgress(self.live_game_id, start, steps, result)])


@pytest.fixture
def live_site(
    tmp_path: Path, serving: Callable[[FastAPI], AbstractContextManager[str]]
) -> Iterator[LiveSite]:
    """A bobail ladder whose pairing of random against uct is claimed, its game 0 written up to
    ply 10; served by uvicorn."""
    engine = make_engine(f"sqlite:///{tmp_path / 'arena.db'}")
    migrate(engine)
    blobs = BlobStore(str(tmp_path / "blobs"))
    game = get_game("bobail")
    replay = play(
        game, [RandomPlayer("random"), RandomPlayer("uct")], seed=5, opening=game.opening(5, None)
    ).replay
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        (pairing,) = store.create_pairings(
            db, ladder=ladder, pairs=[(house["random"], house["uct"])], redelivery_seconds=60
        )
        db.commit()
        assert store.claim_pairing(db, pairing_id=pairing.id, owner=OWNER, lease_seconds=60, max_attempts=2)
        db.refresh(pairing)
        header = replay.to_dict()
        del header["steps"], header["result"]
        new = live.NewLiveGame(pairing.id, 0, ladder.id, pairing.bot_a_id, pairing.bot_b_id, header)
        (live_game_id,) = live.open_games(db, owner=OWNER, games=[new])
    app = create_app(Settings(data_dir=tmp_path), engine=engine, blobs=blobs, enqueue=lambda *_: None)
    with serving(app) as url:
        site = LiveSite(url, engine, blobs, ladder.id, pairing, replay, live_game_id)
        site.write(0, 10)
        yield site
    engine.dispose()


def test_a_game_in_progress_is_listed_followed_move_by_move_and_then_replayed(
    live_site: LiveSite, page: Page
):
    page.goto(f"{live_site.url}/ladders/{live_site.ladder_id}")
    link = page.locator("#live-games a.live-link")
    expect(link).to_have_text("random v1 against uct v1")
    link.click()

    viewer = page.locator("#replay")
    expect(page).to_have_url(re.compile(rf"/live/{live_site.pairing.id}/0"))
    expect(viewer).to_have_attribute("data-ready", "true", timeout=TIMEOUT_MS)
    expect(page.locator("#live-badge")).to_have_text("live")
    expect(viewer).to_have_attribute("data-ply", "10")  # it opens at the position to play now
    expect(page.locator("#ply")).to_contain_text("to move now")

    live_site.write(10, 12)  # the worker plays two more steps: the viewer follows
    expect(viewer).to_have_attribute("data-ply", "12", timeout=TIMEOUT_MS)
    expect(page.locator("#scrub")).to_have_attribute("max", "12")

    steps = len(live_site.replay.steps)
    live_site.write(12, steps, over=True)
    expect(page.locator("#live-badge")).to_have_text("game over", timeout=TIMEOUT_MS)
    expect(viewer).to_have_attribute("data-ply", str(steps))
    expect(page.locator("#ply")).to_contain_text("final position")

    with session(live_site.engine) as db:  # the worker records the pairing: the viewer goes to its replay
        replay_sha256 = live_site.blobs.put(live_site.replay.to_json().encode())
        pairing = db.get(Pairing, live_site.pairing.id)
        game = PlayedGame(
            0,
            pairing.bot_a_id,
            pairing.bot_b_id,
            0.5,
            live_site.replay.end_reason,
            None,
            steps,
            replay_sha256,
        )
        assert record_pairing(db, pairing=pairing, games=[game])
        game_id = live.recorded_game_id(db, pairing_id=pairing.id, index=0)
    expect(page).to_have_url(re.compile(rf"/games/{game_id}#ply={steps}$"), timeout=TIMEOUT_MS)
    expect(viewer).to_have_attribute("data-ready", "true", timeout=TIMEOUT_MS)
    expect(viewer).to_have_attribute("data-ply", str(steps))
    page.goto(f"{live_site.url}/ladders/{live_site.ladder_id}")
    expect(page.locator("#live-games")).to_contain_text("No game is being played")
    page.goto(f"{live_site.url}/live/{pairing.id}/0")  # a recorded game's live page is its replay
    expect(page).to_have_url(re.compile(rf"/games/{game_id}$"))
