"""sprttest: a new version's pentanomial SPRT against the previous version of its name

A new table only: the bot, rating, pairing and ladder tables (and the triggers 0004 installed on
them) are untouched. Versions uploaded before this migration have no test.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 03:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sprttest",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("new_bot_id", sa.Integer(), nullable=False),
        sa.Column("old_bot_id", sa.Integer(), nullable=False),
        *(
            sa.Column(name, sa.Integer(), nullable=False)
            for name in ("pairs_0", "pairs_05", "pairs_1", "pairs_15", "pairs_2")
        ),
        *(
            sa.Column(name, sa.Float(), nullable=False)
            for name in ("llr", "lower", "upper", "elo0", "elo1", "alpha", "beta")
        ),
        sa.Column("model", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.ForeignKeyConstraint(["new_bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["old_bot_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("new_bot_id"),
    )
    op.create_index("ix_sprttest_ladder_id", "sprttest", ["ladder_id"])
    op.create_index("ix_sprttest_old_bot_id", "sprttest", ["old_bot_id"])
    op.create_index("ix_sprttest_status", "sprttest", ["status"])


def downgrade() -> None:
    op.drop_index("ix_sprttest_status", table_name="sprttest")
    op.drop_index("ix_sprttest_old_bot_id", table_name="sprttest")
    op.drop_index("ix_sprttest_ladder_id", table_name="sprttest")
    op.drop_table("sprttest")
