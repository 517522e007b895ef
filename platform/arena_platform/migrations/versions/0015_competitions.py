"""competitions: organisers, competitions with their own ladders, and their entries

user.organiser (who may create competitions); the competition and competition_entry tables; and
ladder.competition_id, the competition a ladder rates (None: an open ladder). The unique (game,
game_version, simulations) of ladders now holds for open ladders only, as a partial unique index,
so a competition's ladder may share its game version and budget with the open one (issue 26).

SQLite cannot drop a table's UNIQUE constraint, so its ladder table is rebuilt: the rows are held
in a copy, the table is dropped and made again, and the rows come back. The bots, pairings and
games that refer to ladders are orphaned in between: with their foreign keys deferred to the
commit (PRAGMA defer_foreign_keys), SQLite counts them as the table goes and uncounts them as the
rows return, so nothing is left to refuse at the commit. The rebuild drops the ladder's index and
its trigger (migration 0004's), made again here.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 23:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

OPEN_LADDER = sa.text("competition_id IS NULL")
LADDER_COLUMNS = "id, name, game, game_version, simulations, seed, created_at"
# Frozen with this revision: migration 0004's trigger on the ladder table (SQLite).
SQLITE_LADDER_TRIGGER = (
    "CREATE TRIGGER ladderprogress_of_new_ladder AFTER INSERT ON ladder "
    "BEGIN INSERT INTO ladderprogress (ladder_id, done) VALUES (NEW.id, 0); END"
)


def upgrade() -> None:
    op.add_column("user", sa.Column("organiser", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "competition",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("organiser_id", sa.Integer(), nullable=False),
        sa.Column("title", sqlmodel.sql.sqltypes.AutoString(length=120), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(length=4000), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column("max_active_bots", sa.Integer(), nullable=False),
        sa.Column("uploads_per_day", sa.Integer(), nullable=False),
        sa.Column("final_pairs", sa.Integer(), nullable=True),
        sa.Column("final_seconds", sa.Integer(), nullable=True),
        sa.Column("final_stop", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
        sa.Column("final_confidence", sa.Float(), nullable=True),
        sa.Column("leagues", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organiser_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_competition_organiser_id", "competition", ["organiser_id"])
    _upgrade_ladder()
    op.create_table(
        "competition_entry",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("competition_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["competition_id"], ["competition.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_competition_entry_competition_id_user_id_started_at",
        "competition_entry",
        ["competition_id", "user_id", "started_at"],
    )
    op.create_index("ix_competition_entry_user_id", "competition_entry", ["user_id"])
    op.create_index("ix_competition_entry_bot_id", "competition_entry", ["bot_id"])


def _upgrade_ladder() -> None:
    """ladder.competition_id, and the unique triple of open ladders only."""
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_ladder(competitions=True)
    else:
        op.add_column("ladder", sa.Column("competition_id", sa.Integer(), nullable=True))
        op.create_foreign_key(None, "ladder", "competition", ["competition_id"], ["id"])
        op.drop_constraint("ladder_game_game_version_simulations_key", "ladder", type_="unique")
    op.create_index("ix_ladder_competition_id", "ladder", ["competition_id"], unique=True)
    op.create_index(
        "ux_ladder_open_game_version_simulations",
        "ladder",
        ["game", "game_version", "simulations"],
        unique=True,
        sqlite_where=OPEN_LADDER,
        postgresql_where=OPEN_LADDER,
    )


def _rebuild_sqlite_ladder(*, competitions: bool) -> None:
    """The ladder table made again, rows kept (see the module's doc): with competition_id and no
    UNIQUE constraint (`competitions`), or as before this revision."""
    op.execute("CREATE TABLE ladder_before_rebuild AS SELECT * FROM ladder WHERE 0")
    # An INSERT: Python's sqlite3 opens its transaction before the first one (never before DDL), and
    # the deferral below lasts only as long as the transaction it is set in.
    op.execute("INSERT INTO ladder_before_rebuild SELECT * FROM ladder")
    op.execute("PRAGMA defer_foreign_keys = ON")
    op.execute("DROP TABLE ladder")  # and its index and trigger
    if competitions:
        extra = [
            sa.Column("competition_id", sa.Integer(), nullable=True),
            sa.ForeignKeyConstraint(["competition_id"], ["competition.id"]),
        ]
    else:
        extra = [sa.UniqueConstraint("game", "game_version", "simulations")]
    op.create_table(
        "ladder",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("game", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("game_version", sa.Integer(), nullable=False),
        sa.Column("simulations", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        *extra,
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute(f"INSERT INTO ladder ({LADDER_COLUMNS}) SELECT {LADDER_COLUMNS} FROM ladder_before_rebuild")
    op.execute("DROP TABLE ladder_before_rebuild")
    op.execute("PRAGMA defer_foreign_keys = OFF")  # nothing is pending: the rows are back
    op.create_index("ix_ladder_name", "ladder", ["name"], unique=True)
    op.execute(SQLITE_LADDER_TRIGGER)


def downgrade() -> None:
    op.drop_index("ix_competition_entry_bot_id", table_name="competition_entry")
    op.drop_index("ix_competition_entry_user_id", table_name="competition_entry")
    op.drop_index("ix_competition_entry_competition_id_user_id_started_at", table_name="competition_entry")
    op.drop_table("competition_entry")
    op.drop_index("ux_ladder_open_game_version_simulations", table_name="ladder")
    op.drop_index("ix_ladder_competition_id", table_name="ladder")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_ladder(competitions=False)
    else:
        op.create_unique_constraint(None, "ladder", ["game", "game_version", "simulations"])
        op.drop_column("ladder", "competition_id")  # and its foreign key
    op.drop_index("ix_competition_organiser_id", table_name="competition")
    op.drop_table("competition")
    op.drop_column("user", "organiser")
