"""A stand-in for a played game, for tests that record results without playing (scores, SPRT
counts, leases): the game as `store.results.record_pairing` takes it, with no replay behind it."""

from __future__ import annotations

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
