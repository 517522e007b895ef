"""A stand-in for a played game, for tests that record results without playing (scores, SPRT
counts, leases): the game as `store.results.record_pairing` takes it, with no replay behind it;
and a bobail bot to play it, with no model behind it."""

from __future__ import annotations

from sqlmodel import Session

from arena_bots.manifest import Manifest
from arena_platform.store import bots, users
from arena_platform.store.results import PlayedGame


def placeholder_game(index: int, first: int, second: int, score: float) -> PlayedGame:
    """Game `index` of a pairing, `first` against `second`, `score` for the first seat."""
    return PlayedGame(
        index=index,
        first_bot_id=first,
        second_bot_id=second,
        score=score,
        end_reason="test",
        forfeit_seat=None,
        steps=1,
        replay_sha256="0" * 64,
    )


def placeholder_bot(db: Session, ladder_id: int, owner: str, name: str) -> int:
    """A greedy bobail bot `name` of user `owner` on the ladder (no model blob behind it); its id."""
    owner_id = users.get_user_by_name(db, name=owner).id
    manifest = Manifest(game="bobail", game_version=1, name=name, player="greedy")
    return bots.create_network_bot(
        db, ladder_id=ladder_id, owner_id=owner_id, manifest=manifest, report={}, model_sha256="0" * 64
    ).id
