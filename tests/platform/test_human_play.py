"""The rules of a game against a person (arena_platform.human_play), without HTTP: simultaneous steps,
the bot's forfeit, and games that re-play the same however their moves were spread."""

from __future__ import annotations

import pytest

from arena_bots.match import Decision, Request
from arena_games.registry import get_game
from arena_games.replay import Replay
from arena_platform import human_play

SPRING = get_game("spring2021")


def _random_bot(request: Request) -> Decision:
    return Decision(SPRING.random_action(request.state, request.player, request.rng), insight={"value": 0.0})


def _play(moves: int) -> Replay:
    replay = human_play.new_game(SPRING, seed=4, human_seat=0, names=["guest", "bot"], bot_move=_random_bot)
    for _ in range(moves):
        state = human_play.current_state(SPRING, replay)
        action = (human_play.legal_actions(SPRING, state, 0)[0][-1],)
        replay = human_play.human_move(SPRING, replay, human_seat=0, action=action, bot_move=_random_bot)
    return replay


def test_a_simultaneous_step_joins_the_persons_action_and_the_bots():
    replay = _play(6)
    joint = [step for step in replay.steps if len(step.actions) == 2]
    assert joint, "both seats moved together at least once"
    assert all(step.insights[0] is None for step in joint)  # the person's side carries no search
    assert all(step.insights[1] == {"value": 0.0} for step in joint)
    state = human_play.current_state(SPRING, replay)
    assert 0 in SPRING.to_move(state)  # the bot played on alone until the person was to move
    assert _play(6) == replay  # the bot's draws come from the seed and the step, not from the calls


def test_a_move_that_is_not_legal_is_refused_and_a_bot_without_a_move_forfeits():
    replay = human_play.new_game(SPRING, seed=4, human_seat=0, names=["guest", "bot"], bot_move=_random_bot)
    state = human_play.current_state(SPRING, replay)
    illegal = next(a for a in range(SPRING.spec.heads["move"]) if not SPRING.legal_masks(state, 0)[0][a])
    with pytest.raises(human_play.MoveRefused, match="illegal action"):
        human_play.human_move(SPRING, replay, human_seat=0, action=(illegal,), bot_move=_random_bot)
    legal = (human_play.legal_actions(SPRING, state, 0)[0][0],)
    faulty = human_play.human_move(
        SPRING, replay, human_seat=0, action=legal, bot_move=lambda request: Decision(None, fault="timed out")
    )
    assert human_play.is_over(faulty)
    assert faulty.returns == (1.0, -1.0)
    assert faulty.end_reason == "player 2 forfeits: timed out"
    with pytest.raises(human_play.MoveRefused, match="over"):
        human_play.human_move(SPRING, faulty, human_seat=0, action=legal, bot_move=_random_bot)
