"""Spring Challenge 2021: the board, golden frames worked by hand from ../shared/games/spring2021.md,
differential tests against games and maps printed by the official referee (tests/games/data), and
the seed bot's 534 inputs pinned position by position.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from arena_games.api import BadConfig, BadStateDict, IllegalAction
from arena_games.spring2021 import GAME, SPEC, kernels, rules
from arena_games.spring2021.board import (
    BASE_RICHNESS,
    COORDS,
    HASHMAP_ORDER,
    NEIGHBOURS,
    NUM_CELLS,
    JavaRandom,
)
from arena_games.spring2021.encoding import encode
from arena_games.spring2021.gardener import gardener_action
from arena_games.spring2021.render import render, view

DATA = Path(__file__).parent / "data"
WAIT = rules.WAIT_ACTION
A, B = 0, 1  # the players (seats); the spec's "player 1" and "player 2"


def position(
    trees=None, *, sun=(0, 0), day=5, nutrients=20, score=(0, 0), holes=(), waiting=(False, False), **config
) -> rules.SpringState:
    """An ACTIONS frame of `day`: `trees` maps cell -> (owner, size) or (owner, size, dormant)."""
    codes = [rules.NO_TREE] * NUM_CELLS
    for cell, (owner, size, *dormant) in (trees or {}).items():
        codes[cell] = rules.tree_code(owner, size, bool(dormant and dormant[0]))
    return rules.SpringState(
        config=rules.make_config(config),
        richness=tuple(0 if cell in holes else richness for cell, richness in enumerate(BASE_RICHNESS)),
        trees=tuple(codes),
        day=day,
        nutrients=nutrients,
        sun=sun,
        score=score,
        gathered=(0, 0),
        waiting=waiting,
        shadows=rules.compute_shadows(codes, day % 6),
    )


def tree(state: rules.SpringState, cell: int) -> tuple[int, int, bool] | None:
    """(owner, size, dormant) of the tree on `cell`, or None."""
    code = state.trees[cell]
    return None if code == rules.NO_TREE else (code >> 3, code & 3, bool(code & 4))


def frame(state: rules.SpringState, *commands: str) -> rules.SpringState:
    return rules.step_commands(state, list(commands))


# --- the board -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "cube", "richness", "neighbours"),
    [  # rows of the spec's table (§2)
        (0, (0, 0, 0), 3, (1, 2, 3, 4, 5, 6)),
        (1, (1, -1, 0), 3, (7, 8, 2, 0, 6, 18)),
        (7, (2, -2, 0), 2, (19, 20, 8, 1, 18, 36)),
        (18, (1, -2, 1), 2, (36, 7, 1, 6, 17, 35)),
        (19, (3, -3, 0), 1, (-1, -1, 20, 7, 36, -1)),
        (25, (0, 3, -3), 1, (24, -1, -1, -1, 26, 11)),
        (36, (2, -3, 1), 1, (-1, 19, 7, 18, 35, -1)),
    ],
)
def test_cells_are_numbered_as_the_referee_numbers_them(cell, cube, richness, neighbours):
    assert (COORDS[cell], BASE_RICHNESS[cell], NEIGHBOURS[cell]) == (cube, richness, neighbours)


def test_hashmap_order_is_the_one_checked_on_a_jvm():
    spec_order = (
        "1 6 8 16 21 32 19 34 35 36 11 12 13 24 29 0 2 5 9 15 22 31 7 17 18 20 33 25 26 27 28 3 4 10 14 23 30"
    )
    assert tuple(int(cell) for cell in spec_order.split()) == HASHMAP_ORDER


def test_java_random_matches_published_values():
    random = JavaRandom(42)
    assert (random.next_int(11), random.next_int(37)) == (7, 14)  # the spec's JVM check
    assert JavaRandom(0).next_bits(32) == -1155484576  # new Random(0).nextInt()
    assert JavaRandom(42).next_bits(32) == -1170105035  # new Random(42).nextInt()


def test_maps_are_the_official_referees_seed_for_seed():
    for case in json.loads((DATA / "spring2021_referee_maps.json").read_text()):
        state = rules.init(case["seed"])
        assert list(state.richness) == case["richness"], case["seed"]
        assert _seen(state)["trees"] == case["start"]["trees"], case["seed"]


def _seen(state: rules.SpringState) -> dict:
    """A position in the form the referee harness prints it."""
    return {
        "day": state.day,
        "nutrients": state.nutrients,
        "sun": list(state.sun),
        "score": list(state.score),
        "waiting": list(state.waiting),
        "trees": [
            [cell, size, owner, int(dormant)]
            for cell in range(NUM_CELLS)
            if tree(state, cell)
            for owner, size, dormant in [tree(state, cell)]
        ],
    }


def _replay_referee_games(name: str) -> tuple[list[str], list[rules.SpringState]]:
    """Replay the referee games of DATA / name, checking every frame as the players saw it, the end
    and the final scores; every command as the frames' logs resolved it, and the final states."""
    logged, finals = [], []
    for game in json.loads((DATA / name).read_text()):
        state = rules.init(game["seed"])
        for index, played in enumerate(game["frames"]):
            assert _seen(state) == played["seen"], (game["seed"], index)
            sent = {player: text for player, text in enumerate(played["commands"]) if text is not None}
            assert rules.to_move(state) == tuple(sent), (game["seed"], index)
            state = frame(state, *sent.values())
            logged.extend(state.log[-1])
        assert _seen(state) == game["end"], game["seed"]
        assert list(rules.final_scores(state)) == game["final_scores"], game["seed"]
        finals.append(state)
    return logged, finals


def test_games_replay_as_the_official_referee_played_them():
    """Every frame of 24 referee games (rule-breaking commands included) and their final scores."""
    logged, _ = _replay_referee_games("spring2021_referee_games.json")
    for rule in ("WAIT (", "(conflict)", "COMPLETE"):  # the data exercises those rules
        assert any(rule in text for text in logged), rule


def test_games_ended_by_a_malformed_line_replay_as_the_official_referee_played_them():
    """19 referee games in which one or both players send a malformed line on one frame (§13)."""
    logged, finals = _replay_referee_games("spring2021_referee_malformed.json")
    assert all(state.is_over and not rules.to_move(state) for state in finals)
    deactivated = [state.deactivated for state in finals]
    assert {(True, False), (False, True), (True, True)} <= set(deactivated)
    last_frames = [text for state in finals for text in state.log[-1]]
    for verb in ("GROW", "SEED", "COMPLETE", "WAIT"):  # what the other player did meanwhile
        assert any(text.startswith(verb) for text in last_frames), verb
    assert any(state.day == 23 for state in finals)
    assert sum(text.startswith("DEACTIVATED") for text in logged) == sum(map(sum, deactivated))


def _head_actions(state: rules.SpringState, texts: list[str | None]) -> tuple[int, int] | None:
    """Per player the legal action of the head whose command is `texts`' (-1 for a player not to
    move), or None if a line is malformed, rejected or seeds from another source than the head's."""
    actions = [-1, -1]
    for player, text in enumerate(texts):
        if text is None:
            continue
        try:
            command = rules.parse_command(text)
        except IllegalAction:
            return None
        legal = rules.action_commands(state, player)
        actions[player] = next((action for action, said in legal.items() if said == command), -1)
        if actions[player] < 0:
            return None
    return (actions[0], actions[1])


@pytest.mark.parametrize("name", ["spring2021_referee_games.json", "spring2021_referee_malformed.json"])
def test_referee_games_replay_on_the_compiled_kernels_where_the_head_says_the_commands(name):
    """The referee games on the compiled core: a frame whose lines are commands of the action head
    steps the kernels from the arrays of the frame before; the other frames (a rejected or
    malformed line, a seed from another source: 29% of them) are played by the reference and the
    arrays taken from its state, its log left out (it holds the referee's reasons, which the arrays
    do not). Every position the players saw, the end and the final scores are the referee's."""
    stepped = frames = 0
    for game in json.loads((DATA / name).read_text()):
        state = rules.init(game["seed"])
        board, info = kernels.from_state(state)
        for index, played in enumerate(game["frames"]):
            assert _seen(kernels.to_state(board, info)) == played["seen"], (game["seed"], index)
            actions = _head_actions(state, played["commands"])
            state = frame(state, *(text for text in played["commands"] if text is not None))
            if actions is None:
                board, info = kernels.from_state(dataclasses.replace(state, log=()))
            else:
                kernels.step(board, info, *actions)
            stepped, frames = stepped + (actions is not None), frames + 1
        assert _seen(kernels.to_state(board, info)) == game["end"], game["seed"]
        assert list(kernels.final_scores(board, info)) == game["final_scores"], game["seed"]
    assert stepped > frames * 2 // 3


# --- shadows and sun ---------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", range(6))
def test_shadows_follow_the_sun_and_spook_equal_or_smaller_trees(direction):
    near = NEIGHBOURS[0][direction]  # 1 step from the centre towards the sun's direction
    middle = NEIGHBOURS[near][direction]  # 2 steps
    edge = NEIGHBOURS[middle][direction]  # 3 steps, on the edge
    day = direction or 6  # the day whose sun points in `direction` (day 0 is the start)
    trees = {0: (A, 2), near: (B, 1), middle: (B, 2), edge: (B, 3)}
    state = position(trees, day=day - 1, waiting=(False, False))
    after = frame(state, "WAIT", "WAIT")  # the day ends: the sun turns, then everyone gathers
    assert after.day == day
    shadows = {near: 2, middle: 2, edge: 2}  # the centre's tree shades 2 cells; the others add theirs
    assert {cell: after.shadows[cell] for cell in shadows} == shadows
    # near (1 <= 2) and middle (2 <= 2, the spooky rule) gather nothing; edge (3 > 2) gathers 3.
    assert after.sun == (2, 3)
    assert after.gathered == (2, 3)
    assert view(after)["sun_direction"] == direction


def test_seeds_cast_no_shadow_and_holes_do_not_stop_one():
    state = position({0: (A, 0), 1: (A, 3), 19: (B, 1)}, day=-1 + 6, holes=(7, 36))
    after = frame(state, "WAIT", "WAIT")  # day 6: direction 0, east
    assert after.shadows[1] == 0  # the seed on the centre shades nothing
    assert (after.shadows[7], after.shadows[19]) == (3, 3)  # past the hole on 7, onto 19
    assert after.sun == (3, 0)


# --- actions and costs --------------------------------------------------------------------------------


def test_costs_count_only_the_players_own_trees_of_the_target_size():
    trees = {0: (A, 0), 1: (A, 1), 2: (A, 1), 3: (A, 2), 4: (B, 1), 5: (B, 2), 6: (B, 3)}
    state = position(trees, sun=(20, 0))
    assert rules.grow_cost(state.trees, A, 0) == 1 + 2  # to size 1: base 1 + two small trees
    assert rules.grow_cost(state.trees, A, 1) == 3 + 1  # to size 2: base 3 + one medium tree
    assert rules.grow_cost(state.trees, A, 2) == 7 + 0  # to size 3: base 7, no large tree
    assert rules.grow_cost(state.trees, A, 3) == 4  # COMPLETE
    assert rules.seed_cost(state.trees, A) == 1  # one seed owned
    after = frame(state, "GROW 1", "WAIT")
    assert after.sun[A] == 20 - 4
    assert tree(after, 1) == (A, 2, True)
    assert rules.grow_cost(after.trees, A, 1) == 3 + 2  # now two medium trees


def test_the_mask_marks_only_what_the_sun_pays_for():
    state = position({0: (A, 0), 1: (A, 1), 2: (A, 1), 3: (A, 2)}, sun=(3, 0))
    commands = rules.action_commands(state, A)
    assert commands[0] == ("GROW", 0)  # seed -> small costs 3
    assert 1 not in commands
    assert 3 not in commands
    assert commands[WAIT] == ("WAIT",)
    assert commands[8] == (
        "SEED",
        1,
        8,
    )  # a seed costs 1; 1, 2 (size 1) and 3 (size 2) reach 8: smallest, lowest


def test_a_cell_means_grow_or_complete_by_the_trees_size_and_seed_when_empty():
    state = position({0: (A, 3), 1: (A, 1), 2: (B, 2), 12: (A, 1, True)}, sun=(50, 50))
    commands = rules.action_commands(state, A)
    assert commands[0] == ("COMPLETE", 0)
    assert commands[1] == ("GROW", 1)
    assert 2 not in commands  # the opponent's tree
    assert 12 not in commands  # a dormant tree
    assert commands[7] == ("SEED", 1, 7)  # 1 and 0 both reach 7: the smaller source
    assert commands[10] == ("SEED", 0, 10)  # only the large tree reaches 10 (1's size 1 < distance 2)


def test_seeds_are_planted_dormant_and_the_source_sleeps():
    state = position({1: (A, 1), 0: (A, 0)}, sun=(5, 0))
    after = frame(state, "SEED 1 7", "WAIT")
    assert tree(after, 7) == (A, 0, True)
    assert tree(after, 1) == (A, 1, True)
    assert after.sun[A] == 5 - 1  # one seed was owned before
    assert 1 not in rules.action_commands(after, A)
    assert 7 not in rules.action_commands(after, A)


def test_seed_conflict_plants_nothing_refunds_both_and_keeps_the_sources_dormant():
    state = position({1: (A, 1), 0: (A, 0), 6: (B, 1)}, sun=(5, 5))
    after = frame(state, "SEED 1 18", "SEED 6 18")
    assert tree(after, 18) is None
    assert after.sun == (5, 5)
    assert tree(after, 1) == (A, 1, True)
    assert tree(after, 6) == (B, 1, True)
    assert after.waiting == (False, False)
    assert after.log[-1] == ("SEED 1 18 (conflict)", "SEED 6 18 (conflict)")


def test_complete_scores_nutrients_plus_richness_bonus_then_nutrients_drop():
    trees = {0: (A, 3), 7: (A, 3), 19: (A, 3)}  # richness 3, 2, 1
    state = position(trees, sun=(12, 0), nutrients=20)
    state = frame(state, "COMPLETE 0", "WAIT")
    assert (state.score[A], state.nutrients, state.sun[A], tree(state, 0)) == (20 + 4, 19, 8, None)
    state = frame(state, "COMPLETE 7")
    assert (state.score[A], state.nutrients) == (24 + 19 + 2, 18)
    state = frame(state, "COMPLETE 19")
    assert (state.score[A], state.nutrients) == (45 + 18, 17)


def test_simultaneous_completes_score_the_same_nutrients_then_both_count():
    state = position({0: (A, 3), 1: (B, 3)}, sun=(4, 4), nutrients=1)
    after = frame(state, "COMPLETE 0", "COMPLETE 1")
    assert after.score == (1 + 4, 1 + 4)
    assert after.nutrients == 0  # 1 - 2, not below 0


@pytest.mark.parametrize("favoured", [A, B])
def test_a_searchs_frame_gives_a_seed_conflict_to_the_searcher_and_refunds_the_other(favoured):
    state = position({1: (A, 1), 0: (A, 0), 6: (B, 1)}, sun=(5, 5))
    joint = [(18,), (18,)]  # both seed cell 18 (A from 1 at cost 1, B from 6 at cost 0)
    assert rules.step(state, joint) == frame(state, "SEED 1 18", "SEED 6 18")  # the real frame
    after = rules.step_favouring(state, joint, favoured)
    assert tree(after, 18) == (favoured, 0, True)
    assert after.sun == ((4, 5) if favoured == A else (5, 5))  # only the planted seed is paid for
    assert tree(after, 1) == (A, 1, True)
    assert tree(after, 6) == (B, 1, True)


@pytest.mark.parametrize("favoured", [A, B])
def test_a_searchs_frame_scores_the_searchers_complete_first(favoured):
    state = position({0: (A, 3), 1: (B, 3)}, sun=(4, 4), nutrients=10)
    after = rules.step_favouring(state, [(0,), (1,)], favoured)
    first, second = 10 + 4, 9 + 4
    assert after.score == ((first, second) if favoured == A else (second, first))
    assert after.nutrients == 8
    alone = position({1: (B, 3)}, sun=(4, 4), nutrients=10)
    assert rules.step_favouring(alone, [(WAIT,), (1,)], A).score == (0, 10 + 4)  # nothing to go first


# --- days and turns ------------------------------------------------------------------------------------


def test_a_player_who_waited_sits_out_the_day_while_the_other_plays_on():
    state = position({1: (A, 1), 4: (B, 1)}, sun=(10, 10), day=3)
    state = GAME.step(state, [(WAIT,), (4,)])  # A waits, B grows its tree
    assert GAME.to_move(state) == (B,)
    assert not GAME.legal_masks(state, A)[0].any()
    state = GAME.step(state, [(WAIT,)])  # only B's action: a joint of one
    assert (state.day, GAME.to_move(state), state.waiting) == (4, (A, B), (False, False))
    assert tree(state, 4) == (B, 2, False)  # everything wakes at the gathering
    with pytest.raises(IllegalAction):
        GAME.step(GAME.step(position(sun=(1, 1)), [(WAIT,), (WAIT,)]), [(WAIT,)])  # both must act


def test_illegal_actions_of_the_head_are_refused_not_turned_into_waits():
    state = position({0: (A, 1, True), 1: (B, 1)}, sun=(10, 10))
    for action in (0, 1, 36, 38, -1):  # dormant, the opponent's, unreachable, past the end, negative
        with pytest.raises(IllegalAction):
            GAME.step(state, [(action,), (WAIT,)])


def test_rule_breaking_commands_turn_into_wait_as_in_the_referee():
    state = position({0: (A, 1, True), 1: (B, 1), 2: (A, 1)}, sun=(1, 10))
    cases = {
        "GROW 0": "the tree on cell 0 is dormant",
        "GROW 1": "the tree on cell 1 is not yours",
        "GROW 40": "cell 40 not found",
        "COMPLETE 2": "the tree on cell 2 is not large",
        "SEED 2 1": "cell 1 is not empty",
        "SEED 2 25": "cell 25 is too far from cell 2",
        "GROW 3": "no tree on cell 3",
    }
    for command, reason in cases.items():
        after = frame(state, command, "GROW 1")
        assert after.log[-1] == (f"WAIT ({command}: {reason})", "GROW 1")
        assert after.waiting == (True, False)
        assert after.sun[A] == 1
        assert tree(after, 1) == (B, 2, True)  # the other's action goes through
    poor = frame(position({2: (A, 1)}, sun=(0, 0)), "GROW 2", "WAIT")  # 0 sun: not enough
    assert poor.day == 6
    assert poor.log[-1][0] == "WAIT (GROW 2: not enough sun (3 needed, 0 available))"
    hole = frame(position({2: (A, 1)}, sun=(5, 0), holes=(8, 24)), "SEED 2 8", "GROW 3")
    assert hole.log[-1][0] == "WAIT (SEED 2 8: cell 8 is not usable)"


@pytest.mark.parametrize(
    "text",
    [
        *("", "grow 3", "GROW", "GROW -1", "SEED 1", "WAITING", "GROW ٣", "GROW 99999999999"),
        *("WAITx", "GROW 3x", "GROW  3", " WAIT", "GROW\t3", "WAIT\u00a0hi", "SEED 1 99999999999"),
    ],
)
def test_a_malformed_command_deactivates_its_author_and_ends_the_game(text):
    """§6, §13.3: the referee sets a malformed line's author's score to -1 and stops the game."""
    end = frame(position({1: (A, 1), 19: (B, 1)}, sun=(9, 9), score=(30, 0)), text, "WAIT")
    assert (end.score, end.deactivated) == ((-1, 0), (True, False))
    assert (end.is_over, GAME.to_move(end)) == (True, ())
    assert end.log[-1] == (f"DEACTIVATED (malformed command {text!r})", "WAIT")
    assert GAME.returns(end) == (-1.0, 1.0)


def test_step_commands_wants_one_line_for_each_player_to_move():
    state = GAME.step(position({1: (A, 1)}, sun=(9, 9)), [(1,), (WAIT,)])  # only A still to move
    for texts in (["WAIT", "WAIT"], [], "WAIT", [None], [3]):
        with pytest.raises(IllegalAction):
            rules.step_commands(state, texts)


def test_the_frame_of_a_malformed_command_still_resolves_the_other_players_action():
    """§13.5: B's COMPLETE scores and B's SEED is planted in the frame that deactivates A; the
    game ends there, and the day does not end even when both players are then waiting."""
    state = position({1: (A, 3), 2: (B, 3), 8: (B, 2)}, sun=(9, 9), day=7)
    end = frame(state, "GROW -1", "COMPLETE 2")
    assert end.score == (-1, 20 + 4)  # nutrients + the lush cell's bonus
    assert (tree(end, 2), end.nutrients, end.sun) == (None, 19, (9, 9 - 4))
    assert (end.day, end.waiting, end.is_over) == (7, (True, False), True)
    assert tree(frame(state, "MOVE 3", "SEED 8 20"), 20) == (B, 0, True)
    asleep = frame(state, "", "WAIT")
    assert (asleep.day, asleep.waiting, asleep.nutrients, asleep.sun) == (7, (True, True), 20, (9, 9))


def test_after_a_deactivation_the_end_bonus_and_tie_break_go_to_the_active_player_only():
    """§13.4: the deactivated player keeps -1 whatever it had; the active one adds floor(sun / 3)
    and, its score being the active players' one distinct score, one point per own tree."""
    state = position({0: (A, 3), 1: (A, 2), 19: (B, 1), 20: (B, 0)}, sun=(30, 7), score=(40, 5))
    end = frame(state, "GROW 99999999999", "WAIT")
    assert rules.final_scores(end) == (-1, 5 + 7 // 3 + 2)
    assert GAME.returns(end) == (-1.0, 1.0)
    assert GAME.end_reason(end) == (
        "player 1 was deactivated for a malformed command on day 5: -1 to 9, player 2 wins"
    )
    assert (view(end)["final_scores"], view(end)["winner"]) == ([-1, 9], 1)
    assert rules.final_scores(frame(state, "WAIT", "grow 19")) == (40 + 30 // 3 + 2, -1)


def test_both_players_malformed_in_one_frame_is_minus_one_against_minus_one_a_draw():
    end = frame(position({0: (A, 3), 19: (B, 1)}, sun=(30, 0), score=(40, 0)), "WAITx", "SEED 1")
    assert end.deactivated == (True, True)
    assert rules.final_scores(end) == (-1, -1)  # no end bonus: no player is active
    assert GAME.returns(end) == (0.0, 0.0)
    assert GAME.end_reason(end) == (
        "both players were deactivated for a malformed command on day 5: -1 to -1, a draw"
    )


def test_messages_after_commands_are_ignored_as_in_the_referee():
    assert rules.parse_command("GROW 3 go go go") == ("GROW", 3)
    assert rules.parse_command("WAIT zzz") == ("WAIT",)


def test_no_masked_action_is_rejected_by_the_other_players_simultaneous_one():
    """Validation reads only the frame's start and one's own trees: every legal pair goes through."""
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(3):
        state = GAME.init(seed, None)
        while GAME.to_move(state):
            if GAME.to_move(state) == (A, B):
                first, second = (np.flatnonzero(GAME.legal_masks(state, p)[0]) for p in (A, B))
                for a, b in zip(rng.choice(first, 6), rng.choice(second, 6), strict=True):
                    assert not any(
                        text.startswith("WAIT (") for text in GAME.step(state, [(a,), (b,)]).log[-1]
                    )
                    checked += 1
            state = GAME.step(state, [GAME.random_action(state, p, rng) for p in GAME.to_move(state)])
    assert checked > 100


# --- the end ---------------------------------------------------------------------------------------------


def test_the_game_ends_after_day_23_with_a_third_of_the_sun_added():
    state = position({0: (A, 1)}, day=23, sun=(8, 6), score=(10, 11))
    end = frame(state, "WAIT", "WAIT")
    assert GAME.to_move(end) == ()
    assert end.day == 24
    assert rules.final_scores(end) == (10 + 2, 11 + 2)
    assert GAME.returns(end) == (-1.0, 1.0)
    assert "player 2 wins" in GAME.end_reason(end)


def test_equal_scores_are_broken_by_tree_count_and_may_stay_a_draw():
    trees = {0: (A, 0), 1: (A, 3), 19: (B, 1)}
    end = frame(position(trees, day=23, sun=(3, 0), score=(5, 6)), "WAIT", "WAIT")
    assert rules.final_scores(end) == (6 + 2, 6 + 1)  # tied at 6, then +1 per tree (seeds too)
    assert GAME.returns(end) == (1.0, -1.0)
    assert "tie-break" in GAME.end_reason(end)
    draw = frame(position({0: (A, 1), 19: (B, 1)}, day=23, score=(5, 5)), "WAIT", "WAIT")
    assert rules.final_scores(draw) == (6, 6)
    assert GAME.returns(draw) == (0.0, 0.0)


# --- config, state dicts -------------------------------------------------------------------------------


def test_config_keys_are_the_referees_and_are_checked():
    state = GAME.init(
        3, {"STARTING_SUN": 5, "MAX_ROUNDS": 1, "STARTING_NUTRIENTS_LUSH": 10, "MAX_EMPTY_CELLS": 0}
    )
    assert state.sun == (7, 7)
    assert state.nutrients == 10
    assert 0 not in state.richness
    assert GAME.to_move(GAME.step(state, [(WAIT,), (WAIT,)])) == ()  # one day only
    for bad in ({"MAP_RING_COUNT": 4}, {"MAX_ROUNDS": 25}, {"MAX_ROUNDS": "24"}, {"NUTRIENTS": 20}):
        with pytest.raises(BadConfig):
            GAME.init(0, bad)


def test_a_deactivated_player_survives_the_state_dict():
    """The referee's -1 is the mark: the dict's form is unchanged, and so old dicts still read."""
    end = frame(position({0: (A, 3), 19: (B, 1)}, sun=(3, 4)), "GROW -1", "WAIT")
    data = GAME.to_dict(end)
    assert data["score"] == [-1, 0]
    back = GAME.from_dict(json.loads(json.dumps(data)))
    assert back == end
    assert back.is_over


def test_bad_state_dicts_are_refused():
    good = GAME.to_dict(GAME.init(1, None))
    hole = good["richness"].index(0)
    for change in (
        {"trees": [{"cell": 0, "size": 4, "owner": 0, "dormant": False}]},
        {"trees": [{"cell": hole, "size": 1, "owner": 0, "dormant": False}]},
        {"trees": [{"cell": 0, "size": 1, "owner": 0, "dormant": False}] * 2},
        {"waiting": [True, True]},
        {"day": 25},
        {"sun": [1]},
        {"score": [-2, 0]},
        {"log": [["WAIT"]]},
    ):
        with pytest.raises(BadStateDict):
            GAME.from_dict({**good, **change})
    with pytest.raises(BadStateDict):
        GAME.from_dict({key: value for key, value in good.items() if key != "log"})


# --- encoding ------------------------------------------------------------------------------------------


def test_every_one_of_the_534_inputs_is_where_the_seed_says():
    trees = {
        0: (A, 3),
        1: (A, 2, True),
        7: (A, 1),
        19: (A, 0, True),
        2: (B, 3, True),
        8: (B, 2),
        20: (B, 1),
        21: (B, 0),
    }
    state = position(
        trees, sun=(12, 50), day=9, nutrients=17, score=(24, 7), holes=(11, 28), waiting=(False, True)
    )
    state = dataclasses.replace(state, gathered=(30, 41))
    assert SPEC.inputs == {"obs": (534,)}
    mine, theirs = 37, 259  # the two 222-wide player blocks
    expected = np.zeros(534, dtype=np.float32)
    expected[[0, 1, 7, 19, 2, 8, 20, 21, 11, 28]] = 1  # blocked: trees and holes
    expected[mine + 1] = expected[mine + 19] = 1  # my dormant trees (on 1 and 19)
    expected[[mine + 37 + 19, mine + 74 + 7, mine + 111 + 1, mine + 148 + 0]] = 1  # my sizes 0, 1, 2, 3
    expected[mine + 185 + 12 - 1] = 1  # my sun 12
    expected[theirs + 2] = 1  # their dormant tree
    expected[[theirs + 37 + 21, theirs + 74 + 20, theirs + 111 + 8, theirs + 148 + 2]] = 1
    expected[theirs + 185 + 37 - 1] = 1  # their sun 50, capped at 37
    expected[481 + 9] = 1  # day 9
    expected[505 + 17] = 1  # nutrients 17
    expected[526], expected[527] = 0, 1  # I have not waited, they have
    expected[528:534] = [0.24, 0.12, 0.30, 0.07, 0.50, 0.41]  # score, sun, gathered / 100: mine, theirs
    np.testing.assert_array_equal(encode(state, A)["obs"], expected)

    swapped = np.zeros(534, dtype=np.float32)  # player B's view: the same board, the blocks swapped
    swapped[:37] = expected[:37]
    swapped[mine : mine + 222], swapped[theirs : theirs + 222] = expected[theirs:481], expected[mine:theirs]
    swapped[481:526] = expected[481:526]
    swapped[526], swapped[527] = 1, 0
    swapped[528:534] = [0.07, 0.50, 0.41, 0.24, 0.12, 0.30]
    np.testing.assert_array_equal(encode(state, B)["obs"], swapped)


def test_sun_zero_sets_no_slot_and_the_last_day_and_full_nutrients_fit():
    obs = encode(position(day=23, nutrients=20, sun=(0, 1)), A)["obs"]
    assert not obs[37 + 185 : 37 + 222].any()  # 0 sun
    assert obs[259 + 185] == 1  # their 1 sun: the first slot
    assert obs[481 + 23] == 1
    assert obs[505 + 20] == 1
    end = frame(position(day=23), "WAIT", "WAIT")  # day 24 (the end) shows as the last day
    assert encode(end, A)["obs"][504] == 1


# --- view and render -------------------------------------------------------------------------------------


def test_view_has_what_a_hex_viewer_draws():
    state = frame(position({0: (A, 3), 4: (B, 1), 30: (B, 1)}, sun=(6, 4), day=3), "COMPLETE 0", "SEED 4 13")
    shown = json.loads(json.dumps(view(state)))
    assert shown["cells"][13]["tree"] == {"size": 0, "owner": B, "dormant": True, "spooky": False}
    assert shown["cells"][4]["cube"] == [-1, 1, 0]
    assert shown["cells"][4]["richness"] == 3
    assert (shown["day"], shown["sun_direction"], shown["nutrients"]) == (3, 3, 19)
    assert shown["players"][A] == {"sun": 2, "score": 24, "gathered": 0, "waiting": False}
    assert shown["day_actions"] == {"day": 3, "frames": [["COMPLETE 0", "SEED 4 13"]]}
    assert shown["moves"]["37"] == {"cell": None, "commands": {"0": "WAIT", "1": "WAIT"}}
    assert shown["moves"]["30"] == {"cell": 30, "commands": {"1": "GROW 30"}}
    assert shown["to_move"] == [A, B]
    assert shown["final_scores"] is None


def test_render_draws_the_hexagon_and_the_players():
    text = render(position({0: (A, 3), 1: (B, 1, True)}, holes=(11, 28), sun=(3, 4), day=6))
    assert "A3" in text
    assert "B1z~" in text
    assert "#" in text
    assert "player 2: sun 4, score 0" in text


# --- playouts ------------------------------------------------------------------------------------------


def test_playouts_draw_each_state_from_its_own_generator():
    states = [GAME.init(seed, None) for seed in range(4)]
    together = GAME.playouts(states, [np.random.default_rng(seed) for seed in range(4)])
    alone = GAME.playouts(states[2:3], [np.random.default_rng(2)])
    np.testing.assert_array_equal(together[2], alone[0])
    assert set(np.abs(together).ravel()) <= {0.0, 1.0}
    assert (together.sum(axis=1) == 0).all()


def test_playouts_play_out_the_last_frames_by_the_rules():
    """With nothing affordable (a seed each: seeding is not free) both can only WAIT, as in `step`."""
    state = position({0: (A, 1), 1: (A, 0), 19: (B, 3), 20: (B, 0)}, day=23, sun=(0, 0), score=(3, 2))
    assert list(rules.action_commands(state, A)) == [WAIT] == list(rules.action_commands(state, B))
    ended = GAME.step(state, [(WAIT,), (WAIT,)])
    np.testing.assert_array_equal(GAME.playouts([state], [np.random.default_rng(0)])[0], GAME.returns(ended))


# --- the gardener house bot -----------------------------------------------------------------------


def test_the_gardener_completes_the_richest_large_tree_in_the_last_days_or_beyond_its_keep():
    two_large = {0: (A, 3), 20: (A, 3)}  # richness 3 and 1
    assert gardener_action(position(two_large, sun=(8, 0), day=20), A) == 0  # 3 days left: cash in
    kept = position(two_large, sun=(8, 0), day=12)
    assert rules.action_command(kept, A, gardener_action(kept, A))[0] != "COMPLETE"  # kept for their sun
    four_large = {**two_large, 7: (A, 3), 21: (A, 3)}
    assert gardener_action(position(four_large, sun=(8, 0), day=12), A) == 0
    assert gardener_action(position(four_large, sun=(8, 0), day=10), A) != 0  # not before COMPLETE_FROM


def test_the_gardener_grows_the_biggest_tree_that_can_still_be_completed():
    trees = {1: (A, 1), 20: (A, 2)}
    assert gardener_action(position(trees, sun=(20, 0), day=5), A) == 20  # size 2 before size 1
    late = {1: (A, 1)}  # on day 22 a size-1 tree cannot reach size 3 and be completed
    assert gardener_action(position(late, sun=(20, 0), day=22), A) == WAIT
    assert gardener_action(position({1: (A, 2)}, sun=(20, 0), day=22), A) == 1


def test_the_gardener_seeds_only_while_free_before_day_19_and_away_from_its_trees():
    # A size-2 tree on the centre cell, no sun for a grow: a free seed lands in ring 2 (distance 2,
    # richness 2), the lowest such cell; ring 1 would be shaded by the tree itself.
    big = {0: (A, 2)}
    assert gardener_action(position(big, day=5), A) == 7
    assert gardener_action(position(big, day=19), A) == WAIT
    with_seed = {0: (A, 2), 30: (A, 0, True)}  # a seed already owned: the next one would cost sun
    assert gardener_action(position(with_seed, sun=(0, 0), day=5), A) == WAIT
