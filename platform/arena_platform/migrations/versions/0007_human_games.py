"""humangame: games between a person in a browser and a bot (stored, never rated)

A new table only: nothing that rating or scheduling reads changes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 05:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "humangame",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("human_seat", sa.Integer(), nullable=False),
        sa.Column("simulations", sa.Integer(), nullable=False),
        sa.Column("key_sha256", sa.String(length=64), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("human_score", sa.Float(), nullable=True),
        sa.Column("replay", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_humangame_bot_id_created_at", "humangame", ["bot_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_humangame_bot_id_created_at", table_name="humangame")
    op.drop_table("humangame")
