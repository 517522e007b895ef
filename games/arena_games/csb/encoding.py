"""The network input of CSB: seed 000's pod-relative inputs, one tensor "pods" of shape (2, 16).

Row k is the asking player's pod k. Every vector is read in the pod's own frame: its component
along the pod's heading `d` = (cos h, sin h) and along `d` turned 90 degrees, (-sin h, cos h) (the
seed's `point{1, 0} * dir` and `point{0, 1} * dir`; with y down that is the pod's right). The heading
is the pod's angle, or on the first turn the direction to its next checkpoint (`rules.headings`).
    0, 1     the pod's speed / MAX_SPEED                              } the seed's 8 runner inputs
    2, 3     its next checkpoint - its position, / MAX_DISTANCE       }
    4, 5     the checkpoint after that, 6, 7 the one after that       }
    8, 9     the opponent's lead pod - this pod, / MAX_DISTANCE       } what a blocker needs: the
    10, 11   the lead pod's speed / MAX_SPEED                         } opponent's lead pod (more
    12, 13   the lead pod's next checkpoint - this pod, / MAX_DISTANCE} passes, then nearer its next
    14       1 if this pod can still BOOST                              checkpoint) relative to ours
    15       the pod's shield timer / 4 (no thrust while > 0)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena_games.api import GameError
from arena_games.csb import physics
from arena_games.csb.rules import CsbState, by_seat, headings, to_races

MAX_SPEED = 1000.0  # units per turn (full thrust settles near 567, a boost reaches about 1000)
MAX_DISTANCE = 16000.0  # the map's width
FEATURES = 16
INPUTS = {"pods": (2, FEATURES)}


def lead_pods(races: physics.Races, player: int) -> np.ndarray:
    """(B,) the index (0..3) of `player`'s lead pod: more passes, then nearer its next checkpoint."""
    own = np.array([2 * player, 2 * player + 1])
    cx, cy = races.next_checkpoint()
    dx, dy = cx[:, own] - races.x[:, own], cy[:, own] - races.y[:, own]
    progress = races.passes[:, own] * 1e9 - (dx * dx + dy * dy)
    return own[np.argmax(progress, axis=1)]


def encode_races(races: physics.Races, player: int) -> np.ndarray:
    """float32 (B, 2, 16): the inputs of `player` in every race of `races`, laid out as above."""
    pods = np.array([2 * player, 2 * player + 1])
    rows = np.arange(len(races.turn))[:, None]
    heading = headings(races)[:, pods]
    ahead, right = (np.cos(heading), np.sin(heading)), (-np.sin(heading), np.cos(heading))

    def frame(vx: np.ndarray, vy: np.ndarray, scale: float) -> list[np.ndarray]:
        return [(vx * ahead[0] + vy * ahead[1]) / scale, (vx * right[0] + vy * right[1]) / scale]

    x, y = races.x[:, pods], races.y[:, pods]
    features = frame(races.vx[:, pods], races.vy[:, pods], MAX_SPEED)
    following = np.minimum(races.passes[:, pods] + 1, races.goal[:, None])
    for ahead_count in range(3):
        index = (following + ahead_count) % races.counts[:, None]
        checkpoint = races.checkpoints[rows, index]
        features += frame(checkpoint[..., 0] - x, checkpoint[..., 1] - y, MAX_DISTANCE)
    lead = lead_pods(races, 1 - player)[:, None]
    cx, cy = races.next_checkpoint()
    features += frame(races.x[rows, lead] - x, races.y[rows, lead] - y, MAX_DISTANCE)
    features += frame(races.vx[rows, lead], races.vy[rows, lead], MAX_SPEED)
    features += frame(cx[rows, lead] - x, cy[rows, lead] - y, MAX_DISTANCE)
    features += [~races.boosted[:, pods], races.shield[:, pods] / physics.SHIELD_TURNS]
    return np.stack(features, axis=-1).astype(np.float32)


def encode_many(states: Sequence[CsbState], players: Sequence[int]) -> dict[str, np.ndarray]:
    """{"pods": float32 (n, 2, 16)}: row i the inputs of states[i] seen by players[i] (the Game's
    batched fast path: one pass over all the races per seat instead of one per state)."""
    seats = np.asarray(players)
    if seats.shape != (len(states),) or not np.isin(seats, (0, 1)).all():
        raise GameError(f"csb: one player (0 or 1) per state, got {list(players)!r}")
    return {"pods": by_seat(to_races(states), seats, encode_races)}


def encode(state: CsbState, player: int) -> dict[str, np.ndarray]:
    """{"pods": float32 (2, 16)} from the point of view of `player` (0 or 1)."""
    return {"pods": encode_many([state], [player])["pods"][0]}
