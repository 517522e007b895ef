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
    GROUP,
    HEIGHT,
    POINTS_PER_NUISANCE,
    QUEUE,
    Clearing,
    SmashState,
    Well,
    chain,
    end_reason,
    groups,
    landing,
    legal_masks,
    place,
    placements,
    reported_scores,
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
    for player, score in enumerate(reported_scores(state)):
        scored = f" ({state.scores[player]} points)" if score != state.scores[player] else ""
        lines.append(
            f"player {player + 1}: score {score}{scored}, "
            f"garbage meter {meters(state)[player]:.2f}, last chain {state.chains[player]}"
        )
    lines.append(end_reason(state) or f"turn {state.turn} of {state.config.turn_limit}, both to move")
    return "\n".join(lines)


def view(state: SmashState) -> dict[str, Any]:
    """What a viewer draws (JSON-safe).

    wells: per seat HEIGHT strings, top row first ('.' empty, '0' skull, '1'..'5' colours);
    queue: the visible pairs [A, B], this turn's first; turn, turn_limit;
    players: per seat {"score" (the referee's reported score, `reported_scores`: once over, 0 for a
    seat that lost), "points" (scored), "meter" (nuisance points waiting), "chain" (last turn's
    steps), "lost" ("" or "blocked": no room for the next pair)};
    to_move; moves: every placement legal for a seat to move -> {"column" (of A), "rotation",
    "shape" (words), "seats": the seats it is legal for, "outcomes": per seat what the placement
    does to that seat's well this turn (`placement_view`), None for a seat it is not legal for};
    winner (seat or None); ending.
    """
    moves: dict[str, dict[str, Any]] = {}
    table = placements(state.config.width)
    pair = state.pairs[min(state.turn, len(state.pairs) - 1)]
    for player in to_move(state):
        for action in legal_masks(state, player)[0].nonzero()[0].tolist():
            column, rotation = table[action]
            entry = moves.setdefault(
                str(action),
                {
                    "column": column,
                    "rotation": rotation,
                    "shape": ROTATIONS[rotation],
                    "seats": [],
                    "outcomes": [None, None],
                },
            )
            entry["seats"].append(player)
            entry["outcomes"][player] = placement_view(state.wells[player], pair, column, rotation)
    outcome = returns(state)
    return {
        "wells": [well_rows(well) for well in state.wells],
        "queue": queue(state),
        "turn": state.turn,
        "turn_limit": state.config.turn_limit,
        "players": [
            {
                "score": score,
                "points": state.scores[player],
                "meter": meters(state)[player],
                "chain": state.chains[player],
                "lost": state.losses[player],
            }
            for player, score in enumerate(reported_scores(state))
        ],
        "to_move": list(to_move(state)),
        "moves": dict(sorted(moves.items(), key=lambda item: int(item[0]))),
        "winner": None if outcome[0] == outcome[1] else int(outcome[1] > outcome[0]),
        "ending": end_reason(state),
    }


def placement_view(well: Well, pair: tuple[int, int], column: int, rotation: int) -> dict[str, Any]:
    """What placing `pair` by (column, rotation) does to `well` this turn, before any skulls arrive
    (JSON-safe; cells as [row, column], row 0 the top as in `wells`):

    landing: the cells where A and B come to rest; steps: the chain, one step per clearing
    (`chain_step`); points: the chain's total; well: the rows once everything has settled."""
    landed = place(well, pair, column, rotation)
    cells = landing(well, column, rotation)
    steps, settled = [], landed
    # `well` held no group of 4+, so a chain starts at the pair or not at all (a cheap test first)
    if any(len(group) >= GROUP for group in groups(landed, cells)):
        for cleared in chain(landed):
            steps.append(chain_step(settled, cleared))
            settled = cleared.after
    return {
        "landing": [_cell(x, y) for x, y in cells],
        "steps": steps,
        "points": sum(step["points"] for step in steps),
        "well": well_rows(settled),
    }


def chain_step(before: Well, cleared: Clearing) -> dict[str, Any]:
    """One chain step for viewers: the well as the step found it ("well" rows), the cleared groups
    (lists of cells), the skulls that went with them, the colours and blocks cleared and the score:
    points = 10 * blocks * clamp(chain_power + colour_bonus + group_bonus, 1, 999)."""
    return {
        "well": well_rows(before),
        "groups": [sorted(_cell(x, y) for x, y in group) for group in cleared.groups],
        "skulls": sorted(_cell(x, y) for x, y in cleared.skulls),
        "colours": list(cleared.colours),
        "blocks": cleared.blocks,
        "chain_power": cleared.chain_power,
        "colour_bonus": cleared.colour_bonus,
        "group_bonus": cleared.group_bonus,
        "points": cleared.points,
    }


def _cell(x: int, y: int) -> list[int]:
    """[row, column] of cell (x, y) (y from the bottom; row 0 is the top)."""
    return [HEIGHT - 1 - y, x]
