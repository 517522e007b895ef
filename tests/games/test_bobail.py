"""Bobail: golden tests from shared/games/bobail.md §5, a differential test against the reference
library `bobail` 1.4.2, the rules the library lacks (draws), the action layout, the encoding,
rendering, the state dict and the openings.

Moves are written as the library writes them: (from, to) with squares 1..25, row 0 = squares 1-5.
The library's players 1 and 2 are our players 0 and 1.
"""

from __future__ import annotations

import itertools
import json
import random
import time

import numpy as np
import pytest
from bobail.game import Game as LibraryGame
from bobail_positions import NO_PAWN_MOVE_LINE, play

from arena_games.api import BadConfig, BadStateDict, GameError, IllegalAction
from arena_games.bobail import GAME, SPEC
from arena_games.bobail.encoding import INPUT_SHAPE, encode
from arena_games.bobail.openings import opening
from arena_games.bobail.render import render
from arena_games.bobail.rules import (
    BOBAIL_SHIFT,
    MAX_HALF_MOVES,
    SIZE,
    BobailState,
    action_to_move,
    board_text,
    from_dict,
    init,
    legal_masks,
    move_to_action,
    returns,
    step,
    to_dict,
    to_move,
)

# The library has no repetition draw; random games stay far below the turn cap (the longest seen: 118).
LIBRARY_RULES = {"repetitions": 0}


def legal_moves(state: BobailState) -> set[tuple[int, int]]:
    return {action_to_move(state, action) for action in state.legal_actions}


def bobail_row(state: BobailState) -> int:
    return (state.history[-1] >> BOBAIL_SHIFT) // SIZE


# -- golden tests: bobail.md §5 -------------------------------------------------------------------

GOLDEN_MOVE_LISTS = [
    (
        [],
        [
            [1, 16],
            [1, 7],
            [2, 6],
            [2, 17],
            [2, 20],
            [3, 11],
            [3, 8],
            [3, 15],
            [4, 16],
            [4, 19],
            [4, 10],
            [5, 9],
            [5, 20],
        ],
    ),
    ([(2, 17)], [[13, 7], [13, 12], [13, 8], [13, 18], [13, 9], [13, 14], [13, 19]]),
    ([(2, 17), (13, 18)], [[21, 6], [22, 16], [23, 15], [24, 9], [24, 20], [25, 7], [25, 10]]),
    ([(2, 17), (13, 18), (24, 9)], [[18, 12], [18, 13], [18, 14], [18, 19], [18, 24]]),
    (
        [(2, 17), (13, 18), (24, 9), (18, 13)],
        [
            [1, 16],
            [1, 2],
            [1, 7],
            [3, 2],
            [3, 11],
            [3, 8],
            [4, 16],
            [4, 10],
            [5, 20],
            [17, 11],
            [17, 16],
            [17, 2],
            [17, 20],
        ],
    ),
]


@pytest.mark.parametrize(("moves", "expected"), GOLDEN_MOVE_LISTS)
def test_legal_moves_match_the_spec(moves, expected):
    state = play(moves)
    assert legal_moves(state) == {tuple(move) for move in expected}
    assert len(state.legal_actions) == len(expected)


@pytest.mark.parametrize(
    ("moves", "winner", "reason"),
    [
        ([(3, 11), (13, 8), (25, 10), (8, 3)], 0, "bobail reached player 1's home row"),
        ([(3, 11), (13, 12), (23, 17), (12, 16), (4, 12)], 0, "bobail boxed in"),
        ([(3, 11), (13, 8), (23, 17), (8, 12), (2, 6), (12, 16), (24, 12)], 1, "bobail boxed in"),
    ],
)
def test_win_sequences_of_the_spec(moves, winner, reason):
    before_end = play(moves[:-1])
    assert (before_end.is_over, returns(before_end)) == (False, (0.0, 0.0))
    state = play(moves)
    assert (state.winner, state.ending, to_move(state)) == (winner, reason, ())
    assert returns(state) == ((1.0, -1.0) if winner == 0 else (-1.0, 1.0))
    assert not any(mask.any() for player in (0, 1) for mask in legal_masks(state, player))


# -- differential test against the reference library ----------------------------------------------


def test_random_games_agree_with_the_reference_library():
    """1,000 seeded random games: the same legal move set, side to move, end and winner at every ply."""
    plies = 0
    for seed in range(1000):
        chooser = random.Random(seed)
        library, state = LibraryGame(), init(seed, LIBRARY_RULES)
        while True:
            assert library.is_over() == state.is_over, (seed, library.moves)
            if state.is_over:
                assert library.get_winner() == state.winner + 1, (seed, library.moves, state.ending)
                break
            assert library.whose_turn() == state.player + 1
            moves = sorted(map(tuple, library.get_possible_moves()))
            assert set(moves) == legal_moves(state), (seed, library.moves)
            move = chooser.choice(moves)
            library.move(list(move))
            state = step(state, [(move_to_action(state, *move),)])
            plies += 1
    assert plies > 15_000  # about 20 half-moves a game


def test_no_pawn_move_after_the_bobail_half_loses_as_in_the_library():
    state = play(NO_PAWN_MOVE_LINE)
    assert (state.winner, state.ending, state.player, state.pawn_phase) == (0, "no pawn move", 1, True)
    library = LibraryGame()
    for move in NO_PAWN_MOVE_LINE:
        library.move(list(move))
    assert (library.is_over(), library.get_winner()) == (True, 1)


# -- the other rules ------------------------------------------------------------------------------


def test_moving_the_bobail_onto_the_opponents_home_row_loses():
    moves = [(4, 19), (13, 17), (23, 8), (17, 23)]  # player 0 moves the bobail onto row 4
    before = play(moves[:-1])
    assert (before.player, before.pawn_phase) == (0, False)
    state = play(moves)
    assert (state.winner, state.ending) == (1, "bobail reached player 2's home row")
    assert returns(state) == (-1.0, 1.0)


# Both players shuttle a pawn between the edges of an empty row and the bobail between 12 and 13.
SHUTTLE_SETUP = [(1, 16), (13, 12), (25, 10)]
SHUTTLE_ROUND = [(12, 13), (16, 20), (13, 12), (10, 6), (12, 13), (20, 16), (13, 12), (6, 10)]


def test_threefold_repetition_is_a_draw():
    # The board after the setup comes back after every round of 8 half-moves.
    moves = SHUTTLE_SETUP + 2 * SHUTTLE_ROUND
    assert not play(moves[:-1]).is_over
    state = play(moves)
    assert (state.winner, state.ending, returns(state), to_move(state)) == (
        None,
        "threefold repetition",
        (0.0, 0.0),
        (),
    )
    assert play(SHUTTLE_SETUP + SHUTTLE_ROUND, {"repetitions": 2}).ending == "2-fold repetition"


def test_repetitions_zero_disables_the_repetition_draw():
    state = play(SHUTTLE_SETUP + 5 * SHUTTLE_ROUND, {"repetitions": 0})
    assert not state.is_over


@pytest.mark.parametrize("max_turns", [1, 2, 3, 7])
def test_turn_cap_is_a_draw_after_max_turns_full_turns(max_turns):
    config = {"repetitions": 0, "max_turns": max_turns}
    moves = (SHUTTLE_SETUP + 2 * SHUTTLE_ROUND)[: 2 * max_turns - 1]  # turn t ends with half-move 2t - 1
    assert not play(moves[:-1], config).is_over
    state = play(moves, config)
    assert (state.half_moves, state.ending, state.winner, returns(state)) == (
        len(moves),
        "turn cap",
        None,
        (0, 0),
    )


def test_max_length_bounds_every_game():
    assert SPEC.max_length == MAX_HALF_MOVES == 2 * 200 - 1
    longest = SHUTTLE_SETUP + 50 * SHUTTLE_ROUND  # 403 half-moves if nothing stopped it
    state = init(0, {"repetitions": 0})
    for from_square, to_square in longest:
        if state.is_over:
            break
        state = step(state, [(move_to_action(state, from_square, to_square),)])
    assert (state.half_moves, state.ending) == (SPEC.max_length, "turn cap")


@pytest.mark.parametrize(
    "config",
    [
        {"moves": 3},
        {"repetitions": 1},
        {"repetitions": -1},
        {"max_turns": 0},
        {"max_turns": 201},
        {"max_turns": "9"},
    ],
)
def test_bad_configs_are_refused(config):
    with pytest.raises(BadConfig):
        init(0, config)


def test_seed_does_not_change_the_start_and_defaults_are_documented():
    assert to_dict(init(1)) == to_dict(init(99, {})) == to_dict(init(5, {"repetitions": 3, "max_turns": 200}))
    assert dict(SPEC.default_config) == {"repetitions": 3, "max_turns": 200}
    assert (SPEC.name, SPEC.version, SPEC.title, SPEC.num_players) == ("bobail", 1, "Bobail", 2)
    assert (dict(SPEC.inputs), dict(SPEC.heads)) == ({"board": (43, 5, 5)}, {"move": 200})
    json.dumps(SPEC.to_dict())


# -- actions --------------------------------------------------------------------------------------


def test_actions_are_direction_major_and_relative_to_the_mover():
    start = init(0)
    # Player 0 sees the board rotated: pawn 3 (row 0, col 2) -> (4, 2); moving down is its "north" (4).
    assert move_to_action(start, 3, 8) == 4 * 25 + 4 * 5 + 2
    assert move_to_action(start, 1, 16) == 4 * 25 + 4 * 5 + 4
    assert move_to_action(start, 5, 9) == 7 * 25 + 4 * 5 + 0  # down-left on the board: up-right (NE) to it
    player1 = play([(3, 8)])
    # Player 1 sees the board as it is: the bobail on 13 = (2, 2); moving down is south (3).
    assert move_to_action(player1, 13, 18) == 3 * 25 + 2 * 5 + 2
    assert move_to_action(player1, 13, 7) == 2 * 25 + 2 * 5 + 2  # north-west


def test_a_long_slide_maps_to_its_unit_direction():
    start = init(0)
    action = move_to_action(start, 2, 20)  # three squares south-east
    assert action_to_move(start, action) == (2, 20)


@pytest.mark.parametrize(
    ("from_square", "to_square"), [(1, 11), (1, 8), (13, 8), (1, 1), (0, 5), (3, 26), (21, 16)]
)
def test_move_to_action_refuses_moves_that_are_not_legal(from_square, to_square):
    with pytest.raises(IllegalAction):
        move_to_action(init(0), from_square, to_square)  # stops short, knight jump, bobail, ...


def test_masks_match_the_legal_actions():
    state = play([(2, 17)])
    (mask,) = legal_masks(state, 1)
    assert (mask.dtype, mask.shape) == (np.bool_, (200,))
    assert set(np.flatnonzero(mask)) == set(state.legal_actions)
    assert not legal_masks(state, 0)[0].any()


@pytest.mark.parametrize(
    "joint",
    [
        [],
        [(122, 0)],
        [(122,), (122,)],
        [()],
        [("122",)],
        [(True,)],
        [(1.0,)],
        [(200,)],
        [(-1,)],
        [(0,)],
        None,
        122,
    ],
)
def test_malformed_or_illegal_joint_actions_raise(joint):
    with pytest.raises(IllegalAction):
        step(init(0), joint)


def test_numpy_integer_actions_are_accepted_and_inputs_are_not_changed():
    start = init(0)
    before = to_dict(start)
    state = step(start, [(np.int64(122),)])
    assert action_to_move(start, 122) == (3, 8)
    assert board_text(state.history[-1])[7] == "0"
    assert to_dict(start) == before


def test_no_action_is_legal_after_the_end():
    state = play([(3, 11), (13, 8), (25, 10), (8, 3)])
    with pytest.raises(IllegalAction, match="game is over"):
        step(state, [(0,)])


# -- state dict -----------------------------------------------------------------------------------


def random_states(games: int, seed: int = 0):
    """Every state of `games` seeded random games, ends included."""
    rng = np.random.default_rng(seed)
    for game in range(games):
        state = init(game, None)
        yield state
        while state.legal_actions:
            state = step(state, [(int(rng.choice(state.legal_actions)),)])
            yield state


def test_state_dicts_round_trip_exactly():
    states = list(random_states(30))
    states.append(play(SHUTTLE_SETUP + 2 * SHUTTLE_ROUND, {"max_turns": 150}))
    for state in states:
        copy = from_dict(json.loads(json.dumps(to_dict(state))))
        assert copy == state
        assert to_dict(copy) == to_dict(state)
        assert (copy.legal_actions, copy.winner, copy.ending) == (
            state.legal_actions,
            state.winner,
            state.ending,
        )


def test_state_dict_layout():
    data = to_dict(play([(3, 8)]))
    assert data == {
        "config": {"repetitions": 3, "max_turns": 200},
        "history": ["00000.......B.......11111", "00.00..0....B.......11111"],
    }


def start_history():
    return to_dict(init(0))["history"]


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"history": []},
        {"config": {}, "history": [], "extra": 1},
        {"config": {}, "history": []},
        {"config": [], "history": ["x"]},
        {"config": {"speed": 1}, "history": start_history()},
        {"config": {}, "history": ["00000.....B.......11111"]},  # 23 cells
        {"config": {}, "history": ["00000...............11111"]},  # no bobail
        {"config": {}, "history": ["0000.0......B.......11111"]},  # not the start
        {"config": {}, "history": [*start_history(), ".00000......B.......11111"]},  # slide stops short
        {"config": {}, "history": [*start_history(), start_history()[0]]},  # no move at all
        {
            "config": {},
            "history": [*to_dict(play([(3, 11), (13, 8), (25, 10), (8, 3)]))["history"], start_history()[0]],
        },
    ],
)
def test_from_dict_refuses_bad_dicts(data):
    with pytest.raises(BadStateDict):
        from_dict(data)


# -- encoding -------------------------------------------------------------------------------------


def planes_of(board: str, player: int) -> np.ndarray:
    """(3, 5, 5) own pawns, opponent's pawns, bobail of a board text, as `player` sees it."""
    grid = np.array(list(board)).reshape(5, 5)
    if player == 0:
        grid = grid[::-1, ::-1]
    return np.stack([grid == str(player), grid == str(1 - player), grid == "B"]).astype(np.float32)


def test_encoding_of_the_start():
    start = init(0)
    for player in (0, 1):
        planes = encode(start, player)["board"]
        assert (planes.dtype, planes.shape, INPUT_SHAPE) == (np.float32, (43, 5, 5), (43, 5, 5))
        assert not planes[3:].any()  # one board so far, and player 0 to move
        # Each sees its own pawns on its bottom row: player 1 as the board is, player 0 rotated.
        assert planes[0].sum() == planes[0, 4].sum() == 5  # own pawns on the bottom row of its view
        assert planes[1].sum() == planes[1, 0].sum() == 5  # the opponent's on the top row
        assert planes[2].sum() == planes[2, 2, 2] == 1


def test_encoding_flips_for_player_0_and_keeps_14_boards_newest_first():
    states = [state for state in random_states(5, seed=3) if state.half_moves >= 16 and not state.is_over]
    assert {state.player for state in states} == {0, 1}
    for state, player in itertools.product(states, (0, 1)):
        history = to_dict(state)["history"]
        planes = encode(state, player)["board"]
        for age in range(14):
            np.testing.assert_array_equal(planes[3 * age : 3 * age + 3], planes_of(history[-1 - age], player))
        assert (planes[42] == state.player).all()  # whose turn it is, whoever looks


def test_encoding_of_a_short_history_leaves_older_planes_zero():
    state = play([(3, 8), (13, 12)])
    planes = encode(state, 1)["board"]
    np.testing.assert_array_equal(planes[3:6], planes_of(to_dict(state)["history"][1], 1))
    assert not planes[9:42].any()
    assert (planes[42] == 1).all()
    # Pawn 3 -> 8 (row 1, col 2): player 0's own pawn at (3, 2) of its view, player 1's opponent at (1, 2).
    assert encode(state, 0)["board"][0, 3, 2] == planes[1, 1, 2] == 1


def phase_is_pawn(planes: np.ndarray) -> bool:
    """The encoding.py claim: a pawn half iff there is no previous board or the bobail just moved."""
    return not planes[3:6].any() or not np.array_equal(planes[2], planes[5])


def test_phase_is_recoverable_from_the_planes():
    checked = 0
    for state in random_states(40, seed=7):
        if state.is_over:
            continue
        for player in (0, 1):
            assert phase_is_pawn(encode(state, player)["board"]) == state.pawn_phase
        checked += 1
    assert checked > 500


def test_encode_refuses_other_players():
    with pytest.raises(GameError):
        encode(init(0), 2)


# -- render ---------------------------------------------------------------------------------------


def test_render_shows_board_squares_and_status():
    text = render(play([(3, 8)]))
    lines = text.splitlines()
    assert lines[0] == "0 0 . 0 0    1  2  3  4  5"
    assert lines[1] == ". . 0 . .    6  7  8  9 10"
    assert lines[2] == ". . B . .   11 12 13 14 15"
    assert lines[4] == "1 1 1 1 1   21 22 23 24 25"
    assert lines[-1] == "half-move 2, turn 2: player 2 moves the bobail"
    over = render(play([(3, 11), (13, 8), (25, 10), (8, 3)]))
    assert (
        over.splitlines()[-1]
        == "game over after 4 half-moves: player 1 wins (bobail reached player 1's home row)"
    )
    assert "draw (threefold repetition)" in render(play(SHUTTLE_SETUP + 2 * SHUTTLE_ROUND))


# -- openings -------------------------------------------------------------------------------------


def test_openings_are_deterministic_legal_and_quiet():
    started = time.perf_counter()
    openings = [opening(seed, None) for seed in range(100)]
    assert (time.perf_counter() - started) / 100 < 0.02  # seconds per opening (about 1 ms measured)
    lengths, distinct = set(), set()
    for seed, joints in enumerate(openings):
        assert joints == opening(seed, None)
        state = init(seed, None)
        for joint in joints:
            assert not state.is_over
            state = step(state, joint)
        assert (state.is_over, state.pawn_phase, bobail_row(state)) == (False, False, 2)
        assert all(not winning_turn(state, action) for action in state.legal_actions)
        lengths.add(len(joints))
        distinct.add(joints)
    assert lengths == {3, 5}
    assert len(distinct) > 90


def winning_turn(state: BobailState, bobail_action: int) -> bool:
    """Whether the side to move wins with `bobail_action` and some pawn move after it."""
    mover = state.player
    after_bobail = step(state, [(bobail_action,)])
    if after_bobail.is_over:
        return after_bobail.winner == mover
    return any(step(after_bobail, [(pawn,)]).winner == mover for pawn in after_bobail.legal_actions)


@pytest.mark.parametrize(("max_turns", "lengths"), [(1, {0}), (2, {0}), (3, {3}), (4, {3, 5}), (200, {3, 5})])
def test_openings_stop_before_the_turn_cap(max_turns, lengths):
    config = {"repetitions": 2, "max_turns": max_turns}
    seen = set()
    for seed in range(20):
        state = init(seed, config)
        for joint in opening(seed, config):
            state = step(state, joint)
        assert not state.is_over
        seen.add(state.half_moves)
    assert seen == lengths


# -- the game record ------------------------------------------------------------------------------


def test_game_record_wires_the_parts():
    state = GAME.init(0, None)
    assert GAME.spec is SPEC
    assert (GAME.name, GAME.to_move(state), GAME.end_reason(state)) == ("bobail", (0,), "")
    results = GAME.random_playouts([state] * 3, np.random.default_rng(0).spawn(3))
    assert results.shape == (3, 2)
    for index, rng in enumerate(np.random.default_rng(0).spawn(3)):  # each from its own generator
        assert GAME.random_playouts([state], [rng]).tolist() == [results[index].tolist()]
