"""The store's users, bots and read models, on SQLite and PostgreSQL (see conftest.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import ApiToken, Bot
from arena_platform.store import bots, ladders, reads, users
from arena_platform.store.ladders import ensure_ladder


def _manifest(name: str, player: str = "greedy") -> Manifest:
    return Manifest(game="bobail", game_version=1, name=name, player=player)


def _upload(db, ladder, owner, name: str, player: str = "greedy", *, model: str) -> Bot:
    """`owner`'s upload of a Bobail bot `name` to `ladder`, its model key `model` * 64."""
    return bots.create_network_bot(
        db,
        ladder_id=ladder.id,
        owner_id=owner.id,
        manifest=_manifest(name, player),
        report={},
        model_sha256=model * 64,
    )


def test_a_token_is_shown_once_and_stored_as_its_hash(engine: Engine):
    with session(engine) as db:
        user, token = users.create_user(db, name="alice")
        db.commit()
        assert token.startswith(users.TOKEN_PREFIX)
        assert len(token) > 40
        stored = db.exec(select(ApiToken.token_sha256)).all()
        assert stored == [users.token_sha256(token)]
        assert users.user_for_token(db, token=token).id == user.id
        assert users.user_for_token(db, token=token + "x") is None
        second = users.issue_token(db, user_id=user.id)
        assert users.revoke_token(db, token=token)
        db.commit()
        assert users.user_for_token(db, token=token) is None
        assert not users.revoke_token(db, token=token)
        assert users.user_for_token(db, token=second).id == user.id
        second_id = users.active_token(db, token=second).id
        other, _ = users.create_user(db, name="bob")
        assert not users.revoke_token_by_id(db, user_id=other.id, token_id=second_id)  # not bob's
        assert users.revoke_token_by_id(db, user_id=user.id, token_id=second_id)
        db.commit()
        assert users.user_for_token(db, token=second) is None
        assert not users.revoke_token_by_id(db, user_id=user.id, token_id=second_id)


@pytest.mark.parametrize("name", ["", " padded", "x" * 65, "tab\there"])
def test_user_names_are_checked(engine: Engine, name: str):
    with session(engine) as db, pytest.raises(users.InvalidName):
        users.create_user(db, name=name)


def test_user_names_are_unique(engine: Engine):
    with session(engine) as db:
        users.create_user(db, name="alice")
        db.commit()
        with pytest.raises(users.NameTaken):
            users.create_user(db, name="alice")


def test_reuploading_a_name_makes_a_new_version_and_keeps_the_old_playing_its_test(engine: Engine):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        alice, _ = users.create_user(db, name="alice")
        first = _upload(db, ladder, alice, "alpha", model="a")
        second = _upload(db, ladder, alice, "alpha", "mcts", model="b")
        db.commit()
        assert (first.version, first.status) == (1, "active")  # until the SPRT's verdict
        assert (second.version, second.status, second.player, second.kind) == (2, "active", "mcts", "network")
        assert second.manifest["player"] == "mcts"


def test_a_bot_name_belongs_to_its_first_owner_whatever_its_case_and_house_names_to_nobody(engine: Engine):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        alice, _ = users.create_user(db, name="alice")
        bob, _ = users.create_user(db, name="bob")
        _upload(db, ladder, alice, "Alpha", model="a")
        for name in ("Alpha", "alpha", "random", "RANDOM", "uct"):
            with pytest.raises(bots.NameTaken, match="taken on this ladder by someone else"):
                _upload(db, ladder, bob, name, model="b")
        with pytest.raises(bots.NameTaken, match="your bot is spelled 'Alpha'"):
            _upload(db, ladder, alice, "ALPHA", model="c")
        assert _upload(db, ladder, alice, "Alpha", model="d").version == 2


def test_a_user_name_is_one_name_whatever_its_case(engine: Engine):
    with session(engine) as db:
        users.create_user(db, name="alice")
        with pytest.raises(users.NameTaken, match="'Alice' is taken \\(as 'alice'\\)"):
            users.create_user(db, name="Alice")


def test_a_ladder_made_before_a_house_bot_joined_its_game_gains_it_once(engine: Engine, monkeypatch):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        alice, _ = users.create_user(db, name="alice")
        _upload(db, ladder, alice, "chain", model="a")  # taken before "chain" was a house bot of this game
        db.commit()
        # "lookahead" twice: the second insert meets the unique guard, as a concurrent one would
        monkeypatch.setitem(
            ladders.HOUSE_BOTS, "bobail", ("random", "uct", "chain", "lookahead", "lookahead")
        )
        for _ in range(2):
            assert ensure_ladder(db, game="bobail", simulations=16).id == ladder.id
            db.commit()
        on_ladder = db.exec(select(Bot.name, Bot.kind, Bot.owner_id).where(Bot.ladder_id == ladder.id)).all()
        assert sorted(on_ladder) == [
            ("chain", "network", alice.id),
            ("lookahead", "house", None),
            ("random", "house", None),
            ("uct", "house", None),
        ]


def test_the_unique_version_guard_catches_a_race(engine: Engine):
    with session(engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=16)
        alice, _ = users.create_user(db, name="alice")
        db.commit()
        for _ in range(2):  # two uploads that both read version 0 and wrote version 1
            db.add(
                Bot(
                    ladder_id=ladder.id,
                    owner_id=alice.id,
                    name="alpha",
                    version=1,
                    kind="network",
                    player="greedy",
                )
            )
        with pytest.raises(IntegrityError):
            db.commit()


def test_only_the_owner_retires_a_bot(engine: Engine, seeded):
    with session(engine) as db:
        alpha = bots.get_bot(db, bot_id=seeded.alpha)
        with pytest.raises(bots.NotOwner):
            bots.retire_bot(db, bot=alpha, user_id=alpha.owner_id + 1)
        with pytest.raises(bots.NotOwner):
            bots.retire_bot(db, bot=bots.get_bot(db, bot_id=seeded.random), user_id=alpha.owner_id)
        assert bots.retire_bot(db, bot=alpha, user_id=alpha.owner_id).status == "retired"
        assert bots.retire_bot(db, bot=alpha, user_id=alpha.owner_id).status == "retired"  # idempotent
        db.commit()
        assert [entry.name for entry in reads.leaderboard(db, ladder_id=seeded.ladder_id)] == [
            "beta",
            "random",
            "uct",
        ]


def test_upload_attempts_are_counted_per_user_in_utc_up_to_the_limit(engine: Engine, seeded):
    hour = timedelta(hours=1)
    with session(engine) as db:
        alice = users.get_user_by_name(db, name="alice")
        bob = users.get_user_by_name(db, name="bob")
        hour_ago = datetime.now(UTC) - hour
        first = users.count_upload_attempt(db, user_id=alice.id, limit=2, window=hour)
        users.count_upload_attempt(db, user_id=alice.id, limit=2, window=hour)
        users.count_upload_attempt(db, user_id=bob.id, limit=2, window=hour)
        db.commit()
        with pytest.raises(users.UploadLimitReached) as reached:
            users.count_upload_attempt(db, user_id=alice.id, limit=2, window=hour)
        db.rollback()
        times = users.upload_attempts_since(db, user_id=alice.id, since=hour_ago)
        assert len(times) == 2
        assert times[0].tzinfo is not None
        assert hour_ago < times[0] <= times[1]
        assert reached.value.frees_at == times[0] + hour
        users.refund_upload_attempt(db, attempt_id=first)
        db.commit()
        assert users.upload_attempts_since(db, user_id=alice.id, since=hour_ago) == times[1:]
        later = datetime.now(UTC) + timedelta(seconds=5)
        assert users.upload_attempts_since(db, user_id=alice.id, since=later) == []


def test_bot_listing_and_description(engine: Engine, seeded):
    with session(engine) as db:
        listed = bots.list_bots(db, ladder_id=seeded.ladder_id)
        assert [bot.name for bot in listed] == ["beta", "alpha", "uct", "random"]  # newest first
        assert [bot.name for bot in bots.list_bots(db, owner="alice")] == ["alpha"]
        assert [bot.name for bot in bots.list_bots(db, limit=1, offset=1)] == ["alpha"]
        assert bots.list_bots(db, status="retired") == []
        detail = bots.describe_bot(db, bot_id=seeded.alpha)
        assert (detail.author, detail.ladder, detail.game, detail.kind) == (
            "alice",
            "bobail-v1-16",
            "bobail",
            "network",
        )
        assert detail.rating.rating == 150.0
        assert detail.rating.wins == 2
        assert detail.created_at.tzinfo is not None
        assert bots.describe_bot(db, bot_id=seeded.uct).rating is None
        assert bots.describe_bot(db, bot_id=10**6) is None


def test_leaderboard_ranks_rated_bots_and_lists_unrated_ones_last(engine: Engine, seeded):
    with session(engine) as db:
        board = reads.leaderboard(db, ladder_id=seeded.ladder_id)
    assert [(e.rank, e.name, e.author, e.house) for e in board] == [
        (1, "alpha", "alice", False),
        (2, "beta", "bob", False),
        (3, "random", None, True),
        (None, "uct", None, True),
    ]
    alpha, uct = board[0], board[3]
    assert (alpha.rating, alpha.low, alpha.high, alpha.games, alpha.wins, alpha.draws, alpha.losses) == (
        150.0, 70.0, 230.0, 4, 2, 1, 1,
    )  # fmt: skip
    assert (uct.rating, uct.games, uct.provisional) == (None, 0, True)


def test_pairing_progress_counts_each_state(engine: Engine, seeded):
    with session(engine) as db:
        progress = reads.pairing_progress(db, ladder_id=seeded.ladder_id)
        assert progress.model_dump() == {"queued": 2, "running": 1, "done": 4, "failed": 1}
        assert reads.pairing_progress(db, ladder_id=10**6).model_dump() == dict.fromkeys(
            progress.model_dump(), 0
        )


def test_games_filter_by_ladder_bot_result_and_reason(engine: Engine, seeded):
    alpha, beta, random = seeded.alpha, seeded.beta, seeded.random
    with session(engine) as db:

        def ids(**filters) -> list[int]:
            return [game.id for game in reads.list_games(db, **filters)]

        first, second, third, fourth = seeded.games
        assert ids(ladder_id=seeded.ladder_id) == [fourth, third, second, first]
        assert ids(ladder_id=10**6) == []
        assert ids(bot_id=random) == [second, first]
        assert ids(bot_id=alpha, result="win") == [second, first]
        assert ids(bot_id=alpha, result="loss") == [fourth]
        assert ids(bot_id=beta, result="win") == [fourth]
        assert ids(result="draw") == [third]
        assert ids(reason="FORFEITS") == [fourth]
        assert ids(reason="%") == []  # a LIKE wildcard is matched literally
        assert ids(limit=2, offset=1) == [third, second]
        with pytest.raises(ValueError, match="point of view"):
            reads.list_games(db, result="win")
        game = reads.get_game(db, game_id=fourth)
        assert (game.first.name, game.second.name, game.score, game.forfeit_seat) == ("beta", "alpha", 1.0, 1)
        assert len(game.replay_sha256) == 64
        assert reads.get_game(db, game_id=10**6) is None


def test_results_by_opponent_take_both_seats(engine: Engine, seeded):
    with session(engine) as db:
        record = {r.opponent.name: r for r in reads.results_by_opponent(db, bot_id=seeded.alpha)}
        assert set(record) == {"random", "beta"}
        random, beta = record["random"], record["beta"]
        assert (random.games, random.wins, random.draws, random.losses, random.score) == (2, 2, 0, 0, 1.0)
        assert (beta.games, beta.wins, beta.draws, beta.losses, beta.score) == (2, 0, 1, 1, 0.25)
        assert beta.author == "bob"
        assert random.author is None
        assert reads.results_by_opponent(db, bot_id=seeded.uct) == []


def test_rating_history_is_oldest_first(engine: Engine, seeded):
    with session(engine) as db:
        history = reads.rating_history(db, bot_id=seeded.alpha)
        assert [(point.games, point.rating) for point in history] == [(1, 40.0), (2, 120.0), (4, 150.0)]
        assert all(point.recorded_at.tzinfo is not None for point in history)
        assert reads.rating_history(db, bot_id=seeded.beta) == []
