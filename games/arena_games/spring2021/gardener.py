"""A hand-written Spring 2021 strategy, the `gardener` house bot: one action per frame by fixed
priorities, as a Bronze-league bot plays (and as seed 001 pruned its search: no seeds late).

1. COMPLETE the large tree on the richest cell once the day has come (COMPLETE_FROM) and the player
   holds more than KEEP_LARGE large trees, or on any of the last CASH_IN_DAYS days.
2. GROW the biggest tree (then on the richest cell) that can still reach size 3 and be completed
   before the end: a tree of size s needs 3 - s more days after today.
3. SEED while it is free (the player owns no seed) before day LAST_SEED_DAY, on the richest empty
   cell at distance >= 2 from all the player's trees (its own shade would cost it sun).
4. WAIT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arena_games.spring2021.board import distance
from arena_games.spring2021.rules import (
    LARGE,
    NO_TREE,
    OWNER_SHIFT,
    SIZE_BITS,
    WAIT_ACTION,
    SpringState,
    action_commands,
    size_counts,
)

COMPLETE_FROM = 11  # the first day a large tree is completed while fewer than CASH_IN_DAYS remain
KEEP_LARGE = 3  # large trees kept standing for their sun before the cash-in
CASH_IN_DAYS = 5  # the last days: every large tree is completed
LAST_SEED_DAY = 18  # seed 001 allowed no seeds on days 19-22; a seed now cannot pay back later


def gardener_action(state: SpringState, player: int) -> int:
    """The action index (rules' 38-way head) the gardener plays for `player` in `state`."""
    verbs = {action: command[0] for action, command in action_commands(state, player).items()}
    return gardener_choice(verbs, state.richness, state.trees, state.day, state.config.max_rounds, player)


def gardener_choice(
    verbs: Mapping[int, str],
    richness: Sequence[int],
    trees: Sequence[int],
    day: int,
    max_rounds: int,
    player: int,
) -> int:
    """The gardener's action for `player` given its legal actions' verbs (action index -> "GROW",
    "COMPLETE", "SEED" or "WAIT": `rules.action_commands`' first words), the cells' richness and
    tree codes, today and the game's days: what any engine's position hands it."""
    days_after = max_rounds - 1 - day
    by_verb: dict[str, list[int]] = {"GROW": [], "COMPLETE": [], "SEED": []}
    for action, verb in verbs.items():
        if action != WAIT_ACTION:
            by_verb[verb].append(action)
    large = size_counts(trees, player)[LARGE]
    cash_in = days_after < CASH_IN_DAYS or (day >= COMPLETE_FROM and large > KEEP_LARGE)
    if by_verb["COMPLETE"] and cash_in:
        return max(by_verb["COMPLETE"], key=lambda cell: (richness[cell], -cell))
    growable = [cell for cell in by_verb["GROW"] if LARGE - (trees[cell] & SIZE_BITS) <= days_after]
    if growable:
        return max(growable, key=lambda cell: (trees[cell] & SIZE_BITS, richness[cell], -cell))
    if by_verb["SEED"] and day <= LAST_SEED_DAY and size_counts(trees, player)[0] == 0:
        own = [cell for cell, code in enumerate(trees) if code != NO_TREE and code >> OWNER_SHIFT == player]
        apart = [cell for cell in by_verb["SEED"] if all(distance(cell, tree) >= 2 for tree in own)]
        if apart:
            return max(apart, key=lambda cell: (richness[cell], -cell))
    return WAIT_ACTION
