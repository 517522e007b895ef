"""Coders Strike Back's compiled kernels (Numba): `physics.play_turn`, the action heads of `rules`,
the input of `encoding` and the random playouts of `playouts` on arrays, one race at a time.

`physics`, `rules`, `encoding` and `playouts` stay the readable reference; these kernels must agree
with them bit for bit (tests/games/test_csb_kernels.py: every `to_dict` field after each turn, masks,
returns, end reasons and encodings on 10,000+ positions; playouts draw for draw). So every float
is computed by the same float64 operations in the same order as the NumPy code, and `np.arctan2` is
NumPy's own loop (`arena_games.ufunc_loops`: on AVX-512 it differs from the C library's atan2).

A race is three arrays, changed in place by the kernels:
  motion       float64 (4, MOTION): per pod x, y, vx, vy, angle (the fields X .. ANGLE);
  checkpoints  float64 (rules.MAX_CHECKPOINTS, 2): the map, the first info[COUNT] rows used;
  info         int64 (FIELDS,): the scalars below, per pod PASSES + k, SHIELD + k, BOOSTED + k.
A batch is the struct of arrays (n, 4, MOTION), (n, MAX_CHECKPOINTS, 2), (n, FIELDS). Actions are
int (2 players, 4 heads) head indices, unchecked (they come from legal masks; `rules.step` says why
one is illegal). The Python functions at the end (`step_batch`, `encode_batch`, `playouts`, ...)
pass NumPy's arctan2 loop to the compiled ones, which take it as `loop, data`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit

from arena_games import kernel_batches, pcg64, ufunc_loops
from arena_games.csb import physics, rules
from arena_games.csb.encoding import FEATURES, MAX_DISTANCE, MAX_SPEED
from arena_games.csb.playouts import (
    BLOCK,
    BOOST_ALIGNMENT,
    BOOST_DISTANCE,
    CHECKPOINT_MARGIN,
    COAST_TURNS,
    DRIFT_TURNS,
    FRICTION_POWERS,
    FULL_THRUST_TURN,
    NO_THRUST_TURN,
)
from arena_games.csb.rules import (
    ANGLE_CENTRE,
    ANGLE_STEPS,
    BOOST_ACTION,
    TARGET_DISTANCE,
    THRUST_ACTIONS,
    THRUST_LEVELS,
    CsbState,
)

PODS = physics.PODS
X, Y, VX, VY, ANGLE = range(5)
MOTION = 5
# Fields of `info`. CONTACTS: bit p set when the pods PAIR_A[p], PAIR_B[p] touched in the last turn.
LAPS, COUNT, GOAL, TURN, TIMEOUT_0, TIMEOUT_1, WINNER, ENDING, CONTACTS = range(9)
PASSES, SHIELD, BOOSTED = 9, 9 + PODS, 9 + 2 * PODS  # the first of PODS fields each
FIELDS = 9 + 3 * PODS
PAIRS = len(physics.PAIR_A)
MASK_SIZE = 2 * (ANGLE_STEPS + THRUST_ACTIONS)  # a player's heads' masks, end to end in head order
DRAWS = 8  # uniform draws per turn (4 heads x 2 players), as playouts.RandomHeads
_TWO_PI = 2 * np.pi
_DEGREE = np.pi / 180.0  # np.radians' factor
_POWER = np.array([*THRUST_LEVELS, physics.POWER_BOOST, physics.POWER_SHIELD], dtype=np.int64)
_PAIR_A, _PAIR_B, _OWNER = physics.PAIR_A, physics.PAIR_B, physics.OWNER
_ARCTAN2 = ufunc_loops.binary_loop(np.arctan2)


# --- conversions ------------------------------------------------------------------------------------


def pack(states: Sequence[CsbState]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The states as a batch: motions (n, 4, MOTION), checkpoints (n, MAX_CHECKPOINTS, 2) and infos
    (n, FIELDS)."""
    races = rules.to_races(states)
    motions = np.stack([races.x, races.y, races.vx, races.vy, races.angle], axis=-1)
    infos = np.zeros((len(states), FIELDS), dtype=np.int64)
    infos[:, LAPS] = [state.laps for state in states]
    infos[:, COUNT], infos[:, GOAL], infos[:, TURN] = races.counts, races.goal, races.turn
    infos[:, TIMEOUT_0 : TIMEOUT_1 + 1] = races.timeouts
    infos[:, WINNER], infos[:, ENDING] = races.winner, races.ending
    infos[:, CONTACTS] = races.contacts @ (1 << np.arange(PAIRS))
    infos[:, PASSES : PASSES + PODS] = races.passes
    infos[:, SHIELD : SHIELD + PODS] = races.shield
    infos[:, BOOSTED : BOOSTED + PODS] = races.boosted
    return np.ascontiguousarray(motions), races.checkpoints, infos


def to_races(motions: np.ndarray, checkpoints: np.ndarray, infos: np.ndarray) -> physics.Races:
    """The batch as the reference's physics arrays (views of the batch's where the types agree)."""
    return physics.Races(
        checkpoints=checkpoints,
        counts=infos[:, COUNT],
        goal=infos[:, GOAL],
        x=motions[:, :, X],
        y=motions[:, :, Y],
        vx=motions[:, :, VX],
        vy=motions[:, :, VY],
        angle=motions[:, :, ANGLE],
        passes=infos[:, PASSES : PASSES + PODS],
        shield=infos[:, SHIELD : SHIELD + PODS],
        boosted=infos[:, BOOSTED : BOOSTED + PODS].astype(bool),
        turn=infos[:, TURN],
        timeouts=infos[:, TIMEOUT_0 : TIMEOUT_1 + 1],
        winner=infos[:, WINNER],
        ending=infos[:, ENDING],
        contacts=(infos[:, CONTACTS, None] >> np.arange(PAIRS) & 1).astype(bool),
    )


def to_state(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray) -> CsbState:
    """The reference state of the race's arrays."""
    count = int(info[COUNT])
    corners = tuple((int(x), int(y)) for x, y in checkpoints[:count])
    races = to_races(motion[None], checkpoints[None], info[None])
    return rules.from_races(races, 0, int(info[LAPS]), corners)


# --- the physics of a turn (physics.py, one race) ----------------------------------------------------


@njit(cache=True)
def _atan2(atan2: tuple, y: float, x: float) -> float:
    """np.arctan2(y, x), by NumPy's loop; atan2 = (loop, data, frame)."""
    return ufunc_loops.call(atan2[0], atan2[1], atan2[2], y, x)


@njit(cache=True)
def _next_checkpoint(checkpoints: np.ndarray, info: np.ndarray, pod: int) -> tuple[float, float]:
    """(x, y) of the pod's next checkpoint (physics.Races.next_checkpoint)."""
    index = min(info[PASSES + pod] + 1, info[GOAL]) % info[COUNT]
    return checkpoints[index, 0], checkpoints[index, 1]


@njit(cache=True, error_model="numpy")
def _diff_angle(target: float, angle: float) -> float:
    """physics.diff_angle."""
    turn = np.fmod(target - angle, _TWO_PI)
    return np.fmod(2 * turn, _TWO_PI) - turn


@njit(cache=True, error_model="numpy")
def _apply_commands(
    motion: np.ndarray, info: np.ndarray, targets: np.ndarray, power: np.ndarray, atan2: tuple
):
    """physics.apply_commands: targets float (4, 2), power int (4,)."""
    for pod in range(PODS):
        thrust = power[pod]
        if thrust == physics.POWER_BOOST:
            thrust = physics.REPEATED_BOOST_THRUST if info[BOOSTED + pod] else physics.BOOST_THRUST
            info[BOOSTED + pod] = 1
        if power[pod] == physics.POWER_SHIELD:
            info[SHIELD + pod] = physics.SHIELD_TURNS
        force = 0.0 if info[SHIELD + pod] > 0 else float(max(thrust, 0))
        x, y, angle = motion[pod, X], motion[pod, Y], motion[pod, ANGLE]
        if targets[pod, 0] != x or targets[pod, 1] != y:
            wanted = _atan2(atan2, targets[pod, 1] - y, targets[pod, 0] - x)
            if info[TURN] == 0:
                angle = _diff_angle(wanted, 0.0)
            else:
                clamped = _diff_angle(wanted, angle)
                if clamped < -physics.MAX_ROTATION:
                    angle = angle - physics.MAX_ROTATION
                elif clamped > physics.MAX_ROTATION:
                    angle = angle + physics.MAX_ROTATION
                else:
                    angle = wanted
        else:
            force = 0.0  # a target on the pod: no turn, no thrust (the speed still gains cos(angle) * 0)
        motion[pod, ANGLE] = angle
        motion[pod, VX] = motion[pod, VX] + math.cos(angle) * force
        motion[pod, VY] = motion[pod, VY] + math.sin(angle) * force


@njit(cache=True, error_model="numpy")
def _collision_time(motion: np.ndarray, pair: int) -> float:
    """physics.collision_times of one pod pair: NaN or > 1 if never."""
    a, b = _PAIR_A[pair], _PAIR_B[pair]
    px, py = motion[b, X] - motion[a, X], motion[b, Y] - motion[a, Y]
    vx, vy = motion[b, VX] - motion[a, VX], motion[b, VY] - motion[a, VY]
    distance_sq = px * px + py * py
    dot = px * vx + py * vy
    speed_sq = vx * vx + vy * vy
    disc = dot * dot - speed_sq * (distance_sq - physics.POD_RADIUS_SQ)
    root = math.sqrt(disc if disc >= 0.0 or math.isnan(disc) else 0.0)  # np.maximum(disc, 0.0)
    time = (-dot - root) / speed_sq
    if dot > 0 or disc < 0:
        time = physics.NO_COLLISION
    return 0.0 if distance_sq <= physics.POD_RADIUS_SQ else time


@njit(cache=True, error_model="numpy")
def _bounce(motion: np.ndarray, info: np.ndarray, pair: int) -> None:
    """physics.bounce of one pod pair."""
    a, b = _PAIR_A[pair], _PAIR_B[pair]
    nx, ny = motion[b, X] - motion[a, X], motion[b, Y] - motion[a, Y]
    distance = math.sqrt(nx * nx + ny * ny)
    nx, ny = nx / distance, ny / distance
    relative_x, relative_y = motion[a, VX] - motion[b, VX], motion[a, VY] - motion[b, VY]
    inverse_a = 0.1 if info[SHIELD + a] == physics.SHIELD_TURNS else 1.0
    inverse_b = 0.1 if info[SHIELD + b] == physics.SHIELD_TURNS else 1.0
    force = (nx * relative_x + ny * relative_y) / (inverse_a + inverse_b)
    force = force + physics.MIN_IMPULSE if force < physics.MIN_IMPULSE else force + force
    impulse_x, impulse_y = nx * -force, ny * -force
    motion[a, VX] += impulse_x * inverse_a
    motion[a, VY] += impulse_y * inverse_a
    motion[b, VX] += -impulse_x * inverse_b
    motion[b, VY] += -impulse_y * inverse_b
    push = -(distance - 800) / 2 + physics.SEPARATION if distance <= 800 else 0.0
    motion[a, X] += nx * -push
    motion[a, Y] += ny * -push
    motion[b, X] += nx * push
    motion[b, Y] += ny * push


@njit(cache=True, error_model="numpy")
def _cross_checkpoints(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, start: np.ndarray):
    """physics.cross_checkpoints: pods whose segment from start (float (4, 2)) came within 600 of
    their next checkpoint pass it (all tested against the passes before this call)."""
    passed = 0  # bit per pod
    for pod in range(PODS):
        cx, cy = _next_checkpoint(checkpoints, info, pod)
        start_x, start_y, end_x, end_y = start[pod, 0], start[pod, 1], motion[pod, X], motion[pod, Y]
        dx, dy = end_x - start_x, end_y - start_y
        length_sq = dx * dx + dy * dy
        u = ((cx - start_x) * dx + (cy - start_y) * dy) / length_sq
        near_x, near_y = start_x, start_y
        if length_sq != 0 and u > 0:
            if u > 1:
                near_x, near_y = end_x, end_y
            else:
                near_x, near_y = start_x + u * dx, start_y + u * dy
        near_x, near_y = near_x - cx, near_y - cy
        if near_x * near_x + near_y * near_y < physics.CHECKPOINT_RADIUS_SQ:
            passed |= 1 << pod
    for pod in range(PODS):
        if passed >> pod & 1:
            info[PASSES + pod] = min(info[PASSES + pod] + 1, info[GOAL])
            info[TIMEOUT_0 + _OWNER[pod]] = physics.TIMEOUT_TURNS


@njit(cache=True, error_model="numpy")
def _move(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, start: np.ndarray) -> None:
    """physics.move: the pods through the turn, bouncing at each contact; `start`: float (4, 2) scratch."""
    for pod in range(PODS):
        start[pod, 0], start[pod, 1] = motion[pod, X], motion[pod, Y]
    info[CONTACTS] = 0
    left = 1.0
    for _ in range(physics.MAX_SUBSTEPS):
        first, pair, earliest = math.nan, 0, math.inf  # np.argmin over the times, NaN read as inf
        for candidate in range(PAIRS):
            time = _collision_time(motion, candidate)
            key = math.inf if math.isnan(time) else time
            if candidate == 0 or key < earliest:
                first, pair, earliest = time, candidate, key
        hit = first <= left
        step = first if hit else left
        for pod in range(PODS):
            motion[pod, X] += motion[pod, VX] * step
            motion[pod, Y] += motion[pod, VY] * step
        left -= step
        if hit:
            _bounce(motion, info, pair)
            info[CONTACTS] |= 1 << pair
        if not left > 0:
            break
        _cross_checkpoints(motion, checkpoints, info, start)
        for pod in range(PODS):
            start[pod, 0], start[pod, 1] = motion[pod, X], motion[pod, Y]
    for pod in range(PODS):
        motion[pod, VX] = np.trunc(motion[pod, VX] * physics.FRICTION)
        motion[pod, VY] = np.trunc(motion[pod, VY] * physics.FRICTION)
        motion[pod, X] = np.floor(motion[pod, X] + 0.5)
        motion[pod, Y] = np.floor(motion[pod, Y] + 0.5)
        info[SHIELD + pod] = max(info[SHIELD + pod] - 1, 0)
    _cross_checkpoints(motion, checkpoints, info, start)


@njit(cache=True)
def _judge(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray) -> None:
    """physics.judge: timeouts count down; WINNER and ENDING of a race that ends with this turn."""
    info[TIMEOUT_0] -= 1
    info[TIMEOUT_1] -= 1
    winner = -1
    if info[TIMEOUT_0] <= 0:
        winner = 1
    elif info[TIMEOUT_1] <= 0:
        winner = 0
    else:
        for pod in range(PODS):
            if info[PASSES + pod] >= info[GOAL]:
                winner = _OWNER[pod]
                break
    if info[TIMEOUT_0] <= 0 or info[TIMEOUT_1] <= 0:
        info[ENDING] = physics.TIMED_OUT
    else:
        info[ENDING] = physics.FINISHED if winner >= 0 else physics.RUNNING
    if winner < 0 and info[TURN] >= physics.MAX_TURNS:
        best, best_score = 0, -math.inf
        for pod in range(PODS):  # physics._cap_scores, argmax's first pick
            cx, cy = _next_checkpoint(checkpoints, info, pod)
            dx, dy = cx - motion[pod, X], cy - motion[pod, Y]
            score = (info[PASSES + pod] + 1) * 1000000.0 - math.sqrt(dx * dx + dy * dy)
            if score > best_score:
                best, best_score = pod, score
        winner = _OWNER[best]
        info[ENDING] = physics.TURN_CAP
    info[WINNER] = winner


# --- actions, steps and results (rules.py) ------------------------------------------------------------


@njit(cache=True)
def _heading(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, pod: int, atan2: tuple) -> float:
    """rules.headings of one pod: its angle, or on the first turn the direction to its next checkpoint."""
    if info[TURN] != 0:
        return motion[pod, ANGLE]
    cx, cy = _next_checkpoint(checkpoints, info, pod)
    return _atan2(atan2, cy - motion[pod, Y], cx - motion[pod, X])


@njit(cache=True)
def step(
    motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, actions: np.ndarray, atan2: tuple
) -> int:
    """One turn of the running race (rules.step, unchecked): actions int (2, 4) head indices of each
    player (angle0, thrust0, angle1, thrust1); the new ENDING."""
    targets = np.empty((PODS, 2))
    power = np.empty(PODS, dtype=np.int64)
    for pod in range(PODS):  # rules.decode_actions
        player, own = pod // 2, pod % 2
        direction = _heading(motion, checkpoints, info, pod, atan2)
        direction = direction + (actions[player, 2 * own] - ANGLE_CENTRE) * _DEGREE
        targets[pod, 0] = motion[pod, X] + TARGET_DISTANCE * math.cos(direction)
        targets[pod, 1] = motion[pod, Y] + TARGET_DISTANCE * math.sin(direction)
        power[pod] = _POWER[actions[player, 2 * own + 1]]
    _apply_commands(motion, info, targets, power, atan2)
    _move(motion, checkpoints, info, targets)  # targets are spent: their room is the scratch
    info[TURN] += 1
    _judge(motion, checkpoints, info)
    return info[ENDING]


@njit(cache=True)
def legal_mask(info: np.ndarray, player: int, out: np.ndarray) -> None:
    """Writes `player`'s masks of angle0, thrust0, angle1, thrust1 end to end into `out` (bool
    (MASK_SIZE,)): all legal but a spent BOOST; all False once the race is over (rules.legal_masks)."""
    running = info[WINNER] < 0
    at = 0
    for own in range(2):
        for head in range(ANGLE_STEPS + THRUST_ACTIONS):
            out[at + head] = running
        if info[BOOSTED + 2 * player + own]:
            out[at + ANGLE_STEPS + BOOST_ACTION] = False
        at += ANGLE_STEPS + THRUST_ACTIONS


@njit(cache=True)
def returns_of(info: np.ndarray) -> tuple[float, float]:
    """(0, 0) while running; +1 for the winner, -1 for the loser (rules.returns)."""
    if info[WINNER] < 0:
        return 0.0, 0.0
    return (1.0, -1.0) if info[WINNER] == 0 else (-1.0, 1.0)


# --- the network input (encoding.py) --------------------------------------------------------------------


@njit(cache=True)
def _lead_pod(motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, player: int) -> int:
    """encoding.lead_pods: `player`'s pod with more passes, then nearer its next checkpoint."""
    best, best_progress = 2 * player, -math.inf
    for pod in range(2 * player, 2 * player + 2):
        cx, cy = _next_checkpoint(checkpoints, info, pod)
        dx, dy = cx - motion[pod, X], cy - motion[pod, Y]
        progress = info[PASSES + pod] * 1e9 - (dx * dx + dy * dy)
        if progress > best_progress:
            best, best_progress = pod, progress
    return best


@njit(cache=True)
def _frame(out: np.ndarray, at: int, vx: float, vy: float, cos: float, sin: float, scale: float) -> None:
    """encoding's `frame`: (vx, vy) along the heading and to its right, / scale, into out[at : at + 2]."""
    out[at] = np.float32((vx * cos + vy * sin) / scale)
    out[at + 1] = np.float32((vx * -sin + vy * cos) / scale)


@njit(cache=True)
def encode(
    motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, player: int, out: np.ndarray, atan2: tuple
) -> None:
    """Writes `encoding.encode(state, player)["pods"]` into `out` (float32 (2, FEATURES))."""
    lead = _lead_pod(motion, checkpoints, info, 1 - player)
    lead_x, lead_y = _next_checkpoint(checkpoints, info, lead)
    for own in range(2):
        pod, row = 2 * player + own, out[own]
        heading = _heading(motion, checkpoints, info, pod, atan2)
        cos, sin = math.cos(heading), math.sin(heading)
        x, y = motion[pod, X], motion[pod, Y]
        _frame(row, 0, motion[pod, VX], motion[pod, VY], cos, sin, MAX_SPEED)
        following = min(info[PASSES + pod] + 1, info[GOAL])
        for ahead in range(3):
            index = (following + ahead) % info[COUNT]
            _frame(
                row,
                2 + 2 * ahead,
                checkpoints[index, 0] - x,
                checkpoints[index, 1] - y,
                cos,
                sin,
                MAX_DISTANCE,
            )
        _frame(row, 8, motion[lead, X] - x, motion[lead, Y] - y, cos, sin, MAX_DISTANCE)
        _frame(row, 10, motion[lead, VX], motion[lead, VY], cos, sin, MAX_SPEED)
        _frame(row, 12, lead_x - x, lead_y - y, cos, sin, MAX_DISTANCE)
        row[14] = 0.0 if info[BOOSTED + pod] else 1.0
        row[15] = np.float32(info[SHIELD + pod] / physics.SHIELD_TURNS)


# --- random playouts (playouts.RandomHeads) --------------------------------------------------------------


@njit(cache=True)
def _random_heads(info: np.ndarray, player: int, uniform: np.ndarray, actions: np.ndarray) -> None:
    """playouts.RandomHeads: `player`'s head indices into actions[player] from its 4 uniform draws."""
    for own in range(2):
        boosted = info[BOOSTED + 2 * player + own]
        actions[player, 2 * own] = np.int64(uniform[4 * player + 2 * own] * ANGLE_STEPS)
        thrust = np.int64(uniform[4 * player + 2 * own + 1] * (THRUST_ACTIONS - boosted))
        actions[player, 2 * own + 1] = thrust + 1 if boosted and thrust >= BOOST_ACTION else thrust


@njit(cache=True)
def random_playout(
    motion: np.ndarray,
    checkpoints: np.ndarray,
    info: np.ndarray,
    rng: np.ndarray,
    draws: np.ndarray,
    atan2: tuple,
) -> int:
    """Finishes the race with uniformly random legal heads drawn from the PCG64 state `rng` as
    `playouts.playouts` draws them (BLOCK turns of DRAWS uniforms at a time, the rest of the last block
    discarded); returns the ENDING. `draws`: float64 (BLOCK * DRAWS,) scratch."""
    actions = np.empty((2, 4), dtype=np.int64)
    used = BLOCK
    while info[WINNER] < 0:
        if used == BLOCK:
            for index in range(BLOCK * DRAWS):
                draws[index] = pcg64.next_double(rng)
            used = 0
        uniform = draws[DRAWS * used : DRAWS * used + DRAWS]
        used += 1
        for player in range(2):
            _random_heads(info, player, uniform, actions)
        step(motion, checkpoints, info, actions, atan2)
    return info[ENDING]


# --- the house racer (playouts.racer_actions) -------------------------------------------------------------

_REACH = np.cumsum(FRICTION_POWERS[:COAST_TURNS])  # playouts._drifts_through's
_MARGIN_SQ = CHECKPOINT_MARGIN**2
_RADIANS_TO_DEGREES = 180.0 / np.pi  # np.degrees' factor


@njit(cache=True)
def _longest_leg_end(checkpoints: np.ndarray, info: np.ndarray) -> int:
    """playouts._longest_leg_ends: the checkpoint at the end of the map's longest leg (the first)."""
    best, longest = 0, -math.inf
    for index in range(info[COUNT]):
        previous = (index - 1) % info[COUNT]
        dx = checkpoints[index, 0] - checkpoints[previous, 0]
        dy = checkpoints[index, 1] - checkpoints[previous, 1]
        leg = math.sqrt(dx * dx + dy * dy)  # np.linalg.norm of two
        if leg > longest:
            best, longest = index, leg
    return best


@njit(cache=True)
def racer(
    motion: np.ndarray, checkpoints: np.ndarray, info: np.ndarray, player: int, out: np.ndarray, atan2: tuple
) -> None:
    """Writes `playouts.racer_actions` of `player` (angle0, thrust0, angle1, thrust1) into out
    (int (4,)): the same float64 operations in the same order (np.hypot is the C library's hypot,
    as Numba's math.hypot; np.round is rint)."""
    longest_end = _longest_leg_end(checkpoints, info)
    for own in range(2):
        pod = 2 * player + own
        x, y, vx, vy = motion[pod, X], motion[pod, Y], motion[pod, VX], motion[pod, VY]
        following = min(info[PASSES + pod] + 1, info[GOAL]) % info[COUNT]
        after = (following + 1) % info[COUNT]
        cx, cy = checkpoints[following, 0], checkpoints[following, 1]
        distance = math.hypot(cx - x, cy - y)
        coasting = False
        for turns in _REACH:
            dx, dy = x + vx * turns - cx, y + vy * turns - cy
            coasting |= dx * dx + dy * dy < _MARGIN_SQ
        aim_x = (checkpoints[after, 0] if coasting else cx) - DRIFT_TURNS * vx
        aim_y = (checkpoints[after, 1] if coasting else cy) - DRIFT_TURNS * vy
        wanted = _atan2(atan2, aim_y - y, aim_x - x)
        turn = _diff_angle(wanted, _heading(motion, checkpoints, info, pod, atan2)) * _RADIANS_TO_DEGREES
        out[2 * own] = min(max(np.rint(turn), -ANGLE_CENTRE), ANGLE_CENTRE) + ANGLE_CENTRE
        slowing = (NO_THRUST_TURN - abs(turn)) / (NO_THRUST_TURN - FULL_THRUST_TURN)
        out[2 * own + 1] = np.rint(min(max(slowing, 0.0), 1.0) * (BOOST_ACTION - 1))
        if (
            not info[BOOSTED + pod]
            and not coasting
            and following == longest_end
            and abs(turn) < BOOST_ALIGNMENT
            and distance > BOOST_DISTANCE
        ):
            out[2 * own + 1] = BOOST_ACTION


# --- batches (the arctan2 loop passed in) ---------------------------------------------------------------


@njit(cache=True)
def _step_batch(motions, checkpoints, infos, actions, loop, data) -> None:
    atan2 = (loop, data, ufunc_loops.new_frame())
    for row in range(infos.shape[0]):
        step(motions[row], checkpoints[row], infos[row], actions[row], atan2)


@njit(cache=True)
def _encode_batch(motions, checkpoints, infos, players, loop, data) -> np.ndarray:
    atan2 = (loop, data, ufunc_loops.new_frame())
    planes = np.empty((infos.shape[0], 2, FEATURES), dtype=np.float32)
    for row in range(infos.shape[0]):
        encode(motions[row], checkpoints[row], infos[row], players[row], planes[row], atan2)
    return planes


@njit(cache=True)
def _playout_returns(motions, checkpoints, infos, rngs, loop, data) -> np.ndarray:
    atan2 = (loop, data, ufunc_loops.new_frame())
    draws = np.empty(BLOCK * DRAWS)
    results = np.zeros((infos.shape[0], 2))
    for row in range(infos.shape[0]):
        random_playout(motions[row], checkpoints[row], infos[row], rngs[row], draws, atan2)
        results[row, 0], results[row, 1] = returns_of(infos[row])
    return results


@njit(cache=True)
def _racer_batch(motions, checkpoints, infos, players, loop, data) -> np.ndarray:
    atan2 = (loop, data, ufunc_loops.new_frame())
    actions = np.empty((infos.shape[0], 4), dtype=np.int64)
    for row in range(infos.shape[0]):
        racer(motions[row], checkpoints[row], infos[row], players[row], actions[row], atan2)
    return actions


@njit(cache=True)
def legal_mask_batch(infos: np.ndarray, players: np.ndarray) -> np.ndarray:
    """bool (n, MASK_SIZE): `legal_mask` of row i for players[i]."""
    masks = np.empty((infos.shape[0], MASK_SIZE), dtype=np.bool_)
    for row in range(infos.shape[0]):
        legal_mask(infos[row], players[row], masks[row])
    return masks


def step_batch(motions: np.ndarray, checkpoints: np.ndarray, infos: np.ndarray, actions: np.ndarray) -> None:
    """`step` in every row (running races): row i plays actions[i] (int (n, 2, 4))."""
    _step_batch(motions, checkpoints, infos, actions, *_ARCTAN2)


def encode_batch(
    motions: np.ndarray, checkpoints: np.ndarray, infos: np.ndarray, players: np.ndarray
) -> np.ndarray:
    """float32 (n, 2, FEATURES): row i `encode`d for players[i] (encoding.encode_many)."""
    return _encode_batch(motions, checkpoints, infos, players, *_ARCTAN2)


def racer_batch(
    motions: np.ndarray, checkpoints: np.ndarray, infos: np.ndarray, players: np.ndarray
) -> np.ndarray:
    """int (n, 4): `playouts.racer_actions` of row i for players[i]."""
    return _racer_batch(motions, checkpoints, infos, players, *_ARCTAN2)


def playout_returns(
    motions: np.ndarray, checkpoints: np.ndarray, infos: np.ndarray, rngs: np.ndarray
) -> np.ndarray:
    """float64 (n, 2): the returns after `random_playout` of every row (in place), row i drawing from
    the PCG64 state rngs[i] (uint64 (n, pcg64.STATE_WORDS), advanced in place)."""
    return _playout_returns(motions, checkpoints, infos, rngs, *_ARCTAN2)


def playouts(states: Sequence[CsbState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """`playouts.playouts` on the compiled kernels: the same returns and generator states after, given
    distinct PCG64 generators (rows sharing one would interleave its blocks otherwise: ValueError)."""
    return kernel_batches.compiled_playouts(states, rngs, pack, playout_returns, shared_generators=False)
