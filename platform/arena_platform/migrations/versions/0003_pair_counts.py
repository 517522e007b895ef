"""paircount: game outcomes per unordered pair, counted from the games recorded so far

The refit reads these counts instead of aggregating every game of a ladder. The pairing table's
single-column ladder_id index goes: the (ladder_id, status) index of 0002 serves the same lookups.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 10:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Frozen with this revision (not the store's code, which may change): the outcome of every game
# seen from the pair's lower bot id. Scores are the first seat's: 1, 0.5 or 0.
COUNT_RECORDED_GAMES = """
INSERT INTO paircount (ladder_id, low_bot_id, high_bot_id, low_wins, draws, high_wins)
SELECT ladder_id, low_bot_id, high_bot_id,
       SUM(CASE WHEN low_points = 1 THEN 1 ELSE 0 END),
       SUM(CASE WHEN low_points = 0.5 THEN 1 ELSE 0 END),
       SUM(CASE WHEN low_points = 0 THEN 1 ELSE 0 END)
FROM (SELECT ladder_id,
             CASE WHEN first_bot_id < second_bot_id THEN first_bot_id ELSE second_bot_id END AS low_bot_id,
             CASE WHEN first_bot_id < second_bot_id THEN second_bot_id ELSE first_bot_id END AS high_bot_id,
             CASE WHEN first_bot_id < second_bot_id THEN score ELSE 1 - score END AS low_points
      FROM game) AS outcomes
GROUP BY ladder_id, low_bot_id, high_bot_id
"""


def upgrade() -> None:
    op.create_table(
        "paircount",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("low_bot_id", sa.Integer(), nullable=False),
        sa.Column("high_bot_id", sa.Integer(), nullable=False),
        sa.Column("low_wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("high_wins", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["high_bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.ForeignKeyConstraint(["low_bot_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("ladder_id", "low_bot_id", "high_bot_id"),
    )
    op.execute(COUNT_RECORDED_GAMES)
    with op.batch_alter_table("pairing", schema=None) as batch_op:
        batch_op.drop_index("ix_pairing_ladder_id")


def downgrade() -> None:
    with op.batch_alter_table("pairing", schema=None) as batch_op:
        batch_op.create_index("ix_pairing_ladder_id", ["ladder_id"], unique=False)
    op.drop_table("paircount")
