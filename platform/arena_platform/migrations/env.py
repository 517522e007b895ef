"""Alembic's environment: runs migrations on the connection that `arena_platform.db.migrate` hands in."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import arena_platform.models  # noqa: F401  (registers the tables on SQLModel.metadata)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters tables by copying them
)
with context.begin_transaction():
    context.run_migrations()
