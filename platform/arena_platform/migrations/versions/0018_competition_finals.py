"""competition finals: the final's row (entrants frozen, seed, start and finish) and its pairings

The competition_final table holds what fixes a final's schedule (store.finals, finals.schedule);
pairing.final_number and pairing.final_round mark a pairing of a competition's ladder as the
final's: its place in the schedule and its round. A unique (ladder_id, final_number) index lets no
number of a final be booked twice (NULLs, the ladder's other pairings, are distinct on both
databases).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 23:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "competition_final",
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("entrants", sa.JSON(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["competition_id"], ["competition.id"]),
        sa.PrimaryKeyConstraint("competition_id"),
    )
    op.add_column("pairing", sa.Column("final_number", sa.Integer(), nullable=True))
    op.add_column("pairing", sa.Column("final_round", sa.Integer(), nullable=True))
    op.create_index(
        "ux_pairing_ladder_id_final_number", "pairing", ["ladder_id", "final_number"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ux_pairing_ladder_id_final_number", table_name="pairing")
    op.drop_column("pairing", "final_round")
    op.drop_column("pairing", "final_number")
    op.drop_table("competition_final")
