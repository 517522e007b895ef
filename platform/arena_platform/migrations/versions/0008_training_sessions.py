"""training sessions: trainingsession, trainingcheckpoint, workerbeat, and the checkpoint mark

A bot (and its leaderboard row) gets `checkpoint`, false for every existing bot. The triggers of
0004 that add a bot's leaderboard row are replaced by ones that copy the mark too (a bot's mark
never changes, so the update triggers stay as they are). SQLite adds the columns in place (no
batch copy), so the other triggers survive.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 04:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ROW_COLUMNS = (
    "ladder_id, bot_id, name, version, author, house, player, status, checkpoint, "
    "games, wins, draws, losses, provisional"
)

# Frozen with this revision; {checkpoint} is the new bot's mark (0004's, plus the mark).
POSTGRES_BOT = f"""
    IF TG_OP = 'INSERT' THEN
        INSERT INTO leaderboardrow ({ROW_COLUMNS})
        SELECT n.ladder_id, n.id, n.name, n.version, u.name, n.kind = 'house', n.player, n.status,
               n.checkpoint, 0, 0, 0, 0, TRUE
        FROM new_rows AS n LEFT JOIN "user" AS u ON u.id = n.owner_id;
    ELSE
        UPDATE leaderboardrow AS r
        SET name = n.name, version = n.version, author = u.name, house = n.kind = 'house',
            player = n.player, status = n.status
        FROM new_rows AS n LEFT JOIN "user" AS u ON u.id = n.owner_id
        WHERE r.ladder_id = n.ladder_id AND r.bot_id = n.id
          AND (r.name, r.version, r.author, r.house, r.player, r.status)
              IS DISTINCT FROM (n.name, n.version, u.name, n.kind = 'house', n.player, n.status);
    END IF;
"""
SQLITE_NEW_BOT = """
    INSERT INTO leaderboardrow ({columns})
    VALUES (NEW.ladder_id, NEW.id, NEW.name, NEW.version,
            (SELECT name FROM "user" WHERE id = NEW.owner_id), NEW.kind = 'house', NEW.player,
            NEW.status, {checkpoint}0, 0, 0, 0, 1);
"""


def _bot_trigger(dialect: str, *, with_mark: bool) -> None:
    """(Re)creates the trigger that adds a new bot's leaderboard row, copying its mark or not."""
    if dialect == "sqlite":
        columns = ROW_COLUMNS if with_mark else ROW_COLUMNS.replace(" checkpoint,", "")
        body = SQLITE_NEW_BOT.format(columns=columns, checkpoint="NEW.checkpoint, " if with_mark else "")
        op.execute("DROP TRIGGER leaderboardrow_of_new_bot")
        op.execute(f"CREATE TRIGGER leaderboardrow_of_new_bot AFTER INSERT ON bot BEGIN {body} END")
        return
    body = POSTGRES_BOT
    if not with_mark:
        body = body.replace(" checkpoint,", "").replace("n.checkpoint, ", "")
    op.execute(
        "CREATE OR REPLACE FUNCTION arena_follow_bot() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {body} RETURN NULL; END $$"
    )


def upgrade() -> None:
    for table in ("bot", "leaderboardrow"):
        op.add_column(table, sa.Column("checkpoint", sa.Boolean(), nullable=False, server_default=sa.false()))
    _bot_trigger(op.get_bind().dialect.name, with_mark=True)
    op.create_table(
        "trainingsession",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("game", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("kit", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("bot_name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("base_bot_id", sa.Integer(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("progress", sa.JSON(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("state_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["base_bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["owner_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_trainingsession_owner_id", "trainingsession", ["owner_id"])
    op.create_index("ix_trainingsession_status", "trainingsession", ["status"])
    op.create_table(
        "trainingcheckpoint",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=True),
        sa.Column("network_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["session_id"], ["trainingsession.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "generation"),
    )
    op.create_index("ix_trainingcheckpoint_bot_id", "trainingcheckpoint", ["bot_id"])
    op.create_table(
        "workerbeat",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("queues", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("workerbeat")
    op.drop_index("ix_trainingcheckpoint_bot_id", table_name="trainingcheckpoint")
    op.drop_table("trainingcheckpoint")
    op.drop_index("ix_trainingsession_status", table_name="trainingsession")
    op.drop_index("ix_trainingsession_owner_id", table_name="trainingsession")
    op.drop_table("trainingsession")
    _bot_trigger(op.get_bind().dialect.name, with_mark=False)
    for table in ("leaderboardrow", "bot"):
        op.drop_column(table, "checkpoint")
