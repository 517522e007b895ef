"""Smash the Code: golden turns worked by hand from ../shared/games/smash_the_code.md, a differential
test against placements played by brokenmass/smash-the-code's simulator (tests/games/data), property
tests over random games, the batched engine against the rules, and the inputs pinned.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from arena_games.api import BadConfig, BadStateDict, IllegalAction
from arena_games.conformance import check_game
from arena_games.smash import GAME, SPEC, kernels, make_game, playouts, rules
from arena_games.smash.encoding import encode, encode_many
from arena_games.smash.render import render, view

DATA = Path(__file__).parent / "data"
WIDTH = 6


def well(*rows: str) -> rules.Well:
    """A well from its lowest rows, top first (the rows above are empty)."""
    return rules.well_from_rows(["." * WIDTH] * (rules.HEIGHT - len(rows)) + list(rows), WIDTH)


def lowest(state_well: rules.Well, count: int) -> list[str]:
    """The `count` lowest rows of a well, top first."""
    return rules.well_rows(state_well)[-count:]


def position(first=None, second=None, *, pairs=((1, 1),), scores=(0, 0), unsent=(0, 0), **config):
    """Turn 0 of a game whose wells and first pairs are given (the later pairs are (1, 2))."""
    start = rules.init(0, config)
    sequence = tuple(pairs) + ((1, 2),) * (len(start.pairs) - len(pairs))
    empty = well()
    return dataclasses.replace(
        start, pairs=sequence, wells=(first or empty, second or empty), scores=scores, unsent=unsent
    )


def act(column: int, rotation: int) -> tuple[int]:
    return (rules.placement_index(WIDTH, column, rotation),)


THREE_CHAIN = well(  # (2, 3) at column 2, B on top: a 3-step chain
    ".3....",
    ".3....",
    "41....",
    "12....",
    "12....",
    "12.3..",
)
FOUR_ONES = well("111...")  # (1, 2) at column 3, rotation 0: 40 points
NO_ROOM_BUT_COLUMN_5 = well("00000.", "00000.", *(["000000"] * 10))
SKULL_TOWER = well(*(["0....."] * 12))


# --- placements ----------------------------------------------------------------------------------------


def test_there_are_22_placements_packed_rotation_major():
    table = rules.placements(WIDTH)
    assert len(table) == 22 == SPEC.heads["place"]
    assert table[:5] == tuple((x, 0) for x in range(5))
    assert table[5:11] == tuple((x, 1) for x in range(6))
    assert table[11:16] == tuple((x, 2) for x in range(1, 6))
    assert table[16:] == tuple((x, 3) for x in range(6))
    assert len(rules.placements(7)) == 26


@pytest.mark.parametrize(
    ("column", "rotation", "bottom_rows"),
    [
        (0, 0, ["......", "12...."]),
        (4, 0, ["......", "....12"]),
        (2, 1, ["..2...", "..1..."]),
        (3, 2, ["......", "..21.."]),
        (5, 2, ["......", "....21"]),
        (5, 3, [".....1", ".....2"]),
    ],
)
def test_each_block_of_a_pair_falls_where_the_rotation_puts_it(column, rotation, bottom_rows):
    placed = rules.place(well(), (1, 2), column, rotation)
    assert lowest(placed, 2) == bottom_rows


def test_every_placement_fits_an_empty_well_and_each_block_falls_on_its_own():
    assert rules.legal_placements(well()).all()
    placed = rules.place(well("1....."), (3, 4), 0, 0)  # A lands on the 1, B on the floor
    assert lowest(placed, 2) == ["3.....", "14...."]


def test_a_vertical_pair_needs_two_free_cells_and_a_horizontal_one_one_per_column():
    ten = well(*(["0....."] * 10))
    eleven = well(*(["0....."] * 11))
    assert rules.legal_placements(ten)[rules.placement_index(WIDTH, 0, 1)]
    assert not rules.legal_placements(eleven)[rules.placement_index(WIDTH, 0, 1)]
    assert not rules.legal_placements(eleven)[rules.placement_index(WIDTH, 0, 3)]
    assert rules.legal_placements(eleven)[rules.placement_index(WIDTH, 0, 0)]  # one cell left in column 0
    twelve = well(*(["0....."] * 12))
    assert not rules.legal_placements(twelve)[rules.placement_index(WIDTH, 1, 2)]
    assert rules.legal_placements(twelve).sum() == 22 - 4  # the 4 that use column 0


# --- clearing, chains and scores (spec §4) --------------------------------------------------------


def test_a_group_of_four_clears_for_40_points():
    settled, points, chains = rules.resolve(rules.place(FOUR_ONES, (1, 3), 3, 0))
    assert (points, chains) == (40, 1)  # 10 * 4 * max(1, 0)
    assert lowest(settled, 1) == ["....3."]


def test_a_three_step_chain_scores_with_chain_power_0_8_16():
    settled, points, chains = rules.resolve(rules.place(THREE_CHAIN, (2, 3), 2, 1))
    # step 1: the four 2s (3 in column 1, A): 40 x max(1, 0); the 1 and the 3s above fall;
    # step 2: the four 1s: 40 x 8; step 3: the four 3s (two in column 1, B, column 3's): 40 x 16
    assert (points, chains) == (40 + 320 + 640, 3)
    assert lowest(settled, 1) == ["4....."]


def test_two_colours_in_one_step_add_the_colour_bonus():
    settled, points, chains = rules.resolve(rules.place(well("1.....", "1.2...", "1.22.."), (1, 2), 0, 0))
    assert (points, chains) == (10 * 8 * 2, 1)  # B = 8, CB = 2
    assert lowest(settled, 1) == ["......"]


def test_an_eleven_block_group_has_group_bonus_8():
    start = well(
        "2.....",
        "22....",
        "34.222",
        "222453",
    )
    settled, points, chains = rules.resolve(rules.place(start, (2, 2), 2, 1))
    assert (points, chains) == (10 * 11 * 8, 1)
    assert lowest(settled, 1) == ["34.453"]


@pytest.mark.parametrize(("size", "bonus"), [(4, 0), (5, 1), (10, 6), (11, 8), (15, 8)])
def test_group_bonus_is_size_minus_4_until_10_then_8(size, bonus):
    assert rules.group_bonus(size) == bonus


def test_skulls_next_to_a_cleared_group_go_with_it_and_the_rest_falls():
    start = well(
        "0..5..",
        "111000",
    )
    settled, points, _ = rules.resolve(rules.place(start, (1, 3), 2, 1))
    assert points == 40  # skulls score nothing
    assert lowest(settled, 2) == ["......", "..3500"]  # the skull under the 5 went; two stayed


def test_skulls_never_group():
    assert rules.resolve(well("0000..", "0000.."))[1:] == (0, 0)


def test_chain_power_doubles_up_to_999_as_does_the_score_clamp():
    assert [rules.chain_power(step) for step in range(9)] == [0, 8, 16, 32, 64, 128, 256, 512, 999]
    assert rules.chain_power(20) == 999  # the referee's min(4 << step, 999)
    # a 9th step scores 10 * B * min(999 + CB + GB, 999)
    assert 10 * 4 * min(max(rules.chain_power(8), 1), 999) == 39960


# --- the turn: nuisance, skulls, the end (spec §5-§8) ---------------------------------------------------


def test_140_points_give_2_nuisance_points_and_no_line():
    state = position(FOUR_ONES, pairs=((1, 2),), unsent=(100, 0))
    after = rules.step(state, [act(3, 0), act(0, 0)])
    assert after.scores == (40, 0)
    assert after.unsent == (140, 0)
    assert view(after)["players"][0]["meter"] == 2.0
    assert after.wells[1] == rules.place(well(), (1, 2), 0, 0)  # no skulls


def test_420_points_send_one_line_of_six_skulls_and_the_meter_restarts():
    state = position(FOUR_ONES, well("1....."), pairs=((1, 2),), unsent=(380, 0))
    after = rules.step(state, [act(3, 0), act(2, 0)])
    assert after.unsent == (0, 0)
    assert lowest(after.wells[1], 2) == ["0.00..", "101200"]  # one skull on each column
    assert not any(after.losses)


def test_a_three_step_chain_sends_two_lines_and_keeps_the_rest_on_the_meter():
    after = rules.step(position(THREE_CHAIN, pairs=((2, 3),)), [act(2, 1), act(5, 1)])
    assert (after.scores, after.chains) == ((1000, 0), (3, 0))
    assert after.unsent == (1000 - 2 * 420, 0)
    assert lowest(after.wells[1], 4) == [".....0", ".....0", "000003", "000002"]


def test_offsetting_when_configured_cancels_the_players_credits():
    state = position(FOUR_ONES, FOUR_ONES, pairs=((1, 2),), unsent=(400, 0), NUISANCE_OFFSET=True)
    after = rules.step(state, [act(3, 0), act(3, 0)])
    assert after.unsent == (400, 0)  # 440 and 40: 40 cancelled each, 400 left, no line
    assert lowest(after.wells[1], 1) == ["....2."]


def test_a_player_left_without_room_loses_at_once_and_reports_a_score_of_0():
    # The referee lets it play the next round, where its placement fails; the contract forbids a
    # turn with no legal action, so the game ends a turn early with the same winner.
    state = position(NO_ROOM_BUT_COLUMN_5, FOUR_ONES, pairs=((1, 2),))
    assert np.flatnonzero(rules.legal_masks(state, 0)[0]).tolist() == [
        rules.placement_index(WIDTH, 5, 1),
        rules.placement_index(WIDTH, 5, 3),
    ]
    after = rules.step(state, [act(5, 1), act(3, 0)])
    assert after.losses == (rules.BLOCKED, "")
    assert rules.returns(after) == (-1.0, 1.0)
    assert rules.to_move(after) == ()
    assert (after.scores, rules.reported_scores(after)) == ((0, 40), (0, 40))
    assert rules.end_reason(after) == (
        "turn 1: player 1 has no room for the next pair, player 2 wins (score 0 to 40)"
    )
    assert view(after)["players"][0]["score"] == 0


def test_a_position_where_a_player_to_move_has_no_room_is_refused():
    data = rules.to_dict(position(NO_ROOM_BUT_COLUMN_5))
    data["wells"][0] = ["000000"] * rules.HEIGHT  # no placement fits; the player would have no move
    with pytest.raises(BadStateDict, match=r"well 0 has no room for a pair.*'blocked'"):
        rules.from_dict(data)
    data["losses"] = [rules.BLOCKED, ""]
    assert rules.to_move(rules.from_dict(data)) == ()


def test_skulls_that_do_not_fit_are_discarded_and_the_game_goes_on():
    state = position(SKULL_TOWER, FOUR_ONES, pairs=((1, 1),), unsent=(0, 380))
    after = rules.step(state, [act(2, 0), act(3, 0)])
    assert after.losses == ("", "")
    assert rules.to_move(after) == (0, 1)
    assert lowest(after.wells[0], 2) == ["0.00..", "001100"]
    assert rules.heights(after.wells[0]) == (12, 1, 2, 2, 1, 1)  # column 0's skull was discarded
    assert rules.legal_masks(after, 0)[0].sum() == 22 - 4


def test_skulls_that_fill_the_well_leave_its_player_no_room_and_it_loses():
    full_but_one_row = well(*(["000000"] * 11))
    state = position(full_but_one_row, FOUR_ONES, pairs=((1, 1),), unsent=(0, 800))
    after = rules.step(state, [act(0, 0), act(3, 0)])  # two lines: the well fills, the rest go
    assert after.wells[0] == well(*(["110000"] + ["000000"] * 11))
    assert after.losses == (rules.BLOCKED, "")
    assert rules.returns(after) == (-1.0, 1.0)


def test_both_players_losing_on_one_turn_is_a_draw():
    after = rules.step(position(NO_ROOM_BUT_COLUMN_5, NO_ROOM_BUT_COLUMN_5), [act(5, 1), act(5, 3)])
    assert after.losses == (rules.BLOCKED, rules.BLOCKED)
    assert rules.returns(after) == (0.0, 0.0)
    assert rules.reported_scores(after) == (0, 0)
    assert "player 1 and player 2 have no room for the next pair, a draw" in rules.end_reason(after)


def test_at_the_turn_limit_the_higher_score_wins_and_a_score_counts_at_least_1():
    state = position(FOUR_ONES, pairs=((1, 2),), TURN_LIMIT=1)
    after = rules.step(state, [act(3, 0), act(0, 0)])
    assert (after.turn, rules.to_move(after), rules.returns(after)) == (1, (), (1.0, -1.0))
    assert rules.end_reason(after) == "turn limit 1 reached: score 40 to 1, player 1 wins"
    tied = rules.step(position(pairs=((1, 2),), TURN_LIMIT=1), [act(0, 0), act(1, 0)])
    assert (rules.returns(tied), rules.reported_scores(tied)) == ((0.0, 0.0), (1, 1))
    assert rules.MAX_TURN_LIMIT == rules.default_config(WIDTH)["TURN_LIMIT"] == SPEC.max_length == 200


# --- the pairs: java.util.Random, as the referee deals them ------------------------------------------

JAVA_COLOURS = {  # seed -> the first 10 pairs' colours as printed by OpenJDK 17: new Random(seed),
    # then 20 times nextInt(5) + 1
    0: "14531422553343155121",
    1: "14345552445434353325",
    42: "14451114543323232145",
    -1: "41555434124332315321",
    -(1 << 63): "14531422553343155121",
    (1 << 63) - 1: "41555434124332315321",
    242303170021963: "13554531223221432352",  # nextInt rejects its first draw (2^31 - 2) and draws again
}


@pytest.mark.parametrize("seed", sorted(JAVA_COLOURS))
def test_the_pairs_are_those_java_util_random_deals(seed):
    colours = JAVA_COLOURS[seed]
    expected = tuple((int(a), int(b)) for a, b in zip(colours[::2], colours[1::2], strict=True))
    assert rules.pair_sequence(seed, 10) == expected
    assert rules.init(seed).pairs[:10] == expected
    assert len(rules.init(seed).pairs) == rules.MAX_TURN_LIMIT + rules.QUEUE - 1


# --- the reference simulator (brokenmass/smash-the-code, GameMap.js) ---------------------------------


def reference_cases() -> list[dict]:
    return json.loads((DATA / "smash_reference.json").read_text())["cases"]


def reference_well(columns: list[str]) -> rules.Well:
    return tuple(tuple(int(cell) for cell in column) for column in columns)


def test_placements_and_chains_match_the_reference_simulator():
    cases = reference_cases()
    assert len(cases) > 600
    assert max(case["chains"] for case in cases) >= 4
    for case in cases:
        start = reference_well(case["well"])
        legal = rules.legal_placements(start)
        assert [case["legal"][r * WIDTH + x] == "1" for x, r in rules.placements(WIDTH)] == legal.tolist()
        settled = rules.resolve(rules.place(start, tuple(case["pair"]), case["column"], case["rotation"]))
        assert settled == (reference_well(case["after"]), case["points"], case["chains"]), case


def test_the_batched_chain_loop_matches_the_reference_simulator():
    cases = reference_cases()
    wells = np.stack([playouts.well_array(reference_well(case["well"]), WIDTH) for case in cases])
    actions = np.array([rules.placement_index(WIDTH, case["column"], case["rotation"]) for case in cases])
    landed = playouts.place_many(wells, np.array([case["pair"] for case in cases]), actions)
    points, chains = playouts.resolve_many(wells, landed)  # only wells that `might_clear` are labelled
    assert points.tolist() == [case["points"] for case in cases]
    assert chains.tolist() == [case["chains"] for case in cases]
    expected = [playouts.well_array(reference_well(case["after"]), WIDTH) for case in cases]
    assert np.array_equal(wells, np.stack(expected))


def test_the_compiled_chain_loop_matches_the_reference_simulator():
    """Each case played by both players of one compiled turn (offsetting on, so that their equal
    points send no skulls): player 0's legal placements, well, points and chain steps."""
    for case in reference_cases():
        start = reference_well(case["well"])
        state = position(start, start, pairs=[tuple(case["pair"])], NUISANCE_OFFSET=True)
        wells, pairs, info = kernels.from_state(state)
        legal = np.empty(len(rules.placements(WIDTH)), dtype=bool)
        kernels.legal_mask(wells, info, 0, legal)
        assert [case["legal"][r * WIDTH + x] == "1" for x, r in rules.placements(WIDTH)] == legal.tolist()
        action = rules.placement_index(WIDTH, case["column"], case["rotation"])
        kernels.step(wells, pairs, info, action, action)
        after = kernels.to_state(wells, pairs, info)
        assert (after.wells[0], after.scores[0], after.chains[0]) == (
            reference_well(case["after"]),
            case["points"],
            case["chains"],
        ), case


# --- games played by CodinGame's referee (tests/games/data/smash_referee_harness) ----------------------


def referee_games() -> list[dict]:
    return json.loads((DATA / "smash_referee_games.json").read_text())


def check_seen(state: rules.SmashState, seen: dict, frame: dict) -> None:
    """The engine's position is what the referee showed seat 0 at the start of that round: the 8
    pairs, both scores and wells, and each seat's nuisance (received, not yet dropped: a multiple
    of 1/7, the referee prints 6 decimals) beyond the lines dropped is the other's unsent points."""
    assert "".join(f"{a}{b}" for a, b in state.pairs[state.turn : state.turn + rules.QUEUE]) == seen["pairs"]
    assert list(state.scores) == seen["scores"]
    assert ["".join(rules.well_rows(w)) for w in state.wells] == seen["wells"]
    for seat, (_, nuisance, _) in enumerate(frame["seats"]):
        points = round(nuisance * 7) * 10
        assert points % rules.POINTS_PER_LINE == state.unsent[1 - seat]


def compiled_step(state: rules.SmashState, joint) -> rules.SmashState:
    """`rules.step` on the compiled core (kernels.step on the state's arrays)."""
    wells, pairs, info = kernels.from_state(state)
    kernels.step(wells, pairs, info, joint[0][0], joint[1][0])
    return kernels.to_state(wells, pairs, info)


def on_compiled_info(kernel):
    """A function of the state that runs `kernel` on the state's `info` array."""
    return lambda state: kernel(kernels.from_state(state)[2])


# Per core (ARCHITECTURE "Compiled core"): step, returns and reported scores.
CORES = {
    "reference": (rules.step, rules.returns, rules.reported_scores),
    "compiled": (
        compiled_step,
        on_compiled_info(kernels.returns_of),
        on_compiled_info(kernels.reported_scores),
    ),
}


@pytest.mark.parametrize("core", CORES)
def test_the_engine_plays_the_referees_games_as_the_referee(monkeypatch, core):
    step, returns, reported_scores = CORES[core]
    dropped = rules.drop_skulls
    discarded: set[int] = set()  # the seeds of games where skulls did not fit

    def drop_noting_overflow(well: rules.Well, lines: int) -> rules.Well:
        if any(len(column) + lines > rules.HEIGHT for column in well):
            discarded.add(seed)
        return dropped(well, lines)

    monkeypatch.setattr(rules, "drop_skulls", drop_noting_overflow)
    games = referee_games()
    for game in games:
        seed, turns, frames = game["seed"], game["turns"], game["frames"]
        state = rules.init(seed)
        for turn, played in enumerate(turns[:-1]):
            check_seen(state, played["seen"], frames[turn])
            joint = [(rules.placement_index(WIDTH, *map(int, c.split())),) for c in played["commands"]]
            state = step(state, joint)
        # The referee's last round: a seat without room places, fails and loses. The engine ended
        # the game before it (its player has no legal placement), with the same result.
        check_seen(state, turns[-1]["seen"], frames[len(turns) - 1])
        dead = [death is not None for _, _, death in frames[-1]["seats"]]
        assert [bool(loss) for loss in state.losses] == dead, seed
        assert rules.to_move(state) == ()
        first, second = game["final_scores"]
        won = (first > second) - (first < second)  # the referee's ranking of its final scores
        assert returns(state) == (float(won), float(-won)), seed
        seen_scores = turns[-1]["seen"]["scores"]  # the referee adds the survivor's last round to them
        expected = [0 if lost else max(1, score) for lost, score in zip(dead, seen_scores, strict=True)]
        assert list(reported_scores(state)) == expected
    assert len(games) == 48
    # v1 ended each of these games at the overflow (2 with the wrong winner); the compiled core does
    # not call rules.drop_skulls
    assert len(discarded) == (34 if core == "reference" else 0)


# --- properties of random games, and the batched engine --------------------------------------------------


def greedy_placement(state: rules.SmashState, player: int) -> int:
    """The legal placement that scores the most points now (the first of the best)."""
    legal = np.flatnonzero(rules.legal_masks(state, player)[0]).tolist()
    pair, well_now = state.pairs[state.turn], state.wells[player]

    def points(action: int) -> int:
        return rules.resolve(rules.place(well_now, pair, *rules.placement(WIDTH, action)))[1]

    return max(legal, key=points)


def random_games(seeds, config=None):
    """Yield (state, joint, next state) of each turn of games where each placement is greedy for
    points half the time and uniformly random otherwise (so chains and skull lines happen)."""
    for seed in seeds:
        rng = np.random.default_rng(seed)
        state = rules.init(seed, config)
        while rules.to_move(state):
            joint = [
                (greedy_placement(state, player),)
                if rng.random() < 0.5
                else GAME.random_action(state, player, rng)
                for player in (0, 1)
            ]
            after = rules.step(state, joint)
            yield state, joint, after
            state = after


def test_random_games_leave_no_floating_block_and_no_group_of_four():
    turns = 0
    for _, _, after in random_games(range(6)):
        for player_well in after.wells:
            assert rules.well_from_rows(rules.well_rows(player_well), WIDTH) == player_well  # no hole
            assert max((len(g) for g in rules.groups(player_well)), default=0) < rules.GROUP
            assert all(len(column) <= rules.HEIGHT for column in player_well)
        turns += 1
    assert turns > 100


def test_the_batched_engine_plays_turns_exactly_as_the_rules():
    played = [*random_games(range(8)), *random_games(range(8, 12), {"NUISANCE_OFFSET": True})]
    states = [before for before, _, _ in played]
    batch = playouts.pack(states)
    rows = np.arange(len(states))
    actions = np.array([[action for (action,) in joint] for _, joint, _ in played])
    assert np.array_equal(
        playouts.legal(batch.cells),
        np.stack([np.stack([rules.legal_masks(s, p)[0] for p in (0, 1)]) for s in states]),
    )
    playouts.step_many(batch, rows, actions)
    expected = playouts.pack([after for _, _, after in played])
    for field in dataclasses.fields(playouts.Batch):
        assert np.array_equal(getattr(batch, field.name), getattr(expected, field.name)), field.name
    assert np.array_equal(playouts.batch_returns(batch), [rules.returns(after) for _, _, after in played])


GOLDEN_TURNS = [  # (state, joint) of the golden turns above: lines, skulls discarded, no room, offsetting
    (position(THREE_CHAIN, pairs=((2, 3),)), [act(2, 1), act(5, 1)]),
    (position(FOUR_ONES, well("1....."), pairs=((1, 2),), unsent=(380, 0)), [act(3, 0), act(2, 0)]),
    (position(SKULL_TOWER, FOUR_ONES, pairs=((1, 1),), unsent=(0, 380)), [act(2, 0), act(3, 0)]),
    (position(well(*(["000000"] * 11)), FOUR_ONES, pairs=((1, 1),), unsent=(0, 800)), [act(0, 0), act(3, 0)]),
    (position(NO_ROOM_BUT_COLUMN_5, NO_ROOM_BUT_COLUMN_5), [act(5, 1), act(5, 3)]),
    (
        position(FOUR_ONES, FOUR_ONES, pairs=((1, 2),), unsent=(400, 0), NUISANCE_OFFSET=True),
        [act(3, 0)] * 2,
    ),
    (position(FOUR_ONES, pairs=((1, 2),), TURN_LIMIT=1), [act(3, 0), act(0, 0)]),
]


def test_the_batched_engine_plays_the_golden_turns_as_the_rules():
    batch = playouts.pack([state for state, _ in GOLDEN_TURNS])
    actions = np.array([[action for (action,) in joint] for _, joint in GOLDEN_TURNS])
    playouts.step_many(batch, np.arange(len(GOLDEN_TURNS)), actions)
    expected = playouts.pack([rules.step(state, joint) for state, joint in GOLDEN_TURNS])
    for field in dataclasses.fields(playouts.Batch):
        assert np.array_equal(getattr(batch, field.name), getattr(expected, field.name)), field.name
    returns = [rules.returns(rules.step(state, joint)) for state, joint in GOLDEN_TURNS]
    assert np.array_equal(playouts.batch_returns(batch), returns)


def test_playouts_draw_from_each_games_own_generator_batched_or_looped():
    count = 2 * playouts.LOOPED_BELOW  # batched together; alone, each is played by the rules in a loop
    starts = [rules.init(seed) for seed in range(count)]
    together = playouts.playouts(starts, [np.random.default_rng(seed) for seed in range(count)])
    alone = [playouts.playouts([s], [np.random.default_rng(seed)])[0] for seed, s in enumerate(starts)]
    assert np.array_equal(together, np.stack(alone))
    assert {-1.0, 1.0} <= set(together[:, 0].tolist()) <= {-1.0, 0.0, 1.0}
    assert playouts.playouts([], []).shape == (0, 2)


# --- the inputs, the view, the config, JSON ---------------------------------------------------------


def test_the_inputs_are_the_wells_and_the_pieces_as_planes_from_the_movers_side():
    state = position(well("0.....", "12...."), well("5....."), pairs=((3, 4), (5, 1)), unsent=(210, 0))
    mine, theirs = encode(state, 0), encode(state, 1)
    assert {name: array.shape for name, array in mine.items()} == dict(SPEC.inputs)
    own = mine["own"]
    assert own[0, 10, 0] == 1
    assert own[1, 11, 0] == 1
    assert own[2, 11, 1] == 1
    assert own.sum() == 3
    assert np.array_equal(mine["opponent"], theirs["own"])
    assert theirs["own"][5, 11, 0] == 1
    pieces = mine["pieces"]
    lit = [plane for plane in range(20) if pieces[plane].all()]
    assert lit == [2, 5 + 3, 10 + 4, 15 + 0]  # A 3, B 4, then A 5, B 1
    assert pieces[20].max() == pieces[20].min() == 0.5
    assert not pieces[21].any()
    assert theirs["pieces"][21].min() == 0.5


def test_the_batched_encoding_gives_each_games_planes_as_encode_does():
    states = [before for before, _, _ in random_games(range(3))][::7]
    batch = playouts.pack(states)
    players = np.arange(len(states)) % 2
    pairs = batch.pairs[np.arange(len(states))[:, None], batch.turns[:, None] + np.arange(2)]
    many = encode_many(batch.cells, pairs, batch.unsent, players)
    for row, (state, player) in enumerate(zip(states, players, strict=True)):
        for name, planes in encode(state, int(player)).items():
            assert np.array_equal(many[name][row], planes), (row, name)


def test_the_view_decodes_each_legal_placement_for_the_seats():
    state = position(NO_ROOM_BUT_COLUMN_5)
    moves = view(state)["moves"]
    down = moves[str(rules.placement_index(WIDTH, 5, 3))]
    assert {key: down[key] for key in ("column", "rotation", "shape", "seats")} == {
        "column": 5,
        "rotation": 3,
        "shape": "B below A",
        "seats": [0, 1],
    }
    mine, theirs = down["outcomes"]
    assert mine["landing"] == [[0, 5], [1, 5]]  # A on top of B, in the last two free cells
    assert (mine["steps"], mine["points"], mine["well"][:2]) == ([], 0, ["000001", "000001"])
    assert theirs["landing"] == [[10, 5], [11, 5]]  # on the empty well's floor
    beside = moves[str(rules.placement_index(WIDTH, 0, 0))]
    assert beside["seats"] == [1]
    assert beside["outcomes"][0] is None  # no room for it in player 1's well
    assert "player 1: score 0," in render(state)
    assert "pairs: 11 12" in render(state)


def test_the_view_gives_each_chain_step_of_a_placement_with_its_score():
    state = position(THREE_CHAIN, pairs=((2, 3),))
    placed = view(state)["moves"][str(rules.placement_index(WIDTH, 2, 1))]["outcomes"][0]
    assert placed["landing"] == [[11, 2], [10, 2]]  # A on the floor, B on top of it
    first, second, third = placed["steps"]
    landed = rules.place(THREE_CHAIN, (2, 3), 2, 1)
    assert first["well"] == rules.well_rows(landed)  # the first step finds the pair landed
    assert first["groups"] == [[[9, 1], [10, 1], [11, 1], [11, 2]]]  # column 1's three 2s and A
    assert [step["points"] for step in placed["steps"]] == [40, 320, 640]
    assert [step["chain_power"] for step in placed["steps"]] == [0, 8, 16]
    assert (second["colours"], second["blocks"], third["colours"]) == ([1], 4, [3])
    assert second["well"] == rules.well_rows(rules.clearing(landed, 0).after)
    assert placed["points"] == 1000
    assert placed["well"][-1] == "4....."
    json.dumps(placed, allow_nan=False)


def test_skulls_cleared_by_a_chain_step_are_named():
    start = well("0..5..", "111000")
    state = position(start, pairs=((1, 3),))
    (step,) = view(state)["moves"][str(rules.placement_index(WIDTH, 2, 1))]["outcomes"][0]["steps"]
    assert step["skulls"] == [[10, 0], [11, 3]]  # next to the 1s: above the first, right of the last
    assert step["groups"] == [[[10, 2], [11, 0], [11, 1], [11, 2]]]


def test_bad_configs_and_state_dicts_are_refused_with_a_reason():
    with pytest.raises(BadConfig, match="6 wide"):
        rules.init(1, {"WIDTH": 7})
    with pytest.raises(BadConfig, match="TURN_LIMIT"):
        rules.init(1, {"TURN_LIMIT": 0})
    data = rules.to_dict(rules.init(1))
    data["wells"][0][0] = "1....."
    with pytest.raises(BadStateDict, match="floating"):
        rules.from_dict(data)
    data["wells"][0] = ["." * 6] * 11 + ["1111.."]
    with pytest.raises(BadStateDict, match="group of 4"):
        rules.from_dict(data)


def test_illegal_and_malformed_joints_are_refused():
    full = position(well(*(["000000"] * 12)))
    with pytest.raises(IllegalAction, match="placement 0 is not legal for player 0"):
        rules.step(full, [(0,), (0,)])
    with pytest.raises(IllegalAction, match="one \\(placement,\\) per player"):
        rules.step(full, [(0,)])


def test_a_seven_wide_game_passes_the_conformance_check():
    seven = make_game(7)
    assert seven.spec.heads == {"place": 26}
    assert seven.spec.inputs["own"] == (6, 12, 7)
    assert check_game(seven, seeds=range(2)) > 10
