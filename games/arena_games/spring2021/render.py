"""Text picture and viewer data of a Spring 2021 position.

The text draws the hexagon with direction 0 (east) to the right, one row per cube z (z = -3 on
top), beside the same rows of cell indices:

        .   .   .   .             25  24  23  22
      .   #   .   .   .         26  11  10   9  21
    ...
    . empty, # hole; a tree is its owner (A = player 1, B = player 2) and size (0 = seed), with
    z when it is dormant and ~ when it stands in a spooky shadow today
"""

from __future__ import annotations

from typing import Any

from arena_games.spring2021.board import COORDS, INDEX_OF, NUM_CELLS, RING_COUNT
from arena_games.spring2021.rules import (
    DORMANT_BIT,
    NO_TREE,
    OWNER_SHIFT,
    SIZE_BITS,
    WAIT_ACTION,
    SpringState,
    action_commands,
    command_text,
    end_reason,
    final_scores,
    returns,
    to_move,
)

DIRECTION_NAMES = ("east", "north-east", "north-west", "west", "south-west", "south-east")
LEGEND = (
    ". empty, # hole; a tree: owner (A = player 1, B = player 2) and size (0 = seed), "
    "z dormant, ~ in a spooky shadow today"
)


def _rows() -> list[list[int]]:
    """Cell indices by row: cube z from -RING_COUNT (top) to RING_COUNT, x ascending in a row."""
    return [
        [INDEX_OF[(x, -x - z, z)] for x in range(-RING_COUNT, RING_COUNT + 1) if (x, -x - z, z) in INDEX_OF]
        for z in range(-RING_COUNT, RING_COUNT + 1)
    ]


ROWS = _rows()


def _cell_text(state: SpringState, cell: int) -> str:
    code = state.trees[cell]
    if code == NO_TREE:
        return "." if state.richness[cell] else "#"
    size = code & SIZE_BITS
    marks = ("z" if code & DORMANT_BIT else "") + ("~" if size and state.shadows[cell] >= size else "")
    return "AB"[code >> OWNER_SHIFT] + str(size) + marks


def _shown_day(state: SpringState) -> int:
    """The day on the board: the current one, or the last one once the game is over."""
    return min(state.day, state.config.max_rounds - 1)


def sun_direction(state: SpringState) -> int:
    """Where the sun points today (it does not turn after the last day)."""
    return _shown_day(state) % 6


def render(state: SpringState) -> str:
    lines = []
    for row in ROWS:
        indent = " " * 2 * (len(ROWS[0]) + RING_COUNT - len(row))
        board = indent + "".join(f"{_cell_text(state, cell):<4}" for cell in row)
        numbers = indent + "".join(f"{cell:>3} " for cell in row)
        lines.append(f"{board:<32}{numbers}".rstrip())
    lines.append(LEGEND)
    day, direction = _shown_day(state), sun_direction(state)
    lines.append(
        f"day {day} of 0..{state.config.max_rounds - 1}, "
        f"sun towards {DIRECTION_NAMES[direction]} (direction {direction}), nutrients {state.nutrients}"
    )
    for player in (0, 1):
        waiting = ", waiting" if state.waiting[player] and not state.is_over else ""
        lines.append(f"player {player + 1}: sun {state.sun[player]}, score {state.score[player]}{waiting}")
    lines.append(end_reason(state) or f"to move: {', '.join(f'player {p + 1}' for p in to_move(state))}")
    return "\n".join(lines)


def view(state: SpringState) -> dict[str, Any]:
    """What a hex viewer draws (JSON-safe).

    cells: 37 of {"index", "cube": [x, y, z], "richness" (0 = hole), "shadow" (today's, 0..3),
        "tree": None or {"size", "owner", "dormant", "spooky" (shaded today by an equal or bigger tree)}};
    day (the last one once over), max_rounds, nutrients,
    sun_direction (0..5, 0 = east, cube offsets as in board.DIRECTIONS);
    players: per seat {"sun", "score", "gathered", "waiting"}; to_move: the seats asked this frame;
    day_actions: {"day", "frames": [[seat 0's command, seat 1's command] per frame ("" = did not act)]},
        the actions of the latest day anyone acted (rejected ones read "WAIT (<command>: <why>)", a
        malformed line "DEACTIVATED (malformed command '<line>')");
    moves: every action legal for a seat to move -> {"cell": 0..36 or None for WAIT,
        "commands": {seat: command text}} (an index means different commands for the two seats);
    final_scores: [p1, p2] once over (tie-break included), else None; winner; ending.
    """
    moves: dict[str, dict[str, Any]] = {}
    for player in to_move(state):
        for action, command in action_commands(state, player).items():
            entry = moves.setdefault(
                str(action), {"cell": None if action == WAIT_ACTION else action, "commands": {}}
            )
            entry["commands"][str(player)] = command_text(command)
    outcome = returns(state)
    return {
        "cells": [_cell_view(state, cell) for cell in range(NUM_CELLS)],
        "day": _shown_day(state),
        "max_rounds": state.config.max_rounds,
        "sun_direction": sun_direction(state),
        "nutrients": state.nutrients,
        "players": [
            {
                "sun": state.sun[player],
                "score": state.score[player],
                "gathered": state.gathered[player],
                "waiting": state.waiting[player],
            }
            for player in (0, 1)
        ],
        "to_move": list(to_move(state)),
        "day_actions": {"day": state.log_day, "frames": [list(frame) for frame in state.log]},
        "moves": dict(sorted(moves.items(), key=lambda item: int(item[0]))),
        "final_scores": list(final_scores(state)) if state.is_over else None,
        "winner": None if outcome[0] == outcome[1] else int(outcome[1] > outcome[0]),
        "ending": end_reason(state),
    }


def _cell_view(state: SpringState, cell: int) -> dict[str, Any]:
    code = state.trees[cell]
    tree = None
    if code != NO_TREE:
        size = code & SIZE_BITS
        tree = {
            "size": size,
            "owner": code >> OWNER_SHIFT,
            "dormant": bool(code & DORMANT_BIT),
            "spooky": bool(size) and state.shadows[cell] >= size,
        }
    return {
        "index": cell,
        "cube": list(COORDS[cell]),
        "richness": state.richness[cell],
        "shadow": state.shadows[cell],
        "tree": tree,
    }
