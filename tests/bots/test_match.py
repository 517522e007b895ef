"""The match loop: forfeits are decided here and only here; players are asked in batches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from arena_bots.match import Decision, MatchSetup, PlatformFault, play, play_many
from arena_bots.players import RandomPlayer
from arena_games.api import Game, GameSpec, IllegalAction
from arena_games.bobail import GAME as BOBAIL

# --- Rock-paper-scissors: the smallest simultaneous-move game, built on the public contract. ---
# A state is the tuple of throws so far: () before the step, (a, b) after it.


def _rps_step(state, joint):
    if state or len(joint) != 2 or any(len(action) != 1 or action[0] not in (0, 1, 2) for action in joint):
        raise IllegalAction(f"bad joint {joint!r} in state {state!r}")
    return (joint[0][0], joint[1][0])


def _rps_returns(state):
    if not state:
        return (0.0, 0.0)
    margin = (state[0] - state[1]) % 3  # 1: seat 0 wins, 2: seat 1 wins
    return {0: (0.0, 0.0), 1: (1.0, -1.0), 2: (-1.0, 1.0)}[margin]


RPS = Game(
    spec=GameSpec(
        name="rps",
        version=1,
        title="Rock paper scissors",
        num_players=2,
        inputs={"none": (1,)},
        heads={"throw": 3},
        max_length=1,
        simultaneous=True,
    ),
    init=lambda seed, config: (),
    to_move=lambda state: () if state else (0, 1),
    legal_masks=lambda state, player: (np.ones(3, dtype=bool),),
    step=_rps_step,
    returns=_rps_returns,
    end_reason=lambda state: "thrown" if state else "",
    encode=lambda state, player: {"none": np.zeros(1, dtype=np.float32)},
    render=lambda state: repr(state),
    view=lambda state: {"throws": list(state)},
    to_dict=lambda state: {"throws": list(state)},
    from_dict=lambda data: tuple(data["throws"]),
    opening=lambda seed, config: (),
)


@dataclass
class Scripted:
    """Answers every request with the same decision, and counts how it was asked."""

    decision: Decision
    name: str = "scripted"
    calls: int = 0
    requests: int = 0

    def decide(self, game, requests):
        self.calls += 1
        self.requests += len(requests)
        return [self.decision] * len(requests)


def rock():
    return Scripted(Decision(action=(0,)))


def test_legal_moves_are_played_and_scored():
    result = play(RPS, [Scripted(Decision(action=(1,))), rock()], seed=3)  # paper beats rock
    assert result.returns == (1.0, -1.0)
    assert result.forfeit is None
    assert result.end_reason == "thrown"
    assert [step.actions for step in result.replay.steps] == [((1,), (0,))]


@pytest.mark.parametrize(
    ("decision", "cause"),
    [
        (Decision(action=(3,)), "illegal action 3 on head 'throw'"),
        (Decision(action=(0, 0)), "malformed action"),
        (Decision(action=("rock",)), "malformed action"),
        (Decision(action=None, fault="model timed out"), "model timed out"),
    ],
)
def test_a_bad_decision_forfeits_the_game(decision, cause):
    result = play(RPS, [rock(), Scripted(decision)], seed=0)
    assert result.returns == (1.0, -1.0)
    assert result.forfeit.player == 1
    assert cause in result.forfeit.cause
    assert result.end_reason.startswith("player 2 forfeits")
    assert result.replay.steps == ()


def test_a_raising_or_miscounting_player_is_a_platform_fault_not_a_forfeit():
    class Raising:
        name = "raising"

        def decide(self, game, requests):
            raise RuntimeError("a bug in Arena's own player code")

    class Silent:
        name = "silent"

        def decide(self, game, requests):
            return []

    with pytest.raises(PlatformFault, match="'raising' raised RuntimeError: a bug in Arena's own player"):
        play(RPS, [Raising(), rock()], seed=0)
    with pytest.raises(PlatformFault, match="'silent' answered 0 decisions for 1 requests"):
        play(RPS, [rock(), Silent()], seed=0)


def test_a_platform_fault_raised_inside_a_player_stops_the_batch_untouched_by_its_catch_alls():
    class Guarded:  # as the players are: every Exception of the model becomes a fault
        name = "guarded"

        def decide(self, game, requests):
            try:
                raise PlatformFault("the model host was closed by its owner")
            except Exception:  # pragma: no cover - a PlatformFault is no Exception
                return [Decision(action=None, fault="swallowed")] * len(requests)

    with pytest.raises(PlatformFault, match="closed by its owner"):
        play_many(RPS, [MatchSetup(players=(Guarded(), rock()), seed=seed) for seed in range(3)])


def test_before_round_runs_before_every_round_and_can_stop_the_batch():
    rounds = []
    setups = [MatchSetup(players=(rock(), rock()), seed=seed) for seed in range(2)]
    play_many(RPS, setups, before_round=lambda: rounds.append("round"))
    assert rounds == ["round"]  # one simultaneous throw: one round for both games

    def shutting_down():
        raise PlatformFault("the worker is shutting down")

    with pytest.raises(PlatformFault, match="shutting down"):
        play_many(RPS, setups, before_round=shutting_down)


def test_when_every_acting_player_forfeits_the_game_is_drawn():
    bad = Scripted(Decision(action=None, fault="crashed"))
    result = play(RPS, [bad, bad], seed=0)
    assert result.returns == (0.0, 0.0)
    assert result.forfeit is None
    assert result.end_reason.startswith("every player forfeits")


def test_each_player_object_is_asked_once_per_round_for_all_its_games():
    shared, other = rock(), rock()
    setups = [MatchSetup(players=(shared, other), seed=seed) for seed in range(5)]
    results = play_many(RPS, setups)
    assert len(results) == 5
    assert (shared.calls, shared.requests) == (1, 5)
    assert (other.calls, other.requests) == (1, 5)


class Counting(RandomPlayer):
    """A random player that records how many requests each call brought."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.sizes: list[int] = []

    def decide(self, game, requests):
        self.sizes.append(len(requests))
        return super().decide(game, requests)


def test_the_seat_swapped_games_of_an_alternating_game_fall_into_step_and_play_the_same():
    first, second = Counting("first"), Counting("second")
    setups = [MatchSetup(players=(first, second), seed=3), MatchSetup(players=(second, first), seed=3)]
    results = play_many(BOBAIL, setups)
    shorter = min(len(result.replay.steps) for result in results)
    # Round 1 moves `first` in game 0; then both games wait on the same player, round after round.
    calls = first.sizes + second.sizes
    assert first.sizes[0] == 1
    assert sum(calls) == sum(len(result.replay.steps) for result in results)
    assert calls.count(2) >= shorter - 2
    alone = [play_many(BOBAIL, [setup])[0] for setup in setups]
    assert [result.replay for result in results] == [result.replay for result in alone]


def test_seats_get_their_own_generators_seeded_from_the_match_seed():
    seen = []

    class Drawing:
        name = "drawing"

        def decide(self, game, requests):
            seen.extend(request.rng.integers(1 << 30) for request in requests)
            return [Decision(action=(0,))] * len(requests)

    play(RPS, [Drawing(), Drawing()], seed=11)
    play(RPS, [Drawing(), Drawing()], seed=11)
    assert seen[:2] == seen[2:]
    assert seen[0] != seen[1]


def test_wrong_number_of_players_is_refused():
    with pytest.raises(ValueError, match="needs 2 players"):
        play(RPS, [rock()], seed=0)
