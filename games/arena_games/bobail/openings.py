"""Seeded Bobail openings: a few random legal half-moves to a quiet position.

An opening is player 0's first (pawn-only) turn plus one or two full turns, so 3 or 5 half-moves,
and it ends where a turn begins; fewer turns where `max_turns` would end the game (none below 3).
Its last position must be quiet:
  - the game is not over;
  - the bobail is on the middle row, two steps from either home row (roughly balanced);
  - the side to move cannot win within its coming turn (not even by boxing the bobail in).
The half-moves are drawn by a depth-first search that tries each position's legal actions in an
order shuffled by `numpy.random.default_rng(seed)`, so the first quiet line it meets is random,
the same for the same seed, and found: a quiet line of 3 half-moves always exists (player 0 slides
a pawn, player 1 moves the bobail sideways onto the empty middle row, ...).
"""

from __future__ import annotations

import numpy as np

from arena_games.api import Config, JointAction
from arena_games.bobail.rules import BOBAIL_SHIFT, SIZE, BobailState, init, step

OPENING_TURNS = (1, 2)  # full turns after player 0's first, pawn-only, turn
MIDDLE_ROW = SIZE // 2


def opening(seed: int, config: Config | None = None) -> tuple[JointAction, ...]:
    """The joint actions, one per half-move, of the opening for `seed` from init(seed, config)."""
    rng = np.random.default_rng(seed)
    start = init(seed, config)
    # After player 0's first turn and `turns` more, 1 + turns turns are played: stay below the cap.
    turns = min(int(rng.choice(OPENING_TURNS)), start.config.max_turns - 2)
    if turns < 1:
        return ()
    actions = _quiet_line(start, 1 + 2 * turns, rng)
    assert actions is not None, "quiet lines of 3 and 5 half-moves exist from the fixed start"
    return tuple(((action,),) for action in actions)


def _quiet_line(state: BobailState, half_moves: int, rng: np.random.Generator) -> tuple[int, ...] | None:
    """`half_moves` actions from `state` to a quiet position, or None if there is no such line."""
    if half_moves == 0:
        return () if _is_quiet(state) else None
    for action in rng.permutation(state.legal_actions):
        child = step(state, [(int(action),)])
        if not child.is_over and (rest := _quiet_line(child, half_moves - 1, rng)) is not None:
            return (int(action), *rest)
    return None


def _is_quiet(state: BobailState) -> bool:
    bobail_row = (state.history[-1] >> BOBAIL_SHIFT) // SIZE
    return not state.is_over and bobail_row == MIDDLE_ROW and not _wins_this_turn(state)


def _wins_this_turn(state: BobailState) -> bool:
    """Whether the side to move has half-moves, within its current turn, that win the game."""
    mover = state.player
    for action in state.legal_actions:
        child = step(state, [(action,)])
        if child.winner == mover or (not child.is_over and child.player == mover and _wins_this_turn(child)):
            return True
    return False
