"""uploadattempt: every upload a user sent, accepted or rejected, for the upload rate limit

Before, the limit counted the user's bots, so rejected uploads (a model that failed validation, a
malformed form) were free. No data to carry: an attempt older than the one-hour window counts for
nothing.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 01:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "uploadattempt",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_uploadattempt_user_id_created_at", "uploadattempt", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_uploadattempt_user_id_created_at", table_name="uploadattempt")
    op.drop_table("uploadattempt")
