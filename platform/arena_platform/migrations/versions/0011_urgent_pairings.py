"""urgent pairings: a newcomer's, a running SPRT's and a checkpoint's pairings are played first

pairing.urgent marks the pairings booked for a bot that joined a ladder in progress or for a running
SPRT (store.scheduling): a worker's task plays the oldest queued urgent pairings in place of the
round's pairings it was sent (issue 25.1).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 16:40:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pairing", sa.Column("urgent", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("pairing", "urgent")
