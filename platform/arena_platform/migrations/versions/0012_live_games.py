"""live_game, live_step: the games being played on workers, step by step, for viewers (issue 25.4)

New tables only: a worker writes a game in progress there while it plays it, and the rows go with
the pairing's recording (or the sweeper, once the claim that wrote them no longer holds it).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 20:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_game",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pairing_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("first_bot_id", sa.Integer(), nullable=False),
        sa.Column("second_bot_id", sa.Integer(), nullable=False),
        sa.Column("header", sa.JSON(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["pairing_id"], ["pairing.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.ForeignKeyConstraint(["first_bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["second_bot_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pairing_id", "index", "owner"),
    )
    op.create_index("ix_live_game_ladder_id", "live_game", ["ladder_id"])
    op.create_table(
        "live_step",
        sa.Column("live_game_id", sa.Integer(), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("step", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["live_game_id"], ["live_game.id"]),
        sa.PrimaryKeyConstraint("live_game_id", "ply"),
    )


def downgrade() -> None:
    op.drop_table("live_step")
    op.drop_index("ix_live_game_ladder_id", table_name="live_game")
    op.drop_table("live_game")
