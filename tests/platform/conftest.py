"""Fixtures of the platform tests: a migrated database on SQLite AND PostgreSQL, the blob store, the
API app with a recording `enqueue`, tiny ONNX bots, and a ladder seeded as the workers would fill it.

PostgreSQL: every test module gets its own database, dropped afterwards (`postgres_url`). Tables
are emptied after each test.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, GameRecord, Pairing, Rating, RatingHistory, utc_now
from arena_platform.settings import Settings
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(str(tmp_path / "blobs"))


@pytest.fixture
def enqueued() -> list[tuple[str, tuple]]:
    """What the app under test enqueued: (task name, args), in order."""
    return []


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, uploads_per_hour=5)


@pytest.fixture
def make_app(
    settings: Settings, engine: Engine, blobs: BlobStore, enqueued: list[tuple[str, tuple]]
) -> Callable[..., FastAPI]:
    """An app on the test database and blob store; keyword arguments replace settings fields."""

    def build(**changes: object) -> FastAPI:
        return create_app(
            dataclasses.replace(settings, **changes),
            engine=engine,
            blobs=blobs,
            enqueue=lambda name, *args: enqueued.append((name, args)),
        )

    return build


@pytest.fixture
def client(make_app: Callable[..., FastAPI]) -> Iterator[TestClient]:
    with TestClient(make_app()) as test_client:
        yield test_client


@pytest.fixture
def live_server(
    make_app: Callable[..., FastAPI], serving: Callable[[FastAPI], AbstractContextManager[str]]
) -> Iterator[Callable[..., str]]:
    """Starts the app under uvicorn on a free local port; returns its base URL. For raw HTTP tests."""
    with contextlib.ExitStack() as servers:
        yield lambda **changes: servers.enter_context(serving(make_app(**changes)))


@pytest.fixture
def new_user(engine: Engine) -> Callable[[str], str]:
    """Creates a user; returns their token."""

    def create(name: str) -> str:
        with session(engine) as db:
            _, token = users.create_user(db, name=name)
            db.commit()
        return token

    return create


@dataclass
class SeededLadder:
    """A bobail ladder as the workers leave it: two uploaded bots, games, ratings, history."""

    ladder_id: int
    alice_token: str
    alpha: int  # alice's network bot (greedy)
    beta: int  # bob's network bot (mcts)
    random: int  # house bots
    uct: int
    games: list[int] = field(default_factory=list)  # newest last


@pytest.fixture
def seeded(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> SeededLadder:
    """Games: alpha-random x2 (alpha wins both), alpha-beta (a draw, then beta wins); pairings in
    every state; ratings for alpha, beta and random; three history points for alpha."""
    game = get_game("bobail")
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        alice, alice_token = users.create_user(db, name="alice")
        bob, _ = users.create_user(db, name="bob")
        network = {}
        for owner, name, player in ((alice, "alpha", "greedy"), (bob, "beta", "mcts")):
            manifest = Manifest(game="bobail", game_version=1, name=name, player=player)
            network[name] = bots.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=manifest,
                report={"ok": True, "code": "", "message": ""},
                model_sha256=blobs.put(onnx_bot(seed=len(network))),
            ).id
        seeded = SeededLadder(
            ladder.id, alice_token, network["alpha"], network["beta"], house["random"], house["uct"]
        )
        matches = [
            (seeded.alpha, seeded.random, 1.0, "status=done"),
            (seeded.random, seeded.alpha, 0.0, "status=done"),
            (seeded.alpha, seeded.beta, 0.5, "status=done"),
            (seeded.beta, seeded.alpha, 1.0, "player 2 forfeits: illegal action 3 on head 'move'"),
        ]
        for status in ("queued", "queued", "running", "failed"):
            db.add(
                Pairing(
                    ladder_id=ladder.id, bot_a_id=seeded.alpha, bot_b_id=seeded.uct, seed=0, status=status
                )
            )
        for number, (first, second, score, reason) in enumerate(matches):
            pairing = Pairing(
                ladder_id=ladder.id, bot_a_id=first, bot_b_id=second, seed=number, status="done"
            )
            db.add(pairing)
            db.flush()
            replay = play(game, [RandomPlayer("first"), RandomPlayer("second")], seed=number).replay
            record = GameRecord(
                pairing_id=pairing.id,
                ladder_id=ladder.id,
                index=0,
                first_bot_id=first,
                second_bot_id=second,
                score=score,
                end_reason=reason,
                forfeit_seat=1 if "forfeits" in reason else None,
                steps=len(replay.steps),
                replay_sha256=blobs.put(replay.to_json().encode()),
            )
            db.add(record)
            db.flush()
            seeded.games.append(record.id)
        for bot_id, rating, record in (
            (seeded.alpha, 150.0, (4, 2, 1, 1)),
            (seeded.beta, 90.0, (2, 1, 1, 0)),
            (seeded.random, -150.0, (2, 0, 0, 2)),
        ):
            games, wins, draws, losses = record
            db.add(
                Rating(
                    ladder_id=ladder.id,
                    bot_id=bot_id,
                    rating=rating,
                    low=rating - 80,
                    high=rating + 80,
                    games=games,
                    wins=wins,
                    draws=draws,
                    losses=losses,
                    provisional=True,
                )
            )
        for games, rating in ((1, 40.0), (2, 120.0), (4, 150.0)):
            db.add(
                RatingHistory(
                    ladder_id=ladder.id,
                    bot_id=seeded.alpha,
                    rating=rating,
                    low=rating - 100,
                    high=rating + 100,
                    games=games,
                    recorded_at=utc_now(),
                )
            )
            db.flush()
        db.commit()
    return seeded
