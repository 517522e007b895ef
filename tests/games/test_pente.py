"""Pente: golden positions for every rule of ../shared/games/pente.md, and the batched engine.

Golden positions are played through `play`, which runs `rules.step` and the batched
`playouts.step_many` side by side and checks that they agree, so every golden case covers both.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena_games.api import BadConfig, BadStateDict, IllegalAction
from arena_games.pente import GAME, SPEC, playouts, rules
from arena_games.pente.encoding import encode
from arena_games.pente.openings import opening
from arena_games.pente.tables import CENTRE, DIRECTIONS, NEAR_CENTRE, NUM_POINTS

P1, P2 = 0, 1  # the players; P1 moves first and has the stones "X", P2 has "O"


def pt(x: int, y: int) -> int:
    return y * 19 + x


def position(own=(), other=(), *, mover=P1, captures=(0, 0), **config) -> rules.PenteState:
    """A mid-game state, `mover` to move: its stones on the (x, y) points `own`, the other's on `other`."""
    cells = bytearray(NUM_POINTS)
    for points, player in ((own, mover), (other, 1 - mover)):
        for x, y in points:
            cells[pt(x, y)] = player + 1
    return rules.PenteState(bytes(cells), captures, 20 + mover, rules.make_config(config))


def end_code(state: rules.PenteState) -> int:
    return rules.END_REASONS.index(state.end) + 1 if state.end else playouts.RUNNING


def assert_batch_row_is(batch: playouts.Batch, row: int, state: rules.PenteState) -> None:
    assert batch.boards[row, :NUM_POINTS].tobytes() == state.board
    assert tuple(batch.captures[row]) == state.captures
    assert batch.plies[row] == state.ply
    assert batch.ends[row] == end_code(state)
    assert tuple(playouts.batch_returns(batch)[row]) == rules.returns(state)


def play(state: rules.PenteState, x: int, y: int) -> rules.PenteState:
    """`rules.step` at (x, y), checked against the batched engine playing the same move."""
    after = rules.step(state, [(pt(x, y),)])
    batch = playouts.pack([state])
    playouts.step_many(batch, np.array([0]), np.array([pt(x, y)]))
    assert_batch_row_is(batch, 0, after)
    return after


def stones(state: rules.PenteState, points) -> list[int]:
    return [state.board[pt(x, y)] for x, y in points]


# --- captures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("dx", "dy"), DIRECTIONS)
def test_a_flanked_pair_is_captured_in_each_direction(dx, dy):
    pair = [(9 + dx, 9 + dy), (9 + 2 * dx, 9 + 2 * dy)]
    state = play(position(own=[(9 + 3 * dx, 9 + 3 * dy)], other=pair), 9, 9)
    assert stones(state, pair) == [0, 0]
    assert state.board[pt(9 + 3 * dx, 9 + 3 * dy)] == P1 + 1
    assert state.captures == (1, 0)
    assert not state.end


@pytest.mark.parametrize(
    ("move", "pair", "flank"),
    [
        ((0, 0), [(1, 0), (2, 0)], (3, 0)),  # from a corner along the top edge
        ((0, 0), [(1, 1), (2, 2)], (3, 3)),  # from a corner along the diagonal
        ((18, 18), [(17, 17), (16, 16)], (15, 15)),
        ((18, 5), [(18, 6), (18, 7)], (18, 8)),  # along the right edge
        ((3, 18), [(2, 18), (1, 18)], (0, 18)),  # flank in the corner
        ((15, 3), [(16, 2), (17, 1)], (18, 0)),  # anti-diagonal into the corner
    ],
)
def test_captures_at_edges_and_corners(move, pair, flank):
    state = play(position(own=[flank], other=pair), *move)
    assert stones(state, pair) == [0, 0]
    assert state.captures == (1, 0)


def test_a_pair_against_the_edge_has_no_flank_and_stays():
    state = play(position(other=[(1, 0), (0, 0)]), 2, 0)
    assert stones(state, [(1, 0), (0, 0)]) == [P2 + 1, P2 + 1]
    assert state.captures == (0, 0)


def test_one_stone_captures_in_several_directions_at_once():
    pairs = [(10, 9), (11, 9), (9, 10), (9, 11), (8, 8), (7, 7)]  # east, south, north-west
    flanks = [(12, 9), (9, 12), (6, 6)]
    double = play(position(own=flanks[:2], other=pairs[:4]), 9, 9)
    assert double.captures == (2, 0)
    triple = play(position(own=flanks, other=pairs), 9, 9)
    assert triple.captures == (3, 0)
    assert stones(triple, pairs) == [0] * 6


def test_all_eight_directions_at_once_win_by_captures():
    pairs = [(9 + k * dx, 9 + k * dy) for dx, dy in DIRECTIONS for k in (1, 2)]
    flanks = [(9 + 3 * dx, 9 + 3 * dy) for dx, dy in DIRECTIONS]
    state = play(position(own=flanks, other=pairs), 9, 9)
    assert state.captures == (8, 0)
    assert (state.winner, state.end) == (P1, "five captures")


def test_playing_into_a_flank_is_safe():
    # P1 P2 _ P1: P2 plays the gap, making P2 P2 flanked by P1 on both sides: nothing is removed.
    state = play(position(own=[(10, 9)], other=[(9, 9), (12, 9)], mover=P2), 11, 9)
    assert stones(state, [(9, 9), (10, 9), (11, 9), (12, 9)]) == [P1 + 1, P2 + 1, P2 + 1, P1 + 1]
    assert state.captures == (0, 0)


def test_three_stones_are_not_captured():
    line = [(10, 9), (11, 9), (12, 9)]
    state = play(position(own=[(13, 9)], other=line), 9, 9)
    assert stones(state, line) == [P2 + 1] * 3
    assert state.captures == (0, 0)


def test_a_single_stone_is_not_captured():
    state = play(position(own=[(11, 9)], other=[(10, 9)]), 9, 9)
    assert state.board[pt(10, 9)] == P2 + 1
    assert state.captures == (0, 0)


def test_a_pair_with_an_empty_end_or_a_broken_line_is_not_captured():
    state = play(position(own=[(13, 9), (12, 12)], other=[(10, 9), (11, 9), (10, 10)]), 9, 9)
    assert state.captures == (0, 0)


def test_captured_points_are_empty_and_playable_again():
    state = play(position(own=[(12, 9)], other=[(10, 9), (11, 9)]), 9, 9)
    state = play(state, 10, 9)  # P2 plays back between two P1 stones: safe
    assert state.board[pt(10, 9)] == P2 + 1
    assert state.captures == (1, 0)


# --- winning --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dx", "dy"), DIRECTIONS[::2])
def test_five_in_a_row_wins_on_every_axis(dx, dy):
    line = [(9 + k * dx, 9 + k * dy) for k in (-2, -1, 1, 2)]
    state = play(position(own=line), 9, 9)
    assert (state.winner, state.end) == (P1, "five in a row")
    assert rules.returns(state) == (1.0, -1.0)
    assert rules.to_move(state) == ()


def test_the_second_player_wins_too():
    state = play(position(own=[(0, y) for y in range(4)], mover=P2), 0, 4)
    assert (state.winner, rules.returns(state)) == (P2, (-1.0, 1.0))


def test_an_overline_of_six_wins():
    state = play(position(own=[(x, 5) for x in (3, 4, 5, 7, 8)]), 6, 5)
    assert state.end == "five in a row"


def test_five_stones_with_a_gap_do_not_win():
    state = play(position(own=[(x, 5) for x in (3, 4, 5, 7)]), 8, 5)
    assert not state.end
    assert rules.returns(state) == (0.0, 0.0)


def test_four_in_a_row_and_the_opponents_stones_do_not_win():
    state = play(position(own=[(3, 5), (4, 5), (5, 5)], other=[(7, 5)]), 6, 5)
    assert not state.end


def test_the_fifth_captured_pair_wins_with_no_line():
    state = play(position(own=[(12, 9)], other=[(10, 9), (11, 9)], captures=(4, 3)), 9, 9)
    assert state.captures == (5, 3)
    assert (state.winner, state.end) == (P1, "five captures")


def test_a_move_that_captures_the_fifth_pair_and_makes_five_is_a_capture_win():
    own = [(5, 9), (6, 9), (7, 9), (8, 9), (9, 12)]
    state = play(position(own=own, other=[(9, 10), (9, 11)], captures=(4, 0)), 9, 9)
    assert (state.winner, state.end) == (P1, "five captures")


def test_the_opponents_captures_do_not_count_for_the_mover():
    state = play(position(own=[(12, 9)], other=[(10, 9), (11, 9)], captures=(0, 4)), 9, 9)
    assert state.captures == (1, 4)
    assert not state.end


# --- opening rules, illegal moves -------------------------------------------------------------------


def opened(config=None) -> rules.PenteState:
    """Ply index 2: P1 on the centre, P2 at (3, 3)."""
    return play(play(rules.init(0, config), 9, 9), 3, 3)


def test_the_first_move_must_be_the_centre():
    with pytest.raises(IllegalAction, match="centre"):
        rules.step(rules.init(), [(pt(3, 3),)])
    assert np.flatnonzero(rules.legal_masks(rules.init(), P1)[0]).tolist() == [CENTRE]
    assert play(rules.init(0, {"first_move_center": False}), 3, 3).board[pt(3, 3)] == P1 + 1


def test_tournament_rule_keeps_the_second_stone_of_p1_three_points_from_the_centre():
    state = opened()
    for x, y in [(11, 11), (7, 9), (9, 11), (10, 8)]:
        with pytest.raises(IllegalAction, match="tournament rule"):
            rules.step(state, [(pt(x, y),)])
    assert play(state, 12, 9).board[pt(12, 9)] == P1 + 1
    assert play(state, 6, 6).ply == 3
    mask = rules.legal_masks(state, P1)[0]
    assert mask.sum() == NUM_POINTS - 25 - 1  # the 5x5 square and P2's stone
    assert not (mask & NEAR_CENTRE).any()


def test_tournament_rule_binds_only_ply_index_2_and_can_be_turned_off():
    assert play(opened({"tournament_rule": False}), 11, 11).ply == 3
    after = play(opened(), 12, 9)
    assert play(after, 10, 10).ply == 4  # P2 is never restricted
    assert play(play(after, 10, 10), 11, 11).ply == 5  # nor is P1 after its second stone


@pytest.mark.parametrize(
    "joint",
    [[], [(1, 2)], [(CENTRE,), (3,)], [("a",)], [(True,)], [(361,)], [(-1,)], [(1.0,)], [5], None],
)
def test_malformed_or_off_board_actions_are_illegal(joint):
    with pytest.raises(IllegalAction):
        rules.step(rules.init(0, {"first_move_center": False}), joint)


def test_occupied_points_and_finished_games_refuse_moves():
    state = opened()
    with pytest.raises(IllegalAction, match="occupied"):
        rules.step(state, [(pt(3, 3),)])
    won = play(position(own=[(x, 0) for x in range(4)]), 4, 0)
    with pytest.raises(IllegalAction, match="over"):
        rules.step(won, [(pt(9, 9),)])
    assert not rules.legal_masks(won, P2)[0].any()


def test_numpy_integers_are_accepted_and_masks_are_only_for_the_mover():
    state = rules.step(rules.init(), [(np.int64(CENTRE),)])
    assert state.board[CENTRE] == P1 + 1
    assert not rules.legal_masks(state, P1)[0].any()
    assert rules.legal_masks(state, P2)[0].sum() == NUM_POINTS - 1


# --- draws, config ----------------------------------------------------------------------------------


def test_a_full_board_is_a_draw():
    # Stripes of 4 along x + 2y hold no five; the last empty point (0, 0) completes the board.
    letters = ["".join(".XO"[1 + (x + 2 * y) // 4 % 2] for x in range(19)) for y in range(19)]
    letters[0] = "." + letters[0][1:]
    data = rules.to_dict(rules.init()) | {"board": letters, "ply": 360, "last_move": pt(4, 0)}
    state = play(rules.from_dict(data), 0, 0)
    assert (state.winner, state.end) == (None, "board full")
    assert rules.returns(state) == (0.0, 0.0)


def test_the_ply_cap_is_a_draw():
    state = opened({"ply_cap": 3})
    assert not state.end
    state = play(state, 12, 9)
    assert (state.ply, state.winner, state.end) == (3, None, "ply cap")
    assert rules.to_move(state) == ()


def test_the_config_is_checked():
    assert rules.init().config == rules.PenteConfig(True, True, 377)
    for bad in [{"size": 13}, {"ply_cap": 0}, {"ply_cap": 10.5}, {"tournament_rule": 1}]:
        with pytest.raises(BadConfig):
            rules.init(0, bad)


def test_spec():
    assert SPEC.name == "pente"
    assert SPEC.version == 1
    assert SPEC.title == "Pente"
    assert SPEC.num_players == 2
    assert dict(SPEC.heads) == {"move": 361}
    assert dict(SPEC.inputs) == {"board": (6, 19, 19), "captures": (2,)}
    assert SPEC.max_length == 377 == rules.DEFAULT_CONFIG["ply_cap"]
    assert SPEC.default_config == {"first_move_center": True, "tournament_rule": True, "ply_cap": 377}
    assert GAME.playouts is playouts.playouts


# --- serialisation, encoding, rendering -------------------------------------------------------------


def random_game(seed: int, config=None, plies: int = 1000) -> list[rules.PenteState]:
    """The states of a uniformly random game (at most `plies` moves)."""
    rng = np.random.default_rng(seed)
    states = [rules.init(seed, config)]
    while rules.to_move(states[-1]) and len(states) <= plies:
        states.append(rules.step(states[-1], [GAME.random_action(states[-1], states[-1].ply % 2, rng)]))
    return states


def test_to_dict_round_trips_exactly_through_json():
    for state in random_game(3)[::7] + random_game(4)[-2:]:
        data = rules.to_dict(state)
        assert rules.from_dict(json.loads(json.dumps(data))) == state
    assert rules.to_dict(rules.init())["board"][9] == "." * 19


def test_from_dict_refuses_bad_or_inconsistent_dicts():
    good = rules.to_dict(play(play(rules.init(), 9, 9), 3, 3))
    bad_dicts = [
        {k: v for k, v in good.items() if k != "ply"},
        good | {"extra": 1},
        good | {"board": good["board"][:-1]},
        good | {"board": ["#" * 19] * 19},
        good | {"ply": 3},  # stone counts no longer fit
        good | {"captures": [1, 0]},
        good | {"captures": [0.0, 0]},
        good | {"last_move": pt(9, 9)},  # an P1 stone, but P2 moved last
        good | {"last_move": None},
        good | {"winner": 1},
        good | {"winner": True},
        good | {"end": "five in a row"},
        good | {"end": "resigned"},
        good | {"config": {"ply_cap": 2}},  # the game would be over
        good | {"config": {"colour": "red"}},
        [],
    ]
    for data in bad_dicts:
        with pytest.raises(BadStateDict):
            rules.from_dict(data)


def test_encoding_layout():
    state = opened()  # P1 on the centre, P2 at (3, 3), P1 to move under the tournament rule
    mine = encode(state, P1)
    board, captures = mine["board"], mine["captures"]
    assert board.shape == (6, 19, 19)
    assert board.dtype == np.float32
    assert board[0].sum() == 1
    assert board[0, 9, 9] == 1
    assert board[1].sum() == 1
    assert board[1, 3, 3] == 1
    assert (board[2] == 1).all()
    assert (board[3] == 1).all()
    assert (board[4] == 1).all()
    assert board[5].sum() == 24
    assert board[5, 9, 9] == 0
    assert board[5, 7, 11] == 1
    assert captures.dtype == np.float32
    assert captures.tolist() == [0, 0]
    theirs = encode(state, P2)["board"]
    assert theirs[0, 3, 3] == 1
    assert theirs[1, 9, 9] == 1
    assert (theirs[2] == 0).all()
    assert (theirs[3] == 0).all()

    captured = play(position(own=[(12, 9)], other=[(10, 9), (11, 9)], captures=(1, 3)), 9, 9)
    assert encode(captured, P1)["captures"].tolist() == pytest.approx([0.4, 0.6])
    assert encode(captured, P2)["captures"].tolist() == pytest.approx([0.6, 0.4])
    assert encode(captured, P2)["board"][5].sum() == 0
    start = encode(rules.init(), P1)["board"]
    assert start[5].sum() == NUM_POINTS - 1
    assert start[5, 9, 9] == 0


def test_render_shows_the_board_and_the_outcome():
    text = GAME.render(play(position(own=[(x, 0) for x in range(4)]), 4, 0))
    assert "X X X X X" in text
    assert "X (P1) wins (five in a row)" in text
    assert "to move: X (P1)" in GAME.render(rules.init())


# --- openings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config", [None, {"tournament_rule": False}, {"first_move_center": False}, {"ply_cap": 3}]
)
def test_openings_are_seeded_legal_and_quiet(config):
    seen = set()
    for seed in range(40):
        moves = opening(seed, config)
        assert opening(seed, config) == moves
        assert len(moves) == 2 if config == {"ply_cap": 3} else 3 <= len(moves) <= 5
        state = rules.init(seed, config)
        for joint in moves:
            state = rules.step(state, joint)
        assert rules.to_move(state)
        assert state.captures == (0, 0)
        points = [joint[0][0] for joint in moves]
        assert all(max(abs(p % 19 - 9), abs(p // 19 - 9)) <= 4 for p in points)
        seen.add(tuple(points))
    assert len(seen) > 30


# --- the batched engine ----------------------------------------------------------------------------


def test_batched_engine_agrees_with_step_on_random_games():
    """Games move by move: the batched draw is legal for `step`, and both engines agree on everything."""
    configs = [None, {"tournament_rule": False}, {"first_move_center": False}, {"ply_cap": 90}]
    states = [rules.init(0, configs[i % len(configs)]) for i in range(300)]
    batch = playouts.pack(states)
    rows = np.arange(len(states))
    draws = playouts.Draws(np.random.default_rng(11).spawn(len(states)))
    while rows.size:
        moves = playouts.random_moves(batch, rows, draws)
        for row, move in zip(rows, moves, strict=True):
            states[row] = rules.step(states[row], [(int(move),)])
        ends = playouts.step_many(batch, rows, moves)
        for row in rows:
            assert_batch_row_is(batch, row, states[row])
        rows = rows[ends == playouts.RUNNING]
    reasons = {state.end for state in states}
    assert reasons == {"five in a row", "five captures", "ply cap"}
    assert sum(sum(state.captures) for state in states) > 300


def test_random_moves_are_uniform_over_the_legal_points():
    state = rules.PenteState(b"\x01" * (NUM_POINTS - 4) + bytes(4), (0, 0), 21, rules.make_config())
    batch = playouts.pack([state] * 4000)
    moves = playouts.random_moves(batch, np.arange(4000), playouts.Draws([np.random.default_rng(5)] * 4000))
    counts = np.bincount(moves, minlength=NUM_POINTS)[NUM_POINTS - 4 :]
    assert counts.sum() == 4000
    assert counts.min() > 850


def test_candidate_words_map_exactly_uniformly_onto_the_points():
    counts = np.bincount(playouts.POINT_OF_WORD, minlength=NUM_POINTS + 1)
    assert (counts[:NUM_POINTS] == 181).all()
    assert counts[playouts.OFF_BOARD_POINT] == 195  # rejected: read as the off-board cell


def test_random_moves_respect_the_opening_rules():
    batch = playouts.pack([rules.init(), opened()] * 500)
    moves = playouts.random_moves(
        batch, np.arange(1000), playouts.Draws(np.random.default_rng(2).spawn(1000))
    )
    assert (moves[::2] == CENTRE).all()
    assert not NEAR_CENTRE[moves[1::2]].any()
    assert (moves[1::2] != pt(3, 3)).all()


def test_playouts_finish_every_game():
    start, finished = rules.init(), play(position(own=[(x, 0) for x in range(4)]), 4, 0)
    results = playouts.playouts([start] * 300 + [finished], np.random.default_rng(1).spawn(301))
    assert results.shape == (301, 2)
    assert set(results[:, 0]) <= {-1.0, 0.0, 1.0}
    assert (results.sum(axis=1) == 0).all()
    assert results[-1].tolist() == [1.0, -1.0]
    assert 0.3 < (results[:300, 0] == 1).mean() < 0.7
    again = playouts.playouts([start] * 300 + [finished], np.random.default_rng(1).spawn(301))
    assert (again == results).all()
    with pytest.raises(ValueError, match="one generator per game"):
        playouts.playouts([start] * 2, [np.random.default_rng(1)])


def test_a_playout_depends_only_on_its_state_and_generator():
    """Alone or among other games, in any row: the same moves, the same draws used up."""
    states = [
        rules.init(),
        opened(),
        rules.init(0, {"first_move_center": False}),
        rules.init(0, {"ply_cap": 30}),
    ]
    states += [position(own=[(x, 5) for x in range(3)], other=[(4, 4), (6, 6)], captures=(4, 3))]

    def finished_alone(index: int) -> tuple[playouts.Batch, np.random.Generator]:
        rng = np.random.default_rng(index)
        batch = playouts.pack([states[index]])
        playouts.finish(batch, [rng])
        return batch, rng

    others = [rules.init()] * 40 + [opened()] * 40
    for order in (range(len(states)), reversed(range(len(states)))):
        rows = [*order]
        rngs = [np.random.default_rng(index) for index in rows] + np.random.default_rng(99).spawn(len(others))
        batch = playouts.pack([states[index] for index in rows] + others)
        playouts.finish(batch, rngs)
        for row, index in enumerate(rows):
            alone, rng = finished_alone(index)
            assert batch.boards[row].tobytes() == alone.boards[0].tobytes()
            assert (batch.plies[row], batch.ends[row]) == (alone.plies[0], alone.ends[0])
            assert batch.captures[row].tolist() == alone.captures[0].tolist()
            assert rngs[row].bit_generator.state == rng.bit_generator.state
    results = playouts.playouts(states, [np.random.default_rng(index) for index in range(len(states))])
    for index, state in enumerate(states):
        alone = playouts.playouts([state], [np.random.default_rng(index)])
        assert results[index].tolist() == alone[0].tolist()
