"""Text picture and viewer data of a Smash the Code position.

The text puts the two wells side by side, top row first ('.' empty, '0' skull, '1'..'5' colours),
then the pair queue, scores, garbage meters and who won:

    player 1   player 2
    ......     ......
    ...
    112...     3.....
    pairs: 12 34 55 ...
"""

from __future__ import annotations

from typing import Any

from arena_games.smash.rules import (
    POINTS_PER_NUISANCE,
    QUEUE,
    SmashState,
    end_reason,
    legal_masks,
    placements,
    returns,
    to_move,
    well_rows,
)

ROTATIONS = ("B right of A", "B on top of A", "B left of A", "B below A")


def queue(state: SmashState) -> list[list[int]]:
    """The pairs the players see: this turn's first (the last ones once the game is over)."""
    start = min(state.turn, state.config.turn_limit - 1)
    return [list(pair) for pair in state.pairs[start : start + QUEUE]]


def meters(state: SmashState) -> list[float]:
    """Each player's garbage meter: nuisance points not yet sent (owed / 70)."""
    return [owed / POINTS_PER_NUISANCE for owed in state.unsent]


def render(state: SmashState) -> str:
    width = state.config.width
    rows = zip(*(well_rows(well) for well in state.wells), strict=True)
    lines = [f"{'player 1':<{width + 5}}player 2"]
    lines += [f"{first:<{width + 5}}{second}" for first, second in rows]
    lines.append("pairs: " + " ".join(f"{a}{b}" for a, b in queue(state)))
    for player in (0, 1):
        lines.append(
            f"player {player + 1}: score {state.scores[player]}, "
            f"garbage meter {meters(state)[player]:.2f}, last chain {state.chains[player]}"
        )
    lines.append(end_reason(state) or f"turn {state.turn} of {state.config.turn_limit}, both to move")
    return "\n".join(lines)


def view(state: SmashState) -> dict[str, Any]:
    """What a viewer draws (JSON-safe).

    wells: per seat HEIGHT strings, top row first ('.' empty, '0' skull, '1'..'5' colours);
    queue: the visible pairs [A, B], this turn's first; turn, turn_limit;
    players: per seat {"score", "meter" (nuisance points waiting), "chain" (last turn's steps), "lost"};
    to_move; moves: every placement legal for a seat to move -> {"column" (of A), "rotation",
    "shape" (words), "seats": the seats it is legal for}; winner (seat or None); ending.
    """
    moves: dict[str, dict[str, Any]] = {}
    table = placements(state.config.width)
    for player in to_move(state):
        for action in legal_masks(state, player)[0].nonzero()[0].tolist():
            column, rotation = table[action]
            entry = moves.setdefault(
                str(action),
                {"column": column, "rotation": rotation, "shape": ROTATIONS[rotation], "seats": []},
            )
            entry["seats"].append(player)
    outcome = returns(state)
    return {
        "wells": [well_rows(well) for well in state.wells],
        "queue": queue(state),
        "turn": state.turn,
        "turn_limit": state.config.turn_limit,
        "players": [
            {
                "score": state.scores[player],
                "meter": meters(state)[player],
                "chain": state.chains[player],
                "lost": state.losses[player],
            }
            for player in (0, 1)
        ],
        "to_move": list(to_move(state)),
        "moves": dict(sorted(moves.items(), key=lambda item: int(item[0]))),
        "winner": None if outcome[0] == outcome[1] else int(outcome[1] > outcome[0]),
        "ending": end_reason(state),
    }
