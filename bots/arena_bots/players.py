"""The players (ARCHITECTURE §3): house bots, the AlphaZero search player, greedy and sampling.

All implement `arena_bots.match.Player`: `decide` answers every request in one call (so a search
or a network sees the positions of every game at once) and draws every random number from the
request's own generator. A failing model never raises out of `decide`: the requests it could not
answer get `Decision(action=None, fault=...)`, and the match loop decides what that costs.

Insights (JSON-safe, for the replay viewer): search players give
`{"value": root value for the mover, "top": [{"action": [...], "share": visit share, "prior": p}],
"simulations": n}`; greedy and sampling players give `{"top": [{"action": [...], "share": p}]}`
with p the probability of the joint action under the softmax they read (per head, multiplied
across heads), best first; over Q-values (head kind "q") each move also has `"q"`: the mean of its
heads' Q-values (each head estimates the same return); in a game of several heads also
`"heads": {"kind": "policy" or "q", head name: [the network's output per action, None where
illegal]}` (a DQN's Q-values per head).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arena_bots.core import UNHELD_STATE, on_core, selected_core
from arena_bots.evaluators import Evaluator, RolloutEvaluator, encode_batch, masked_softmax, output_array
from arena_bots.manifest import head_output_name
from arena_bots.match import Decision, Request
from arena_bots.mcts import TOP_MOVES, SearchConfig, SearchResult, choose_action, describe, search
from arena_games.api import Action, Game
from arena_games.csb import playouts as csb_playouts
from arena_games.csb import rules as csb_rules
from arena_games.pente import rules as pente_rules
from arena_games.pente.threats import threats_action
from arena_games.smash import playouts as smash_batch
from arena_games.smash import rules as smash_rules
from arena_games.spring2021 import rules as spring_rules
from arena_games.spring2021.gardener import gardener_action


class RandomPlayer:
    """House bot: a uniformly random legal action (per head)."""

    def __init__(self, name: str = "random") -> None:
        self.name = name

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return [Decision(action=game.random_action(r.state, r.player, r.rng)) for r in requests]


class RacerPlayer:
    """House bot of Coders Strike Back: the heuristic racer (`arena_games.csb.playouts.racer_actions`:
    aim at the next checkpoint against the drift, slow down to turn, BOOST on the longest straight),
    all requests in one batch; on the kernels' races (`kernels.racer`, the same heads) where the
    game hands it those. The baseline a CSB network must beat."""

    def __init__(self, name: str = "racer") -> None:
        self.name = name

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        if game.name != csb_rules.GAME_NAME:
            raise ValueError(f"the racer plays {csb_rules.GAME_NAME} only, not {game.name}")
        states, seats = [r.state for r in requests], [r.player for r in requests]
        if all(isinstance(state, csb_rules.CsbState) for state in states):
            races = csb_rules.to_races(states)
            actions = csb_rules.by_seat(races, np.array(seats), csb_playouts.racer_actions)
        else:  # the kernels' races (the compiled core's match engine); the module loads Numba
            from arena_games.csb import kernel_game

            actions = kernel_game.racer_actions(states, seats)
        return [Decision(action=tuple(row)) for row in actions.tolist()]


class GardenerPlayer:
    """House bot of Spring 2021: the hand-written priorities of `arena_games.spring2021.gardener`
    (complete late, grow the biggest tree, seed while free), one frame per request."""

    def __init__(self, name: str = "gardener") -> None:
        self.name = name

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        if game.name != spring_rules.GAME_NAME:
            return _refusals(self.name, "Spring 2021", len(requests))
        if all(isinstance(r.state, spring_rules.SpringState) for r in requests):
            return [Decision(action=(gardener_action(r.state, r.player),)) for r in requests]
        from arena_games.spring2021 import kernel_game  # the match loop's positions: loads Numba

        return [Decision(action=(kernel_game.gardener_action(r.state, r.player),)) for r in requests]


class ThreatsPlayer:
    """House bot of Pente: the threat-space priorities of `arena_games.pente.threats` (win, stop the
    opponent's win, fours and open threes, captures, then position), one move per request, ties
    broken by the request's generator."""

    def __init__(self, name: str = "threats") -> None:
        self.name = name

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        if game.name != pente_rules.NAME:
            return _refusals(self.name, "Pente", len(requests))
        if all(isinstance(r.state, pente_rules.PenteState) for r in requests):
            return [Decision(action=(threats_action(r.state, r.player, r.rng),)) for r in requests]
        from arena_games.pente import kernel_game  # the match loop's positions: loads Numba

        return [Decision(action=(kernel_game.threats_action(r.state, r.player, r.rng),)) for r in requests]


# Descents per tree and round of the AlphaZero player (virtual loss, `arena_bots.mcts`): a worker's
# task holds only a few games per bot (one block of pairings), so lockstep alone gave its models
# batches of 1-2 rows; 4 leaves make them about 4x larger (bench/worker.py). Strength: the Bobail zoo
# bot with 4 leaves against itself in lockstep, 100 simulations: 20/40.
SEARCH_LEAVES = 4


class MctsPlayer:
    """The AlphaZero player: PUCT search over the evaluator's priors and values.

    `simulations` descents per move after the root's evaluation; `temperature` 0 plays the most
    visited move, above 0 samples by visits^(1 / temperature). `fpu_reduction`, the Dirichlet
    root noise and `leaves_per_round` (virtual loss; SEARCH_LEAVES) are as in
    `arena_bots.mcts.SearchConfig`. `core` (default: `core.selected_core()`, ARENA_CORE): on
    "compiled", Bobail, Pente, Spring 2021 and Smash with a network evaluator search in
    `compiled_puct` (the reference's very visits for a deterministic evaluator); elsewhere
    `mcts.search` (`puct_search`).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        simulations: int = 200,
        c_puct: float = 1.25,
        temperature: float = 0.0,
        *,
        fpu_reduction: float = 0.0,
        dirichlet_fraction: float = 0.0,
        dirichlet_alpha: float = 0.3,
        leaves_per_round: int = SEARCH_LEAVES,
        name: str = "mcts",
        core: str | None = None,
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.name = name
        self.evaluator = evaluator
        self.temperature = temperature
        self.config = SearchConfig(
            simulations=simulations,
            rule="puct",
            exploration=c_puct,
            fpu_reduction=fpu_reduction,
            dirichlet_fraction=dirichlet_fraction,
            dirichlet_alpha=dirichlet_alpha,
            leaves_per_round=leaves_per_round,
        )
        self.core = selected_core(core)

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        results = puct_search(game, self.evaluator, requests, self.config, self.core)
        return [
            _search_decision(result, self.temperature, r.rng)
            for result, r in zip(results, requests, strict=True)
        ]


def puct_search(
    game: Game, evaluator: Evaluator, requests: Sequence[Request], config: SearchConfig, core: str
) -> list[SearchResult]:
    """`mcts.search` of a PUCT `config` as `core` runs it: on "compiled", in `compiled_puct` where
    it reproduces the reference (compiled_puct.supports: Bobail, Pente, Spring 2021 and Smash with a
    network evaluator, root noise or not), unless it refuses a request before drawing (a position the
    kernels cannot hold, or a player not to move, which `search` reports); elsewhere `mcts.search`.
    The AlphaZero player's and self-play's search. `compiled_puct` is imported here: loading Numba
    takes about 0.3 s, which only this path needs."""
    if core == "compiled":
        from arena_bots import compiled_puct

        if compiled_puct.supports(game, evaluator, config):
            try:
                return compiled_puct.search(game, evaluator, requests, config)
            except UNHELD_STATE:
                pass
    return search(game, evaluator, requests, config)


class UctPlayer:
    """House bot: UCT (UCB1, uniform priors) valued by random playouts, most visited move.

    `exploration` is UCB1's constant for values in [-1, 1]; 2 is OpenSpiel's default for its MCTS
    bot on the same scale. `playouts_per_leaf` random games are averaged per new leaf;
    `leaves_per_round` as in `arena_bots.mcts.SearchConfig`. `core` (default:
    `core.selected_core()`, ARENA_CORE): on "compiled", the random playouts run on the game's
    kernels (`core.on_core`) and Pente, Bobail, Spring 2021 and Smash search in `compiled_uct`; both
    give the reference's very results (same visits, same generator draws). Elsewhere `mcts.search`.
    """

    def __init__(
        self,
        simulations: int = 1000,
        exploration: float = 2.0,
        *,
        playouts_per_leaf: int = 1,
        leaves_per_round: int = 1,
        name: str = "uct",
        core: str | None = None,
    ) -> None:
        self.name = name
        self.evaluator = RolloutEvaluator(playouts_per_leaf)
        self.config = SearchConfig(
            simulations=simulations, rule="uct", exploration=exploration, leaves_per_round=leaves_per_round
        )
        self.core = selected_core(core)

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        game = on_core(game, self.core)
        results = self._compiled_search(game, requests) if self.core == "compiled" else None
        if results is None:
            results = search(game, self.evaluator, requests, self.config)
        return [_search_decision(result, 0.0, r.rng) for result, r in zip(results, requests, strict=True)]

    def _compiled_search(self, game: Game, requests: Sequence[Request]) -> list[SearchResult] | None:
        """The compiled UCT's results, or None where it cannot reproduce `search` (compiled_uct.supports,
        or a request it refuses before drawing: a position the kernels cannot hold, or a player not
        to move, which `search` reports). Imported here: loading Numba takes about 0.3 s, which only
        this path needs."""
        from arena_bots import compiled_uct

        if not compiled_uct.supports(game, self.config, self.evaluator.playouts_per_leaf, requests):
            return None
        try:
            return compiled_uct.search(game, requests, self.config)
        except UNHELD_STATE:
            return None


class ChainPlayer:
    """House bot for Smash the Code: greedy for chains, the baseline a Smash bot must beat.

    Each legal placement of this turn's pair is valued by the points it scores now, plus
    `potential_weight` times the most that one more block (any colour, any column) could then
    set off (the chain the well holds ready), less `height_penalty` per row of the tallest column
    above `safe_height`; the best value is played (the lowest index on a tie). So it builds
    chains while the well is low and fires them when what it holds is worth more than what it
    would keep. `core` (default: `core.selected_core()`, ARENA_CORE): on "compiled" the values are
    `compiled_smash_bots.chain_values` (the game's kernels, one well at a time), on "reference"
    `reference_values` (one batched NumPy chain loop per decision, `arena_games.smash.playouts`);
    the same values bit for bit.
    """

    def __init__(
        self,
        *,
        potential_weight: float = 0.5,
        height_penalty: float = 40.0,
        safe_height: int = 8,
        name: str = "chain",
        core: str | None = None,
    ) -> None:
        self.name = name
        self.potential_weight = potential_weight
        self.height_penalty = height_penalty
        self.safe_height = safe_height
        self.core = selected_core(core)

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return _smash_decisions(
            self.name, game, requests, lambda wells, pairs: self.values_many(wells, pairs[:, 0])
        )

    def values(self, state: smash_rules.SmashState, player: int) -> np.ndarray:
        """float64 (placements,): each placement's value for `player` as above; -inf where illegal."""
        well = smash_batch.well_array(state.wells[player], state.config.width)
        return self.values_many(well[None], np.array([state.pairs[state.turn]]))[0]

    def values_many(self, wells: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """float64 (m, placements): `values` for m wells at once (int8 (m, HEIGHT, width), the batched
        engine's layout, row 0 the bottom, each column's blocks from the bottom) and their pairs to
        place (int (m, 2)), on this player's core."""
        if self.core == "compiled":
            from arena_bots import compiled_smash_bots  # loads Numba, which only this path needs

            return compiled_smash_bots.chain_values(
                np.ascontiguousarray(wells, dtype=np.int8),
                np.ascontiguousarray(pairs, dtype=np.int64),
                np.array([self.potential_weight, self.height_penalty], dtype=np.float64),
                int(self.safe_height),
            )
        return self.reference_values(wells, pairs)

    def reference_values(self, wells: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """`values_many` in NumPy, one batched chain loop: the reference."""
        width = wells.shape[-1]
        values = np.full((wells.shape[0], len(smash_rules.placements(width))), -np.inf)
        game, actions = np.nonzero(smash_batch.legal(wells))
        if not actions.size:  # no well has room for the pair
            return values
        placed = wells[game].copy()
        landed = smash_batch.place_many(placed, pairs[game], actions)
        points, _ = smash_batch.resolve_many(placed, landed)
        height = smash_batch.heights(placed)  # (k, width)
        # One more block of each colour in each column with room: wells (k, width, colours, H, W).
        shape = (actions.size, width, smash_rules.COLOURS, *placed.shape[1:])
        probes = np.broadcast_to(placed[:, None, None], shape).copy()
        k, x, c = np.nonzero(np.broadcast_to((height < smash_rules.HEIGHT)[:, :, None], shape[:3]))
        probes[k, x, c, height[k, x], x] = c + 1
        added = np.zeros(shape, dtype=bool)
        added[k, x, c, height[k, x], x] = True
        potential, _ = smash_batch.resolve_many(
            probes.reshape(-1, *placed.shape[1:]), added.reshape(-1, *placed.shape[1:])
        )
        danger = np.maximum(height.max(axis=1) - self.safe_height, 0)
        values[game, actions] = (
            points
            + self.potential_weight * potential.reshape(actions.size, -1).max(axis=1)
            - self.height_penalty * danger
        )
        return values


class LookaheadPlayer:
    """House bot for Smash the Code: the chain bot looking one pair further, a stronger baseline
    and the actor-critic kit's demonstrator.

    A placement of this turn's pair is valued by the points it scores now plus `next_weight`
    times the best `ChainPlayer` value of the next pair in the well it leaves (that value already
    holds the chain the well keeps ready and the height penalty). Only the `keep` placements the
    chain bot values most are looked through (the rest are -inf when legal too, never chosen):
    8 of up to 22 costs about a quarter and agreed with the full look in 80% of positions. The
    network sees this turn's and the next pair as well, so it can learn exactly this choice.
    `core` as `ChainPlayer`'s (`compiled_smash_bots.lookahead_values` or `reference_values`).
    """

    def __init__(
        self, *, next_weight: float = 0.7, keep: int = 8, name: str = "lookahead", core: str | None = None
    ) -> None:
        self.name = name
        self.next_weight = next_weight
        self.keep = keep
        self.chain = ChainPlayer(core=core)
        self.core = self.chain.core

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return _smash_decisions(
            self.name, game, requests, lambda wells, pairs: self.values_many(wells, pairs[:, 0], pairs[:, 1])
        )

    def values_many(self, wells: np.ndarray, pairs: np.ndarray, next_pairs: np.ndarray) -> np.ndarray:
        """float64 (m, placements): each placement's value as above, -inf where illegal or not
        looked through; wells int8 (m, HEIGHT, width) row 0 the bottom, pairs and next_pairs int
        (m, 2). A placement that leaves no room for the next pair is worth points - 1e9. On this
        player's core."""
        if self.core == "compiled":
            from arena_bots import compiled_smash_bots  # loads Numba, which only this path needs

            chain = self.chain
            return compiled_smash_bots.lookahead_values(
                np.ascontiguousarray(wells, dtype=np.int8),
                np.ascontiguousarray(pairs, dtype=np.int64),
                np.ascontiguousarray(next_pairs, dtype=np.int64),
                np.array([chain.potential_weight, chain.height_penalty], dtype=np.float64),
                int(chain.safe_height),
                float(self.next_weight),
                int(self.keep),
            )
        return self.reference_values(wells, pairs, next_pairs)

    def reference_values(self, wells: np.ndarray, pairs: np.ndarray, next_pairs: np.ndarray) -> np.ndarray:
        """`values_many` in NumPy, batched (its chain bot's `reference_values`): the reference."""
        first = self.chain.reference_values(wells, pairs)
        order = np.argsort(-first, axis=1, kind="stable")[:, : self.keep]
        game, slot = np.nonzero(np.isfinite(np.take_along_axis(first, order, axis=1)))
        actions = order[game, slot]
        placed = wells[game].copy()
        points, _ = smash_batch.resolve_many(placed, smash_batch.place_many(placed, pairs[game], actions))
        after = np.maximum(self.chain.reference_values(placed, next_pairs[game]).max(axis=1), -1e9)
        values = np.full(first.shape, -np.inf)
        values[game, actions] = points + self.next_weight * after
        return values


def _refusals(name: str, title: str, count: int) -> list[Decision]:
    """`count` faults of a house bot asked to play a game other than its own (`title`)."""
    return [Decision(action=None, fault=f"the {name} house bot plays only {title}")] * count


def _smash_decisions(
    name: str,
    game: Game,
    requests: Sequence[Request],
    values: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> list[Decision]:
    """A Smash house bot's moves: per request the placement of highest `values(wells, pairs)`, the
    lowest index on a tie. wells int8 (m, HEIGHT, width): the mover's, row 0 the bottom; pairs int
    (m, 2, 2): this turn's pair and the next (the sequence always holds both); values float
    (m, placements), -inf where illegal. Another game's requests are refused."""
    if not game.name.startswith(smash_rules.GAME_NAME):
        return _refusals(name, "Smash the Code", len(requests))
    wells, pairs = _smash_wells_and_pairs(requests)
    return [Decision(action=(int(action),)) for action in np.argmax(values(wells, pairs), axis=1)]


def _smash_wells_and_pairs(requests: Sequence[Request]) -> tuple[np.ndarray, np.ndarray]:
    """The movers' wells int8 (m, HEIGHT, width) and pairs (m, 2, 2) (`_smash_decisions`) of the
    states a Smash game hands its players: the reference's, or on the compiled core the kernel
    game's (`core.match_engine`), read without converting them; its module loads Numba: imported
    here."""
    if all(isinstance(r.state, smash_rules.SmashState) for r in requests):
        wells = [smash_batch.well_array(r.state.wells[r.player], r.state.config.width) for r in requests]
        pairs = [r.state.pairs[r.state.turn : r.state.turn + 2] for r in requests]
        return np.stack(wells), np.array(pairs)
    from arena_games.smash import kernel_game

    return kernel_game.movers_wells_and_pairs([r.state for r in requests], [r.player for r in requests])


def _search_decision(result: SearchResult, temperature: float, rng: np.random.Generator) -> Decision:
    if result.fault:
        return Decision(action=None, fault=result.fault)
    return Decision(action=(choose_action(result, temperature, rng),), insight=describe(result))


# Per head the (m, A) probabilities of m requests, and their generators -> each request's action.
Pick = Callable[[Sequence[np.ndarray], Sequence[np.random.Generator]], list[Action]]


class GreedyPlayer:
    """The network's most likely action per head: argmax of the masked policy logits (or Q-values
    with head_kind="q", the DQN bot). One network call per `decide`."""

    def __init__(self, backend: Any, *, head_kind: str = "policy", name: str = "greedy") -> None:
        self.name = name
        self.backend = backend
        self.head_kind = head_kind  # one of manifest.HEAD_KINDS

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return _network_decisions(self.backend, game, requests, self.head_kind, 1.0, _most_likely)


class SamplePlayer:
    """An action drawn per head from softmax(masked logits / temperature). One network call per
    `decide`."""

    def __init__(
        self, backend: Any, temperature: float = 1.0, *, head_kind: str = "policy", name: str = "sample"
    ) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.name = name
        self.backend = backend
        self.temperature = temperature
        self.head_kind = head_kind  # one of manifest.HEAD_KINDS

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return _network_decisions(self.backend, game, requests, self.head_kind, self.temperature, _drawn)


def _most_likely(heads: Sequence[np.ndarray], rngs: Sequence[np.random.Generator]) -> list[Action]:
    """Each request's most likely index per head (the first on a tie)."""
    return list(zip(*(np.argmax(head, axis=1).tolist() for head in heads), strict=True))


def _drawn(heads: Sequence[np.ndarray], rngs: Sequence[np.random.Generator]) -> list[Action]:
    """Each request's index per head drawn by its generator, request by request, head by head."""
    return [
        tuple(int(rng.choice(head.shape[1], p=head[row])) for head in heads) for row, rng in enumerate(rngs)
    ]


def _network_decisions(
    backend: Any, game: Game, requests: Sequence[Request], kind: str, temperature: float, pick: Pick
) -> list[Decision]:
    """One decision per request from one network call: `pick` per head over the masked softmax."""
    try:
        heads, outputs, legal, broken = _head_probabilities(backend, game, requests, kind, temperature)
    except Exception as error:  # the model or its host failed: no request can be answered
        return [Decision(action=None, fault=f"{type(error).__name__}: {error}")] * len(requests)
    answered = np.flatnonzero(~broken)
    picked = pick([head[answered] for head in heads], [requests[row].rng for row in answered])
    actions = dict(zip(answered.tolist(), picked, strict=True))
    tops = _top_moves(*_top_joint_actions(heads), outputs if kind == "q" else None)
    shown = _shown_outputs(outputs, legal) if len(heads) > 1 else []
    decisions = []
    for row in range(len(requests)):
        if row not in actions:
            decisions.append(Decision(action=None, fault="the model gave non-finite outputs"))
            continue
        insight: dict[str, Any] = {"top": tops[row]}
        if shown:  # the joint top moves hide what each head thought: keep its outputs
            insight["heads"] = {"kind": kind} | {
                head: part[row] for head, part in zip(game.spec.heads, shown, strict=True)
            }
        decisions.append(Decision(action=actions[row], insight=insight))
    return decisions


def _shown_outputs(outputs: Sequence[np.ndarray], legal: Sequence[np.ndarray]) -> list[list[list[Any]]]:
    """Per head, per row of its (n, A) output: the output per action rounded to 3 decimals, None
    where illegal: a multi-head insight's per-head view (CSB's Q-values per pod), all rows at once."""
    shown = []
    for output, mask in zip(outputs, legal, strict=True):
        rounded = np.round(output.astype(np.float64), 3).tolist()
        for values, allowed in zip(rounded, mask.tolist(), strict=True):
            if not all(allowed):
                values[:] = [value if ok else None for value, ok in zip(values, allowed, strict=True)]
        shown.append(rounded)
    return shown


def _head_probabilities(
    backend: Any, game: Game, requests: Sequence[Request], kind: str, temperature: float
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Per head the (n, A) masked softmax of its output, the (n, A) output itself and the (n, A)
    legal mask, and the (n,) rows with non-finite outputs."""
    states, players = [r.state for r in requests], [r.player for r in requests]
    outputs = backend.run(encode_batch(game, states, players))
    masks = [game.legal_masks(state, player) for state, player in zip(states, players, strict=True)]
    heads, raw, legal, broken = [], [], [], np.zeros(len(requests), dtype=bool)
    for index, (head, size) in enumerate(game.spec.heads.items()):
        logits = output_array(outputs, head_output_name(game.spec, head, kind), (len(requests), size))
        legal.append(np.stack([mask[index] for mask in masks]))
        probabilities, head_broken = masked_softmax(logits, legal[-1], temperature)
        heads.append(probabilities)
        raw.append(logits)
        broken |= head_broken
    return heads, raw, legal, broken


def _top_joint_actions(heads: Sequence[np.ndarray], count: int = TOP_MOVES) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `heads` (each (n, A) probabilities): its `count` most likely joint actions, best
    first, heads independent (exact: a beam of `count` per head), all rows at once: int (n, k,
    heads) actions and float64 (n, k) their probabilities."""
    rows = np.arange(len(heads[0]))[:, None]
    actions = np.zeros((len(rows), 1, 0), dtype=np.int64)  # (n, beam, heads so far)
    shares = np.ones((len(rows), 1))
    for probabilities in heads:
        likely = np.argsort(-probabilities, axis=1, kind="stable")[:, :count]  # (n, k)
        joined = (shares[:, :, None] * probabilities[rows, likely][:, None, :]).reshape(len(rows), -1)
        order = np.argsort(-joined, axis=1, kind="stable")[:, :count]  # beam b, then likely k: b * k + k
        beam, extension = np.divmod(order, likely.shape[1])
        shares = joined[rows, order]
        actions = np.concatenate([actions[rows, beam], likely[rows, extension][:, :, None]], axis=2)
    return actions, shares


def _top_moves(
    actions: np.ndarray, shares: np.ndarray, outputs: Sequence[np.ndarray] | None
) -> list[list[dict[str, Any]]]:
    """The insight's top moves of each row of `_top_joint_actions`: {"action", "share"} (rounded to
    4 decimals), moves of share 0 left out; with the heads' Q-values `outputs` (each (n, A)), each
    move's "q" too: the mean of its heads' values (summed head by head in float64), to 3 decimals."""
    means = shares  # a stand-in of the same shape where there are no Q-values
    if outputs is not None:
        rows = np.arange(len(actions))[:, None]
        total = np.zeros(shares.shape)
        for head, output in enumerate(outputs):
            total = total + output[rows, actions[:, :, head]].astype(np.float64)
        means = total / len(outputs)
    return [
        [
            {"action": action, "share": round(share, 4)} | ({} if outputs is None else {"q": round(mean, 3)})
            for action, share, mean in zip(row_actions, row_shares, row_means, strict=True)
            if share > 0
        ]
        for row_actions, row_shares, row_means in zip(
            actions.tolist(), shares.tolist(), means.tolist(), strict=True
        )
    ]
