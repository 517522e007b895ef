"""league promotions: the league_promotion table

One row per promotion of a competition's bot from its league to the next (store.leagues): the bot
version promoted, the leagues (indices into competition.leagues, 0 the lowest), when, and the
evidence (the fit's P(bot > boss), both ratings, the placement games). A bot's league is derived
from these rows: every bot starts in the lowest league.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 23:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "league_promotion",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("from_league", sa.Integer(), nullable=False),
        sa.Column("to_league", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["competition_id"], ["competition.id"]),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_league_promotion_competition_id", "league_promotion", ["competition_id"])
    op.create_index("ix_league_promotion_bot_id", "league_promotion", ["bot_id"])


def downgrade() -> None:
    op.drop_index("ix_league_promotion_bot_id", table_name="league_promotion")
    op.drop_index("ix_league_promotion_competition_id", table_name="league_promotion")
    op.drop_table("league_promotion")
