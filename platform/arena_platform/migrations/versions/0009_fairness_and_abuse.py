"""fairness and abuse: the schema changes of the third audit's fixes

Each fix adds its own pair of functions below, called from `upgrade` and `downgrade`.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 15:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
import sqlmodel  # noqa: F401
from alembic import op  # noqa: F401

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
