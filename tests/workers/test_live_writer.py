"""The worker's writer of games in progress (arena_workers.live): throttled to one write per
`interval`, and a write the database refused is caught up by the next one."""

from __future__ import annotations

import itertools

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from arena_bots.match import MatchSetup, play_many
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_games.replay import step_to_dict
from arena_platform.db import session
from arena_platform.models import Bot, LiveGame, LiveStep
from arena_platform.settings import Settings, SettingsError, load_settings
from arena_platform.store import live as live_store
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.pairings import create_pairings
from arena_workers import live

TICK = 0.2  # seconds of the fake clock per call of the writer


@pytest.fixture
def setups(engine: Engine) -> list[MatchSetup]:
    """The two games of a bobail pairing, random against random, with the runner's meta."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        bots = (house["random"], house["uct"])
        (pairing,) = create_pairings(db, ladder=ladder, pairs=[bots], redelivery_seconds=60)
        db.commit()
        meta = {"ladder_id": ladder.id, "pairing_id": pairing.id}
    players = (RandomPlayer("a"), RandomPlayer("b"))
    return [
        MatchSetup(players=players, seed=index, meta={**meta, "index": index, "bot_ids": list(bots)})
        for index in range(2)
    ]


def _fake_clock():
    ticks = itertools.count()
    return lambda: next(ticks) * TICK


def test_the_writer_writes_at_most_once_per_interval_and_catches_up_after_a_refused_write(
    engine, setups, monkeypatch
):
    game = get_game("bobail")
    writes: list[int] = []
    plain = live.add_progress

    def flaky(db, *, progress):  # the second write is refused, as by a database that went away
        writes.append(len(writes))
        if len(writes) == 2:
            raise OperationalError("UPDATE", {}, Exception("database is locked"))
        plain(db, progress=progress)

    monkeypatch.setattr(live, "add_progress", flaky)
    writer = live.LiveWriter(engine, "worker-1/abc", interval=0.5, clock=_fake_clock())
    results = play_many(game, setups, watch=writer)
    rounds = max(len(result.replay.steps) - result.replay.opening_length for result in results)
    assert len(writes) == pytest.approx(rounds / 3, abs=1)  # a call every 0.2 s, a write every 0.6 s
    with session(engine) as db:
        for setup, result in zip(setups, results, strict=True):
            row = db.exec(select(LiveGame).where(LiveGame.index == setup.meta["index"])).one()
            steps = db.exec(
                select(LiveStep.step).where(LiveStep.live_game_id == row.id).order_by(LiveStep.ply)
            )
            written = list(steps)
            assert row.steps == len(written) > 0  # ply by ply from 0: none lost by the refused write
            assert written == [step_to_dict(step) for step in result.replay.steps[: row.steps]]
            assert (
                live_store.held_game(db, pairing_id=setup.meta["pairing_id"], index=row.index) is None
            )  # not claimed


def test_live_seconds_is_a_setting_of_at_least_zero():
    assert Settings().live_seconds == 0.5
    assert load_settings({"ARENA_LIVE_SECONDS": "0"}).live_seconds == 0.0
    with pytest.raises(SettingsError, match="ARENA_LIVE_SECONDS must be at least 0"):
        Settings(live_seconds=-1.0).check()
