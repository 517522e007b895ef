"""The leaderboard's ready rows (LeaderboardRow, LadderProgress, kept by the triggers of migration
0004): an uncached read is a few statements on them alone, whatever the number of bots, and they
say what the joins over bots, ratings, owners and pairings say after every kind of write."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, delete, event, func, update
from sqlmodel import Session, col, select

from arena_bots.manifest import Manifest
from arena_platform.api.routes.ladders import LadderOut, Leaderboard, leaderboard_document
from arena_platform.db import session
from arena_platform.models import Bot, PairCount, Pairing, Rating, User
from arena_platform.store import bookings, bots, pairings, reads
from arena_platform.store.ladders import get_ladder
from arena_platform.store.ratings import refit_ladder
from arena_platform.store.results import PlayedGame, record_pairing, recount_pairs

READY_TABLES = {"ladder", "leaderboardrow", "ladderprogress", "pairing"}  # pairing: its few live ones


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements `engine` runs inside the block."""
    seen: list[str] = []

    def record(_connection, _cursor, statement, *_args) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def tables_read(statement: str) -> set[str]:
    return {name.lower() for name in re.findall(r'\b(?:FROM|JOIN)\s+"?(\w+)"?', statement, re.IGNORECASE)}


def expected_entries(db: Session, ladder_id: int) -> list[dict]:
    """The leaderboard as the joins say: active bots, rated ones by rating (then id), unrated by id."""
    rows = db.exec(
        select(Bot, User.name, Rating)
        .outerjoin(Rating, (Rating.bot_id == Bot.id) & (Rating.ladder_id == Bot.ladder_id))
        .outerjoin(User, User.id == Bot.owner_id)
        .where(Bot.ladder_id == ladder_id, Bot.status == "active")
    ).all()
    rows = sorted(rows, key=lambda row: (row[2] is None, -(row[2].rating if row[2] else 0.0), row[0].id))
    entries, rank = [], 0
    for bot, author, rating in rows:
        rank += rating is not None
        record = {key: getattr(rating, key, None) for key in ("rating", "low", "high")} | {
            key: getattr(rating, key, 0) for key in ("games", "wins", "draws", "losses")
        }
        entries.append(
            {"rank": rank if rating else None, "bot_id": bot.id, "name": bot.name, "version": bot.version}
            | {"author": author, "house": bot.kind == "house", "player": bot.player}
            | {"checkpoint": bot.checkpoint}
            | record
            | {"provisional": rating.provisional if rating else True}
        )
    return entries


def expected_progress(db: Session, ladder_id: int) -> dict[str, int]:
    counts = db.exec(
        select(Pairing.status, func.count()).where(Pairing.ladder_id == ladder_id).group_by(Pairing.status)
    )
    return {"queued": 0, "running": 0, "done": 0, "failed": 0} | dict(counts.all())


def assert_ready_rows_agree(engine: Engine, ladder_id: int) -> None:
    with session(engine) as db:
        assert [entry.model_dump() for entry in reads.leaderboard(db, ladder_id=ladder_id)] == (
            expected_entries(db, ladder_id)
        )
        progress = reads.pairing_progress(db, ladder_id=ladder_id)
        assert progress.model_dump() == expected_progress(db, ladder_id)


def add_rated_bots(engine: Engine, ladder_id: int, count: int) -> None:
    """`count` more house bots on the ladder, each with a rating."""
    with session(engine) as db:
        added = [Bot(ladder_id=ladder_id, name=f"more-{k}", kind="house", player="uct") for k in range(count)]
        db.add_all(added)
        db.flush()
        db.add_all(
            Rating(ladder_id=ladder_id, bot_id=bot.id, rating=k, low=k - 50, high=k + 50, games=2, wins=1,
                   draws=0, losses=1, provisional=True)
            for k, bot in enumerate(added)
        )  # fmt: skip
        db.commit()


def read_leaderboard(engine: Engine, ladder_id: int) -> list[str]:
    """The statements of one uncached leaderboard read."""
    with session(engine) as db, statements(engine) as seen:
        leaderboard_document(ladder_id, db)
    return seen


def test_an_uncached_leaderboard_read_is_four_statements_on_the_ready_rows(engine: Engine, seeded):
    small = read_leaderboard(engine, seeded.ladder_id)
    add_rated_bots(engine, seeded.ladder_id, 40)
    big = read_leaderboard(engine, seeded.ladder_id)
    assert len(small) == len(big) == 4  # the ladder, its progress, its pace, its entries: not one per bot
    for statement in big:
        assert tables_read(statement) <= READY_TABLES, statement  # no game, rating, bot or owner
    with session(engine) as db:
        assert len(reads.leaderboard(db, ladder_id=seeded.ladder_id)) == 4 + 40


def test_the_document_is_the_json_of_the_leaderboard_model(engine: Engine, seeded):
    with session(engine) as db:
        ladder = get_ladder(db, ladder_id=seeded.ladder_id)
        model = Leaderboard(
            ladder=LadderOut.model_validate(ladder, from_attributes=True),
            progress=reads.pairing_progress(db, ladder_id=seeded.ladder_id),
            pace=bookings.ladder_pace(db, ladder=ladder),
            entries=reads.leaderboard(db, ladder_id=seeded.ladder_id),
        )
        assert leaderboard_document(seeded.ladder_id, db) == model.model_dump_json().encode()


def test_the_ready_rows_follow_new_games_refits_retirements_and_uploads(engine: Engine, seeded):
    assert_ready_rows_agree(engine, seeded.ladder_id)
    with session(engine) as db:  # new games, recorded as a worker does, then a refit
        recount_pairs(db, ladder_id=seeded.ladder_id)
        db.commit()
        pairing = db.exec(select(Pairing).where(Pairing.status == "queued")).first()  # alpha-uct
        games = [
            PlayedGame(index, first, second, score, "status=done", None, 30, "0" * 64)
            for index, (first, second, score) in enumerate(
                ((pairing.bot_a_id, pairing.bot_b_id, 1.0), (pairing.bot_b_id, pairing.bot_a_id, 0.5))
            )
        ]
        assert record_pairing(db, pairing=pairing, games=games)
    assert_ready_rows_agree(engine, seeded.ladder_id)  # progress: one more done, one less queued
    with session(engine) as db:
        assert refit_ladder(db, ladder_id=seeded.ladder_id)
    assert_ready_rows_agree(engine, seeded.ladder_id)  # the uct house bot is rated now
    with session(engine) as db:
        assert reads.leaderboard(db, ladder_id=seeded.ladder_id)[-1].rank is not None
        alpha = bots.get_bot(db, bot_id=seeded.alpha)
        bots.retire_bot(db, bot=alpha, user_id=alpha.owner_id)
        db.commit()
    assert_ready_rows_agree(engine, seeded.ladder_id)
    with session(engine) as db:  # a new version of beta: beta 1 under test, beta 2 unrated, last
        beta = bots.get_bot(db, bot_id=seeded.beta)
        manifest = Manifest(game="bobail", game_version=1, name="beta", player="greedy")
        bots.create_network_bot(
            db, ladder_id=seeded.ladder_id, owner_id=beta.owner_id, manifest=manifest, report={},
            model_sha256="1" * 64,
        )  # fmt: skip
        db.commit()
        board = reads.leaderboard(db, ladder_id=seeded.ladder_id)
        newest = board[-1]
        assert (newest.name, newest.version, newest.author, newest.rank) == ("beta", 2, "bob", None)
    assert_ready_rows_agree(engine, seeded.ladder_id)
    with session(engine) as db:  # pairings change status: a claim, a failure, a bulk update
        queued = db.exec(select(Pairing.id).where(Pairing.status == "queued")).first()
        assert pairings.claim_pairing(db, pairing_id=queued, owner="w", lease_seconds=60, max_attempts=3)
        db.exec(update(Pairing).where(col(Pairing.status) == "failed").values(status="done"))
        db.exec(update(Pairing).where(col(Pairing.id) == queued).values(status="failed"))
        db.commit()
    assert_ready_rows_agree(engine, seeded.ladder_id)


def test_a_rating_row_deleted_leaves_its_bot_unrated(engine: Engine, seeded):
    with session(engine) as db:
        db.delete(db.get(Rating, (seeded.ladder_id, seeded.beta)))
        db.commit()
        beta = next(
            entry for entry in reads.leaderboard(db, ladder_id=seeded.ladder_id) if entry.name == "beta"
        )
        assert (beta.rank, beta.rating, beta.games, beta.provisional) == (None, None, 0, True)
    assert_ready_rows_agree(engine, seeded.ladder_id)


def pair_count(ladder_id: int, first: int, second: int, wins: int, draws: int, losses: int) -> PairCount:
    """The PairCount row of `first`'s wins, draws and losses against `second`."""
    if first > second:
        first, second, wins, losses = second, first, losses, wins
    return PairCount(
        ladder_id=ladder_id,
        low_bot_id=first,
        high_bot_id=second,
        low_wins=wins,
        draws=draws,
        high_wins=losses,
    )


def test_a_house_bot_that_lost_every_game_leaves_the_others_intervals_narrow(engine: Engine, seeded):
    """Issue 23 item 9, through the store: `random` (a house bot) lost all its games, and the others'
    leaderboard intervals still narrow with their games, so the provisional flag clears."""
    measured = (seeded.alpha, seeded.beta, seeded.uct)
    with session(engine) as db:  # the pair counts are the fit's whole input
        db.exec(delete(PairCount).where(col(PairCount.ladder_id) == seeded.ladder_id))
        for k, bot in enumerate(measured):
            db.add_all(pair_count(seeded.ladder_id, bot, other, 110, 60, 110) for other in measured[k + 1 :])
            db.add(pair_count(seeded.ladder_id, bot, seeded.random, 50, 0, 0))
        db.commit()
        assert refit_ladder(db, ladder_id=seeded.ladder_id)
        board = {entry.bot_id: entry for entry in reads.leaderboard(db, ladder_id=seeded.ladder_id)}
    for bot in measured:
        assert board[bot].games == 2 * 280 + 50
        assert (board[bot].high - board[bot].low) / 2 <= 50
        assert not board[bot].provisional
    assert board[seeded.random].losses == 150
    assert board[seeded.random].provisional  # only the prior places it
    assert_ready_rows_agree(engine, seeded.ladder_id)
