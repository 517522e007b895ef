"""A text picture of a Bobail position: the board (row 0 on top) beside the library's square
numbers, and a line that says who does what next, or how the game ended.

    0 0 0 0 0     1  2  3  4  5
    . . . . .     6  7  8  9 10
    . . B . .    11 12 13 14 15
    . . . . .    16 17 18 19 20
    1 1 1 1 1    21 22 23 24 25
    0, 1: pawns of player 1 (home row on top) and player 2 (bottom); B: the bobail
    half-move 1, turn 1: player 1 slides a pawn
"""

from __future__ import annotations

from typing import Any

from arena_games.bobail.rules import SIZE, BobailState, action_to_move, board_text, to_move

LEGEND = "0, 1: pawns of player 1 (home row on top) and player 2 (bottom); B: the bobail"


def render(state: BobailState) -> str:
    cells = board_text(state.history[-1])
    lines = [
        " ".join(cells[row * SIZE : (row + 1) * SIZE])
        + "   "
        + " ".join(f"{row * SIZE + col + 1:2d}" for col in range(SIZE))
        for row in range(SIZE)
    ]
    return "\n".join([*lines, LEGEND, _status(state)])


def _status(state: BobailState) -> str:
    if state.ending:
        result = "draw" if state.winner is None else f"player {state.winner + 1} wins"
        return f"game over after {state.half_moves} half-moves: {result} ({state.ending})"
    doing = "slides a pawn" if state.pawn_phase else "moves the bobail"
    turn = (state.half_moves + 1) // 2 + 1  # player 0's first turn is one half-move, later ones two
    return f"half-move {state.half_moves + 1}, turn {turn}: player {state.player + 1} {doing}"


def view(state: BobailState) -> dict[str, Any]:
    """What a viewer draws (JSON-safe).

    board: 25 cells, row 0 first ('0', '1' pawns of the first and second player, 'B', '.');
    to_move: the players to move ([] once over); phase: "pawn" or "bobail"; half_moves: played;
    last_move: the latest half-move as library squares [from, to] (1..25), or None;
    moves: every legal action of the side to move -> its library squares [from, to];
    winner: 0, 1 or None; ending: why the game ended ("" while it runs).
    """
    return {
        "board": board_text(state.history[-1]),
        "to_move": list(to_move(state)),
        "phase": "pawn" if state.pawn_phase else "bobail",
        "half_moves": state.half_moves,
        "last_move": _last_move(state),
        "moves": {str(action): list(action_to_move(state, action)) for action in state.legal_actions},
        "winner": state.winner,
        "ending": state.ending,
    }


def _last_move(state: BobailState) -> list[int] | None:
    """The squares (1..25) the latest half-move moved a piece from and to, or None at the start."""
    if state.half_moves == 0:
        return None
    before, after = board_text(state.history[-2]), board_text(state.history[-1])
    left = [square + 1 for square in range(SIZE * SIZE) if before[square] != "." and after[square] == "."]
    arrived = [square + 1 for square in range(SIZE * SIZE) if before[square] == "." and after[square] != "."]
    return [left[0], arrived[0]]
