"""A text picture of a Pente position: x runs left to right (columns a..s), y top to bottom."""

from __future__ import annotations

from typing import Any

import numpy as np

from arena_games.pente.rules import CELL_LETTERS, PenteState, describe_point, legal_masks, to_move
from arena_games.pente.tables import SIZE

_COLUMNS = "abcdefghijklmnopqrs"


def _player(player: int) -> str:
    return f"{CELL_LETTERS[player + 1]} (P{player + 1})"


def render(state: PenteState) -> str:
    lines = ["    " + " ".join(_COLUMNS)]
    for y in range(SIZE):
        row = state.board[y * SIZE : (y + 1) * SIZE]
        lines.append(f"{y:>2}  " + " ".join(CELL_LETTERS[cell] for cell in row))
    lines.append(f"captured pairs: {_player(0)} {state.captures[0]}, {_player(1)} {state.captures[1]}")
    lines.append(f"moves made: {state.ply}")
    if state.last_move is not None:
        lines.append(f"last move: {describe_point(state.last_move)}")
    if state.end:
        outcome = "draw" if state.winner is None else f"{_player(state.winner)} wins"
        lines.append(f"game over: {outcome} ({state.end})")
    else:
        lines.append(f"to move: {_player(state.ply % 2)}")
    return "\n".join(lines)


def view(state: PenteState) -> dict[str, Any]:
    """What a viewer draws (JSON-safe).

    board: 361 cells, point y * 19 + x, as '.' empty, '1' the first player's stone, '2' the
    second's; captures: pairs captured by each player; to_move: the players to move ([] once
    over); ply: moves made; last_move: [x, y] of the latest stone, or None; moves: every legal
    action -> its [x, y] (the action is the point y * 19 + x); winner: 0, 1 or None; ending: why
    the game ended ("" while it runs).
    """
    legal = np.flatnonzero(legal_masks(state, state.ply % 2)[0]) if not state.end else ()
    return {
        "board": "".join(".12"[cell] for cell in state.board),
        "captures": list(state.captures),
        "to_move": list(to_move(state)),
        "ply": state.ply,
        "last_move": None if state.last_move is None else list(divmod(state.last_move, SIZE)[::-1]),
        "moves": {str(point): [point % SIZE, point // SIZE] for point in map(int, legal)},
        "winner": state.winner,
        "ending": state.end,
    }
