"""fairness and abuse: the schema changes of the third audit's fixes

Case-insensitive bot and user names (refused while names differ only in case), pairings marked
isolated (played alone after a batch's worker died), and API tokens' names and last use. Each change
is its own pair of functions below; `downgrade` undoes them in reverse order.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 15:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    _upgrade_case_insensitive_names()  # first: it may refuse, before anything changed
    _upgrade_pairing_isolation()
    _upgrade_token_listing()


def downgrade() -> None:
    _downgrade_token_listing()
    _downgrade_pairing_isolation()
    _downgrade_case_insensitive_names()


def _upgrade_pairing_isolation() -> None:
    """pairing.isolated: its worker died while it played with others, so it is played alone (issue 23.2)."""
    op.add_column("pairing", sa.Column("isolated", sa.Boolean(), nullable=False, server_default=sa.false()))


def _downgrade_pairing_isolation() -> None:
    op.drop_column("pairing", "isolated")


def _upgrade_token_listing() -> None:
    """apitoken.name and .last_used_at: a user's tokens are listed by them (issue 23.17)."""
    with op.batch_alter_table("apitoken") as table:
        table.add_column(sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
        table.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))


def _downgrade_token_listing() -> None:
    with op.batch_alter_table("apitoken") as table:
        table.drop_column("last_used_at")
        table.drop_column("name")


# (ladder id, name, its first bot id) of each spelling of a bot name spelled several ways on a ladder
BOT_CASE_CLASHES = (
    "SELECT ladder_id, name, min(id) FROM bot WHERE (ladder_id, lower(name)) IN "
    "(SELECT ladder_id, lower(name) FROM bot GROUP BY ladder_id, lower(name) "
    "HAVING count(DISTINCT name) > 1) GROUP BY ladder_id, name ORDER BY ladder_id, lower(name), name"
)
# (name, user id) of each user whose name another user spells otherwise
USER_CASE_CLASHES = (
    'SELECT name, id FROM "user" WHERE lower(name) IN '
    '(SELECT lower(name) FROM "user" GROUP BY lower(name) HAVING count(*) > 1) ORDER BY lower(name), name'
)


def _upgrade_case_insensitive_names() -> None:
    """Bot names unique per ladder, and user names unique, regardless of case (issue 23.20): one
    version number per (ladder, lower(bot name)), one user per lower(name). Names that already
    differ only in case are not renamed behind their owners' backs: the migration stops and names
    them, for the operator to rename."""
    bind = op.get_bind()
    clashes = [
        f"ladder {ladder}: bot {name!r} (id {bot})"
        for ladder, name, bot in bind.execute(sa.text(BOT_CASE_CLASHES))
    ]
    clashes += [f"user {name!r} (id {user})" for name, user in bind.execute(sa.text(USER_CASE_CLASHES))]
    if clashes:
        raise RuntimeError(
            f"names that differ only in case: {'; '.join(clashes)}. From this version bot names (on a "
            "ladder) and user names are unique regardless of case: rename all but one of each (UPDATE bot "
            "SET name = '<new>' WHERE ladder_id = <ladder> AND name = '<old>'; UPDATE \"user\" SET name = "
            "'<new>' WHERE id = <id>), tell their owners, and start again"
        )
    op.create_index(
        "ux_bot_ladder_id_lower_name_version",
        "bot",
        ["ladder_id", sa.text("lower(name)"), "version"],
        unique=True,
    )
    op.create_index("ux_user_lower_name", "user", [sa.text("lower(name)")], unique=True)


def _downgrade_case_insensitive_names() -> None:
    op.drop_index("ux_user_lower_name", table_name="user")
    op.drop_index("ux_bot_ladder_id_lower_name_version", table_name="bot")
