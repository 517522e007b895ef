"""A Coders Strike Back ladder on a worker: a greedy DQN-style bot (Q-value heads, through its model
host) and a sampling one play the house bots random and racer in paired games, the replays keep
each head's Q-values, and the ratings are anchored on the house bots (their weighted mean is 0)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, Rating
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import pairings as store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.ratings import fit_ladder
from arena_workers import ladders, runner
from arena_workers.context import WorkerContext

GAME = get_game("csb")


@pytest.fixture
def context(engine: Engine, tmp_path: Path) -> Iterator[WorkerContext]:
    settings = Settings(data_dir=tmp_path, lease_seconds=60, heartbeat_seconds=1, max_attempts=2)
    worker = WorkerContext(
        settings=settings, engine=engine, blobs=BlobStore(str(tmp_path / "blobs")), enqueue=lambda *_: None
    )
    yield worker
    worker.close()


def test_network_bots_play_the_csb_house_bots_and_ratings_are_anchored(
    context: WorkerContext, engine: Engine, onnx_bot: Callable[..., bytes]
):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="csb", simulations=8, seed=3)
        owner, _ = users.create_user(db, name="pilot")
        network = []
        for seed, player in enumerate(("greedy", "sample")):
            manifest = Manifest(
                game="csb", game_version=GAME.spec.version, name=f"pod-{player}", player=player, head="q"
            )
            model = context.blobs.put(onnx_bot("csb", seed=seed, metadata={"head": "q"}))
            bot = bot_store.create_network_bot(
                db, ladder_id=ladder.id, owner_id=owner.id, manifest=manifest, report={}, model_sha256=model
            )
            network.append(bot.id)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.kind == "house"))}
        assert house.keys() == {"random", "racer"}
        everyone = [*network, *house.values()]
        pairings = store.create_pairings(
            db, ladder=ladder, pairs=list(itertools.combinations(everyone, 2)), redelivery_seconds=60
        )
        db.commit()
        ids = [pairing.id for pairing in pairings]
    outcomes = runner.play_pairings(context, ids)
    assert [outcome.status for outcome in outcomes] == ["recorded"] * len(ids)
    assert ladders.refit(context, ladder.id)
    with session(engine) as db:
        games = db.exec(select(GameRecord)).all()
        assert len(games) == 2 * len(ids)
        assert all(game.forfeit_seat is None for game in games)
        greedy = next(game for game in games if network[0] in (game.first_bot_id, game.second_bot_id))
        replay = Replay.from_json(context.blobs.get(greedy.replay_sha256).decode())
        replay_states(GAME, replay)  # re-plays through the engine
        insight = replay.steps[0].insights[0 if greedy.first_bot_id == network[0] else 1]
        assert insight["heads"]["kind"] == "q"
        assert [len(insight["heads"][head]) for head in GAME.spec.heads] == [37, 52, 37, 52]
        ratings = {row.bot_id: row.rating for row in db.exec(select(Rating))}
        fitted = fit_ladder(db, ladder_id=ladder.id)
        assert ratings.keys() == set(everyone)
        # The scale's zero: the house bots' mean, weighted as the fit weighs them.
        weights = {bot_id: fitted[str(bot_id)].anchor_weight for bot_id in everyone}
        assert sum(weights[bot_id] for bot_id in house.values()) == pytest.approx(1.0)
        assert sum(weights[bot_id] * ratings[bot_id] for bot_id in everyone) == pytest.approx(0.0, abs=1e-6)
        assert ratings[house["racer"]] > ratings[house["random"]]
