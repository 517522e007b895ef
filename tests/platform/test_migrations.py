"""The Alembic migrations, on SQLite and PostgreSQL: they build exactly the models' schema, and the
data migrations carry the data of older schemas forward."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, column, insert, table, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, select

from arena_platform.db import make_engine, migrate, session
from arena_platform.models import (
    Bot,
    Competition,
    GameRecord,
    Ladder,
    LadderProgress,
    PairCount,
    Pairing,
    Rating,
    User,
    utc_now,
)
from arena_platform.store import reads
from arena_platform.store.results import recount_pairs

# SQLite cannot reflect an expression index (the bot's lower(name) one): PostgreSQL's runs compare it.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*expression-based index:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*expression-based index:sqlalchemy.exc.SAWarning"),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A database without any table (PostgreSQL's: the module's database with its schema reset)."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'arena.db'}")
    else:
        engine = make_engine(request.getfixturevalue("postgres_url"))
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    yield engine
    engine.dispose()


# The bot table as the migrations before 0008 made it (the model has columns added since).
OLD_BOT = table(
    "bot",
    *(column(name) for name in ("id", "ladder_id", "owner_id", "name", "version", "kind", "player")),
    *(column(name) for name in ("manifest", "report", "status", "created_at")),
)


def _old_bot(db, **values: object) -> int:
    """Inserts a bot into a schema older than 0008; its id."""
    values = {"owner_id": None, "version": 1, "manifest": "{}", "report": "{}", "status": "active"} | values
    statement = insert(OLD_BOT).values(created_at=utc_now(), **values).returning(OLD_BOT.c.id)
    return db.execute(statement).scalar_one()


# The ladder and user tables as the migrations before 0015 made them (the models have columns added since).
OLD_LADDER = table(
    "ladder", *(column(name) for name in ("id", "name", "game", "game_version", "simulations", "seed")),
    column("created_at"),
)  # fmt: skip
OLD_USER = table("user", column("id"), column("name"), column("created_at"))


def _old_ladder(db) -> int:
    """Inserts a bobail ladder into a schema older than 0015; its id."""
    values = {"name": "bobail-8", "game": "bobail", "game_version": 1, "simulations": 8, "seed": 1}
    statement = insert(OLD_LADDER).values(created_at=utc_now(), **values).returning(OLD_LADDER.c.id)
    return db.execute(statement).scalar_one()


def _old_user(db, name: str) -> User:
    """Inserts a user into a schema older than 0015; them, as a detached model."""
    statement = insert(OLD_USER).values(name=name, created_at=utc_now()).returning(OLD_USER.c.id)
    return User(id=db.execute(statement).scalar_one(), name=name)


# The pairing table as the migrations before 0009 made it (the model has a column added since).
OLD_PAIRING = table(
    "pairing",
    *(column(name) for name in ("id", "ladder_id", "bot_a_id", "bot_b_id", "seed", "status", "attempts")),
    column("created_at"),
)


def _old_pairing(db, **values: object) -> Pairing:
    """Inserts a pairing into a schema older than 0009; it, as a detached model."""
    values = {"status": "queued", "attempts": 0} | values
    statement = insert(OLD_PAIRING).values(created_at=utc_now(), **values).returning(OLD_PAIRING.c.id)
    return Pairing(id=db.execute(statement).scalar_one(), **values)


def test_the_migrations_build_the_schema_the_models_declare(empty_database: Engine):
    migrate(empty_database)
    with empty_database.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert differences == []


# Migrates the database at argv[1] once the clock reaches argv[2] (so that the processes start together).
MIGRATE_AT = """
import sys, time
from arena_platform.db import make_engine, migrate
engine = make_engine(sys.argv[1])
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
migrate(engine)
"""


def test_processes_started_together_on_a_fresh_database_all_migrate_it(empty_database: Engine):
    url = empty_database.url.render_as_string(hide_password=False)
    start = str(time.time() + 3)  # after every process has imported its modules
    processes = [
        subprocess.Popen([sys.executable, "-c", MIGRATE_AT, url, start], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    failures = [process.communicate(timeout=60)[1] for process in processes if process.wait(timeout=60)]
    assert failures == []
    with empty_database.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), SQLModel.metadata) == []


def test_names_that_differ_only_in_case_stop_the_migration_until_renamed(empty_database: Engine):
    migrate(empty_database, "0008")
    with session(empty_database) as db:
        ladder = Ladder(id=_old_ladder(db))
        ada, bob, ada_again = (_old_user(db, name) for name in ("ada", "bob", "Ada"))
        network = {"ladder_id": ladder.id, "kind": "network", "player": "greedy"}
        first = _old_bot(db, owner_id=ada.id, name="Bob-bot", **network)
        _old_bot(db, owner_id=ada.id, name="Bob-bot", version=2, **network)
        clash = _old_bot(db, owner_id=bob.id, name="bob-bot", **network)
        db.commit()
    bots = f"ladder {ladder.id}: bot 'Bob-bot' (id {first}); ladder {ladder.id}: bot 'bob-bot' (id {clash})"
    listed = f"{bots}; user 'Ada' (id {ada_again.id}); user 'ada' (id {ada.id}). From this version"
    with pytest.raises(RuntimeError, match=re.escape(listed)):
        migrate(empty_database)
    with empty_database.begin() as connection:  # what the operator does, as the message says
        connection.execute(text("UPDATE bot SET name = 'bob-bot-2' WHERE name = 'bob-bot'"))
        connection.execute(text(f"UPDATE \"user\" SET name = 'ada-2' WHERE id = {ada_again.id}"))
    migrate(empty_database)
    with session(empty_database) as db, pytest.raises(IntegrityError):
        _old_bot(db, owner_id=bob.id, name="BOB-BOT", **network)
    with session(empty_database) as db, pytest.raises(IntegrityError):
        db.execute(insert(User).values(name="BOB", created_at=utc_now()))


def test_pair_counts_are_counted_from_the_games_recorded_before_they_existed(empty_database: Engine):
    migrate(empty_database, "0002")
    # (first bot, second bot, the first seat's score) per game
    games = [
        ("a", "b", 1.0),
        ("b", "a", 1.0),
        ("a", "b", 0.5),
        ("c", "a", 0.0),
        ("b", "c", 0.0),
        ("c", "b", 0.5),
    ]
    with session(empty_database) as db:
        ladder = Ladder(id=_old_ladder(db))
        bots = {
            name: _old_bot(db, ladder_id=ladder.id, name=name, kind="house", player="random")
            for name in "abc"
        }
        for seed, (first, second, score) in enumerate(games):
            pairing = _old_pairing(
                db, ladder_id=ladder.id, bot_a_id=bots[first], bot_b_id=bots[second], seed=seed
            )
            db.add(_game(pairing, score))
        db.commit()
        a, b, c = (bots[name] for name in "abc")
    expected = {(a, b): (1, 1, 1), (a, c): (1, 0, 0), (b, c): (0, 1, 1)}  # low wins, draws, high wins

    migrate(empty_database)
    assert _pair_counts(empty_database) == expected
    with session(empty_database) as db:
        recount_pairs(db, ladder_id=ladder.id)  # the store's own count agrees
        db.commit()
    assert _pair_counts(empty_database) == expected


def _game(pairing: Pairing, score: float) -> GameRecord:
    return GameRecord(
        pairing_id=pairing.id,
        ladder_id=pairing.ladder_id,
        index=0,
        first_bot_id=pairing.bot_a_id,
        second_bot_id=pairing.bot_b_id,
        score=score,
        end_reason="test",
        steps=10,
        replay_sha256="0" * 64,
    )


def _pair_counts(engine: Engine) -> dict[tuple[int, int], tuple[int, int, int]]:
    with session(engine) as db:
        return {
            (row.low_bot_id, row.high_bot_id): (row.low_wins, row.draws, row.high_wins)
            for row in db.exec(select(PairCount))
        }


def test_the_leaderboard_rows_are_backfilled_and_then_kept(empty_database: Engine):
    migrate(empty_database, "0003")
    with session(empty_database) as db:
        ladder, owner = Ladder(id=_old_ladder(db)), _old_user(db, "ada")
        rated = _old_bot(
            db, ladder_id=ladder.id, owner_id=owner.id, name="net", kind="network", player="greedy"
        )
        house, _retired = (
            _old_bot(db, ladder_id=ladder.id, name=name, kind="house", player="random", status=status)
            for name, status in (("house", "active"), ("old", "retired"))
        )
        db.add(Rating(ladder_id=ladder.id, bot_id=rated, rating=12.5, low=1.0, high=24.0, games=3,
                      wins=2, draws=1, losses=0, provisional=False))  # fmt: skip
        for seed, status in enumerate(("done", "done", "queued", "failed")):
            _old_pairing(db, ladder_id=ladder.id, bot_a_id=rated, bot_b_id=house, seed=seed, status=status)
        db.commit()
        ids = ladder.id, rated, house

    migrate(empty_database)
    ladder_id, rated_id, house_id = ids
    expected = [
        (1, rated_id, "net", "ada", False, 12.5, 1.0, 24.0, 3, 2, 1, 0, False),
        (None, house_id, "house", None, True, None, None, None, 0, 0, 0, 0, True),
    ]
    fields = ("rank", "bot_id", "name", "author", "house", "rating", "low", "high", "games", "wins")
    fields += ("draws", "losses", "provisional")
    with session(empty_database) as db:
        board = reads.leaderboard(db, ladder_id=ladder_id)
        assert [tuple(getattr(entry, name) for name in fields) for entry in board] == expected
        assert reads.pairing_progress(db, ladder_id=ladder_id).model_dump() == {
            "queued": 1, "running": 0, "done": 2, "failed": 1,
        }  # fmt: skip
        db.add(Pairing(ladder_id=ladder_id, bot_a_id=rated_id, bot_b_id=house_id, seed=9, status="done"))
        db.commit()  # and the triggers keep them from now on
        assert reads.pairing_progress(db, ladder_id=ladder_id).done == 3


def test_ladders_keep_their_rows_and_trigger_and_only_open_ones_are_unique(empty_database: Engine):
    """0015 rebuilds SQLite's ladder table under the bots that refer to it."""
    migrate(empty_database, "0014")
    with session(empty_database) as db:
        ladder_id = _old_ladder(db)
        bot_id = _old_bot(db, ladder_id=ladder_id, name="random", kind="house", player="random")
        db.commit()
    migrate(empty_database)
    with session(empty_database) as db:
        assert db.get(Ladder, ladder_id).competition_id is None
        assert db.get(Bot, bot_id).ladder_id == ladder_id
        owner = User(name="olga", organiser=True)
        db.add(owner)
        db.flush()
        competition = Competition(organiser_id=owner.id, title="cup", opens_at=utc_now(), deadline=utc_now(),
                                  max_active_bots=1, uploads_per_day=1)  # fmt: skip
        db.add(competition)
        db.flush()
        same = {"game": "bobail", "game_version": 1, "simulations": 8, "seed": 2}  # as the old ladder
        rated_apart = Ladder(name="bobail-8-c", competition_id=competition.id, **same)
        db.add(rated_apart)
        db.flush()
        assert db.get(LadderProgress, rated_apart.id).done == 0  # the ladder's trigger made its row
        db.commit()
        db.add(Ladder(name="bobail-8-again", **same))
        with pytest.raises(IntegrityError):
            db.flush()
