"""Database engines and schema migrations (Alembic, shipped inside the package).

SQLite (the embedded default) is shared by the API and the in-process worker: it runs in WAL
mode with a busy timeout, or concurrent writers fail with "database is locked" (ARCHITECTURE §8).

Migrations run one process at a time (several `arena serve` or worker processes started together
all migrate on start): PostgreSQL under an advisory lock held by the migration's transaction,
SQLite under an exclusive lock on a file beside the database. A process that waited finds the
schema up to date and has nothing to do. Without them, the processes raced to create the same
tables and all but one died.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, Executable, create_engine, event, text
from sqlalchemy.pool import NullPool
from sqlmodel import Session

SQLITE_BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str, *, pooled: bool = True) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and enforced foreign keys. Without
    `pooled`, every session opens its own connection and closes it: for a process that forks
    children, which must not inherit an open connection."""
    if not url.startswith("sqlite"):
        if not pooled:
            return create_engine(url, poolclass=NullPool)
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    path = url.removeprefix("sqlite:///")
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    )
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _configure_sqlite(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema of `engine`'s database up to `revision` (the newest migration by default)."""
    config = Config()
    config.set_main_option("script_location", str(resources.files("arena_platform") / "migrations"))
    with _migrating(engine) as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


MIGRATION_LOCK_KEY = 0x6172656E61  # PostgreSQL's advisory lock of migrations: "arena" in ASCII


@contextlib.contextmanager
def _migrating(engine: Engine) -> Iterator[Connection]:
    """A transaction on `engine` that holds the migration lock (see the module's docstring)."""
    with _sqlite_file_lock(engine), engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        yield connection


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Holds an exclusive lock on `<database file>.migrating` (none for PostgreSQL or an in-memory
    SQLite): SQLite's own locks keep its statements apart, not a migration's read of the version
    table from its creation of the tables."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if not path or path == ":memory:":
        yield
        return
    with open(f"{path}.migrating", "a") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def session(engine: Engine) -> Session:
    """A new session; callers use it as a context manager and commit explicitly."""
    return Session(engine, expire_on_commit=False)


def plain_rows(session: Session, statement: Executable) -> list[tuple[Any, ...]]:
    """The statement's result as the driver's plain tuples, for results of ~10^5 rows and more:
    SQLAlchemy's Row objects cost seconds per million, and NumPy converts them one at a time."""
    return session.connection().execute(statement).cursor.fetchall()
