"""Replays follow the versioned JSON schema and re-play to the exact final state, for every game."""

from __future__ import annotations

import json

import jsonschema
import pytest

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import GAMES, get_game
from arena_games.replay import BadReplay, Replay, json_schema, replay_states


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(GAMES))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replay_reproduces_the_final_state_exactly(name, seed, validator):
    game = get_game(name)
    result = play(game, [RandomPlayer(), RandomPlayer()], seed, opening=game.opening(seed, None))
    text = result.replay.to_json()
    validator.validate(json.loads(text))
    replay = Replay.from_json(text)
    assert replay == result.replay
    final = replay_states(game, replay)[-1]
    assert game.to_dict(final) == game.to_dict(result.final_state)
    assert game.returns(final) == result.returns
    assert replay.opening_length == len(game.opening(seed, None))


def test_the_same_seed_plays_the_same_game():
    game = get_game("bobail")
    first = play(game, [RandomPlayer(), RandomPlayer()], seed=5)
    second = play(game, [RandomPlayer(), RandomPlayer()], seed=5)
    assert first.replay.to_json() == second.replay.to_json()


def test_a_replay_of_another_game_or_with_an_illegal_step_is_refused():
    bobail = get_game("bobail")
    replay = play(bobail, [RandomPlayer(), RandomPlayer()], seed=1).replay
    with pytest.raises(BadReplay, match="is for bobail v1, not pente"):
        replay_states(get_game("pente"), replay)
    data = replay.to_dict()
    data["steps"][0]["actions"] = [[199]]
    with pytest.raises(BadReplay, match="step 0 does not re-play"):
        replay_states(bobail, Replay.from_dict(data))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(schema=99), "schema 99 is not supported"),
        (lambda d: d.pop("steps"), "malformed replay"),
        (lambda d: d.update(seed="7"), "expected int"),
    ],
)
def test_malformed_replays_are_refused_with_a_reason(mutate, message):
    data = play(get_game("bobail"), [RandomPlayer(), RandomPlayer()], seed=1).replay.to_dict()
    mutate(data)
    with pytest.raises(BadReplay, match=message):
        Replay.from_dict(data)
    with pytest.raises(BadReplay, match="not JSON"):
        Replay.from_json("{")
