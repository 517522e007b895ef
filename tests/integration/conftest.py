"""Fixtures of the integration tests: one migrated PostgreSQL database per module, emptied (with the
tests' Redis database) after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine

from arena_platform.db import make_engine


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[Engine]:
    """The module's PostgreSQL database (`postgres_url`: migrated, no rows)."""
    engine = make_engine(postgres_url)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(engine: Engine, redis_url: str) -> Iterator[Engine]:
    """The module's database, emptied after each test (the suite's `engine`), and the tests' Redis
    database, flushed after each test."""
    yield engine
    redis.Redis.from_url(redis_url).flushdb()
