"""What the /predict tests of the games share: tiny network bots on a ladder, a position reached by
random play, a prediction asked for each seat both ways, state dicts broken one field at a time,
requests that must each be a 422 with their code, and `arena bot check` passing on a tiny bot."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from arena_bots.manifest import Manifest
from arena_bots.match import play
from arena_bots.players import RandomPlayer
from arena_games.api import Game
from arena_platform import cli
from arena_platform.blobs import BlobStore
from arena_platform.models import Ladder
from arena_platform.store import bots, users


def network_bots(
    db: Session, blobs: BlobStore, ladder: Ladder, onnx_bot: Callable[..., bytes], players: Sequence[str]
) -> dict[str, int]:
    """Player kind -> the id of a tiny network bot of `ladder` playing that way (seeds 0, 1, ...)."""
    owner, _ = users.create_user(db, name=f"{ladder.game}-author")
    return {
        player: bots.create_network_bot(
            db,
            ladder_id=ladder.id,
            owner_id=owner.id,
            manifest=Manifest(game=ladder.game, game_version=ladder.game_version, name=player, player=player),
            report={},
            model_sha256=blobs.put(onnx_bot(ladder.game, seed=index)),
        ).id
        for index, player in enumerate(players)
    }


def random_position(game: Game, seed: int, steps: int) -> tuple[list[list[list[int]]], Any]:
    """The joint actions of a random game's first `steps` steps, and the state they reach."""
    played = play(game, [RandomPlayer(), RandomPlayer()], seed=seed).replay.steps[:steps]
    actions = [[list(action) for action in step.actions] for step in played]
    state = game.init(seed, None)
    for joint in actions:
        state = game.step(state, [tuple(action) for action in joint])
    return actions, state


def predict_for_each_seat(
    client: TestClient, game: Game, bot_id: int, seed: int, position: tuple[list[list[list[int]]], Any]
) -> list[dict[str, Any]]:
    """Asks /predict for every seat to move in `position` (actions, state), given both as actions
    and as a state; checks the two answers agree on a legal action of that seat; returns them."""
    actions, state = position
    answers = []
    for seat in game.to_move(state):
        asked = {"bot_id": bot_id, "seed": seed, "player": seat}
        from_actions = client.post("/api/v1/predict", json={**asked, "actions": actions})
        from_state = client.post("/api/v1/predict", json={**asked, "state": game.to_dict(state)})
        assert from_actions.status_code == from_state.status_code == 200, from_actions.text
        answer = from_actions.json()
        assert (answer["game"], answer["player"]) == (game.name, seat)
        assert from_state.json()["action"] == answer["action"]  # the same position, the same seed
        assert game.legal_masks(state, seat)[0][answer["action"][0]]
        answers.append(answer)
    return answers


def broken_states(good: dict[str, Any], changes: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any]]:
    """(what is wrong, `good` with the change) per change; a field changed to None is removed."""
    broken = []
    for what, change in changes:
        data = {**good, **change}
        broken.append((what, {key: value for key, value in data.items() if value is not None}))
    return broken


def assert_422s(client: TestClient, bot_id: int, cases: list[tuple[dict[str, Any], str]]) -> None:
    """Each (request fields, code): /predict for `bot_id` with those fields answers 422 and that code."""
    for fields, code in cases:
        response = client.post("/api/v1/predict", json={"bot_id": bot_id, **fields})
        assert (response.status_code, response.json()["code"]) == (422, code), (fields, response.text)


def assert_bot_check_passes(
    model: bytes, game: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`arena bot check` of `model` (its manifest inside) for `game` is OK, with no warning, and
    ran the model (the runtime check on positions of random games)."""
    path = folder / "bot.onnx"
    path.write_bytes(model)
    assert cli.main(["bot", "check", str(path), "--game", game]) == 0
    report = capsys.readouterr().out
    assert report.startswith("bot check: OK")
    assert "runtime" in report
    assert "warning" not in report
