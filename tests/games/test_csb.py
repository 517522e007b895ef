"""Coders Strike Back: golden turns worked by hand from ../shared/games/csb.md, physics invariants,
a differential test against races printed by the community referee (tests/games/data), the action
heads, the inputs, the batched engine against the one-race step, the house racer and the heuristic
blocker.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from arena_games.api import BadConfig, BadStateDict, GameError, IllegalAction
from arena_games.csb import GAME, SPEC, physics, rules
from arena_games.csb.encoding import MAX_DISTANCE, MAX_SPEED, encode
from arena_games.csb.playouts import RandomHeads, blocker_actions, play_races, playouts, racer_actions
from arena_games.csb.render import render, view
from arena_games.csb.rules import CsbState, Pod

DATA = Path(__file__).parent / "data"
DEGREE = math.pi / 180
FAR_CHECKPOINTS = ((15000, 500), (15000, 8500), (500, 8500))  # out of the way of the pods below


def race(*pods: Pod, turn: int = 1, timeouts=(100, 100), checkpoints=FAR_CHECKPOINTS, laps=3) -> CsbState:
    """A race after `turn` turns; pods not given wait in the far corners."""
    parked = (
        Pod(500, 500, 0, 0, 0),
        Pod(500, 2500, 0, 0, 0),
        Pod(8000, 500, 0, 0, 0),
        Pod(8000, 2500, 0, 0, 0),
    )
    return CsbState(
        laps=laps, checkpoints=checkpoints, pods=(*pods, *parked[len(pods) :]), turn=turn, timeouts=timeouts
    )


def still(pod: Pod) -> str:
    """A command that neither turns nor thrusts: the target on the pod itself."""
    return f"{pod.x!r} {pod.y!r} 0"


def turn(state: CsbState, *lines: str) -> CsbState:
    """One turn from referee command lines for the first pods; the others stay still."""
    return rules.step_commands(state, [*lines, *(still(pod) for pod in state.pods[len(lines) :])])


def pod_numbers(pod: Pod) -> tuple[float, float, float, float]:
    return (pod.x, pod.y, pod.vx, pod.vy)


# --- golden turns (spec §4-§8) -------------------------------------------------------------------------


def test_full_thrust_from_rest_moves_100_and_keeps_85():
    state = turn(race(Pod(1000, 4000, 0, 0, 0)), "9000 4000 100")
    assert pod_numbers(state.pods[0]) == (1100, 4000, 85, 0)


def test_the_first_turn_faces_the_target_exactly_even_behind():
    start = rules.start(((8000, 4500), (14000, 4500), (2000, 1000)))  # pods face -1 degree
    pod = start.pods[0]
    state = turn(
        start, f"{pod.x - 5000:.0f} {pod.y:.0f} 0", f"{start.pods[1].x:.0f} {start.pods[1].y + 3000:.0f} 0"
    )
    assert state.pods[0].angle == -math.pi  # 180 degrees at once (the referee's diffAngle says -180)
    assert state.pods[1].angle == pytest.approx(math.pi / 2)  # due south (y points down)


def test_a_first_turn_target_on_the_pod_keeps_minus_one_degree_then_turns_18_from_there():
    start = rules.start(((8000, 4500), (14000, 4500), (2000, 1000)))
    state = turn(start, still(start.pods[0]))
    assert state.pods[0].angle == rules.START_ANGLE
    state = turn(state, f"{state.pods[0].x:.0f} {state.pods[0].y + 5000:.0f} 0")
    assert state.pods[0].angle == pytest.approx(17 * DEGREE)


def test_rotation_is_capped_at_18_degrees():
    state = turn(race(Pod(1000, 4000, 0, 0, 0)), "1000 9000 100")  # the target is 90 degrees off
    assert state.pods[0].angle == pytest.approx(18 * DEGREE)
    assert pod_numbers(state.pods[0]) == (1095, 4031, 80, 26)  # 100 (cos 18, sin 18), rounded, x 0.85


def test_an_exact_180_degree_turn_goes_by_minus_18_as_in_the_referee():
    """§12.1: atan2 says +180 for due west, and the referee's diffAngle turns that into -180."""
    state = turn(race(Pod(1000, 4000, 0, 0, 0)), "0 4000 0")
    assert state.pods[0].angle == -18 * DEGREE


def test_boost_is_650_once_then_a_second_boost_is_200():
    state = turn(race(Pod(1000, 4000, 0, 0, 0)), "9000 4000 BOOST")
    assert pod_numbers(state.pods[0]) == (1650, 4000, 552, 0)
    assert state.pods[0].boosted
    state = turn(state, "9000 4000 BOOST")  # §12.6: the referee's 200
    assert pod_numbers(state.pods[0]) == (1650 + 752, 4000, 639, 0)


def test_shield_stops_thrust_that_turn_and_the_next_three():
    state = turn(race(Pod(1000, 4000, 0, 0, 0)), "9000 4000 SHIELD")
    timers = [state.pods[0].shield]
    for _ in range(4):
        assert state.pods[0].vx == 0
        state = turn(state, "9000 4000 100")
        timers.append(state.pods[0].shield)
    assert timers == [3, 2, 1, 0, 0]
    assert state.pods[0].vx == 85


def test_a_head_on_collision_of_equal_masses_swaps_speeds():
    """Contact at t = 0.5 (1000 apart, closing at 400): half-impulse 200 >= 120, so fully elastic."""
    state = turn(race(Pod(1000, 4000, 200, 0, 0), Pod(2000, 4000, -200, 0, 0)))
    assert [pod_numbers(pod) for pod in state.pods[:2]] == [(1000, 4000, -170, 0), (2000, 4000, 170, 0)]


def test_a_slow_head_on_collision_gets_the_minimum_impulse():
    """Closing at 100: the half-impulse is 50, so the second half is raised to 120 (J = 170)."""
    state = turn(race(Pod(1000, 4000, 50, 0, 0), Pod(1850, 4000, -50, 0, 0)))
    assert [pod_numbers(pod) for pod in state.pods[:2]] == [(965, 4000, -102, 0), (1885, 4000, 102, 0)]


def test_a_pod_shielded_this_turn_weighs_ten_times_as_much():
    """Contact at t = 0.5: f = 400 / (1/10 + 1) = 363.6, J = 727.3; A 200 -> 127.3, B -200 -> 527.3."""
    state = race(Pod(1000, 4000, 200, 0, 0), Pod(2000, 4000, -200, 0, 0))
    state = turn(state, "1000 4000 SHIELD")
    assert [pod_numbers(pod) for pod in state.pods[:2]] == [(1164, 4000, 108, 0), (2164, 4000, 448, 0)]


def test_a_glancing_collision_below_the_minimum_impulse():
    """A at (1700, 5000) going east at 300 grazes B at rest at (2000, 5790): contact at t = 0.57968,
    normal (0.15803, 0.98750), half-impulse 23.64 < 120, so J = 143.64."""
    state = turn(race(Pod(1700, 5000, 300, 0, 0), Pod(2000, 5790, 0, 0, 0)))
    assert [pod_numbers(pod) for pod in state.pods[:2]] == [(1990, 4940, 235, -120), (2010, 5850, 19, 120)]


def test_a_state_remembers_the_pod_pairs_that_touched_in_its_last_turn_for_the_viewer():
    bumped = turn(race(Pod(1000, 4000, 200, 0, 0), Pod(2000, 4000, -200, 0, 0)))
    assert bumped.collisions == ((0, 1),)
    assert GAME.view(bumped)["collisions"] == [[0, 1]]
    assert GAME.from_dict(json.loads(json.dumps(GAME.to_dict(bumped)))) == bumped
    assert turn(bumped).collisions == ()  # the pods drift apart: the next turn has none
    without = {key: value for key, value in GAME.to_dict(bumped).items() if key != "collisions"}
    assert GAME.from_dict(without).collisions == ()  # dicts written before the field still load
    for broken in ([[1, 0]], [[0, 1], [0, 1]], [[0, 4]], [[0, True]], [[[0], 1]], "01"):
        with pytest.raises(BadStateDict):
            GAME.from_dict({**GAME.to_dict(bumped), "collisions": broken})


def test_pods_without_relative_speed_never_collide_and_nothing_raises():
    """§12.8: the referee's 0/0 compares as no collision."""
    state = turn(race(Pod(1000, 4000, 100, 0, 0), Pod(1900, 4000, 100, 0, 0)))
    assert [pod_numbers(pod) for pod in state.pods[:2]] == [(1100, 4000, 85, 0), (2000, 4000, 85, 0)]


@pytest.mark.parametrize(("miss", "passed"), [(599, 1), (601, 0)])
def test_a_checkpoint_is_passed_when_the_segment_comes_within_600_mid_turn(miss, passed):
    """The pod starts and ends 2000 x-units from checkpoint 1 (15000, 500); only its path comes near."""
    pod = Pod(13000, 500 - miss, 4000, 0, 0)
    checkpoints = ((500, 8500), (15000, 500), (15000, 8500))  # the next one is checkpoint 1
    state = turn(race(pod, checkpoints=checkpoints, turn=5, timeouts=(50, 50)))
    assert state.pods[0].passes == passed
    assert state.timeouts == ((99, 49) if passed else (49, 49))  # §12.2: 100, minus this turn's 1


def test_a_player_loses_99_turns_after_its_last_pass_both_at_once_player_0():
    state = rules.start(((8000, 4500), (14000, 4500), (2000, 1000)))
    for _ in range(99):
        state = turn(state)
    assert (state.is_over, state.timeouts) == (False, (1, 1))
    state = turn(state)
    assert state.turn == 100
    assert rules.returns(state) == (-1.0, 1.0)  # §12.7: player 0 loses
    assert (
        rules.end_reason(state)
        == "player 1 timed out (100 turns without passing a checkpoint): player 2 wins"
    )


def test_only_the_player_that_timed_out_loses():
    state = turn(race(turn=30, timeouts=(40, 1)))
    assert (state.winner, state.ending) == (0, physics.TIMED_OUT)


def test_the_first_pod_to_finish_wins_and_a_tie_goes_to_player_0():
    """Pods 0 and 2 are one pass from the goal; each path comes 541 from checkpoint 0, 900 apart."""
    checkpoints = ((2000, 4000), (8000, 4000), (14000, 4000))
    goal = 3 * len(checkpoints) - 1  # one pass to go: checkpoint 0 again
    parked = (Pod(9000, 8000, 0, 0, 0, 3), Pod(9000, 500, 0, 0, 0, 3))
    racer, rival = Pod(2900, 3550, -600, 0, math.pi, goal), Pod(1100, 4450, 600, 0, 0, goal)
    both = turn(race(racer, parked[0], rival, parked[1], checkpoints=checkpoints))
    assert (both.winner, both.ending, both.pods[0].passes, both.pods[2].passes) == (0, physics.FINISHED, 9, 9)
    alone = turn(race(Pod(2900, 3550, 0, 0, 0, goal), parked[0], rival, parked[1], checkpoints=checkpoints))
    assert (alone.winner, rules.end_reason(alone)) == (1, "player 2 finished the race and wins")


def test_after_500_turns_the_furthest_pod_wins():
    ahead = Pod(5000, 4000, 0, 0, 0, 4)
    state = turn(race(Pod(1000, 4000, 0, 0, 0, 3), Pod(1000, 5000, 0, 0, 0, 2), ahead, turn=499))
    assert (state.winner, state.ending, state.turn) == (1, physics.TURN_CAP, 500)
    assert GAME.to_move(state) == ()
    assert rules.end_reason(state) == "player 2 was furthest after 500 turns and wins"


# --- invariants -------------------------------------------------------------------------------------------


def test_a_bounce_conserves_momentum_and_an_elastic_one_energy():
    rng = np.random.default_rng(7)
    races = rules.to_races([race(Pod(0, 0, 0, 0, 0), Pod(800, 0, 0, 0, 0))] * 200)
    races.x[:, 1], races.y[:, 1] = rng.uniform(-800, 800, 200), 0.0
    races.y[:, 1] = np.sqrt(640000 - races.x[:, 1] ** 2) * rng.choice([-1, 1], 200)
    races.vx[:, :2], races.vy[:, :2] = rng.uniform(-600, 600, (200, 2)), rng.uniform(-600, 600, (200, 2))
    races.shield[:, 0] = rng.choice([0, 4], 200)
    mass = np.where(races.shield[:, :2] == 4, 10.0, 1.0)
    before = [(mass * races.vx[:, :2]).sum(1), (mass * races.vy[:, :2]).sum(1)]
    energy = (mass * (races.vx[:, :2] ** 2 + races.vy[:, :2] ** 2)).sum(1)
    nx, ny = races.x[:, 1] - races.x[:, 0], races.y[:, 1] - races.y[:, 0]
    half = (
        (nx * (races.vx[:, 0] - races.vx[:, 1]) + ny * (races.vy[:, 0] - races.vy[:, 1]))
        / 800
        / (1 / mass[:, 0] + 1 / mass[:, 1])
    )
    physics.bounce(races, np.arange(200), np.zeros(200, dtype=int), np.ones(200, dtype=int))
    after = [(mass * races.vx[:, :2]).sum(1), (mass * races.vy[:, :2]).sum(1)]
    np.testing.assert_allclose(after, before, atol=1e-9)
    elastic = half >= physics.MIN_IMPULSE
    assert elastic.sum() > 20
    np.testing.assert_allclose(
        (mass * (races.vx[:, :2] ** 2 + races.vy[:, :2] ** 2)).sum(1)[elastic], energy[elastic]
    )


def test_positions_round_half_up_and_speeds_truncate_toward_zero():
    pods = (
        Pod(0.5, -0.5, 0, 0, 0),
        Pod(2002.5, -2.5, 0, 0, 0),
        Pod(9000, 100, -99, 99, 0),
        Pod(12000, 100, -1, 1, 0),
    )
    state = turn(race(*pods))
    assert [pod_numbers(pod) for pod in state.pods] == [
        (1, 0, 0, 0),
        (2003, -2, 0, 0),
        (8901, 199, -84, 84),  # 99 x 0.85 = 84.15
        (11999, 101, 0, 0),  # 1 x 0.85 = 0.85
    ]


# --- the referee's own races ----------------------------------------------------------------------------


def test_races_replay_as_the_community_referee_played_them():
    """Every pod's x, y, vx, vy, angle, next checkpoint, shield, boost, the timeouts and the winner
    of 10 races (collisions, shields, boosts, timeouts, finishes; tests/games/data/csb_referee_harness)."""
    games = json.loads((DATA / "csb_referee_games.json").read_text())
    for game in games:
        state = rules.start([tuple(cp) for cp in game["checkpoints"]])
        for number, (lines, expected, timeouts) in enumerate(
            zip(game["moves"], game["states"], game["timeouts"], strict=True)
        ):
            state = rules.step_commands(state, lines)
            where = f"seed {game['seed']}, turn {number + 1}"
            for pod, numbers in zip(state.pods, expected, strict=True):
                x, y, vx, vy, angle, following, shield, boosted, won = numbers
                assert (pod.x, pod.y, pod.vx, pod.vy) == (x, y, vx, vy), where
                assert pod.angle == pytest.approx(angle, rel=1e-11, abs=1e-11), where
                assert (min(pod.passes + 1, state.goal), pod.shield, int(pod.boosted)) == (
                    following,
                    shield,
                    boosted,
                )
                assert (pod.passes >= state.goal) == won, where
            assert list(state.timeouts) == timeouts, where
        assert state.winner == game["winner"]
        assert len(game["moves"]) == state.turn
    assert {game["winner"] for game in games} == {0, 1}
    assert len(games) == 10


# --- map, heads, inputs ----------------------------------------------------------------------------------


def test_maps_are_seeded_stock_maps_rotated_and_jittered():
    assert rules.init(5) == rules.init(5)
    assert rules.init(5) != rules.init(6)
    for seed in range(40):
        checkpoints = rules.generate_map(seed)
        stock = next(m for m in rules.MAPS if len(m) == len(checkpoints) and _within(m, checkpoints))
        assert stock in rules.MAPS
    with pytest.raises(BadConfig, match="laps"):
        rules.init(1, {"laps": 0})


def _within(stock, checkpoints) -> bool:
    """`checkpoints` is `stock` rotated, every coordinate within 30."""
    return any(
        all(
            abs(a - b) <= rules.JITTER
            for cp, ref in zip(checkpoints, stock[k:] + stock[:k], strict=True)
            for a, b in zip(cp, ref, strict=True)
        )
        for k in range(len(stock))
    )


def test_pods_start_across_the_line_to_checkpoint_1():
    state = rules.start(((8000, 4500), (14000, 4500), (2000, 1000)))
    assert [(pod.x, pod.y) for pod in state.pods] == [(8000, 4000), (8000, 5000), (8000, 3000), (8000, 6000)]


def test_the_heads_turn_from_the_heading_and_boost_only_once():
    assert SPEC.heads == {"angle0": 37, "thrust0": 52, "angle1": 37, "thrust1": 52}
    levels = rules.THRUST_LEVELS
    assert (levels[:3], levels[-1], len(levels)) == ((0, 2, 4), 100, 50)
    start = rules.start(((8000, 4500), (14000, 4500), (2000, 1000)))  # pods at x 8000, y 4000..6000
    state = GAME.step(start, [(18 + 10, 49, 18, 50), (0, 51, 36, 0)])
    line = math.atan2(500, 6000)  # pod 0's line to checkpoint 1: the first turn's heading
    assert state.pods[0].angle == pytest.approx(line + 10 * DEGREE)
    assert state.pods[3].angle == pytest.approx(math.atan2(-1500, 6000) + 18 * DEGREE)
    assert state.pods[1].boosted
    assert state.pods[2].shield == 3
    after = GAME.step(state, [(0, 0, 18, 0), (18, 0, 18, 0)])
    assert after.pods[0].angle == pytest.approx(line - 8 * DEGREE)  # later turns: from the pod's angle
    assert GAME.legal_masks(after, 0)[3][rules.BOOST_ACTION] == 0
    assert GAME.legal_masks(after, 0)[1].all()
    with pytest.raises(IllegalAction, match="boosts once"):
        GAME.step(after, [(18, 0, 18, 50), (18, 0, 18, 0)])


def test_the_inputs_of_a_pod_facing_east_at_rest():
    state = race(
        Pod(1000, 4000, 0, 0, 0),
        Pod(1000, 5000, 0, 0, 0),
        Pod(5000, 4000, 100, 0, 0, 1),
        turn=3,
        checkpoints=((3000, 4000), (9000, 4000), (9000, 8000)),
    )
    pods = encode(state, 0)["pods"]
    assert pods.shape == (2, 16)
    assert pods.dtype == np.float32
    distances = np.array([8000, 0, 8000, 4000, 2000, 0, 4000, 0]) / MAX_DISTANCE  # 3 checkpoints, lead pod
    lead = np.array([100, 0]) / MAX_SPEED, np.array([8000, 4000]) / MAX_DISTANCE  # its speed, its next one
    expected = np.concatenate([[0, 0], distances, *lead, [1, 0]])
    np.testing.assert_allclose(pods[0], expected, atol=1e-6)
    both = GAME.encode_many([state, state], [1, 0])["pods"]  # the batched path, row by row
    np.testing.assert_array_equal(both, np.stack([encode(state, 1)["pods"], pods]))
    with pytest.raises(GameError, match="one player"):
        GAME.encode_many([state, state], [0, 2])


def test_config_state_dicts_and_commands_are_checked():
    state = GAME.init(3)
    assert GAME.from_dict(json.loads(json.dumps(GAME.to_dict(state)))) == state
    for broken in ({}, {**GAME.to_dict(state), "turn": -1}, {**GAME.to_dict(state), "pods": []}):
        with pytest.raises(BadStateDict):
            GAME.from_dict(broken)
    for lines in (["1 2 3"] * 3, ["1 2 fast", "1 2 3", "1 2 3", "1 2 3"], ["1 2 201"] * 4, ["nan 2 0"] * 4):
        with pytest.raises(IllegalAction):
            rules.step_commands(state, lines)
    assert render(state).splitlines()[15].startswith("A  x")
    assert view(state)["moves"]["0"]["thrust0"][-2:] == ["BOOST", "SHIELD"]


# --- the batched engine, playouts and the racer -----------------------------------------------------------


def test_the_batched_engine_plays_each_race_as_the_one_race_step_does():
    states = [GAME.init(seed) for seed in range(6)]
    ended = play_races(rules.to_races(states), (racer_actions, racer_actions))
    for row, start in enumerate(states):
        state = start
        while not state.is_over:
            races = rules.to_races([state])
            state = GAME.step(state, [tuple(int(i) for i in racer_actions(races, p)[0]) for p in (0, 1)])
        assert state == rules.from_races(ended, row, start.laps, start.checkpoints)


def test_playouts_depend_only_on_each_race_generator():
    states = [GAME.init(seed) for seed in range(4)]
    alone = playouts(states[:1], [np.random.default_rng(9)])
    together = playouts(states, [np.random.default_rng(9), *(np.random.default_rng(s) for s in range(3))])
    assert together.shape == (4, 2)
    assert (together[0] == alone[0]).all()
    assert set(np.abs(together).ravel()) == {1.0}


def test_the_racer_finishes_3_laps_and_beats_random_play():
    states = [GAME.init(seed) for seed in range(8)]
    itself = play_races(rules.to_races(states), (racer_actions, racer_actions))
    assert (itself.ending == physics.FINISHED).all()
    assert itself.turn.max() < 400  # about 225 on average: 3 laps of 3-6 checkpoints
    random_play = RandomHeads([np.random.default_rng(seed) for seed in range(8)])
    against_random = play_races(rules.to_races(states), (random_play, racer_actions))
    assert (against_random.winner == 1).all()


def test_the_heuristic_blocker_waits_ahead_of_the_lead_pod_then_charges_and_shields():
    # player 1's lead pod (pod 2) is at (8000, 4500), 8,062 from its next checkpoint (15000, 8500)
    lead = Pod(8000, 4500, 0, 0, 0)
    in_time = race(Pod(500, 500, 0, 0, 0), Pod(9000, 8000, 0, 0, 0), lead)
    ((angle, thrust),) = blocker_actions(rules.to_races([in_time]), 0)
    assert angle == rules.ANGLE_CENTRE  # its waiting point by (15000, 8500) lies east, the way it faces
    assert 0 < thrust < rules.BOOST_ACTION
    # 14,000 from that checkpoint, it is too late for it: it waits by the one after, (500, 8500),
    # on the side facing the lead pod: (1382, 8030), 4.5 degrees right of its heading
    late = race(Pod(500, 500, 0, 0, 0), Pod(1000, 8000, 0, 0, 0), lead)
    ((angle, _),) = blocker_actions(rules.to_races([late]), 0)
    assert angle == rules.ANGLE_CENTRE + 4
    # the lead pod rushes at a blocker 1500 away: charge, and shield as they will touch next turn
    charging = race(Pod(500, 500, 0, 0, 0), Pod(9500, 4500, 0, 0, math.pi), Pod(8000, 4500, 700, 0, 0))
    ((angle, thrust),) = blocker_actions(rules.to_races([charging]), 0)
    assert (angle, thrust) == (rules.ANGLE_CENTRE, rules.SHIELD_ACTION)


def test_the_racer_with_the_heuristic_blocker_beats_two_racers():
    seeds = range(20)
    states = [GAME.init(seed) for seed in seeds]

    def team(races, player, ids):
        heads = racer_actions(races, player)
        heads[:, 2:] = blocker_actions(races, player)
        return heads

    first = play_races(rules.to_races(states), (team, racer_actions))
    second = play_races(rules.to_races(states), (racer_actions, team))
    wins = int((first.winner == 0).sum() + (second.winner == 1).sum())
    assert wins > 20  # of 40: about 60% over many maps
