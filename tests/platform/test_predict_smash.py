"""/predict and `arena bot check` on Smash the Code, a simultaneous-move game: tiny network bots
(greedy, sample, mcts) and the house bots (random, uct, chain) answer a legal placement for either
seat, from actions or from a state; malformed states and impossible positions get a clear 422."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from predict_checks import (
    assert_422s,
    assert_bot_check_passes,
    broken_states,
    network_bots,
    predict_for_each_seat,
    random_position,
)
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.registry import get_game
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot
from arena_platform.store.ladders import ensure_ladder

GAME = get_game("smash")
SEED = 5
MIDDLE_STEPS = 8  # turns played before the position asked about
NETWORK_PLAYERS = ("greedy", "sample", "mcts")
HOUSE_PLAYERS = ("random", "uct", "chain", "lookahead")


@pytest.fixture
def smash_bots(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> dict[str, int]:
    """Player kind -> the id of a bot of the Smash ladder playing that way."""
    with session(engine) as db:
        ladder = ensure_ladder(db, game="smash", simulations=8)
        found = network_bots(db, blobs, ladder, onnx_bot, NETWORK_PLAYERS)
        house = {bot.name: bot.id for bot in db.exec(select(Bot).where(Bot.ladder_id == ladder.id))}
        found |= {name: house[name] for name in HOUSE_PLAYERS}
        db.commit()
    return found


def _middle() -> tuple[list[list[list[int]]], Any]:
    """The joint actions of a random game's first MIDDLE_STEPS turns, and the state they reach."""
    return random_position(GAME, SEED, MIDDLE_STEPS)


@pytest.mark.parametrize("player", NETWORK_PLAYERS + HOUSE_PLAYERS)
def test_predict_places_the_pair_for_each_seat_from_actions_and_from_a_state(client, smash_bots, player):
    for answer in predict_for_each_seat(client, GAME, smash_bots[player], SEED, _middle()):
        if player not in (
            "random",
            "chain",
            "lookahead",
        ):  # the others explain themselves with their top placements
            assert answer["insight"]["top"][0]["share"] > 0


def _bad_states() -> list[tuple[str, Any]]:
    """(what is wrong, a state dict) pairs, each one field of a real state broken."""
    _, state = _middle()
    good = GAME.to_dict(state)
    standing = ["......"] * 8 + ["1.....", "1.....", "1.....", "1....."]
    changes: list[tuple[str, dict[str, Any]]] = [
        ("a key missing", {"turn": None}),
        ("an unknown key", {"extra": 1}),
        ("a turn past the game", {"turn": 999}),
        ("a colour out of range", {"pairs": [[6, 1]] * len(good["pairs"])}),
        ("too few pairs", {"pairs": good["pairs"][:-1]}),
        ("a floating block", {"wells": [["1....."] + ["......"] * 11, good["wells"][1]]}),
        ("a group of four left standing", {"wells": [standing, good["wells"][1]]}),
        ("a well of 5 columns", {"wells": [["....."] * 12, good["wells"][1]]}),
        ("a negative score", {"scores": [-1, 0]}),
        ("an unknown loss", {"losses": ["fell asleep", ""]}),
        ("a config that is no dict", {"config": []}),
        ("another width", {"config": {**good["config"], "WIDTH": 7}}),
    ]
    return broken_states(good, changes)


@pytest.mark.parametrize(("what", "state"), _bad_states(), ids=[what for what, _ in _bad_states()])
def test_a_malformed_smash_state_is_a_clear_422(client, smash_bots, what, state):
    response = client.post("/api/v1/predict", json={"bot_id": smash_bots["greedy"], "state": state})
    assert response.status_code == 422, (what, response.text)
    assert response.json()["code"] == "bad_state"
    assert "smash" in response.json()["detail"]


def test_bad_smash_positions_and_seats_are_clear_422s(client, smash_bots):
    over = play(GAME, [RandomPlayer(), RandomPlayer()], seed=SEED).final_state
    cases = [
        ({"actions": [[[7]]]}, "illegal_action"),  # one placement where both players place
        ({"actions": [[[22], [7]]]}, "illegal_action"),  # past the 22 placements
        ({"actions": [[[7], [7, 0]]]}, "illegal_action"),  # two indices for a one-head game
        ({"state": GAME.to_dict(over)}, "game_over"),
        ({"player": 2}, "not_to_move"),
        ({"config": {"TURN_LIMIT": 0}}, "bad_config"),
    ]
    assert_422s(client, smash_bots["greedy"], cases)


@pytest.mark.parametrize("player", NETWORK_PLAYERS)
def test_bot_check_of_a_smash_bot(onnx_bot, tmp_path, capsys, player):
    metadata = {"name": f"smash-{player}", "player": player}
    assert_bot_check_passes(onnx_bot("smash", metadata=metadata), "smash", tmp_path, capsys)
