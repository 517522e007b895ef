"""A text picture of a Pente position: x runs left to right (columns a..s), y top to bottom."""

from __future__ import annotations

from arena_games.pente.rules import CELL_LETTERS, PenteState, describe_point
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
