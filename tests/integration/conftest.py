"""Fixtures of the integration tests: one migrated PostgreSQL database per module, emptied (with the
tests' Redis database) after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine, text
from sqlmodel import SQLModel

from arena_platform.db import make_engine, migrate


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[Engine]:
    engine = make_engine(postgres_url)
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(database: Engine, redis_url: str) -> Iterator[Engine]:
    """The module's database and the tests' Redis database, both emptied after each test."""
    yield database
    redis.Redis.from_url(redis_url).flushdb()
    names = ", ".join(f'"{table.name}"' for table in SQLModel.metadata.sorted_tables)
    with database.begin() as connection:
        connection.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
