"""A challenge played through the runner, on SQLite and PostgreSQL: its pairings are claimed, played
at the ladder's budget and recorded like the ladder's own; an unrated challenge leaves the ratings
and the ladder's next round as they were."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_games.registry import get_game
from arena_games.replay import Replay, replay_states
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, PairCount
from arena_platform.settings import Settings
from arena_platform.store import bots, challenges, users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.scheduling import ladder_state
from arena_workers import runner
from arena_workers.context import WorkerContext

LIMITS = challenges.Limits(max_pairs=10, open=1, per_day=1)


def test_a_challenge_is_played_at_the_ladders_budget_and_rates_nobody(
    engine: Engine, tmp_path: Path, onnx_bot
):
    settings = Settings(data_dir=tmp_path, lease_seconds=60, heartbeat_seconds=1)
    sent = []
    context = WorkerContext(
        settings=settings,
        engine=engine,
        blobs=BlobStore(str(tmp_path / "blobs")),
        enqueue=lambda *message: sent.append(message),
    )
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=4, seed=2)
        author, _ = users.create_user(db, name="author")
        mine = bots.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=author.id,
            manifest=Manifest(game="bobail", game_version=1, name="net", player="mcts"),
            report={},
            model_sha256=context.blobs.put(onnx_bot(seed=3)),
        )
        uct = db.exec(select(Bot).where(Bot.ladder_id == ladder.id, Bot.name == "uct")).one()
        challenge, pairings = challenges.create_challenge(
            db,
            user_id=author.id,
            bot_id=mine.id,
            opponent_id=uct.id,
            pairs=3,
            rated=False,
            limits=LIMITS,
            redelivery_seconds=60,
        )
        db.commit()
        names = {mine.id: "net", uct.id: "uct"}
        before = ladder_state(db, ladder=db.get(Ladder, ladder.id))
    try:
        outcomes = runner.play_pairings(context, [pairing.id for pairing in pairings])
        assert [outcome.status for outcome in outcomes] == ["recorded"] * 3
        with session(engine) as db:
            view = challenges.get_challenge(db, challenge_id=challenge.id)
            games = challenges.challenge_games(db, challenge_id=challenge.id)
            assert (view.status, view.games, view.progress.done) == ("finished", 6, 3)
            assert view.wins + view.draws + view.losses == 6
            assert sum(view.pentanomial) == 3
            assert view.elo_low <= view.elo <= view.elo_high
            assert db.exec(select(PairCount)).all() == []  # unrated: nothing for the fit
            assert ladder_state(db, ladder=db.get(Ladder, ladder.id)) == before  # nor for the schedule
        game = get_game("bobail")
        for record in games:
            replay = Replay.from_json(context.blobs.get(record.replay_sha256).decode())
            assert replay.players == (names[record.first.id], names[record.second.id])
            assert len(replay_states(game, replay)) == record.steps + 1
            assert replay.meta["ladder_id"] == ladder.id
        assert {first.id for first in (record.first for record in games)} == {mine.id, uct.id}  # seats swap
    finally:
        context.close()
