"""Spring 2021 openings: none. The seed already draws the map (holes and starting trees), and the
official map is point-symmetric, each player's trees mirroring the other's, so the start is balanced.
"""

from __future__ import annotations

from arena_games.api import Config, JointAction


def opening(seed: int, config: Config | None = None) -> tuple[JointAction, ...]:
    """No imposed actions: every game starts from init(seed, config)."""
    del seed, config
    return ()
