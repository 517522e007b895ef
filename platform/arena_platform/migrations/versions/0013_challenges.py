"""challenges: a user's seat-swapped pairs between their bot and another bot of its ladder

A new table, and pairing.challenge_id naming the challenge a pairing was booked for (None for the
ladder's own pairings): scheduling leaves those pairings out of the ladder's schedule, and an
unrated challenge's games stay out of its pair counts (store.challenges; issue 26 item 5). The
column is added in place with its foreign key inline (SQLite takes REFERENCES on ADD COLUMN with a
NULL default, in plain SQL: alembic refuses it there), so the pairing table keeps the
triggers of 0004.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 20:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "challenge",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("opponent_id", sa.Integer(), nullable=False),
        sa.Column("pairs", sa.Integer(), nullable=False),
        sa.Column("rated", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["opponent_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_challenge_user_id_created_at", "challenge", ["user_id", "created_at"])
    op.create_index("ix_challenge_bot_id", "challenge", ["bot_id"])
    op.create_index("ix_challenge_opponent_id", "challenge", ["opponent_id"])
    if op.get_bind().dialect.name == "sqlite":  # alembic adds no constraint to a SQLite table
        op.execute("ALTER TABLE pairing ADD COLUMN challenge_id INTEGER REFERENCES challenge (id)")
    else:
        op.add_column("pairing", sa.Column("challenge_id", sa.Integer(), nullable=True))
        op.create_foreign_key(None, "pairing", "challenge", ["challenge_id"], ["id"])
    op.create_index("ix_pairing_challenge_id", "pairing", ["challenge_id"])


def downgrade() -> None:
    op.drop_index("ix_pairing_challenge_id", table_name="pairing")
    op.drop_column("pairing", "challenge_id")  # and its foreign key
    op.drop_index("ix_challenge_opponent_id", table_name="challenge")
    op.drop_index("ix_challenge_bot_id", table_name="challenge")
    op.drop_index("ix_challenge_user_id_created_at", table_name="challenge")
    op.drop_table("challenge")
