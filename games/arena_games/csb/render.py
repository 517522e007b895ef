"""Text picture and viewer data of a CSB race.

The text is the 16000 x 9000 map at 400 x 600 units a character (40 x 15, y down), checkpoints as
their number, pods as A B (player 1) and C D (player 2), then one line per pod:

    A  x 8012 y 3120  speed 312 -40  angle 17  next 2  lap 1/3  shield 0  boost used
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from arena_games.csb.rules import (
    ANGLE_CENTRE,
    HEADS,
    THRUST_LEVELS,
    CsbState,
    end_reason,
    legal_masks,
    returns,
    to_move,
)

WIDTH, HEIGHT = 16000, 9000
COLUMNS, ROWS = 40, 15
POD_LETTERS = "ABCD"


def degrees(angle: float) -> int:
    """An angle as bots see it: whole degrees 0..359 (the referee rounds half up, then we normalise)."""
    return math.floor(math.degrees(angle) + 0.5) % 360


def next_checkpoint(state: CsbState, pod: int) -> int:
    """The index of pod `pod`'s next checkpoint (0 again once it has finished)."""
    return min(state.pods[pod].passes + 1, state.goal) % len(state.checkpoints)


def lap(state: CsbState, pod: int) -> int:
    """The lap pod `pod` is on, 1..laps (laps once it has finished)."""
    return min(state.pods[pod].passes // len(state.checkpoints) + 1, state.laps)


def _cell(x: float, y: float) -> tuple[int, int] | None:
    column, row = int(x * COLUMNS // WIDTH), int(y * ROWS // HEIGHT)
    return (row, column) if 0 <= column < COLUMNS and 0 <= row < ROWS else None


def render(state: CsbState) -> str:
    grid = [["."] * COLUMNS for _ in range(ROWS)]
    for index, (x, y) in enumerate(state.checkpoints):
        if cell := _cell(x, y):
            grid[cell[0]][cell[1]] = str(index)
    for letter, pod in zip(POD_LETTERS, state.pods, strict=True):
        if cell := _cell(pod.x, pod.y):
            grid[cell[0]][cell[1]] = letter
    lines = ["".join(row) for row in grid]
    for index, (letter, pod) in enumerate(zip(POD_LETTERS, state.pods, strict=True)):
        lines.append(
            f"{letter}  x {pod.x:.0f} y {pod.y:.0f}  speed {pod.vx:.0f} {pod.vy:.0f}"
            f"  angle {degrees(pod.angle)}  next {next_checkpoint(state, index)}"
            f"  lap {lap(state, index)}/{state.laps}  shield {pod.shield}"
            f"  boost {'used' if pod.boosted else 'ready'}"
        )
    lines.append(
        f"turn {state.turn}  timeouts {state.timeouts[0]} {state.timeouts[1]}  {end_reason(state)}".rstrip()
    )
    return "\n".join(lines)


ANGLE_ENTRIES = tuple(range(-ANGLE_CENTRE, ANGLE_CENTRE + 1))  # degrees of turn, by angle index
THRUST_ENTRIES = (*THRUST_LEVELS, "BOOST", "SHIELD")  # by thrust index


def _head_entries(head: str, mask: np.ndarray) -> list[Any]:
    """The legal entries of one head, decoded: degrees of turn, or a thrust, "BOOST", "SHIELD"."""
    entries = ANGLE_ENTRIES if head.startswith("angle") else THRUST_ENTRIES
    return [entry for entry, legal in zip(entries, mask.tolist(), strict=True) if legal]


def view(state: CsbState) -> dict[str, Any]:
    """What a track viewer draws (JSON-safe).

    checkpoints: [[x, y], ...] (radius 600); laps; turn; timeouts per seat;
    pods: 4 of {"owner", "x", "y", "vx", "vy", "angle" (degrees 0..359), "next" (checkpoint index),
        "lap", "passes", "shield", "boosted"};
    collisions: [[a, b], ...] the pod pairs that touched during the turn that led here;
    to_move: the seats asked this turn; moves: per seat to move, per head name, its legal entries
        decoded (angle heads: degrees of turn -18..18; thrust heads: thrust, "BOOST", "SHIELD");
    winner (seat or None) and ending (a sentence, "" while running).
    """
    outcome = returns(state)
    return {
        "checkpoints": [list(cp) for cp in state.checkpoints],
        "laps": state.laps,
        "turn": state.turn,
        "timeouts": list(state.timeouts),
        "pods": [
            {
                "owner": index // 2,
                "x": pod.x,
                "y": pod.y,
                "vx": pod.vx,
                "vy": pod.vy,
                "angle": degrees(pod.angle),
                "next": next_checkpoint(state, index),
                "lap": lap(state, index),
                "passes": pod.passes,
                "shield": pod.shield,
                "boosted": pod.boosted,
            }
            for index, pod in enumerate(state.pods)
        ],
        "collisions": [list(pair) for pair in state.collisions],
        "to_move": list(to_move(state)),
        "moves": {
            str(seat): {
                head: _head_entries(head, mask)
                for head, mask in zip(HEADS, legal_masks(state, seat), strict=True)
            }
            for seat in to_move(state)
        },
        "winner": outcome.index(1.0) if state.is_over else None,
        "ending": end_reason(state),
    }
