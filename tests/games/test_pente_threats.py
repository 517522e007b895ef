"""The threats strategy (arena_games.pente.threats): its priorities on hand-made positions, the
opening rules, and whole games."""

from __future__ import annotations

import numpy as np
import pytest

from arena_games.pente import rules, threats
from arena_games.pente.tables import CENTRE, DISTANCE_FROM_CENTRE, NUM_POINTS

P1, P2 = 0, 1  # P1 has the stones "X", P2 "O"


def pt(x: int, y: int) -> int:
    return y * 19 + x


def move(own=(), other=(), *, mover=P1, captures=(0, 0), seed=0) -> int:
    """The strategy's point for `mover` with its stones on the (x, y) points `own` and the other's on
    `other`, every empty point legal."""
    board = np.zeros(NUM_POINTS, dtype=np.uint8)
    for points, player in ((own, mover), (other, 1 - mover)):
        for x, y in points:
            board[pt(x, y)] = player + 1
    return threats.threats_move(board, captures, mover, board == 0, np.random.default_rng(seed))


@pytest.mark.parametrize("seed", range(3))
def test_it_wins_with_five_in_a_row(seed):
    # X: four in a row with one end blocked, and an open three elsewhere; O threatens a five too.
    own = [(5, 9), (6, 9), (7, 9), (8, 9), (3, 3), (4, 4), (5, 5)]
    other = [(4, 9), (10, 2), (10, 3), (10, 4), (10, 5)]
    assert move(own, other, seed=seed) == pt(9, 9)


def test_it_takes_the_fifth_capture():
    # X holds 4 pairs; capturing the O pair (3, 2)-(4, 2) from (5, 2) wins, O's four must wait.
    own = [(2, 2), (9, 9)]
    other = [(3, 2), (4, 2), (10, 5), (11, 5), (12, 5), (13, 5)]
    assert move(own, other, captures=(4, 1)) == pt(5, 2)


@pytest.mark.parametrize("mover", [P1, P2])
def test_it_blocks_a_four(mover):
    # O (the other) has four with one end blocked: its only winning point is (9, 10). X has an open three.
    own = [(4, 10), (2, 2), (3, 2), (4, 2)]
    other = [(5, 10), (6, 10), (7, 10), (8, 10)]
    assert move(own, other, mover=mover) == pt(9, 10)


def test_it_breaks_an_open_four_by_a_capture():
    # O has .OOOO. (two winning points, no block holds both); X capturing (6, 10)-(6, 11) from
    # (6, 9) breaks the four.
    own = [(6, 12), (15, 15)]
    other = [(5, 10), (6, 10), (7, 10), (8, 10), (6, 11)]
    assert move(own, other) == pt(6, 9)


def test_it_blocks_an_open_three_before_making_its_own():
    # O's open three .OOO. on row 5; X has two stones. X must take an end of O's three.
    own = [(2, 15), (3, 15)]
    other = [(7, 5), (8, 5), (9, 5)]
    assert move(own, other) in (pt(6, 5), pt(10, 5))


def test_it_makes_an_open_four_over_blocking_a_three():
    own = [(7, 5), (8, 5), (9, 5)]
    other = [(2, 15), (3, 15), (4, 15)]
    assert move(own, other) in (pt(6, 5), pt(10, 5))


def test_it_does_not_leave_the_fifth_capture():
    # O holds 4 pairs. X's (11, 9) would make the pair (10, 9)-(11, 9) between O (9, 9) and an empty
    # (12, 9): O would capture and win. Whatever X plays, O must have no winning point after it.
    own = [(10, 9), (10, 11), (11, 12)]
    other = [(9, 9), (3, 3)]
    board = np.zeros(NUM_POINTS, dtype=np.uint8)
    for (x, y), player in [(p, P1) for p in own] + [(p, P2) for p in other]:
        board[pt(x, y)] = player + 1
    for seed in range(5):
        point = threats.threats_move(board, (0, 4), P1, board == 0, np.random.default_rng(seed))
        after, captures = threats.play(board, (0, 4), P1, point)
        assert threats.winning_points(after, captures, P2).size == 0


def test_it_keeps_the_opening_rules():
    state = rules.init()
    assert threats.threats_action(state, P1, np.random.default_rng(0)) == CENTRE
    state = rules.step(rules.step(state, [(CENTRE,)]), [(pt(10, 9),)])
    for seed in range(10):  # P1's second stone: Chebyshev distance >= 3 from the centre
        point = threats.threats_action(state, P1, np.random.default_rng(seed))
        assert DISTANCE_FROM_CENTRE[point] >= 3
        assert rules.legal_masks(state, P1)[0][point]


def test_the_same_generator_gives_the_same_game_and_a_game_ends_legally():
    def game(seed: int) -> list[int]:
        rng, state, points = np.random.default_rng(seed), rules.init(), []
        while not state.end:
            point = threats.threats_action(state, state.ply % 2, rng)
            state = rules.step(state, [(point,)])  # IllegalAction on an illegal move
            points.append(point)
        assert state.winner is not None
        return points

    assert game(1) == game(1)
    assert game(1) != game(2)
