"""Pente rules (../shared/games/pente.md): pure functions over immutable states.

Board: 19x19 points, flat index `point = y * 19 + x` (0 <= x, y < 19), centre (9, 9) = 180.
Players 0 (P1, moves first) and 1 (P2); the stone of player p is the cell value p + 1.
Action: one head "move" of 361 flat points; a joint action is `[(point,)]` for the player to move.

One move (pente.md §7): place the stone; remove every opponent pair flanked by the new stone in
the 8 directions (exactly two stones; a pair the mover flanks on itself is safe); then the mover
wins with 5 captured pairs ("five captures", checked first) or a line of 5 or more through the new
stone ("five in a row", overlines count); else the game is drawn on a full board ("board full") or
when `ply_cap` moves have been made ("ply cap").

Config (defaults in DEFAULT_CONFIG):
  first_move_center  P1's first stone goes on the centre.
  tournament_rule    P1's second stone (ply index 2) keeps Chebyshev distance >= 3 from the centre.
  ply_cap            the game is drawn after this many moves. The default 377 never binds: a running
                     game has at most 4 captured pairs per player, so at most 16 stones were removed
                     and the board is full by ply 361 + 16. It is also every game's length bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena_games.api import Action, BadConfig, BadStateDict, Config, IllegalAction, merge_config
from arena_games.pente.tables import (
    CENTRE_ONLY,
    EMPTY,
    NO_BAN,
    NUM_POINTS,
    OFF_BOARD,
    OPENING_BANS,
    RAYS,
    SIZE,
    TOURNAMENT_BAN,
)

NAME = "pente"
PAIRS_TO_WIN = 5
MAX_PLIES = NUM_POINTS + 2 * 2 * (PAIRS_TO_WIN - 1)  # 377: the board is full by then (see above)
DEFAULT_CONFIG: dict[str, Any] = {"first_move_center": True, "tournament_rule": True, "ply_cap": MAX_PLIES}

FIVE_CAPTURES = "five captures"
FIVE_IN_A_ROW = "five in a row"
BOARD_FULL = "board full"
PLY_CAP = "ply cap"
END_REASONS = (FIVE_CAPTURES, FIVE_IN_A_ROW, BOARD_FULL, PLY_CAP)


@dataclass(frozen=True, slots=True)
class PenteConfig:
    first_move_center: bool
    tournament_rule: bool
    ply_cap: int  # moves after which the game is drawn, >= 1


@dataclass(frozen=True, slots=True)
class PenteState:
    board: bytes  # 361 cells by point: EMPTY (0), or p + 1 for a stone of player p
    captures: tuple[int, int]  # pairs captured by player 0 and by player 1
    ply: int  # moves made so far; player `ply % 2` moves next
    config: PenteConfig
    last_move: int | None = None  # the point of the latest move, None before the first
    winner: int | None = None  # the player who won, None while running or after a draw
    end: str = ""  # one of END_REASONS once the game is over, "" while it runs


# Per point, the (pair, pair, flank) points of each direction whose flank is on the board.
_CAPTURE_LINES = tuple(
    tuple((int(a), int(b), int(c)) for a, b, c, _ in RAYS[p] if c != OFF_BOARD) for p in range(NUM_POINTS)
)
# Per point, per axis: the on-board points going one way, then the other way (up to 4 each).
_AXIS_RAYS = tuple(
    tuple(
        tuple(tuple(int(q) for q in RAYS[p, d] if q != OFF_BOARD) for d in (2 * axis, 2 * axis + 1))
        for axis in range(4)
    )
    for p in range(NUM_POINTS)
)


def make_config(overrides: Config | None = None) -> PenteConfig:
    """The documented defaults updated by `overrides`; BadConfig on unknown keys or bad values."""
    merged = merge_config(DEFAULT_CONFIG, overrides, NAME)
    if merged["ply_cap"] < 1:
        raise BadConfig(f"{NAME}: ply_cap must be at least 1, got {merged['ply_cap']}")
    return PenteConfig(**merged)


def init(seed: int = 0, config: Config | None = None) -> PenteState:
    """The empty board with P1 to move. Pente has no chance: `seed` is accepted and unused."""
    return PenteState(board=bytes(NUM_POINTS), captures=(0, 0), ply=0, config=make_config(config))


def to_move(state: PenteState) -> tuple[int, ...]:
    return () if state.end else (state.ply % 2,)


def opening_ban_kind(ply: int, config: PenteConfig) -> int:
    """Which row of tables.OPENING_BANS restricts the move at `ply` (NO_BAN past the opening)."""
    if ply == 0 and config.first_move_center:
        return CENTRE_ONLY
    if ply == 2 and config.tournament_rule:
        return TOURNAMENT_BAN
    return NO_BAN


def legal_masks(state: PenteState, player: int) -> tuple[np.ndarray]:
    """bool (361,) per head: empty points the opening rules allow; all False if `player` is not to move."""
    if state.end or player != state.ply % 2:
        return (np.zeros(NUM_POINTS, dtype=bool),)
    empty = np.frombuffer(state.board, dtype=np.uint8) == EMPTY
    return (empty & ~OPENING_BANS[opening_ban_kind(state.ply, state.config)],)


def describe_point(point: int) -> str:
    return f"point {point} (x={point % SIZE}, y={point // SIZE})"


def _checked_point(state: PenteState, joint: Sequence[Action]) -> int:
    """The point of a legal joint action `[(point,)]`; IllegalAction saying why otherwise."""
    ban = opening_ban_kind(state.ply, state.config)
    return checked_point(joint, state.end, state.ply, lambda point: state.board[point] != EMPTY, ban)


def checked_point(
    joint: Sequence[Action], end: str, ply: int, occupied: Callable[[int], bool], ban: int
) -> int:
    """The point of a legal joint action `[(point,)]` in a game that ended for `end` ("" while it
    runs) or is at `ply`, `occupied(point)` telling a stone there, `ban` the opening ban kind of the
    move (`opening_ban_kind`); IllegalAction saying why otherwise. Shared by every engine of the game
    (the kernel game's too), so they refuse alike."""
    if end:
        raise IllegalAction(f"{NAME}: the game is over ({end})")
    player = ply % 2
    try:
        ((point,),) = joint
    except (TypeError, ValueError):
        raise IllegalAction(f"{NAME}: expected [(point,)] for player {player}, got {joint!r}") from None
    if type(point) is not int:
        if not isinstance(point, np.integer):
            raise IllegalAction(f"{NAME}: a point is an int in 0..360, got {point!r}")
        point = int(point)
    if not 0 <= point < NUM_POINTS:
        raise IllegalAction(f"{NAME}: point {point} is off the board (0..360)")
    if occupied(point):
        raise IllegalAction(f"{NAME}: {describe_point(point)} is occupied")
    if ban != NO_BAN and OPENING_BANS[ban, point]:
        rule = (
            "P1's first stone must go on the centre (x=9, y=9)"
            if ban == CENTRE_ONLY
            else "tournament rule: P1's second stone must be at least 3 points from the centre"
        )
        raise IllegalAction(f"{NAME}: {describe_point(point)} is forbidden ({rule})")
    return point


def makes_five(cells: bytes | bytearray, point: int) -> bool:
    """Whether the stone on `point` lies in a line of 5 or more of its own colour."""
    stone = cells[point]
    for forward, backward in _AXIS_RAYS[point]:
        run = 1
        for q in forward:
            if cells[q] != stone:
                break
            run += 1
        for q in backward:
            if cells[q] != stone:
                break
            run += 1
        if run >= 5:
            return True
    return False


def step(state: PenteState, joint: Sequence[Action]) -> PenteState:
    """The state after the player to move plays `joint = [(point,)]`; IllegalAction if it may not."""
    point = _checked_point(state, joint)
    player = state.ply % 2
    own, opponent = player + 1, 2 - player
    cells = bytearray(state.board)
    cells[point] = own
    pairs = 0
    for a, b, flank in _CAPTURE_LINES[point]:
        if cells[a] == opponent and cells[b] == opponent and cells[flank] == own:
            cells[a] = cells[b] = EMPTY
            pairs += 1
    captures = state.captures
    if pairs:
        captures = (captures[0] + pairs, captures[1]) if player == 0 else (captures[0], captures[1] + pairs)
    ply = state.ply + 1
    winner, end = None, ""
    if captures[player] >= PAIRS_TO_WIN:
        winner, end = player, FIVE_CAPTURES
    elif makes_five(cells, point):
        winner, end = player, FIVE_IN_A_ROW
    elif ply - 2 * (captures[0] + captures[1]) == NUM_POINTS:  # stones on the board
        end = BOARD_FULL
    elif ply >= state.config.ply_cap:
        end = PLY_CAP
    return PenteState(bytes(cells), captures, ply, state.config, point, winner, end)


def returns(state: PenteState) -> tuple[float, float]:
    """(0, 0) while running or after a draw; +1 for the winner and -1 for the loser."""
    if state.winner is None:
        return (0.0, 0.0)
    return (1.0, -1.0) if state.winner == 0 else (-1.0, 1.0)


def end_reason(state: PenteState) -> str:
    return state.end


CELL_LETTERS = ".XO"  # EMPTY, player 0's stone, player 1's stone


def to_dict(state: PenteState) -> dict[str, Any]:
    """JSON-safe: the board as 19 rows (y = 0 first) of 19 letters from ".XO" (x = 0 first)."""
    letters = "".join(CELL_LETTERS[cell] for cell in state.board)
    return {
        "board": [letters[y * SIZE : (y + 1) * SIZE] for y in range(SIZE)],
        "captures": list(state.captures),
        "ply": state.ply,
        "config": {key: getattr(state.config, key) for key in DEFAULT_CONFIG},
        "last_move": state.last_move,
        "winner": state.winner,
        "end": state.end,
    }


def _parse_board(rows: Any) -> bytes:
    if not isinstance(rows, list) or len(rows) != SIZE:
        raise BadStateDict(f"{NAME}: 'board' must be a list of {SIZE} strings")
    if not all(isinstance(row, str) and len(row) == SIZE and set(row) <= set(CELL_LETTERS) for row in rows):
        raise BadStateDict(f"{NAME}: each board row must be {SIZE} letters from {CELL_LETTERS!r}")
    return bytes(CELL_LETTERS.index(letter) for row in rows for letter in row)


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _check_consistent(state: PenteState) -> None:
    """BadStateDict unless the stones, counts, last move and outcome fit together."""
    ply, (pairs0, pairs1) = state.ply, state.captures
    # Each player placed their share of the plies and lost 2 stones per pair the other captured.
    if (state.board.count(1), state.board.count(2)) != ((ply + 1) // 2 - 2 * pairs1, ply // 2 - 2 * pairs0):
        raise BadStateDict(f"{NAME}: stone counts do not fit ply {ply} and captures {state.captures}")
    mover = (ply - 1) % 2
    if ply == 0:
        if state.last_move is not None:
            raise BadStateDict(f"{NAME}: last_move must be None before the first move")
    elif state.last_move is None or not (
        0 <= state.last_move < NUM_POINTS and state.board[state.last_move] == mover + 1
    ):
        raise BadStateDict(f"{NAME}: last_move must hold a stone of the last mover")
    if state.captures[1 - mover] >= PAIRS_TO_WIN:
        raise BadStateDict(f"{NAME}: player {1 - mover} would have won by captures before")
    if state.captures[mover] >= PAIRS_TO_WIN:
        expected = (mover, FIVE_CAPTURES)
    elif ply > 0 and makes_five(state.board, state.last_move):
        expected = (mover, FIVE_IN_A_ROW)
    elif EMPTY not in state.board:
        expected = (None, BOARD_FULL)
    elif ply >= state.config.ply_cap:
        expected = (None, PLY_CAP)
    else:
        expected = (None, "")
    if (state.winner, state.end) != expected:
        raise BadStateDict(f"{NAME}: (winner, end) must be {expected} for this board, ply and config")


def from_dict(data: Mapping[str, Any]) -> PenteState:
    """The state `to_dict` wrote; BadStateDict on any missing, unknown or inconsistent field."""
    keys = {"board", "captures", "ply", "config", "last_move", "winner", "end"}
    if not isinstance(data, Mapping) or set(data) != keys:
        raise BadStateDict(f"{NAME}: a state dict has exactly the keys {sorted(keys)}")
    captures = data["captures"]
    if not (isinstance(captures, list) and len(captures) == 2 and all(map(_is_count, captures))):
        raise BadStateDict(f"{NAME}: 'captures' must be two counts of pairs")
    if not _is_count(data["ply"]):
        raise BadStateDict(f"{NAME}: 'ply' must be a count")
    if not (data["last_move"] is None or type(data["last_move"]) is int):
        raise BadStateDict(f"{NAME}: 'last_move' must be a point or None")
    if not (data["winner"] is None or (type(data["winner"]) is int and data["winner"] in (0, 1))):
        raise BadStateDict(f"{NAME}: 'winner' must be 0, 1 or None")
    if not isinstance(data["end"], str) or not isinstance(data["config"], Mapping):
        raise BadStateDict(f"{NAME}: 'end' must be a string and 'config' a mapping")
    try:
        config = make_config(data["config"])
    except BadConfig as error:
        raise BadStateDict(str(error)) from None
    state = PenteState(
        board=_parse_board(data["board"]),
        captures=(captures[0], captures[1]),
        ply=data["ply"],
        config=config,
        last_move=data["last_move"],
        winner=data["winner"],
        end=data["end"],
    )
    _check_consistent(state)
    return state
