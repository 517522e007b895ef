"""Bobail's rules as pure functions over immutable states (the spec: shared/games/bobail.md).

Players. API players are 0 and 1. Player 0 is the spec's "player 1": it moves first and its home
row is row 0 (the library's squares 1-5). Player 1 is the spec's "player 2", home row 4 (squares
21-25). Inside this package squares are 0..24 (`row * 5 + col`); the helpers that talk to people,
the reference library and the UI (`action_to_move`, `move_to_action`) use its squares 1..25.

Turns. A turn is two steps ("half-moves") of one player: the bobail moves one square onto an
empty neighbour, then one of the player's pawns slides as far as it can. Player 0's first turn is
the pawn half only. So the player and phase of half-move `h` (0-based) depend on `h % 4` alone:
0 -> player 0 slides a pawn, 1 -> player 1 moves the bobail, 2 -> player 1 slides a pawn,
3 -> player 0 moves the bobail (see TURN_OF).

Actions. One head, "move", of 200 = 8 directions x 25 squares, relative to the mover like the
seed app's policy output: `index = direction * 25 + row' * 5 + col'`, where (row', col') is the
moved piece's square as the mover sees the board: player 0 sees it rotated 180 degrees
(row' = 4 - row, col' = 4 - col), player 1 as it is. Direction codes 0..7 = SW, W, NW, S, N, SE,
E, NE in the mover's view (DIRECTIONS). A direction fixes the move: the bobail goes one square,
a pawn as far as it can, and the square says whether the bobail or a pawn moves.

Ending, checked after every half-move in this order (decisive rules before the draw rules):
  1. the bobail on row 0 wins for player 0, on row 4 for player 1, whoever moved it there;
  2. the side to move has no legal half-move and loses: "bobail boxed in" in a bobail half, or
     "no pawn move" in a pawn half. Like the reference library (and unlike the solver, which
     never generates a bobail move that leaves no pawn move), a bobail move that leaves its
     player without a pawn move is legal and that player then loses;
  3. our draw rules, which the library lacks: the same (board, side to move, phase) for the
     `repetitions`-th time (default 3; 0 disables), or `max_turns` full turns played (default
     200; a turn is counted when its pawn half is played, player 0's pawn-only first turn too).

Boards are packed into one int (see `pack_board`); a state keeps every board of the game, so it
can tell repetitions and give the encoder its 14 newest boards.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from arena_games.api import BadConfig, BadStateDict, Config, IllegalAction, merge_config

GAME_NAME = "bobail"
SIZE = 5  # the board is SIZE x SIZE
SQUARES = SIZE * SIZE
# (d_row, d_col) of direction codes 0..7 = SW, W, NW, S, N, SE, E, NE; "north" is towards row 0.
# These are player 1's view; player 0's view is rotated, so its code for a real direction d is 7 - d.
DIRECTIONS = ((1, -1), (0, -1), (-1, -1), (1, 0), (-1, 0), (1, 1), (0, 1), (-1, 1))
NUM_ACTIONS = len(DIRECTIONS) * SQUARES  # 200

DEFAULT_CONFIG: Mapping[str, int] = MappingProxyType(
    {
        "repetitions": 3,  # draw when a (board, side to move, phase) occurs this often; 0 disables
        "max_turns": 200,  # draw after this many full turns; 1..200 (the spec's max_length needs a bound)
    }
)
MAX_TURNS_LIMIT = DEFAULT_CONFIG["max_turns"]
# Turn t (1-based) ends with half-move 2t - 2 (0-based), so no game is longer than this many half-moves.
MAX_HALF_MOVES = 2 * MAX_TURNS_LIMIT - 1

TURN_OF = ((0, True), (1, False), (1, True), (0, False))  # (player, pawn phase) by half-move % 4
HOME_ROW_WINNER = {0: 0, SIZE - 1: 1}  # the bobail's row -> the player who wins
START_TEXT = "00000" + "....." + "..B.." + "....." + "11111"

# A packed board: bits 0..24 player 0's pawns, bits 25..49 player 1's pawns (bit s = square s),
# bits 50..54 the bobail's square.
SQUARE_BITS = (1 << SQUARES) - 1
PAWN_SHIFTS = (0, SQUARES)
BOBAIL_SHIFT = 2 * SQUARES
BOBAIL_BITS = 0b11111 << BOBAIL_SHIFT


def pack_board(pawns0: int, pawns1: int, bobail: int) -> int:
    """One int for a board: the two players' pawn bit masks and the bobail's square (0..24)."""
    return pawns0 | pawns1 << SQUARES | bobail << BOBAIL_SHIFT


def unpack_board(board: int) -> tuple[int, int, int]:
    """(player 0's pawn mask, player 1's pawn mask, bobail square) of a packed board."""
    return board & SQUARE_BITS, board >> SQUARES & SQUARE_BITS, board >> BOBAIL_SHIFT


def _ray(square: int, direction: int) -> tuple[int, ...]:
    """The squares from `square` (exclusive) to the edge in `direction`, nearest first."""
    d_row, d_col = DIRECTIONS[direction]
    row, col = divmod(square, SIZE)
    squares = []
    row, col = row + d_row, col + d_col
    while 0 <= row < SIZE and 0 <= col < SIZE:
        squares.append(row * SIZE + col)
        row, col = row + d_row, col + d_col
    return tuple(squares)


RAYS = tuple(tuple(_ray(square, d) for d in range(len(DIRECTIONS))) for square in range(SQUARES))


def _action_index(player: int, square: int, direction: int) -> int:
    """The action moving the piece on `square` in (real) `direction`, seen by `player`."""
    if player == 0:
        return (len(DIRECTIONS) - 1 - direction) * SQUARES + (SQUARES - 1 - square)
    return direction * SQUARES + square


def _origins(player: int) -> tuple[tuple[int, int], ...]:
    """(square, real direction) of each action index of `player`: the inverse of ACTIONS."""
    origins = {ACTIONS[player][s][d]: (s, d) for s in range(SQUARES) for d in range(len(DIRECTIONS))}
    return tuple(origins[action] for action in range(NUM_ACTIONS))


# ACTIONS[player][square][direction] -> action index; ORIGINS[player][action] -> (square, direction).
ACTIONS = tuple(
    tuple(tuple(_action_index(p, s, d) for d in range(len(DIRECTIONS))) for s in range(SQUARES))
    for p in (0, 1)
)
ORIGINS = (_origins(0), _origins(1))


@dataclass(frozen=True, slots=True)
class BobailConfig:
    repetitions: int  # 0 (no repetition draw) or >= 2
    max_turns: int  # 1..MAX_TURNS_LIMIT


@dataclass(frozen=True, slots=True)
class BobailState:
    """A position and how it was reached. Only `config` and `history` are data; the rest follows.

    `history` holds the packed board after every half-move, oldest first: history[0] is the
    start, history[-1] the board now, so len(history) - 1 half-moves have been played.
    `legal_actions` are the side to move's legal action indices (empty once the game is over);
    `winner` is 0, 1 or None (running or drawn); `ending` says why the game ended ("" if running).
    """

    config: BobailConfig
    history: tuple[int, ...]
    legal_actions: tuple[int, ...] = field(compare=False, repr=False)
    winner: int | None = field(compare=False)
    ending: str = field(compare=False)

    @property
    def half_moves(self) -> int:
        return len(self.history) - 1

    @property
    def player(self) -> int:
        """The player who owns the current half-move (after the end: the one who would move)."""
        return TURN_OF[(len(self.history) - 1) % 4][0]

    @property
    def pawn_phase(self) -> bool:
        """True when the side to move slides a pawn, False when it moves the bobail."""
        return TURN_OF[(len(self.history) - 1) % 4][1]

    @property
    def is_over(self) -> bool:
        return bool(self.ending)


def make_config(overrides: Config | None) -> BobailConfig:
    """The documented defaults updated by `overrides`; unknown keys or bad values raise BadConfig."""
    merged = merge_config(DEFAULT_CONFIG, overrides, GAME_NAME)
    if merged["repetitions"] < 0 or merged["repetitions"] == 1:
        raise BadConfig(
            f"{GAME_NAME}: repetitions must be 0 (off) or at least 2, got {merged['repetitions']}"
        )
    if not 1 <= merged["max_turns"] <= MAX_TURNS_LIMIT:
        raise BadConfig(f"{GAME_NAME}: max_turns must be in 1..{MAX_TURNS_LIMIT}, got {merged['max_turns']}")
    return BobailConfig(**merged)


def _legal_actions(board: int, player: int, pawn_phase: bool) -> tuple[int, ...]:
    """Action indices of `player`'s legal half-moves on a packed board (the phase given)."""
    pawns0, pawns1, bobail = unpack_board(board)
    occupied = pawns0 | pawns1 | 1 << bobail
    actions = ACTIONS[player]
    if not pawn_phase:
        return tuple(
            actions[bobail][d] for d, ray in enumerate(RAYS[bobail]) if ray and not occupied >> ray[0] & 1
        )
    legal = []
    own = pawns1 if player else pawns0
    while own:
        square = (own & -own).bit_length() - 1
        own &= own - 1
        legal.extend(
            actions[square][d] for d, ray in enumerate(RAYS[square]) if ray and not occupied >> ray[0] & 1
        )
    return tuple(legal)


def _destination(board: int, square: int, direction: int, pawn_phase: bool) -> int:
    """Where the piece on `square` lands in `direction`: the bobail one square, a pawn as far as it can.

    The first square of the ray must be empty (legality is checked by the caller).
    """
    ray = RAYS[square][direction]
    if not pawn_phase:
        return ray[0]
    pawns0, pawns1, bobail = unpack_board(board)
    occupied = pawns0 | pawns1 | 1 << bobail
    landing = ray[0]
    for target in ray[1:]:
        if occupied >> target & 1:
            break
        landing = target
    return landing


def _board_after(state: BobailState, action: int) -> int:
    """The packed board after the side to move plays the legal `action`."""
    board = state.history[-1]
    player, pawn_phase = TURN_OF[state.half_moves % 4]
    square, direction = ORIGINS[player][action]
    target = _destination(board, square, direction, pawn_phase)
    if not pawn_phase:
        return board & ~BOBAIL_BITS | target << BOBAIL_SHIFT
    shift = PAWN_SHIFTS[player]
    return board ^ (1 << square | 1 << target) << shift


def _settled(config: BobailConfig, history: tuple[int, ...]) -> BobailState:
    """The state after `history`, with the side to move's legal actions and the outcome."""
    board = history[-1]
    half_moves = len(history) - 1
    player, pawn_phase = TURN_OF[half_moves % 4]
    bobail_row = (board >> BOBAIL_SHIFT) // SIZE
    if bobail_row in HOME_ROW_WINNER:
        winner = HOME_ROW_WINNER[bobail_row]
        return BobailState(config, history, (), winner, f"bobail reached player {winner + 1}'s home row")
    legal = _legal_actions(board, player, pawn_phase)
    if not legal:
        return BobailState(
            config, history, (), 1 - player, "no pawn move" if pawn_phase else "bobail boxed in"
        )
    # Positions with the same side to move and phase are those with the same half-move index mod 4.
    if config.repetitions and history[half_moves % 4 :: 4].count(board) >= config.repetitions:
        times = "threefold" if config.repetitions == 3 else f"{config.repetitions}-fold"
        return BobailState(config, history, (), None, f"{times} repetition")
    if (half_moves + 1) // 2 >= config.max_turns:  # turns played = pawn half-moves played
        return BobailState(config, history, (), None, "turn cap")
    return BobailState(config, history, legal, None, "")


def init(seed: int, config: Config | None = None) -> BobailState:
    """The start position. Bobail has one fixed start, so `seed` changes nothing."""
    del seed
    return _settled(make_config(config), (parse_board(START_TEXT),))


def to_move(state: BobailState) -> tuple[int, ...]:
    return () if state.ending else (state.player,)


def legal_masks(state: BobailState, player: int) -> tuple[np.ndarray]:
    """One bool mask of shape (200,): `player`'s legal actions (all False if not `player`'s turn)."""
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    if player == state.player:
        mask[list(state.legal_actions)] = True
    return (mask,)


def _single_action(joint: Sequence[Sequence[int]]) -> int:
    """The one action index of a joint action like [(37,)]; IllegalAction if it has another shape."""
    try:
        ((index,),) = joint
    except (TypeError, ValueError):
        index = None  # malformed: refused just below
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise IllegalAction(
            f"{GAME_NAME}: a joint action is one action of one index, like [(37,)]; got {joint!r}"
        )
    return int(index)


def step(state: BobailState, joint: Sequence[Sequence[int]]) -> BobailState:
    """The state after the side to move plays the only action of `joint`."""
    action = checked_action(joint, state.ending, state.half_moves, state.legal_actions)
    return _settled(state.config, (*state.history, _board_after(state, action)))


def checked_action(
    joint: Sequence[Sequence[int]], ending: str, half_moves: int, legal: Collection[int]
) -> int:
    """The action of `joint` in a game that ended for `ending` ("" while it runs) after `half_moves`
    half-moves, if it is one of `legal` (the mover's legal action indices); IllegalAction saying
    why otherwise. Shared by every engine of the game (the kernel game's too), so they refuse alike."""
    action = _single_action(joint)
    if action not in legal:
        raise IllegalAction(_illegal_message(ending, half_moves, legal, action))
    return action


def _illegal_message(ending: str, half_moves: int, legal: Collection[int], action: int) -> str:
    if ending:
        return f"{GAME_NAME}: the game is over ({ending}); no action is legal"
    player, pawn_phase = TURN_OF[half_moves % 4]
    half = "pawn" if pawn_phase else "bobail"
    return (
        f"{GAME_NAME}: action {action} is not legal for player {player + 1} in the {half} half; "
        f"legal actions: {sorted(legal)}"
    )


def returns(state: BobailState) -> tuple[float, float]:
    if state.winner is None:
        return (0.0, 0.0)
    return (1.0, -1.0) if state.winner == 0 else (-1.0, 1.0)


def end_reason(state: BobailState) -> str:
    return state.ending


def action_to_move(state: BobailState, action: int) -> tuple[int, int]:
    """The library's (from, to) squares (1..25) of the side to move's legal `action`."""
    if action not in state.legal_actions:
        raise IllegalAction(_illegal_message(state.ending, state.half_moves, state.legal_actions, action))
    square, direction = ORIGINS[state.player][action]
    return square + 1, _destination(state.history[-1], square, direction, state.pawn_phase) + 1


def move_to_action(state: BobailState, from_square: int, to_square: int) -> int:
    """The action index of the side to move's legal move between library squares (1..25)."""
    if not (1 <= from_square <= SQUARES and 1 <= to_square <= SQUARES):
        raise IllegalAction(f"{GAME_NAME}: squares are 1..{SQUARES}, got {from_square} -> {to_square}")
    (from_row, from_col), (to_row, to_col) = divmod(from_square - 1, SIZE), divmod(to_square - 1, SIZE)
    d_row, d_col = to_row - from_row, to_col - from_col
    if (d_row, d_col) == (0, 0) or (d_row and d_col and abs(d_row) != abs(d_col)):
        raise IllegalAction(f"{GAME_NAME}: {from_square} -> {to_square} is not a straight line")
    # Any distance maps to its unit direction (the seed app looked up raw deltas and failed).
    direction = DIRECTIONS.index((int(np.sign(d_row)), int(np.sign(d_col))))
    action = ACTIONS[state.player][from_square - 1][direction]
    if action not in state.legal_actions or action_to_move(state, action)[1] != to_square:
        raise IllegalAction(f"{GAME_NAME}: {from_square} -> {to_square} is not a legal move here")
    return action


def board_text(board: int) -> str:
    """A packed board as 25 characters, row 0 first: '0'/'1' a player's pawn, 'B' the bobail, '.' empty."""
    pawns0, pawns1, bobail = unpack_board(board)
    return "".join(
        "B" if square == bobail else "0" if pawns0 >> square & 1 else "1" if pawns1 >> square & 1 else "."
        for square in range(SQUARES)
    )


def parse_board(text: str) -> int:
    """The packed board of `board_text`'s notation; BadStateDict if it is not 25 cells with one 'B'."""
    if not isinstance(text, str) or len(text) != SQUARES or set(text) - set("01B.") or text.count("B") != 1:
        raise BadStateDict(
            f"{GAME_NAME}: a board is 25 characters of '0', '1', 'B', '.', one 'B'; got {text!r}"
        )
    pawns0 = sum(1 << square for square, cell in enumerate(text) if cell == "0")
    pawns1 = sum(1 << square for square, cell in enumerate(text) if cell == "1")
    return pack_board(pawns0, pawns1, text.index("B"))


def to_dict(state: BobailState) -> dict[str, Any]:
    """{"config": {...}, "history": [board text of every half-move, oldest first]}: JSON-safe."""
    config = {"repetitions": state.config.repetitions, "max_turns": state.config.max_turns}
    return {"config": config, "history": [board_text(board) for board in state.history]}


def from_dict(data: Mapping[str, Any]) -> BobailState:
    """The state of `to_dict`; the history must be a game played by the rules from the start."""
    if not isinstance(data, Mapping) or set(data) != {"config", "history"}:
        raise BadStateDict(f"{GAME_NAME}: a state dict has exactly the keys 'config' and 'history'")
    if (
        not isinstance(data["config"], Mapping)
        or not isinstance(data["history"], list)
        or not data["history"]
    ):
        raise BadStateDict(f"{GAME_NAME}: 'config' must be a dict and 'history' a non-empty list")
    try:
        state = init(0, data["config"])
    except BadConfig as error:
        raise BadStateDict(str(error)) from error
    boards = [parse_board(text) for text in data["history"]]
    if boards[0] != state.history[0]:
        raise BadStateDict(f"{GAME_NAME}: the history must begin with the start position {START_TEXT}")
    for half_move, board in enumerate(boards[1:], start=1):
        if state.ending:
            raise BadStateDict(f"{GAME_NAME}: history[{half_move}] comes after the end ({state.ending})")
        action = next((a for a in state.legal_actions if _board_after(state, a) == board), None)
        if action is None:
            raise BadStateDict(f"{GAME_NAME}: history[{half_move}] does not follow from a legal half-move")
        state = step(state, [(action,)])
    return state
