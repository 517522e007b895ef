"""The conformance check every registered game passes (ARCHITECTURE §2, habit 5).

`check_game` plays seeded random games and checks the contract of `arena_games.api.Game` at
every step: masks well formed and never empty for an acting player, returns only at the end and
summing as the spec says, a JSON view for viewers that decodes the legal actions, `step` never
mutating its input, an exact JSON round trip, encodings of the declared shapes, illegal actions
refused, determinism, openings legal and deterministic, every game ending within `max_length`,
and a batched `encode_many`, where a game has one, encoding every state as `encode` does.
Failures raise ConformanceError naming game, seed and step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from arena_games.api import Game, GameError, IllegalAction


class ConformanceError(AssertionError):
    """A game broke its contract; the message says which game, seed, step and rule."""


def check_game(game: Game, seeds: Iterable[int] = range(20), *, with_openings: bool = True) -> int:
    """Run the whole check over random games from `seeds`; returns the number of steps checked."""
    _check_spec(game)
    steps = 0
    for seed in seeds:
        opening = game.opening(seed, None) if with_openings and seed % 2 else ()
        if opening:
            _check_opening(game, seed, opening)
        steps += _check_random_game(game, seed, opening)
    return steps


def _fail(game: Game, where: str, message: str) -> ConformanceError:
    return ConformanceError(f"{game.name} ({where}): {message}")


def _check_spec(game: Game) -> None:
    spec = game.spec
    if not spec.name or spec.version < 1 or spec.num_players < 1 or spec.max_length < 1:
        raise _fail(game, "spec", "name, version, num_players and max_length must be set")
    for name, shape in spec.inputs.items():
        if not shape or not all(isinstance(size, int) and size > 0 for size in shape):
            raise _fail(game, "spec", f"input {name!r} has a bad shape {shape}")
    if not spec.heads or not all(size > 0 for size in spec.heads.values()):
        raise _fail(game, "spec", f"heads must be non-empty with positive sizes: {dict(spec.heads)}")
    json.dumps(spec.to_dict())


def _check_opening(game: Game, seed: int, opening: tuple) -> None:
    if game.opening(seed, None) != opening:
        raise _fail(game, f"seed {seed}", "opening is not deterministic for its seed")
    state = game.init(seed, None)
    for joint in opening:
        if game.is_over(state):
            raise _fail(game, f"seed {seed}", "opening continues past the end of the game")
        state = game.step(state, joint)
    if game.is_over(state):
        raise _fail(game, f"seed {seed}", "opening ends the game")


def _check_random_game(game: Game, seed: int, opening: tuple) -> int:
    """Play one random game from `opening`, checking every state; returns the number of steps."""
    rng = np.random.default_rng(seed)
    state = game.init(seed, None)
    if game.to_dict(game.init(seed, None)) != game.to_dict(state):
        raise _fail(game, f"seed {seed}", "init is not deterministic for its seed")
    history, states = [], []
    for step in range(game.spec.max_length + 1):
        where = f"seed {seed}, step {step}"
        _check_state(game, state, where)
        states.append(state)
        players = game.to_move(state)
        if not players:
            _check_final(game, state, where)
            _check_replay_determinism(game, seed, history, state)
            _check_batched_encoding(game, states, f"seed {seed}")
            return step
        joint = (
            list(opening[step])
            if step < len(opening)
            else [game.random_action(state, p, rng) for p in players]
        )
        _check_illegal_refused(game, state, players, joint, where)
        before = game.to_dict(state)
        next_state = game.step(state, joint)
        if game.to_dict(state) != before:
            raise _fail(game, where, "step mutated its input state")
        history.append(joint)
        state = next_state
    raise _fail(game, f"seed {seed}", f"game did not end within max_length {game.spec.max_length}")


def _check_state(game: Game, state: Any, where: str) -> None:
    data = game.to_dict(state)
    text = json.dumps(data, allow_nan=False)
    copy = game.from_dict(json.loads(text))
    if game.to_dict(copy) != data or game.to_move(copy) != game.to_move(state):
        raise _fail(game, where, "to_dict/from_dict does not round-trip exactly")
    if not isinstance(game.render(state), str) or not game.render(state):
        raise _fail(game, where, "render must return a non-empty string")
    _check_view(game, state, where)
    players = game.to_move(state)
    if list(players) != sorted(set(players)) or not all(0 <= p < game.spec.num_players for p in players):
        raise _fail(game, where, f"to_move must list distinct seats in order, got {players}")
    if players and any(game.returns(state)):
        raise _fail(game, where, f"returns before the end: {game.returns(state)}")
    for player in players:
        _check_masks(game, state, player, where)
        _check_encoding(game, state, player, where)


def _check_view(game: Game, state: Any, where: str) -> None:
    """The viewer's picture is JSON-safe, says who moves, and decodes exactly the legal actions."""
    view = json.loads(json.dumps(game.view(state), allow_nan=False))
    if view.get("to_move") != list(game.to_move(state)):
        raise _fail(game, where, f"view's to_move {view.get('to_move')} is not {list(game.to_move(state))}")
    if len(game.spec.heads) == 1 and len(view["to_move"]) == 1:
        legal = np.flatnonzero(game.legal_masks(state, view["to_move"][0])[0])
        if sorted(map(int, view.get("moves", {}))) != legal.tolist():
            raise _fail(game, where, "view's moves must decode exactly the legal actions")


def _check_masks(game: Game, state: Any, player: int, where: str) -> None:
    masks = game.legal_masks(state, player)
    if len(masks) != len(game.spec.heads):
        raise _fail(game, where, f"{len(masks)} masks for {len(game.spec.heads)} heads")
    for (head, size), mask in zip(game.spec.heads.items(), masks, strict=True):
        if mask.shape != (size,) or mask.dtype != np.bool_:
            raise _fail(game, where, f"mask of head {head!r} is {mask.dtype}{mask.shape}, not bool({size},)")
        if not mask.any():
            raise _fail(game, where, f"player {player} must act but head {head!r} has no legal action")


def _check_encoding(game: Game, state: Any, player: int, where: str) -> None:
    encoded = game.encode(state, player)
    if set(encoded) != set(game.spec.inputs):
        raise _fail(
            game, where, f"encode gave inputs {sorted(encoded)}, spec says {sorted(game.spec.inputs)}"
        )
    for name, shape in game.spec.inputs.items():
        array = encoded[name]
        if array.dtype != np.float32 or array.shape != tuple(shape) or not np.isfinite(array).all():
            raise _fail(
                game, where, f"input {name!r} is {array.dtype}{array.shape}, not finite float32{shape}"
            )


def _check_batched_encoding(game: Game, states: list, where: str) -> None:
    """The game's `encode_many` (if any) gives every state of a game, seen by every seat, as `encode`."""
    if game.encode_many is None:
        return
    seen = [(state, player) for state in states for player in range(game.spec.num_players)]
    batched = game.encode_many([state for state, _ in seen], [player for _, player in seen])
    for name, shape in game.spec.inputs.items():
        single = np.stack([game.encode(state, player)[name] for state, player in seen])
        if batched[name].shape != (len(seen), *shape) or not np.array_equal(batched[name], single):
            raise _fail(game, where, f"encode_many's {name!r} differs from encode's")


def _check_illegal_refused(game: Game, state: Any, players: tuple, joint: list, where: str) -> None:
    """Malformed joints and forbidden or out-of-range indices all raise IllegalAction."""
    first_action, others = joint[0], joint[1:]
    first_mask = game.legal_masks(state, players[0])[0]
    attempts = [
        [],  # no action at all
        [(*first_action, 0), *others],  # one integer too many
        [(first_mask.size, *first_action[1:]), *others],  # past the end of the head
    ]
    forbidden = np.flatnonzero(~first_mask)
    if forbidden.size:
        attempts.append([(int(forbidden[0]), *first_action[1:]), *others])
    for attempt in attempts:
        try:
            game.step(state, attempt)
        except IllegalAction:
            continue
        except GameError as error:
            raise _fail(
                game, where, f"illegal joint {attempt} raised {type(error).__name__}, not IllegalAction"
            ) from error
        raise _fail(game, where, f"illegal joint {attempt} was accepted")


def _check_final(game: Game, state: Any, where: str) -> None:
    returns = game.returns(state)
    if len(returns) != game.spec.num_players or not all(math.isfinite(r) and -1 <= r <= 1 for r in returns):
        raise _fail(game, where, f"final returns {returns} must be one value in [-1, 1] per player")
    if game.spec.zero_sum and abs(sum(returns)) > 1e-9:
        raise _fail(game, where, f"zero-sum game's returns {returns} do not sum to 0")
    if not game.end_reason(state):
        raise _fail(game, where, "a finished game must say why it ended (end_reason)")


def _check_replay_determinism(game: Game, seed: int, history: list, final: Any) -> None:
    state = game.init(seed, None)
    for joint in history:
        state = game.step(state, joint)
    if game.to_dict(state) != game.to_dict(final):
        raise _fail(game, f"seed {seed}", "the same seed and actions did not reproduce the same final state")
