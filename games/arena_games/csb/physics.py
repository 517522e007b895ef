"""One turn of Coders Strike Back for many races at once, in NumPy (../shared/games/csb.md §4-§8).

Every quantity is an array with one row per race: `Races` holds B races of 4 pods each (pods 0, 1
are player 0's, pods 2, 3 player 1's). `play_turn` advances the rows of the running races by one
turn; `rules.step` runs it on a batch of one, the playouts and the benchmark on thousands. The
arithmetic is the community referee's (robostac/coders-strike-back-referee, `csbref.go`, which the
spec's §12 makes normative) operation for operation, in float64, so results match it to the bit:

* the angle is a float in radians, never normalised (the first turn faces the target exactly,
  through the referee's `diffAngle` from 0; later turns turn at most 18 degrees);
* a target equal to the pod's position skips its rotation and its thrust (BOOST and SHIELD still
  count: the boost is spent, the shield is raised);
* movement is split at each pod-pod contact, earliest first (ties: the pair with the lowest
  indices); after each sub-step but the last, and after the end-of-turn rounding, each pod tests
  whether the segment it travelled came within 600 of its next checkpoint;
* end of turn: speed x 0.85 truncated toward 0, position rounded half up, shield timer - 1; then
  each player's timeout counter - 1 (reset to 100 by any pass during the turn); a counter at 0
  loses (player 0 first, so both at once is player 0's loss); else a pod that finished wins (the
  lowest pod first); after MAX_TURNS the furthest pod wins.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

POD_RADIUS_SQ = 800.0 * 800.0  # two pods touch at centre distance 800
CHECKPOINT_RADIUS_SQ = 600.0 * 600.0
MIN_IMPULSE = 120.0
FRICTION = 0.85
MAX_ROTATION = 18.0 * (np.pi / 180.0)  # radians a turn, after the first turn
SEPARATION = 0.00001  # extra push apart of overlapping pods after a bounce (the referee's EPSILON)
BOOST_THRUST = 650
REPEATED_BOOST_THRUST = 200  # a pod's second BOOST (spec §12.6)
TIMEOUT_TURNS = 100
MAX_TURNS = 500  # the referee's turn cap
SHIELD_TURNS = 4  # a shield raised this turn reads 4; mass x 10 while it reads 4, no thrust while > 0
NO_COLLISION = 10.0  # any time > 1
MAX_SUBSTEPS = 1000  # a guard only: the referee has none and no real turn comes near it

# A pod's power command: a thrust 0..200, or one of these.
POWER_BOOST, POWER_SHIELD = -1, -2

RUNNING, FINISHED, TIMED_OUT, TURN_CAP = 0, 1, 2, 3  # Races.ending codes
PODS = 4
OWNER = np.array([0, 0, 1, 1])  # the player of each pod
# Pod pairs in the reverse of the referee's scan order (i = 3..1, j = i-1..0; it keeps the last
# pair with the smallest time): argmin's first pick over this order is the referee's pick.
PAIR_A = np.array([1, 2, 2, 3, 3, 3])
PAIR_B = np.array([0, 0, 1, 0, 1, 2])


@dataclass
class Races:
    """B races as arrays (mutable working copies; states outside this module are immutable).

    checkpoints (B, C, 2) float, the first `counts` rows of each race used; counts (B,) int;
    goal (B,) int, laps x counts passes finish a race. Pods, all (B, 4): x, y, vx, vy (float, units
    and units per turn; integers between turns), angle (float radians, 0 = east, y down),
    passes (int, checkpoints passed), shield (int, turns of the shield timer), boosted (bool).
    turn (B,) int, turns played; timeouts (B, 2) int; winner (B,) int, -1 while running;
    ending (B,) int, RUNNING or how the race ended; contacts (B, 6) bool, whether each pod pair
    (PAIR_A, PAIR_B) touched during the last turn (for viewers: no rule reads it).
    """

    checkpoints: np.ndarray
    counts: np.ndarray
    goal: np.ndarray
    x: np.ndarray
    y: np.ndarray
    vx: np.ndarray
    vy: np.ndarray
    angle: np.ndarray
    passes: np.ndarray
    shield: np.ndarray
    boosted: np.ndarray
    turn: np.ndarray
    timeouts: np.ndarray
    winner: np.ndarray
    ending: np.ndarray
    contacts: np.ndarray

    def take(self, rows: np.ndarray) -> Races:
        """A copy of the races at `rows` (indices or a bool mask)."""
        return Races(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})

    def put(self, rows: np.ndarray, other: Races) -> None:
        """Write `other`'s races into the rows `rows` of this batch."""
        for f in fields(self):
            getattr(self, f.name)[rows] = getattr(other, f.name)

    def next_checkpoint(self, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of each pod's next checkpoint, (B, 4) each, or only for the races `rows`: checkpoint
        0 again at the finish, and still checkpoint 0 once a pod has finished (the referee's `next`
        stops there)."""
        rows = np.arange(len(self.counts)) if rows is None else rows
        index = np.minimum(self.passes[rows] + 1, self.goal[rows, None]) % self.counts[rows, None]
        return self.checkpoints[rows[:, None], index, 0], self.checkpoints[rows[:, None], index, 1]


def diff_angle(target: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """The referee's signed turn from `angle` to `target` (radians), about [-pi, pi)."""
    turn = np.fmod(target - angle, 2 * np.pi)
    return np.fmod(2 * turn, 2 * np.pi) - turn


def apply_commands(races: Races, target_x: np.ndarray, target_y: np.ndarray, power: np.ndarray) -> None:
    """Power, rotation and thrust of every pod (B, 4 each): spec §4 steps 1-3, the referee's order."""
    boosting = power == POWER_BOOST
    thrust = np.where(boosting, np.where(races.boosted, REPEATED_BOOST_THRUST, BOOST_THRUST), power)
    races.boosted |= boosting
    races.shield = np.where(power == POWER_SHIELD, SHIELD_TURNS, races.shield)
    thrust = np.where(races.shield > 0, 0, np.maximum(thrust, 0)).astype(np.float64)
    moves = (target_x != races.x) | (target_y != races.y)
    wanted = np.arctan2(target_y - races.y, target_x - races.x)
    first = races.turn[:, None] == 0
    clamped = diff_angle(wanted, races.angle)
    later = np.where(
        clamped < -MAX_ROTATION,
        races.angle - MAX_ROTATION,
        np.where(clamped > MAX_ROTATION, races.angle + MAX_ROTATION, wanted),
    )
    turned = np.where(first, diff_angle(wanted, np.zeros_like(wanted)), later)
    races.angle = np.where(moves, turned, races.angle)
    thrust = np.where(moves, thrust, 0.0)
    races.vx = races.vx + np.cos(races.angle) * thrust
    races.vy = races.vy + np.sin(races.angle) * thrust


def collision_times(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """(B, 6) time until each pod pair (PAIR_A, PAIR_B) first touches, from positions and speeds
    (B, 4); NaN or > 1 if never."""
    px, py = x[:, PAIR_B] - x[:, PAIR_A], y[:, PAIR_B] - y[:, PAIR_A]
    vx, vy = vx[:, PAIR_B] - vx[:, PAIR_A], vy[:, PAIR_B] - vy[:, PAIR_A]
    distance_sq = px * px + py * py
    dot = px * vx + py * vy
    speed_sq = vx * vx + vy * vy
    disc = dot * dot - speed_sq * (distance_sq - POD_RADIUS_SQ)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 (no relative speed) is NaN: never
        time = (-dot - np.sqrt(np.maximum(disc, 0.0))) / speed_sq
    time = np.where((dot > 0) | (disc < 0), NO_COLLISION, time)
    return np.where(distance_sq <= POD_RADIUS_SQ, 0.0, time)


def bounce(races: Races, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Elastic bounce of pods a and b (one pair per row of `rows`), impulse at least 120 (§6)."""
    nx = races.x[rows, b] - races.x[rows, a]
    ny = races.y[rows, b] - races.y[rows, a]
    distance = np.sqrt(nx * nx + ny * ny)
    nx, ny = nx / distance, ny / distance
    relative_x = races.vx[rows, a] - races.vx[rows, b]
    relative_y = races.vy[rows, a] - races.vy[rows, b]
    inverse_a = np.where(races.shield[rows, a] == SHIELD_TURNS, 0.1, 1.0)
    inverse_b = np.where(races.shield[rows, b] == SHIELD_TURNS, 0.1, 1.0)
    force = (nx * relative_x + ny * relative_y) / (inverse_a + inverse_b)
    force = np.where(force < MIN_IMPULSE, force + MIN_IMPULSE, force + force)
    impulse_x, impulse_y = nx * -force, ny * -force
    races.vx[rows, a] += impulse_x * inverse_a
    races.vy[rows, a] += impulse_y * inverse_a
    races.vx[rows, b] += -impulse_x * inverse_b
    races.vy[rows, b] += -impulse_y * inverse_b
    push = np.where(distance <= 800, -(distance - 800) / 2 + SEPARATION, 0.0)
    races.x[rows, a] += nx * -push
    races.y[rows, a] += ny * -push
    races.x[rows, b] += nx * push
    races.y[rows, b] += ny * push


def cross_checkpoints(races: Races, rows: np.ndarray, start_x: np.ndarray, start_y: np.ndarray) -> None:
    """Pods of `rows` whose segment from start (len(rows), 4) to now came within 600 of their next
    checkpoint pass it: passes + 1 (kept at the goal), their player's timeout back to 100."""
    cx, cy = races.next_checkpoint(rows)
    end_x, end_y = races.x[rows], races.y[rows]
    dx, dy = end_x - start_x, end_y - start_y
    length_sq = dx * dx + dy * dy
    with np.errstate(divide="ignore", invalid="ignore"):
        u = ((cx - start_x) * dx + (cy - start_y) * dy) / length_sq
    inside = (length_sq != 0) & (u > 0)
    end = inside & (u > 1)
    between = inside & ~end
    near_x = np.where(end, end_x, np.where(between, start_x + u * dx, start_x)) - cx
    near_y = np.where(end, end_y, np.where(between, start_y + u * dy, start_y)) - cy
    passed = near_x * near_x + near_y * near_y < CHECKPOINT_RADIUS_SQ
    if passed.any():
        races.passes[rows] = np.minimum(races.passes[rows] + passed, races.goal[rows, None])
        for player in (0, 1):
            reset = passed[:, player == OWNER].any(axis=1)
            races.timeouts[rows[reset], player] = TIMEOUT_TURNS


def move(races: Races) -> None:
    """Move every pod through the turn, bouncing at each contact and testing checkpoints (§4.4-5)."""
    left = np.ones(len(races.turn))
    rows = np.arange(len(left))
    start_x, start_y = races.x.copy(), races.y.copy()
    races.contacts = np.zeros_like(races.contacts)
    for _ in range(MAX_SUBSTEPS):
        if not rows.size:
            break
        times = collision_times(races.x[rows], races.y[rows], races.vx[rows], races.vy[rows])
        pair = np.argmin(np.where(np.isnan(times), np.inf, times), axis=1)
        first = times[np.arange(rows.size), pair]
        hit = first <= left[rows]
        step = np.where(hit, first, left[rows])
        races.x[rows] += races.vx[rows] * step[:, None]
        races.y[rows] += races.vy[rows] * step[:, None]
        left[rows] -= step
        if hit.any():
            bounce(races, rows[hit], PAIR_A[pair[hit]], PAIR_B[pair[hit]])
            races.contacts[rows[hit], pair[hit]] = True
        rows = rows[left[rows] > 0]
        if not rows.size:
            break
        cross_checkpoints(races, rows, start_x[rows], start_y[rows])
        start_x[rows], start_y[rows] = races.x[rows], races.y[rows]
    races.vx = np.trunc(races.vx * FRICTION)
    races.vy = np.trunc(races.vy * FRICTION)
    races.x = np.floor(races.x + 0.5)
    races.y = np.floor(races.y + 0.5)
    races.shield = np.maximum(races.shield - 1, 0)
    cross_checkpoints(races, np.arange(len(left)), start_x, start_y)


def judge(races: Races) -> None:
    """Timeouts count down; set winner and ending of the races that end with this turn (§8)."""
    races.timeouts -= 1
    won = races.passes >= races.goal[:, None]
    winner = np.where(
        races.timeouts[:, 0] <= 0,
        1,
        np.where(races.timeouts[:, 1] <= 0, 0, np.where(won.any(axis=1), OWNER[np.argmax(won, axis=1)], -1)),
    )
    ending = np.where((races.timeouts <= 0).any(axis=1), TIMED_OUT, np.where(winner >= 0, FINISHED, RUNNING))
    capped = (winner < 0) & (races.turn >= MAX_TURNS)
    winner = np.where(capped, OWNER[np.argmax(_cap_scores(races), axis=1)], winner)
    races.winner = winner
    races.ending = np.where(capped, TURN_CAP, ending)


def _cap_scores(races: Races) -> np.ndarray:
    """(B, 4) the referee's score at the turn cap: (passes + 1) x 1e6 - distance to the next checkpoint.

    The referee keeps the first pod with the highest score (strictly above 0): argmax's first pick.
    """
    cx, cy = races.next_checkpoint()
    dx, dy = cx - races.x, cy - races.y
    return (races.passes + 1) * 1000000.0 - np.sqrt(dx * dx + dy * dy)


def play_turn(races: Races, target_x: np.ndarray, target_y: np.ndarray, power: np.ndarray) -> None:
    """One full turn of every race in `races` (all running): commands, movement, the end checks.

    target_x, target_y (B, 4) float: where each pod aims; power (B, 4) int: thrust 0..200,
    POWER_BOOST or POWER_SHIELD.
    """
    apply_commands(races, target_x, target_y, power)
    move(races)
    races.turn = races.turn + 1
    judge(races)
