"""pairing (ladder_id, status) index for the leaderboard's progress counts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 09:40:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pairing", schema=None) as batch_op:
        batch_op.create_index("ix_pairing_ladder_id_status", ["ladder_id", "status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pairing", schema=None) as batch_op:
        batch_op.drop_index("ix_pairing_ladder_id_status")
