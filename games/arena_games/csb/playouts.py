"""Many CSB races at once on the batched physics: random playouts, the heuristic racer and blocker.

`play_races` advances a batch of races turn by turn, each seat's head indices chosen by a policy
over the whole batch, dropping races as they end: every turn costs a fixed number of NumPy calls
whatever the batch size (bench/csb.py measures what that buys over one race at a time).

`playouts` is the contract's fast path: uniformly random legal heads. A race's random numbers come
from its own generator only, BLOCK turns of draws at a time, so its result never depends on the
other races of the call.

`racer_actions` is the house racer (the zoo's baseline): each pod aims at its next checkpoint
corrected by 3 turns of its drift, turns for the checkpoint after it once its drift alone will carry
it through, thrusts less the further it must turn (the classic slow-down), and BOOSTs on the map's
longest straight once lined up with it. Racing itself it finishes 3 laps in about 225 turns.

`blocker_actions` is a heuristic blocker for a team's second pod, the DQN kit's guide for its
blocker (as the racer guides its runner): it waits near the opponent's lead pod's next checkpoint
(or the one after, when the lead pod is nearer to it by BLOCKER_LATE than the blocker), on the side
the pod comes from, and charges at where that pod will be once it comes within INTERCEPT_DISTANCE,
raising its shield just before a hit. With the racer as its runner it beats two racers in about
60% of seat-swapped races.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from arena_games.csb import encoding, physics
from arena_games.csb.rules import (
    ANGLE_CENTRE,
    ANGLE_STEPS,
    BOOST_ACTION,
    SHIELD_ACTION,
    THRUST_ACTIONS,
    CsbState,
    decode_actions,
    headings,
    to_races,
)

BLOCK = 64  # turns of random draws taken from a race's generator at a time
DRIFT_TURNS = 3.0  # the racer aims at the checkpoint minus this many turns of its speed
COAST_TURNS = 4  # ...and turns for the following checkpoint when drifting this many turns passes the next
CHECKPOINT_MARGIN = 550.0  # ...to within this of its centre (the radius is 600)
FRICTION_POWERS = physics.FRICTION ** np.arange(COAST_TURNS)
BLOCKER_WAIT_OFFSET = 1000.0  # the blocker waits this far from the checkpoint toward the lead pod
BLOCKER_LATE = 1500.0  # ...of the checkpoint after, when the lead pod is this much nearer the next
BLOCKER_PARKED = 1200.0  # ...coasting once this near its waiting point
INTERCEPT_DISTANCE = 2500.0  # it charges at the lead pod once this near
INTERCEPT_SPEED = 800.0  # ...aiming where the pod will be after distance / this turns
INTERCEPT_TURNS = 3.0  # ...at most this many turns ahead
SHIELD_DISTANCE = 1000.0  # it shields when the two would be this close after one more turn of drift
FULL_THRUST_TURN = 30.0  # degrees still to turn below which the racer thrusts fully
NO_THRUST_TURN = 90.0  # ...and at or above which it does not thrust
BOOST_ALIGNMENT = 3.0  # degrees: the racer BOOSTs only this well lined up
BOOST_DISTANCE = 4000.0  # ...and this far from the end of the longest straight

# (races, player, ids) -> (B, 4) head indices of `player`'s pods; ids (B,) are the races' rows in
# the batch given to play_races (a policy that keeps per-race data indexes it with them).
Policy = Callable[[physics.Races, int, np.ndarray], np.ndarray]


def play_races(races: physics.Races, policies: Sequence[Policy]) -> physics.Races:
    """Play every race of `races` to its end, seat p choosing with policies[p]; returns `races`, ended."""
    ids = np.flatnonzero(races.winner < 0)
    live = races.take(ids)
    while ids.size:
        actions = np.stack([policies[player](live, player, ids) for player in (0, 1)], axis=1)
        physics.play_turn(live, *decode_actions(live, actions))
        ended = live.winner >= 0
        if ended.any():
            races.put(ids[ended], live.take(ended))
            ids, live = ids[~ended], live.take(~ended)
    return races


class RandomHeads:
    """The uniform random policy of `playouts`: race i draws only from rngs[i], BLOCK turns at a time."""

    def __init__(self, rngs: Sequence[np.random.Generator]) -> None:
        self.rngs = list(rngs)
        self.draws = np.zeros((len(self.rngs), BLOCK, 8))
        self.used = np.full(len(self.rngs), BLOCK)  # turns of its block each race has used

    def __call__(self, races: physics.Races, player: int, ids: np.ndarray) -> np.ndarray:
        if player == 0:
            for race in ids[self.used[ids] >= BLOCK]:
                self.draws[race] = self.rngs[race].random((BLOCK, 8))
                self.used[race] = 0
            self.used[ids] += 1
        uniform = self.draws[ids, self.used[ids] - 1, 4 * player : 4 * player + 4]
        boosted = races.boosted[:, 2 * player : 2 * player + 2]
        angles = (uniform[:, 0::2] * ANGLE_STEPS).astype(np.int64)
        thrusts = (uniform[:, 1::2] * (THRUST_ACTIONS - boosted)).astype(np.int64)  # one fewer once boosted
        thrusts += boosted & (thrusts >= BOOST_ACTION)  # skip the spent BOOST
        return np.stack([angles[:, 0], thrusts[:, 0], angles[:, 1], thrusts[:, 1]], axis=1)


def playouts(states: Sequence[CsbState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """Returns of each state finished by uniformly random legal play, float (len(states), 2)."""
    policy = RandomHeads(rngs)
    races = play_races(to_races(states), (policy, policy))
    return np.where((races.winner == 0)[:, None], [1.0, -1.0], [-1.0, 1.0])


def _longest_leg_ends(races: physics.Races) -> np.ndarray:
    """(B,) the checkpoint index at the end of each map's longest leg (cp[i - 1] -> cp[i])."""
    count = races.counts[:, None]
    index = np.arange(races.checkpoints.shape[1])[None, :]
    previous = races.checkpoints[np.arange(len(count))[:, None], (index - 1) % count]
    legs = np.linalg.norm(races.checkpoints - previous, axis=2)
    return np.argmax(np.where(index < count, legs, -1.0), axis=1)


def _drifts_through(x, y, vx, vy, cx, cy) -> np.ndarray:
    """(B, 2) whether a pod left to drift (no thrust, friction 0.85) passes within CHECKPOINT_MARGIN
    of the checkpoint (cx, cy) in the next COAST_TURNS turns."""
    reach = np.cumsum(FRICTION_POWERS[:COAST_TURNS])  # distance covered, in units of the speed
    dx = x[..., None] + vx[..., None] * reach - cx[..., None]
    dy = y[..., None] + vy[..., None] * reach - cy[..., None]
    return (dx * dx + dy * dy < CHECKPOINT_MARGIN**2).any(axis=-1)


def _steer(races: physics.Races, pods: np.ndarray, aim_x: np.ndarray, aim_y: np.ndarray):
    """The angle index (B, len(pods)) turning `pods` toward (aim_x, aim_y) as far as the 18-degree
    cap allows, and the turn in degrees they would need (B, len(pods))."""
    x, y = races.x[:, pods], races.y[:, pods]
    turn = np.degrees(physics.diff_angle(np.arctan2(aim_y - y, aim_x - x), headings(races)[:, pods]))
    return np.clip(np.round(turn), -ANGLE_CENTRE, ANGLE_CENTRE).astype(np.int64) + ANGLE_CENTRE, turn


def _slowing_thrust(turn: np.ndarray) -> np.ndarray:
    """Thrust indices: full below FULL_THRUST_TURN degrees still to turn, none from NO_THRUST_TURN."""
    slowing = np.clip((NO_THRUST_TURN - np.abs(turn)) / (NO_THRUST_TURN - FULL_THRUST_TURN), 0.0, 1.0)
    return np.round(slowing * (BOOST_ACTION - 1)).astype(np.int64)


def racer_actions(races: physics.Races, player: int, ids: np.ndarray | None = None) -> np.ndarray:
    """(B, 4) the house racer's head indices for `player`'s pods in every race (see the module doc);
    a `Policy` (it keeps no data per race, so `ids` is not needed)."""
    pods = np.array([2 * player, 2 * player + 1])
    rows = np.arange(len(races.turn))[:, None]
    x, y, vx, vy = races.x[:, pods], races.y[:, pods], races.vx[:, pods], races.vy[:, pods]
    following = np.minimum(races.passes[:, pods] + 1, races.goal[:, None]) % races.counts[:, None]
    after = (following + 1) % races.counts[:, None]
    cx, cy = races.checkpoints[rows, following, 0], races.checkpoints[rows, following, 1]
    distance = np.hypot(cx - x, cy - y)
    coasting = _drifts_through(x, y, vx, vy, cx, cy)
    aim_x = np.where(coasting, races.checkpoints[rows, after, 0], cx) - DRIFT_TURNS * vx
    aim_y = np.where(coasting, races.checkpoints[rows, after, 1], cy) - DRIFT_TURNS * vy
    angle_index, turn = _steer(races, pods, aim_x, aim_y)
    thrust_index = _slowing_thrust(turn)
    boost = (
        ~races.boosted[:, pods]
        & ~coasting
        & (following == _longest_leg_ends(races)[:, None])
        & (np.abs(turn) < BOOST_ALIGNMENT)
        & (distance > BOOST_DISTANCE)
    )
    thrust_index = np.where(boost, BOOST_ACTION, thrust_index)
    return np.stack([angle_index[:, 0], thrust_index[:, 0], angle_index[:, 1], thrust_index[:, 1]], axis=1)


def blocker_actions(races: physics.Races, player: int) -> np.ndarray:
    """(B, 2) the heuristic blocker's angle and thrust indices for `player`'s pod 1 (module doc)."""
    rows, pod = np.arange(len(races.turn)), 2 * player + 1
    lead = encoding.lead_pods(races, 1 - player)
    lx, ly, lvx, lvy = (field[rows, lead] for field in (races.x, races.y, races.vx, races.vy))
    x, y, vx, vy = races.x[:, pod], races.y[:, pod], races.vx[:, pod], races.vy[:, pod]
    target = np.minimum(races.passes[rows, lead] + 1, races.goal) % races.counts
    cx, cy = races.checkpoints[rows, target, 0], races.checkpoints[rows, target, 1]
    late = np.hypot(cx - x, cy - y) > np.hypot(cx - lx, cy - ly) + BLOCKER_LATE
    target = np.where(late, np.minimum(races.passes[rows, lead] + 2, races.goal) % races.counts, target)
    cx, cy = races.checkpoints[rows, target, 0], races.checkpoints[rows, target, 1]
    toward = np.maximum(np.hypot(lx - cx, ly - cy), 1.0)
    wait_x = cx + BLOCKER_WAIT_OFFSET * (lx - cx) / toward
    wait_y = cy + BLOCKER_WAIT_OFFSET * (ly - cy) / toward
    gap = np.hypot(lx - x, ly - y)
    charging = gap < INTERCEPT_DISTANCE
    ahead = np.clip(gap / INTERCEPT_SPEED, 0.0, INTERCEPT_TURNS)
    aim_x = np.where(charging, lx + lvx * ahead, wait_x - DRIFT_TURNS * vx)
    aim_y = np.where(charging, ly + lvy * ahead, wait_y - DRIFT_TURNS * vy)
    angle_index, turn = _steer(races, np.array([pod]), aim_x[:, None], aim_y[:, None])
    parked = np.hypot(wait_x - x, wait_y - y) < BLOCKER_PARKED
    thrust_index = np.where(charging, BOOST_ACTION - 1, np.where(parked, 0, _slowing_thrust(turn[:, 0])))
    hit_next = np.hypot(lx + lvx - x - vx, ly + lvy - y - vy) < SHIELD_DISTANCE
    thrust_index = np.where(charging & hit_next, SHIELD_ACTION, thrust_index)
    return np.stack([angle_index[:, 0], thrust_index], axis=1)
