"""competition.hidden_ranking: a competition whose ladder's ratings are shown to nobody

A term fixed at creation (issue 26 item 6): false for the competitions made before it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 23:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "competition", sa.Column("hidden_ranking", sa.Boolean(), nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    op.drop_column("competition", "hidden_ranking")
