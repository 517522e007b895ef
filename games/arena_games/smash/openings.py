"""Smash the Code openings: none. Both wells start empty and both players get the same pairs, so
the start is balanced; the seed already varies the game (its pair sequence).
"""

from __future__ import annotations

from arena_games.api import Config, JointAction


def opening(seed: int, config: Config | None = None) -> tuple[JointAction, ...]:
    """No imposed actions: every game starts from init(seed, config)."""
    del seed, config
    return ()
