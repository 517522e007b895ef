"""Bobail games the rules rarely reach by uniformly random play, for the rules' tests and the
compiled core's differential tests: a line that ends by "no pawn move", and cramped games that end
by boxing the bobail in or by repetition."""

from __future__ import annotations

import numpy as np

from arena_games.bobail.rules import BobailState, init, move_to_action, step

# Library-style (from, to) moves, squares 1..25: player 1 (ours) moves the bobail to 18, closing
# row 3; all its pawns are on row 4 and cannot move, so it loses by "no pawn move".
NO_PAWN_MOVE_LINE = (
    *((2, 20), (13, 7), (21, 9), (7, 6), (1, 19), (6, 12), (9, 21), (12, 18), (4, 16)),
    *((18, 13), (24, 6), (13, 8), (3, 4), (8, 9), (6, 24), (9, 14), (5, 17), (14, 18)),
)


def play(moves, config=None) -> BobailState:
    """The state after library-style (from, to) moves from the start."""
    state = init(0, config)
    for from_square, to_square in moves:
        state = step(state, [(move_to_action(state, from_square, to_square),)])
    return state


def cramped_game(seed: int, config=None) -> list[tuple[BobailState, int]]:
    """Each running state of a game and the action played from it. The mover, 7 times in 10, plays
    the half-move that leaves its opponent the fewest legal half-moves, else a random one; never one
    that takes the bobail home while another exists. Such games often box the bobail in or repeat."""
    rng = np.random.default_rng(seed)
    state, line = init(seed, config), []
    while not state.ending:
        actions = rng.permutation(state.legal_actions).tolist()
        children = [(step(state, [(action,)]), action) for action in actions]
        pool = [pair for pair in children if not pair[0].ending.startswith("bobail reached")] or children
        greedy = rng.random() < 0.7
        child, action = min(pool, key=lambda pair: len(pair[0].legal_actions)) if greedy else pool[0]
        line.append((state, action))
        state = child
    return line
