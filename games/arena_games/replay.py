"""Replays: the versioned JSON record of one game (schema in replay.schema.json).

A replay holds what is needed to reproduce the game exactly through the engine: game, version,
seed, config and every joint action (the opening's included; the first `opening_length` steps were
imposed, not chosen). Per acting player and step it may carry the bot's search insight, an opaque
JSON object for the viewer. A forfeited move is not a step: it is recorded in `result.forfeit`,
so re-playing `steps` always reproduces the final position.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from arena_games.api import Game, GameError, JointAction

SCHEMA_VERSION = 1


class BadReplay(GameError):
    """A replay that does not follow the schema or does not re-play through its engine."""


@dataclass(frozen=True)
class Forfeit:
    """A player lost by failing to give a legal move: `cause` says why, for people."""

    player: int
    cause: str
    action: tuple[int, ...] | None = None  # the rejected action, when there was one


@dataclass(frozen=True)
class Step:
    """One joint action, ordered as `to_move` of the state before it, with optional insights."""

    actions: JointAction
    insights: tuple[dict[str, Any] | None, ...] = ()


@dataclass(frozen=True)
class Replay:
    game: str
    game_version: int
    seed: int
    config: Mapping[str, Any]
    players: tuple[str, ...]  # display names, by seat
    opening_length: int
    steps: tuple[Step, ...]
    returns: tuple[float, ...]
    end_reason: str
    forfeit: Forfeit | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)  # free JSON-safe extras (match ids, budgets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "game": self.game,
            "game_version": self.game_version,
            "seed": self.seed,
            "config": dict(self.config),
            "players": list(self.players),
            "opening_length": self.opening_length,
            "steps": [step_to_dict(step) for step in self.steps],
            "result": {
                "returns": list(self.returns),
                "end_reason": self.end_reason,
                "forfeit": None if self.forfeit is None else _forfeit_to_dict(self.forfeit),
            },
            "meta": dict(self.meta),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Replay:
        """Parse a replay dict; BadReplay names the first thing that is wrong."""
        try:
            if data["schema"] != SCHEMA_VERSION:
                raise BadReplay(
                    f"replay schema {data['schema']!r} is not supported (expected {SCHEMA_VERSION})"
                )
            result = data["result"]
            forfeit = result["forfeit"]
            return cls(
                game=_typed(data["game"], str),
                game_version=_typed(data["game_version"], int),
                seed=_typed(data["seed"], int),
                config=dict(_typed(data["config"], dict)),
                players=tuple(_typed(name, str) for name in data["players"]),
                opening_length=_typed(data["opening_length"], int),
                steps=tuple(_step_from_dict(step) for step in data["steps"]),
                returns=tuple(float(value) for value in result["returns"]),
                end_reason=_typed(result["end_reason"], str),
                forfeit=None if forfeit is None else _forfeit_from_dict(forfeit),
                meta=dict(_typed(data.get("meta", {}), dict)),
            )
        except BadReplay:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise BadReplay(f"malformed replay: {type(error).__name__}: {error}") from None

    @classmethod
    def from_json(cls, text: str) -> Replay:
        return cls.from_dict(parse_json(text))


def parse_json(text: str) -> Any:
    """The JSON value of a replay file's text. BadReplay when it is no strict JSON (NaN and
    Infinity are not JSON) or nests arrays and objects too deep for Python's parser, which raises
    RecursionError near a depth of 1,000 (a replay nests 10 deep)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise BadReplay(f"replay is not JSON: {error}") from None
    except RecursionError:
        raise BadReplay("replay is not JSON this parser reads: its arrays or objects nest too deep") from None


def _refuse_constant(name: str) -> Any:
    raise BadReplay(f"replay is not JSON: {name} is no JSON number")


def replay_states(game: Game, replay: Replay) -> list[Any]:
    """Every state of the game, from the start to the final one, re-played through `game`.

    Raises BadReplay when the replay belongs to another game or version, does not name a player
    and a return per seat, or an action is illegal.
    """
    if (replay.game, replay.game_version) != (game.spec.name, game.spec.version):
        raise BadReplay(
            f"replay is for {replay.game} v{replay.game_version}, not {game.spec.name} v{game.spec.version}"
        )
    seats = game.spec.num_players
    if len(replay.players) != seats or len(replay.returns) != seats:
        raise BadReplay(
            f"replay names {len(replay.players)} players and {len(replay.returns)} returns: "
            f"{game.spec.name} has {seats} seats"
        )
    states = [game.init(replay.seed, replay.config)]
    for index, step in enumerate(replay.steps):
        try:
            states.append(game.step(states[-1], step.actions))
        except GameError as error:
            raise BadReplay(f"step {index} does not re-play: {error}") from None
    return states


def json_schema() -> dict[str, Any]:
    """The replay JSON Schema (draft 2020-12) shipped beside this module."""
    return json.loads(resources.files("arena_games").joinpath("replay.schema.json").read_text())


def _typed(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}: {value!r}")
    return value


def step_to_dict(step: Step) -> dict[str, Any]:
    """A step as the replay JSON holds it (one item of its `steps`)."""
    return {"actions": [list(action) for action in step.actions], "insights": list(step.insights)}


def _step_from_dict(data: Mapping[str, Any]) -> Step:
    actions = tuple(tuple(_typed(index, int) for index in action) for action in data["actions"])
    return Step(actions=actions, insights=tuple(data.get("insights", ())))


def _forfeit_to_dict(forfeit: Forfeit) -> dict[str, Any]:
    action = None if forfeit.action is None else list(forfeit.action)
    return {"player": forfeit.player, "cause": forfeit.cause, "action": action}


def _forfeit_from_dict(data: Mapping[str, Any]) -> Forfeit:
    action = data.get("action")
    return Forfeit(
        player=_typed(data["player"], int),
        cause=_typed(data["cause"], str),
        action=None if action is None else tuple(_typed(index, int) for index in action),
    )
