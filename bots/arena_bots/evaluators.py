"""The evaluator seam of the search (ARCHITECTURE §3, habit 9): priors and values for positions.

An `Evaluator` turns a batch of positions into, per position, a prior over the actions of the
game's first (for search: only) head and a value for the player to move. The search calls it once
per round with the new leaves of every tree it runs, so the batch is as large as it gets.

`NetworkEvaluator` asks a model through an `InferenceBackend` (`arena_bots.runtime`); the network
contract (§3, `arena_bots.manifest`) names its tensors: inputs as `spec.inputs`, one output per
head named by `manifest.head_output_name` (`policy` logits or `q` values; `policy_<head>` /
`q_<head>` in a game of several heads), and `value` (`manifest.VALUE_OUTPUT`), shape (batch,) or
(batch, 1), in [-1, 1] for the player to move (or a win probability in [0, 1] with
`value="sigmoid"`; the kinds are `manifest.VALUE_KINDS` and `manifest.HEAD_KINDS`).
`RolloutEvaluator` needs no model: uniform priors and the mean result of random playouts.

The helpers `encode_batch`, `output_array` and `masked_softmax` are shared with the players that
use a network without search (greedy, sampling).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from arena_bots.manifest import VALUE_KINDS, VALUE_OUTPUT, head_output_name
from arena_games.api import Game


class Evaluation(NamedTuple):
    """The evaluator's answer for n positions of a game whose first head has A actions."""

    priors: np.ndarray  # (n, A) float64: a distribution over the legal actions, 0 on illegal ones
    values: np.ndarray  # (n,) float64 in [-1, 1]: the expected return of the player to move


class EvaluationFault(Exception):
    """The evaluator could not evaluate some positions: `rows` (indices into the batch), or all."""

    def __init__(self, message: str, rows: Sequence[int] | None = None) -> None:
        super().__init__(message)
        self.rows = None if rows is None else tuple(rows)


class Evaluator(Protocol):
    def evaluate(
        self,
        game: Game,
        states: Sequence[Any],
        players: Sequence[int],
        legal: np.ndarray | None = None,
        rngs: Sequence[np.random.Generator] | None = None,
    ) -> Evaluation:
        """Evaluate `states`, each from the point of view of its player to move `players[i]`.

        `legal` is the (n, A) legal mask of the first head when the caller has it (else the
        evaluator asks the game); `rngs` holds, per state, the generator of the search that owns it
        (evaluators that draw random numbers need it). Raises EvaluationFault when the evaluation
        of some or all states failed; any other exception means the whole batch failed.
        """
        ...


def legal_matrix(game: Game, states: Sequence[Any], players: Sequence[int]) -> np.ndarray:
    """The (n, A) legal mask of the first head, one row per state."""
    return np.stack(
        [game.legal_masks(state, int(player))[0] for state, player in zip(states, players, strict=True)]
    )


def encode_batch(game: Game, states: Sequence[Any], players: Sequence[int]) -> dict[str, np.ndarray]:
    """The network inputs of `states` seen by `players`: name -> float32 (n, *spec.inputs[name]);
    through the game's batched `encode_many` when it has one."""
    if game.encode_many is not None:
        return game.encode_many(states, players)
    encoded = [game.encode(state, int(player)) for state, player in zip(states, players, strict=True)]
    return {
        name: np.stack([planes[name] for planes in encoded]).astype(np.float32, copy=False)
        for name in game.spec.inputs
    }


def masked_softmax(
    logits: np.ndarray, legal: np.ndarray, temperature: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(logits / temperature) over the legal entries of each row, 0 elsewhere.

    logits and legal are (n, A); returns the (n, A) float64 probabilities and the (n,) bool mask of
    the rows that have none: a legal logit is NaN or +inf, or all are -inf (a -inf logit among
    finite ones is a probability of 0).
    """
    masked = np.where(legal, logits.astype(np.float64), -np.inf)
    top = masked.max(axis=1, keepdims=True)  # NaN if any legal logit is NaN
    with np.errstate(invalid="ignore"):  # the broken rows' inf - inf
        weights = np.exp((masked - top) / temperature)
        probabilities = weights / weights.sum(axis=1, keepdims=True)
    return probabilities, ~np.isfinite(top[:, 0])


# (logits, legal) -> (probabilities, broken rows), as masked_softmax at temperature 1
Softmax = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def to_values(outputs: Mapping[str, np.ndarray], count: int, kind: str) -> np.ndarray:
    """The (count,) values in [-1, 1] from the `value` output, shaped (count,) or (count, 1);
    `kind` is one of manifest.VALUE_KINDS."""
    raw = np.asarray(output_array(outputs, VALUE_OUTPUT), dtype=np.float64)
    if raw.shape not in ((count,), (count, 1)):
        raise EvaluationFault(
            f"output {VALUE_OUTPUT!r} has shape {raw.shape}, expected ({count},) or ({count}, 1)"
        )
    values = raw.reshape(count)
    if kind == "sigmoid":
        values = 2.0 * values - 1.0
    return np.clip(values, -1.0, 1.0)


def output_array(
    outputs: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...] | None = None
) -> np.ndarray:
    """Output `name`, checked to have `shape` when given; EvaluationFault says what is wrong."""
    if name not in outputs:
        raise EvaluationFault(f"the model has no output {name!r} (it has {', '.join(sorted(outputs))})")
    array = np.asarray(outputs[name])
    if shape is not None and array.shape != shape:
        raise EvaluationFault(f"output {name!r} has shape {array.shape}, expected {shape}")
    return array


class NetworkEvaluator:
    """Priors and values from a network: one `backend.run` per batch of positions.

    `value` (one of manifest.VALUE_KINDS) says how the `value` output reads ("tanh": in [-1, 1];
    "sigmoid": a win probability, mapped to 2p - 1); values are clipped to [-1, 1]. `head_kind`
    (one of manifest.HEAD_KINDS) picks the logits (`policy`) or the Q-values (`q`) of the first
    head as the prior's logits. Rows with non-finite outputs raise EvaluationFault naming those rows.
    """

    def __init__(self, backend: Any, game: Game, value: str = "tanh", head_kind: str = "policy"):
        if value not in VALUE_KINDS:
            raise ValueError(f"value must be {' or '.join(map(repr, VALUE_KINDS))}, got {value!r}")
        self.backend = backend
        self.value_kind = value
        self.policy_output = head_output_name(game.spec, next(iter(game.spec.heads)), head_kind)

    def evaluate(
        self,
        game: Game,
        states: Sequence[Any],
        players: Sequence[int],
        legal: np.ndarray | None = None,
        rngs: Sequence[np.random.Generator] | None = None,
    ) -> Evaluation:
        if legal is None:
            legal = legal_matrix(game, states, players)
        return self.evaluate_inputs(encode_batch(game, states, players), legal)

    def evaluate_inputs(
        self, inputs: Mapping[str, np.ndarray], legal: np.ndarray, softmax: Softmax = masked_softmax
    ) -> Evaluation:
        """`evaluate` of positions already encoded (the network inputs, name -> float32 (n, ...),
        each for its player to move) with their legal masks (n, A): what a compiled search hands
        over (arena_bots.compiled_puct), with its compiled `softmax` (the same bits as
        masked_softmax at temperature 1)."""
        count = legal.shape[0]
        outputs = self.backend.run(inputs)
        logits = output_array(outputs, self.policy_output, legal.shape)
        values = to_values(outputs, count, self.value_kind)
        priors, broken = softmax(logits, legal)
        broken |= ~np.isfinite(values)
        if broken.any():
            rows = np.flatnonzero(broken).tolist()
            raise EvaluationFault(f"the model gave non-finite outputs for {len(rows)} position(s)", rows)
        return Evaluation(priors, values)


class RolloutEvaluator:
    """Uniform priors over the legal actions; the value is the mean return of random playouts.

    `playouts_per_leaf` playouts per position, all positions of a batch in ONE call to
    `game.random_playouts`; each playout draws only from its position's own generator (rngs[i],
    the owning search's), so a search's result does not depend on the searches batched with it.
    """

    def __init__(self, playouts_per_leaf: int = 1) -> None:
        if playouts_per_leaf < 1:
            raise ValueError(f"playouts_per_leaf must be at least 1, got {playouts_per_leaf}")
        self.playouts_per_leaf = playouts_per_leaf

    def evaluate(
        self,
        game: Game,
        states: Sequence[Any],
        players: Sequence[int],
        legal: np.ndarray | None = None,
        rngs: Sequence[np.random.Generator] | None = None,
    ) -> Evaluation:
        if rngs is None:
            raise ValueError("RolloutEvaluator needs the searches' generators (rngs)")
        if legal is None:
            legal = legal_matrix(game, states, players)
        repeat = self.playouts_per_leaf
        returns = game.random_playouts(
            [state for state in states for _ in range(repeat)], [rng for rng in rngs for _ in range(repeat)]
        )
        own = returns[np.arange(len(states) * repeat), np.repeat(np.asarray(players, dtype=np.int64), repeat)]
        values = own.reshape(len(states), repeat).mean(axis=1)
        return Evaluation(legal / legal.sum(axis=1, keepdims=True), values)
