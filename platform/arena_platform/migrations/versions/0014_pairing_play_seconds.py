"""pairing.play_seconds: what a pairing cost its worker, which sizes its ladder's tasks

The worker's wall seconds playing the batch the pairing was played in, divided by the batch's
pairings, written when the pairing is recorded. Scheduling sizes a ladder's task messages from the
mean of its latest ones (store.pairings.task_size), so that a slow ladder's task carries one
pairing and no ladder waits long for another's (issue 25.1).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 20:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pairing", sa.Column("play_seconds", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("pairing", "play_seconds")
