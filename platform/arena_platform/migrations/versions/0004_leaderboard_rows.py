"""leaderboardrow and ladderprogress: the leaderboard kept ready to serve, by triggers

One row per bot with everything its leaderboard entry shows, and per ladder the number of done
pairings, kept by the database in the transaction of every write they follow, whoever writes
(the store, a bulk load, a test): a bot inserted or updated, a Rating row inserted, updated or
deleted (a refit deletes and inserts them), a pairing inserted, deleted or changing to or from
done, a ladder inserted. Existing databases get their rows backfilled.

PostgreSQL runs one statement-level trigger per statement (transition tables), so a refit of a
thousand bots or a bulk load of 500,000 pairings is one UPDATE of the rows, not one per row;
SQLite has only row-level triggers. Beware: SQLite's batch mode copies a table to alter it and
drops its triggers; a later migration that recreates bot, rating, pairing or ladder on SQLite
must create them again (`create_triggers`).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Frozen with this revision (not the store's code, which may change).
BACKFILL = (
    """
    INSERT INTO ladderprogress (ladder_id, done)
    SELECT ladder.id,
           (SELECT count(*) FROM pairing WHERE pairing.ladder_id = ladder.id AND pairing.status = 'done')
    FROM ladder
    """,
    """
    INSERT INTO leaderboardrow (ladder_id, bot_id, name, version, author, house, player, status,
                                rating, low, high, games, wins, draws, losses, provisional)
    SELECT bot.ladder_id, bot.id, bot.name, bot.version, "user".name, bot.kind = 'house', bot.player,
           bot.status, rating.rating, rating.low, rating.high, coalesce(rating.games, 0),
           coalesce(rating.wins, 0), coalesce(rating.draws, 0), coalesce(rating.losses, 0),
           coalesce(rating.provisional, TRUE)
    FROM bot
    LEFT JOIN "user" ON "user".id = bot.owner_id
    LEFT JOIN rating ON rating.ladder_id = bot.ladder_id AND rating.bot_id = bot.id
    """,
)

# PostgreSQL: one function per table followed; `new_rows` and `old_rows` are the statement's
# transition tables (plpgsql plans a branch when it first runs it, so each trigger's branch names
# only the tables that trigger has).
POSTGRES_FUNCTIONS = {
    "ladder": """
        INSERT INTO ladderprogress (ladder_id, done) SELECT id, 0 FROM new_rows;
    """,
    "bot": """
        IF TG_OP = 'INSERT' THEN
            INSERT INTO leaderboardrow (ladder_id, bot_id, name, version, author, house, player, status,
                                        games, wins, draws, losses, provisional)
            SELECT n.ladder_id, n.id, n.name, n.version, u.name, n.kind = 'house', n.player, n.status,
                   0, 0, 0, 0, TRUE
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
    """,
    "rating": """
        IF TG_OP = 'DELETE' THEN
            UPDATE leaderboardrow AS r
            SET rating = NULL, low = NULL, high = NULL, games = 0, wins = 0, draws = 0, losses = 0,
                provisional = TRUE
            FROM old_rows AS o
            WHERE r.ladder_id = o.ladder_id AND r.bot_id = o.bot_id;
        ELSE
            UPDATE leaderboardrow AS r
            SET rating = n.rating, low = n.low, high = n.high, games = n.games, wins = n.wins,
                draws = n.draws, losses = n.losses, provisional = n.provisional
            FROM new_rows AS n
            WHERE r.ladder_id = n.ladder_id AND r.bot_id = n.bot_id;
        END IF;
    """,
    "pairing": """
        IF TG_OP = 'INSERT' THEN
            UPDATE ladderprogress AS p SET done = p.done + d.change
            FROM (SELECT ladder_id, count(*) AS change FROM new_rows WHERE status = 'done'
                  GROUP BY ladder_id) AS d
            WHERE p.ladder_id = d.ladder_id;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE ladderprogress AS p SET done = p.done - d.change
            FROM (SELECT ladder_id, count(*) AS change FROM old_rows WHERE status = 'done'
                  GROUP BY ladder_id) AS d
            WHERE p.ladder_id = d.ladder_id;
        ELSE  -- claims and heartbeats change no done count: no row of ladderprogress is touched
            UPDATE ladderprogress AS p SET done = p.done + d.change
            FROM (SELECT ladder_id, sum(change) AS change
                  FROM (SELECT ladder_id, 1 AS change FROM new_rows WHERE status = 'done'
                        UNION ALL
                        SELECT ladder_id, -1 FROM old_rows WHERE status = 'done') AS changes
                  GROUP BY ladder_id HAVING sum(change) <> 0) AS d
            WHERE p.ladder_id = d.ladder_id;
        END IF;
    """,
}
ALL_EVENTS = ("INSERT", "UPDATE", "DELETE")
POSTGRES_EVENTS = {
    "ladder": ("INSERT",),
    "bot": ("INSERT", "UPDATE"),
    "rating": ALL_EVENTS,
    "pairing": ALL_EVENTS,
}
TRANSITION_TABLES = {
    "INSERT": "NEW TABLE AS new_rows",
    "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
    "DELETE": "OLD TABLE AS old_rows",
}

# SQLite: row-level triggers, name -> (event, body).
UNRATED = (
    "rating = NULL, low = NULL, high = NULL, games = 0, wins = 0, draws = 0, losses = 0, provisional = 1"
)
RATED = (
    "rating = NEW.rating, low = NEW.low, high = NEW.high, games = NEW.games, wins = NEW.wins, "
    "draws = NEW.draws, losses = NEW.losses, provisional = NEW.provisional"
)
DONE_CHANGE = "(NEW.status = 'done') - (OLD.status = 'done')"
SQLITE_TRIGGERS = {
    "ladderprogress_of_new_ladder": (
        "AFTER INSERT ON ladder",
        "INSERT INTO ladderprogress (ladder_id, done) VALUES (NEW.id, 0);",
    ),
    "leaderboardrow_of_new_bot": (
        "AFTER INSERT ON bot",
        """INSERT INTO leaderboardrow (ladder_id, bot_id, name, version, author, house, player, status,
                                       games, wins, draws, losses, provisional)
           VALUES (NEW.ladder_id, NEW.id, NEW.name, NEW.version,
                   (SELECT name FROM "user" WHERE id = NEW.owner_id), NEW.kind = 'house', NEW.player,
                   NEW.status, 0, 0, 0, 0, 1);""",
    ),
    "leaderboardrow_of_changed_bot": (
        "AFTER UPDATE OF name, version, owner_id, kind, player, status ON bot",
        """UPDATE leaderboardrow
           SET name = NEW.name, version = NEW.version,
               author = (SELECT name FROM "user" WHERE id = NEW.owner_id),
               house = NEW.kind = 'house', player = NEW.player, status = NEW.status
           WHERE ladder_id = NEW.ladder_id AND bot_id = NEW.id;""",
    ),
    "leaderboardrow_of_new_rating": (
        "AFTER INSERT ON rating",
        f"UPDATE leaderboardrow SET {RATED} WHERE ladder_id = NEW.ladder_id AND bot_id = NEW.bot_id;",
    ),
    "leaderboardrow_of_changed_rating": (
        "AFTER UPDATE ON rating",
        f"UPDATE leaderboardrow SET {RATED} WHERE ladder_id = NEW.ladder_id AND bot_id = NEW.bot_id;",
    ),
    "leaderboardrow_of_deleted_rating": (
        "AFTER DELETE ON rating",
        f"UPDATE leaderboardrow SET {UNRATED} WHERE ladder_id = OLD.ladder_id AND bot_id = OLD.bot_id;",
    ),
    "ladderprogress_of_new_pairing": (
        "AFTER INSERT ON pairing WHEN NEW.status = 'done'",
        "UPDATE ladderprogress SET done = done + 1 WHERE ladder_id = NEW.ladder_id;",
    ),
    "ladderprogress_of_changed_pairing": (
        f"AFTER UPDATE OF status ON pairing WHEN {DONE_CHANGE} <> 0",
        f"UPDATE ladderprogress SET done = done + {DONE_CHANGE} WHERE ladder_id = NEW.ladder_id;",
    ),
    "ladderprogress_of_deleted_pairing": (
        "AFTER DELETE ON pairing WHEN OLD.status = 'done'",
        "UPDATE ladderprogress SET done = done - 1 WHERE ladder_id = OLD.ladder_id;",
    ),
}


def create_triggers(dialect: str) -> None:
    """The triggers that keep leaderboardrow and ladderprogress, on `dialect`'s database."""
    if dialect == "sqlite":
        for name, (event, body) in SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {event} BEGIN {body} END")
        return
    for table, body in POSTGRES_FUNCTIONS.items():
        op.execute(
            f"CREATE FUNCTION arena_follow_{table}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {body} RETURN NULL; END $$"
        )
        for event in POSTGRES_EVENTS[table]:
            op.execute(
                f'CREATE TRIGGER arena_follow_{table}_{event.lower()} AFTER {event} ON "{table}" '
                f"REFERENCING {TRANSITION_TABLES[event]} FOR EACH STATEMENT "
                f"EXECUTE FUNCTION arena_follow_{table}()"
            )


def drop_triggers(dialect: str) -> None:
    if dialect == "sqlite":
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER {name}")
        return
    for table in POSTGRES_FUNCTIONS:
        op.execute(f"DROP FUNCTION arena_follow_{table}() CASCADE")  # and its triggers


def upgrade() -> None:
    op.create_table(
        "leaderboardrow",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("author", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("house", sa.Boolean(), nullable=False),
        sa.Column("player", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("rating", sa.Float(), nullable=True),
        sa.Column("low", sa.Float(), nullable=True),
        sa.Column("high", sa.Float(), nullable=True),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.Column("provisional", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bot.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.PrimaryKeyConstraint("ladder_id", "bot_id"),
    )
    op.create_table(
        "ladderprogress",
        sa.Column("ladder_id", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladder.id"]),
        sa.PrimaryKeyConstraint("ladder_id"),
    )
    for statement in BACKFILL:
        op.execute(statement)
    create_triggers(op.get_bind().dialect.name)


def downgrade() -> None:
    drop_triggers(op.get_bind().dialect.name)
    op.drop_table("ladderprogress")
    op.drop_table("leaderboardrow")
