"""CSB openings: none. The seed already draws the map (stock map, rotation, jitter), and the two
seats' starting places differ (player 0's pods start nearer the line), which Arena's seat-swapped
pairs cancel.
"""

from __future__ import annotations

from arena_games.api import Config, JointAction


def opening(seed: int, config: Config | None = None) -> tuple[JointAction, ...]:
    """No imposed actions: every game starts from init(seed, config)."""
    del seed, config
    return ()
