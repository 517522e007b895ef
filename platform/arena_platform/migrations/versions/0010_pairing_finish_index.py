"""pairing (ladder_id, finished_at) index for a ladder's measured pace

A ladder's pace counts its pairings finished in the last minutes (store.bookings.ladder_pace) for the
leaderboard's time left and a bot's expected start; the index keeps that count to the few recent
rows, however many pairings the ladder has finished.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 16:30:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_pairing_ladder_id_finished_at", "pairing", ["ladder_id", "finished_at"])


def downgrade() -> None:
    op.drop_index("ix_pairing_ladder_id_finished_at", table_name="pairing")
