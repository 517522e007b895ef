"""Coders Strike Back's rules (../shared/games/csb.md, 2 players x 2 pods) as pure functions.

The physics of a turn is `physics.play_turn` (the community referee's arithmetic; the spec's §12 says
where it is normative); this module holds the state, the map, the action heads and the contract.

Map (§2): the seed draws one of the 13 stock maps, rotates its checkpoint list by a random offset
(the order is kept) and moves every checkpoint by a uniform integer in [-30, 30] on x and on y.
Pods start beside checkpoint 0, across the line to checkpoint 1 (§3); the race is `laps` laps.

A step is one turn of both players (simultaneous). A player's action is four head indices:
    angle0, angle1 (37 each): turn by index - 18 degrees (-18..+18) from the pod's heading;
    thrust0, thrust1 (52 each): 0..49 thrust THRUST_LEVELS[index] (0, 2, 4, ..., 98, 100: 50 levels
        of round(100 k / 49)), 50 BOOST (legal while the pod has not boosted), 51 SHIELD.
An angle index aims the pod at a point TARGET_DISTANCE away in that direction, so the referee turns
it by exactly that much (within float rounding). The heading is the pod's angle, except on the first
turn, when every pod faces its target freely: there it is the direction to the pod's next checkpoint.
`step_commands` takes the referee's own lines ("X Y THRUST|BOOST|SHIELD") instead, for any target
and thrust 0..200 (the referee's limit).

Results (§8, §12.7): a player whose timeout counter runs out loses (both at once: player 0 loses,
as in the referee); else the owner of a pod that finished wins (both in one turn: player 0, as in the
referee; Arena's seat-swapped pairs cancel that bias); after 500 turns the furthest pod wins.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from arena_games.api import BadConfig, BadStateDict, Config, IllegalAction, merge_config
from arena_games.csb import physics

GAME_NAME = "csb"
MAPS: tuple[tuple[tuple[int, int], ...], ...] = (  # the stock maps (Agade09/CSB-Runner-Arena, csbref.go)
    ((12460, 1350), (10540, 5980), (3580, 5180), (13580, 7600)),
    ((3600, 5280), (13840, 5080), (10680, 2280), (8700, 7460), (7200, 2160)),
    ((4560, 2180), (7350, 4940), (3320, 7230), (14580, 7700), (10560, 5060), (13100, 2320)),
    ((5010, 5260), (11480, 6080), (9100, 1840)),
    ((14660, 1410), (3450, 7220), (9420, 7240), (5970, 4240)),
    ((3640, 4420), (8000, 7900), (13300, 5540), (9560, 1400)),
    ((4100, 7420), (13500, 2340), (12940, 7220), (5640, 2580)),
    ((14520, 7780), (6320, 4290), (7800, 860), (7660, 5970), (3140, 7540), (9520, 4380)),
    ((10040, 5970), (13920, 1940), (8020, 3260), (2670, 7020)),
    ((7500, 6940), (6000, 5360), (11300, 2820)),
    ((4060, 4660), (13040, 1900), (6560, 7840), (7480, 1360), (12700, 7100)),
    ((3020, 5190), (6280, 7760), (14100, 7760), (13880, 1220), (10240, 4920), (6100, 2200)),
    ((10323, 3366), (11203, 5425), (7259, 6656), (5425, 2838)),
)
MAX_CHECKPOINTS = 8  # room in the arrays; the stock maps have 3..6
JITTER = 30
START_OFFSETS = (500.0, -500.0, 1500.0, -1500.0)  # pods 0..3, across the line cp0 -> cp1
START_ANGLE = -1.0 * (math.pi / 180.0)  # the referee's angle before the first turn (-1 degree)

ANGLE_STEPS = 37  # -18..+18 degrees
ANGLE_CENTRE = 18
THRUST_LEVELS = tuple(round(100 * k / 49) for k in range(50))
BOOST_ACTION = len(THRUST_LEVELS)  # 50
SHIELD_ACTION = BOOST_ACTION + 1  # 51
THRUST_ACTIONS = SHIELD_ACTION + 1  # 52
HEADS = MappingProxyType(
    {"angle0": ANGLE_STEPS, "thrust0": THRUST_ACTIONS, "angle1": ANGLE_STEPS, "thrust1": THRUST_ACTIONS}
)
TARGET_DISTANCE = 10000.0  # how far ahead a head's target lies
MAX_STEPS = physics.MAX_TURNS

DEFAULT_CONFIG: Mapping[str, int] = MappingProxyType({"laps": 3})
LAPS_RANGE = (1, 5)
ENDINGS = {
    physics.FINISHED: "finished the race",
    physics.TIMED_OUT: "timed out (100 turns without passing a checkpoint)",
    physics.TURN_CAP: "was furthest after 500 turns",
}


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod: position and speed (units, units per turn; integers between turns), angle (radians,
    the referee's float: 0 = east, y down, not normalised), checkpoints passed, shield timer, boost used."""

    x: float
    y: float
    vx: float
    vy: float
    angle: float
    passes: int = 0
    shield: int = 0
    boosted: bool = False


@dataclass(frozen=True, slots=True)
class CsbState:
    """A race between turns: `turn` turns played; timeouts per player; winner -1 while running,
    then the winning seat, with `ending` (a physics ending code) saying how; `collisions`, the pod
    pairs (lower index first) that touched during the last turn, for viewers (no rule reads it)."""

    laps: int
    checkpoints: tuple[tuple[int, int], ...]
    pods: tuple[Pod, Pod, Pod, Pod]
    turn: int = 0
    timeouts: tuple[int, int] = (physics.TIMEOUT_TURNS, physics.TIMEOUT_TURNS)
    winner: int = -1
    ending: int = physics.RUNNING
    collisions: tuple[tuple[int, int], ...] = ()

    @property
    def is_over(self) -> bool:
        return self.winner >= 0

    @property
    def goal(self) -> int:
        """Passes that finish the race."""
        return self.laps * len(self.checkpoints)


# --- the map and the start ------------------------------------------------------------------------


def generate_map(seed: int) -> tuple[tuple[int, int], ...]:
    """The checkpoints of `seed`: a stock map, rotated, each checkpoint jittered by [-30, 30]."""
    rng = np.random.default_rng(seed)
    stock = MAPS[int(rng.integers(len(MAPS)))]
    offset = int(rng.integers(len(stock)))
    rotated = stock[offset:] + stock[:offset]
    jitter = rng.integers(-JITTER, JITTER + 1, size=(len(rotated), 2))
    return tuple((x + int(dx), y + int(dy)) for (x, y), (dx, dy) in zip(rotated, jitter, strict=True))


def start(checkpoints: Sequence[tuple[int, int]], laps: int = 3) -> CsbState:
    """The race on `checkpoints` before its first turn (§3), pods placed as the referee places them."""
    if not 2 <= len(checkpoints) <= MAX_CHECKPOINTS or not LAPS_RANGE[0] <= laps <= LAPS_RANGE[1]:
        raise BadConfig(
            f"{GAME_NAME}: 2..{MAX_CHECKPOINTS} checkpoints and {LAPS_RANGE} laps, got {checkpoints}, {laps}"
        )
    (x0, y0), (x1, y1) = checkpoints[0], checkpoints[1]
    dx, dy = float(x1 - x0), float(y1 - y0)
    length = math.sqrt(dx * dx + dy * dy)
    ux, uy = dx / length, dy / length
    pods = tuple(
        Pod(
            x=math.floor(x0 + uy * offset + 0.5),
            y=math.floor(y0 + ux * -offset + 0.5),
            vx=0.0,
            vy=0.0,
            angle=START_ANGLE,
        )
        for offset in START_OFFSETS
    )
    return CsbState(laps=laps, checkpoints=tuple((int(x), int(y)) for x, y in checkpoints), pods=pods)


def init(seed: int, config: Config | None = None) -> CsbState:
    """The race of `seed` on its seeded map, before the first turn."""
    settings = merge_config(DEFAULT_CONFIG, config, GAME_NAME)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise BadConfig(f"{GAME_NAME}: the seed must be an integer, got {seed!r}")
    if not LAPS_RANGE[0] <= settings["laps"] <= LAPS_RANGE[1]:
        raise BadConfig(
            f"{GAME_NAME}: config 'laps' must be in {LAPS_RANGE[0]}..{LAPS_RANGE[1]}, got {settings['laps']}"
        )
    return start(generate_map(int(seed)), settings["laps"])


_POD_KEYS = ("x", "y", "vx", "vy", "angle", "passes", "shield", "boosted")
_PAIRS = [(int(b), int(a)) for a, b in zip(physics.PAIR_A, physics.PAIR_B, strict=True)]  # lower pod first
_POD_FIELDS = operator.attrgetter(*_POD_KEYS)

# --- states as arrays -------------------------------------------------------------------------------


def to_races(states: Sequence[CsbState]) -> physics.Races:
    """The batch of `states` as physics arrays (copies)."""
    size = len(states)
    checkpoints = np.zeros((size, MAX_CHECKPOINTS, 2))
    for row, state in enumerate(states):
        checkpoints[row, : len(state.checkpoints)] = state.checkpoints
    pods = np.array([[_POD_FIELDS(pod) for pod in state.pods] for state in states], dtype=np.float64)
    pods = pods.reshape(size, 4, len(_POD_KEYS))
    numbers = np.array(
        [(len(s.checkpoints), s.goal, s.turn, *s.timeouts, s.winner, s.ending) for s in states]
    )
    numbers = numbers.reshape(size, 7).astype(np.int64)
    contacts = np.zeros((size, len(physics.PAIR_A)), dtype=bool)
    for row, state in enumerate(states):
        for pair in state.collisions:
            contacts[row, _PAIRS.index(pair)] = True
    return physics.Races(
        checkpoints=checkpoints,
        counts=numbers[:, 0],
        goal=numbers[:, 1],
        x=pods[..., 0],
        y=pods[..., 1],
        vx=pods[..., 2],
        vy=pods[..., 3],
        angle=pods[..., 4],
        passes=pods[..., 5].astype(np.int64),
        shield=pods[..., 6].astype(np.int64),
        boosted=pods[..., 7].astype(bool),
        turn=numbers[:, 2],
        timeouts=numbers[:, 3:5],
        winner=numbers[:, 5],
        ending=numbers[:, 6],
        contacts=contacts,
    )


def by_seat(
    races: physics.Races, seats: np.ndarray, per_seat: Callable[[physics.Races, int], np.ndarray]
) -> np.ndarray:
    """(B, ...) row i of `per_seat(races, seats[i])` for seats (B,) of 0 and 1: each seat's races
    taken out and computed in one call, then put back in order."""
    rows = [np.flatnonzero(seats == seat) for seat in (0, 1)]
    parts = {seat: per_seat(races.take(found), seat) for seat, found in enumerate(rows) if found.size}
    if not parts:  # no races: per_seat's own empty answer
        return per_seat(races, 0)
    sample = next(iter(parts.values()))
    result = np.empty((len(seats), *sample.shape[1:]), dtype=sample.dtype)
    for seat, part in parts.items():
        result[rows[seat]] = part
    return result


def from_races(
    races: physics.Races, row: int, laps: int, checkpoints: tuple[tuple[int, int], ...]
) -> CsbState:
    """Race `row` of `races` as an immutable state."""
    pods = tuple(
        Pod(
            x=float(races.x[row, k]),
            y=float(races.y[row, k]),
            vx=float(races.vx[row, k]),
            vy=float(races.vy[row, k]),
            angle=float(races.angle[row, k]),
            passes=int(races.passes[row, k]),
            shield=int(races.shield[row, k]),
            boosted=bool(races.boosted[row, k]),
        )
        for k in range(4)
    )
    return CsbState(
        laps=laps,
        checkpoints=checkpoints,
        pods=pods,
        turn=int(races.turn[row]),
        timeouts=(int(races.timeouts[row, 0]), int(races.timeouts[row, 1])),
        winner=int(races.winner[row]),
        ending=int(races.ending[row]),
        collisions=tuple(sorted(pair for pair, hit in zip(_PAIRS, races.contacts[row], strict=True) if hit)),
    )


# --- actions ------------------------------------------------------------------------------------------


def headings(races: physics.Races) -> np.ndarray:
    """(B, 4) the direction (radians) the angle heads turn from: each pod's angle, or on the first
    turn the direction to its next checkpoint (every pod then faces its target freely)."""
    cx, cy = races.next_checkpoint()
    toward = np.arctan2(cy - races.y, cx - races.x)
    return np.where(races.turn[:, None] == 0, toward, races.angle)


def decode_actions(races: physics.Races, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Head indices (B, 2 players, 4 heads) -> target x, target y (B, 4 pods, float), power (B, 4 int)."""
    angle_index = actions[:, :, 0::2].reshape(-1, 4)
    thrust_index = actions[:, :, 1::2].reshape(-1, 4)
    direction = headings(races) + np.radians(angle_index - ANGLE_CENTRE)
    target_x = races.x + TARGET_DISTANCE * np.cos(direction)
    target_y = races.y + TARGET_DISTANCE * np.sin(direction)
    levels = np.array([*THRUST_LEVELS, physics.POWER_BOOST, physics.POWER_SHIELD])
    return target_x, target_y, levels[thrust_index]


def to_move(state: CsbState) -> tuple[int, ...]:
    """Both players act every turn until the race is over."""
    return () if state.is_over else (0, 1)


def legal_masks(state: CsbState, player: int) -> tuple[np.ndarray, ...]:
    """Masks of angle0 (37), thrust0 (52), angle1, thrust1: all legal but BOOST once a pod has boosted."""
    masks = []
    for pod in state.pods[2 * player : 2 * player + 2]:
        thrust = np.ones(THRUST_ACTIONS, dtype=bool)
        thrust[BOOST_ACTION] = not pod.boosted
        masks += [np.ones(ANGLE_STEPS, dtype=bool), thrust]
    if state.is_over or player not in (0, 1):
        return tuple(np.zeros_like(mask) for mask in masks)
    return tuple(masks)


def checked_actions(over: bool, boosted: Sequence[bool], joint: Sequence[Sequence[int]]) -> np.ndarray:
    """(1, 2, 4) the joint action's indices in a race that is `over` or not, whose pods 0..3 have
    `boosted` or not; IllegalAction unless it is one legal 4-tuple per player (`legal_masks`)."""
    shape = (
        "a joint action is one (angle0, thrust0, angle1, thrust1) per player, "
        "like [(18, 49, 18, 49), (18, 49, 18, 50)]"
    )
    if over:
        raise IllegalAction(f"{GAME_NAME}: the race is over")
    try:
        indices = [[_index(value) for value in action] for action in joint]
    except (TypeError, ValueError):
        raise IllegalAction(f"{GAME_NAME}: {shape}; got {joint!r}") from None
    if len(indices) != 2 or any(len(action) != 4 for action in indices):
        raise IllegalAction(f"{GAME_NAME}: {shape}; got {joint!r}")
    for player, action in enumerate(indices):
        for head, ((name, size), index) in enumerate(zip(HEADS.items(), action, strict=True)):
            spent = head % 2 == 1 and index == BOOST_ACTION and boosted[2 * player + head // 2]
            if not 0 <= index < size or spent:
                why = "a pod boosts once" if spent else f"0..{size - 1}"
                raise IllegalAction(
                    f"{GAME_NAME}: player {player}'s {name} index {index} is not legal ({why})"
                )
    return np.array(indices, dtype=np.int64)[None]


def _index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError("not an index")
    return int(value)


def step(state: CsbState, joint: Sequence[Sequence[int]]) -> CsbState:
    """One turn: both players' head indices (see the module doc), in seat order."""
    actions = checked_actions(state.is_over, [pod.boosted for pod in state.pods], joint)
    races = to_races([state])
    physics.play_turn(races, *decode_actions(races, actions))
    return from_races(races, 0, state.laps, state.checkpoints)


_COMMAND = re.compile(r"(\S+) (\S+) (BOOST|SHIELD|\d+)(?: .*)?")


def parse_command(text: str) -> tuple[float, float, int]:
    """(target x, target y, power) of one referee output line; IllegalAction if malformed."""
    match = _COMMAND.fullmatch(text) if isinstance(text, str) else None
    try:
        target_x, target_y = float(match[1]), float(match[2])  # type: ignore[index]
    except (TypeError, ValueError):
        target_x = target_y = math.nan
    if match is None or not (math.isfinite(target_x) and math.isfinite(target_y)):
        raise IllegalAction(f"{GAME_NAME}: malformed command {text!r}; expected 'X Y THRUST|BOOST|SHIELD'")
    power = {"BOOST": physics.POWER_BOOST, "SHIELD": physics.POWER_SHIELD}.get(match[3])
    if power is None:
        power = int(match[3])
        if power > 200:
            raise IllegalAction(f"{GAME_NAME}: thrust {power} is above 200 in {text!r}")
    return target_x, target_y, power


def step_commands(state: CsbState, lines: Sequence[str]) -> CsbState:
    """One turn in the referee's language: 4 lines "X Y THRUST|BOOST|SHIELD", pods 0..3."""
    if state.is_over:
        raise IllegalAction(f"{GAME_NAME}: the race is over")
    if isinstance(lines, str) or len(lines) != 4:
        raise IllegalAction(f"{GAME_NAME}: give one command line per pod (4), got {lines!r}")
    commands = np.array([parse_command(line) for line in lines])
    races = to_races([state])
    physics.play_turn(
        races, commands[None, :, 0], commands[None, :, 1], commands[None, :, 2].astype(np.int64)
    )
    return from_races(races, 0, state.laps, state.checkpoints)


# --- the end -------------------------------------------------------------------------------------------


def returns(state: CsbState) -> tuple[float, float]:
    if not state.is_over:
        return (0.0, 0.0)
    return (1.0, -1.0) if state.winner == 0 else (-1.0, 1.0)


def end_reason(state: CsbState) -> str:
    if not state.is_over:
        return ""
    if state.ending == physics.TIMED_OUT:
        return f"player {2 - state.winner} {ENDINGS[physics.TIMED_OUT]}: player {state.winner + 1} wins"
    return f"player {state.winner + 1} {ENDINGS[state.ending]} and wins"


# --- JSON -------------------------------------------------------------------------------------------------

_KEYS = {"laps", "checkpoints", "pods", "turn", "timeouts", "winner", "ending"}
_OPTIONAL_KEYS = {"collisions"}  # a state without it had no collision in its last turn


def to_dict(state: CsbState) -> dict[str, Any]:
    """JSON-safe; floats round-trip exactly through JSON."""
    return {
        "laps": state.laps,
        "checkpoints": [list(cp) for cp in state.checkpoints],
        "pods": [{key: getattr(pod, key) for key in _POD_KEYS} for pod in state.pods],
        "turn": state.turn,
        "timeouts": list(state.timeouts),
        "winner": state.winner,
        "ending": state.ending,
        "collisions": [list(pair) for pair in state.collisions],
    }


def _int(value: Any, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise BadStateDict(f"{GAME_NAME}: {name} must be an integer in {low}..{high}, got {value!r}")
    return value


def _pod(data: Any) -> Pod:
    if not isinstance(data, Mapping) or set(data) != set(_POD_KEYS):
        raise BadStateDict(f"{GAME_NAME}: a pod has exactly the keys {list(_POD_KEYS)}")
    numbers = [data[key] for key in _POD_KEYS[:5]]
    if (
        not all(type(v) in (int, float) and math.isfinite(v) for v in numbers)
        or type(data["boosted"]) is not bool
    ):
        raise BadStateDict(f"{GAME_NAME}: a pod's x, y, vx, vy, angle are finite numbers and boosted a bool")
    x, y, vx, vy, angle = (float(v) for v in numbers)
    shield = _int(data["shield"], "a pod's shield", 0, physics.SHIELD_TURNS)
    return Pod(x, y, vx, vy, angle, _int(data["passes"], "a pod's passes", 0, 10**6), shield, data["boosted"])


def _collisions(data: Any) -> tuple[tuple[int, int], ...]:
    """The `collisions` of a state dict: distinct pod pairs [a, b], a < b, in order."""
    pairs = (
        [(p[0], p[1]) for p in data if len(p) == 2 and all(type(v) is int for v in p)]
        if isinstance(data, list) and all(isinstance(p, list) for p in data)
        else None
    )
    if (
        pairs is None
        or len(pairs) != len(data)
        or pairs != sorted(set(pairs))
        or not set(pairs) <= set(_PAIRS)
    ):
        raise BadStateDict(
            f"{GAME_NAME}: 'collisions' must be distinct pod pairs [a, b], 0 <= a < b <= 3, in order"
        )
    return tuple(pairs)


def from_dict(data: Mapping[str, Any]) -> CsbState:
    """The state of `to_dict`, every field checked (BadStateDict otherwise)."""
    if not isinstance(data, Mapping) or not _KEYS <= set(data) <= _KEYS | _OPTIONAL_KEYS:
        raise BadStateDict(
            f"{GAME_NAME}: a state dict has the keys {sorted(_KEYS)} and optionally {sorted(_OPTIONAL_KEYS)}"
        )
    checkpoints = data["checkpoints"]
    if (
        not isinstance(checkpoints, list)
        or not 2 <= len(checkpoints) <= MAX_CHECKPOINTS
        or not all(
            isinstance(cp, list) and len(cp) == 2 and all(type(v) is int for v in cp) for cp in checkpoints
        )
    ):
        raise BadStateDict(f"{GAME_NAME}: 'checkpoints' must be 2..{MAX_CHECKPOINTS} [x, y] integer pairs")
    laps = _int(data["laps"], "'laps'", *LAPS_RANGE)
    pods = data["pods"]
    if not isinstance(pods, list) or len(pods) != 4:
        raise BadStateDict(f"{GAME_NAME}: 'pods' must be a list of 4 pods")
    timeouts = data["timeouts"]
    if not isinstance(timeouts, list) or len(timeouts) != 2:
        raise BadStateDict(f"{GAME_NAME}: 'timeouts' must be 2 integers")
    state = CsbState(
        laps=laps,
        checkpoints=tuple((cp[0], cp[1]) for cp in checkpoints),
        pods=tuple(_pod(pod) for pod in pods),  # type: ignore[arg-type]
        turn=_int(data["turn"], "'turn'", 0, MAX_STEPS),
        timeouts=tuple(_int(t, "a timeout", 0, physics.TIMEOUT_TURNS) for t in timeouts),  # type: ignore[arg-type]
        winner=_int(data["winner"], "'winner'", -1, 1),
        ending=_int(data["ending"], "'ending'", physics.RUNNING, physics.TURN_CAP),
        collisions=_collisions(data.get("collisions", [])),
    )
    if any(pod.passes > state.goal for pod in state.pods) or (state.winner < 0) != (
        state.ending == physics.RUNNING
    ):
        raise BadStateDict(f"{GAME_NAME}: passes beyond the goal, or a winner without an ending (or back)")
    return state
