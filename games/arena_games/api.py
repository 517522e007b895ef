"""The contract every game engine fulfils (ARCHITECTURE §2).

A game is a `Game` record: a declarative `GameSpec` plus pure functions over immutable states.
Nothing here does I/O, reads a clock or touches global random state; every random draw comes
from the seed given to `init` or from a `numpy.random.Generator` passed in by the caller.

Actions: each player's action is a tuple of flat integers, one per action head, in the order of
`GameSpec.heads` (a board game has one head, so its actions look like `(37,)`). Legality is given
per head as a boolean mask; a combination of legal entries, one per head, is a legal action.
One step of the game takes a *joint action*: one action per player in `to_move(state)`, in that
order (one player for turn-based games, every player for simultaneous-move games).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

State = TypeVar("State")
Action = tuple[int, ...]  # one flat integer per action head
JointAction = tuple[Action, ...]  # one action per acting player, ordered as `to_move(state)`
Config = Mapping[str, Any]  # overrides of a game's documented defaults, JSON-safe


class GameError(ValueError):
    """Base class of every error a game engine raises on bad input."""


class IllegalAction(GameError):
    """`step` was given an action that the legal masks forbid, or the wrong number of them."""


class BadConfig(GameError):
    """`init` was given an unknown config key or a value out of range."""


class BadStateDict(GameError):
    """`from_dict` was given a dict that is not a valid state of this game."""


@dataclass(frozen=True)
class GameSpec:
    """What the platform and the bots need to know about a game, without playing it.

    `inputs` maps each network input name to its shape without the batch dimension (float32).
    `heads` maps each action head name to its number of flat actions.
    `max_length` bounds the number of steps (joint actions) of any game, openings included.
    `version` changes on ANY change of rules, encoding or action meaning: ratings are per version.
    """

    name: str
    version: int
    title: str
    num_players: int
    inputs: Mapping[str, tuple[int, ...]]
    heads: Mapping[str, int]
    max_length: int
    simultaneous: bool = False
    zero_sum: bool = True  # returns of a finished game sum to 0 (win +1, loss -1, draw 0)
    default_config: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON-safe dict (for the API and replays)."""
        return {
            "name": self.name,
            "version": self.version,
            "title": self.title,
            "num_players": self.num_players,
            "inputs": {name: list(shape) for name, shape in self.inputs.items()},
            "heads": dict(self.heads),
            "max_length": self.max_length,
            "simultaneous": self.simultaneous,
            "zero_sum": self.zero_sum,
            "default_config": dict(self.default_config),
        }


@dataclass(frozen=True)
class Game(Generic[State]):
    """A game engine: its spec and the pure functions that play it.

    Contracts of the functions (each game's modules implement them):
      init(seed, config) -> state         the start position; config overrides the defaults,
                                          unknown keys raise BadConfig
      to_move(state) -> tuple[int, ...]   the players who act in this step, ascending; () when over
      legal_masks(state, player)          one bool array per head, shape (heads[name],); never
                                          all False for a player in to_move(state)
      step(state, joint) -> state         a NEW state; never mutates its input; raises
                                          IllegalAction on an illegal or malformed joint action
      returns(state) -> tuple[float,...]  one per player; all 0.0 until the game is over
      end_reason(state) -> str            why the game ended ("" while it runs), for people
      encode(state, player) -> dict       float32 arrays shaped as spec.inputs, from the
                                          point of view of `player`
      render(state) -> str                a text picture of the position
      view(state) -> dict                 JSON-safe, what a viewer draws: the position in the
                                          game's own terms, the players to move, and each legal
                                          action decoded into board terms (for heat maps)
      to_dict(state) / from_dict(d)       JSON-safe, exact round trip (config and history included)
      opening(seed, config) -> joints     a short seeded sequence of joint actions from
                                          init(seed, config) leading to a roughly balanced position
      playouts(states, rngs) -> returns   optional fast path: finish every state with uniformly
                                          random legal play; float array (len(states), num_players).
                                          One generator per state: every random number the playout
                                          of states[i] uses comes from rngs[i], so its result does
                                          not depend on the other states of the call
      encode_many(states, players) -> dict optional fast path: the inputs of many states at once,
                                          name -> float32 (n, *spec.inputs[name]), row i exactly
                                          encode(states[i], players[i])
      step_favouring(state, joint, player) optional, simultaneous games: `step` as a search of
                                          `player` simulates it, the players' conflicting actions
                                          resolved in `player`'s favour (seed 001); never used by
                                          real games. Without it a search uses `step`
    """

    spec: GameSpec
    init: Callable[[int, Config | None], State]
    to_move: Callable[[State], tuple[int, ...]]
    legal_masks: Callable[[State, int], tuple[np.ndarray, ...]]
    step: Callable[[State, Sequence[Action]], State]
    returns: Callable[[State], tuple[float, ...]]
    end_reason: Callable[[State], str]
    encode: Callable[[State, int], dict[str, np.ndarray]]
    render: Callable[[State], str]
    view: Callable[[State], dict[str, Any]]
    to_dict: Callable[[State], dict[str, Any]]
    from_dict: Callable[[Mapping[str, Any]], State]
    opening: Callable[[int, Config | None], tuple[JointAction, ...]]
    playouts: Callable[[Sequence[State], Sequence[np.random.Generator]], np.ndarray] | None = None
    encode_many: Callable[[Sequence[State], Sequence[int]], dict[str, np.ndarray]] | None = None
    step_favouring: Callable[[State, Sequence[Action], int], State] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def is_over(self, state: State) -> bool:
        return not self.to_move(state)

    def random_action(self, state: State, player: int, rng: np.random.Generator) -> Action:
        """A uniformly random legal action of `player`, drawn independently per head."""
        return tuple(int(rng.choice(np.flatnonzero(mask))) for mask in self.legal_masks(state, player))

    def random_playouts(self, states: Sequence[State], rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """Finish each state with uniformly random legal play; returns shape (n, num_players).

        states[i] draws only from rngs[i] (one generator per state; states may share one), so a
        state's result depends on its generator, not on the other states of the call. Uses the
        game's own batched `playouts` when it has one, else steps one move at a time.
        """
        if len(rngs) != len(states):
            raise ValueError(f"random_playouts needs one generator per state: {len(rngs)} for {len(states)}")
        if self.playouts is not None:
            return self.playouts(states, rngs)
        results = np.zeros((len(states), self.spec.num_players), dtype=np.float64)
        for index, (state, rng) in enumerate(zip(states, rngs, strict=True)):
            while players := self.to_move(state):
                state = self.step(state, [self.random_action(state, p, rng) for p in players])
            results[index] = self.returns(state)
        return results


def one_index(action: Sequence[int]) -> int:
    """The index of a one-head action such as (37,); TypeError or ValueError if it is not one integer."""
    (index,) = action
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError("not an index")
    return int(index)


def merge_config(defaults: Mapping[str, Any], overrides: Config | None, game: str) -> dict[str, Any]:
    """Defaults updated by overrides; an unknown key or a value of the wrong type is BadConfig."""
    merged = dict(defaults)
    for key, value in (overrides or {}).items():
        if key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise BadConfig(f"{game}: unknown config key {key!r} (known keys: {known})")
        expected = type(defaults[key])
        if type(value) is not expected and not (expected is float and type(value) is int):
            raise BadConfig(f"{game}: config {key!r} must be {expected.__name__}, got {type(value).__name__}")
        merged[key] = value
    return merged
