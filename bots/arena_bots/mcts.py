"""Monte Carlo tree search over many games at once: PUCT (AlphaZero) and UCT on one tree code.

Contract: `search(game, evaluator, requests, config)` searches the position of every request (a
two-player, zero-sum game with one action head) and returns, per request, the visits of the root's
legal actions, or the fault that stopped that search. A simultaneous-move game is searched as seed
001 did, through its sequential view (`arena_bots.sequential`): the searcher chooses first, the
opponent second without seeing it, and conflicts go the searcher's way; its trees share the forest
and the evaluator's batches like any other. `choose_action` turns a result
into a move, `describe` into the insight a replay records.

Lockstep: the searches run together in rounds. In a round every tree descends once from its root
to a leaf, the new leaves of ALL trees are evaluated in ONE evaluator call, and every tree backs
up its leaf's value; so the model sees batches as large as the number of searches (ARCHITECTURE §4).
The root is evaluated first (its priors are needed), then `simulations` descents follow; each
expands at most one new position, so a search costs at most simulations + 1 evaluations. A
descent that ends in a finished game backs up the game's returns and costs no evaluation.

Values: a node's value sum is from the point of view of its own player to move, an edge's from
the point of view of the player who chooses it. A leaf's outcome is a return per player (a
finished game's returns, or (v, -v) ordered by player for an evaluation v of the leaf's player to
move); backing up reads, at every node of the path, the return of that node's player. So
consecutive moves by the same player (Bobail's two-step turn) need nothing special.

Selection at a node with N visits (its own evaluation included), over its children a with prior
P(a), n(a) visits and mean value Q(a) for the node's player:
  PUCT:  Q(a) + c · P(a) · sqrt(N) / (1 + n(a)). First-play urgency: an unvisited child's Q is the
         node's own mean value minus `fpu_reduction` (0 by default: neither hope nor fear).
  UCT:   Q(a) + c · sqrt(ln N / n(a)) (UCB1, priors unused); unvisited children are tried first,
         in a random order drawn from the request's generator.
Other ties go to the lowest action index. As N counts the node's own evaluation, a new node's first
choice under PUCT follows the priors. Values are in [-1, 1], which scales the meaning of c.

Layout: the trees of one call live in one forest of flat arrays, `arena_bots.mcts_tree` (the
tree: nodes and edges, selection, virtual loss and backup); this module drives it (the rounds,
the evaluations, the results).

Lockstep or virtual loss (`leaves_per_round`): with more than one leaf per round, each tree
descends several times per round, every descent but the last leaving a virtual loss on its path,
so one round evaluates up to trees x leaves positions. Measured on 2 shared CPU cores
(bench/search.py; strength: 20 Bobail pairings at 200 simulations, score of the virtual-loss
player against lockstep):
  speed, 64 games   x4: +4% (6x75 resnet via ModelHost, 0.87 -> 0.90 of the limit), +18% (MLP)
  speed, 1 game     x8: +73% (resnet), +76% (MLP)
  strength          UCT x4 24/40, x8 14/40; PUCT with rollout values x4 23/40, x8 21/40
Lockstep (1 leaf) is this module's default: with many games at once it already fills the batch,
virtual loss gains only 4-18% there, and 8 leaves cost UCT strength. For the search of a few games
(one position, one pairing) 4 to 8 leaves make it up to 1.7x faster; 4 showed no loss of strength
in 40 games (again 20/40 for the Bobail zoo bot at 100 simulations). A worker's task holds only a
few games per bot, so the platform's AlphaZero player searches with 4 (`players.SEARCH_LEAVES`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from arena_bots.evaluators import Evaluation, EvaluationFault, Evaluator
from arena_bots.match import Request
from arena_bots.mcts_tree import UNEXPANDED, Forest
from arena_bots.sequential import Sequential, sequential
from arena_games.api import Game

Rule = Literal["puct", "uct"]
TOP_MOVES = 10  # moves listed in an insight


@dataclass(frozen=True)
class SearchConfig:
    """How to search. `exploration` is c_puct for PUCT and the UCB1 constant for UCT.

    Root noise (training self-play only): the root's priors become
    (1 - dirichlet_fraction) · P + dirichlet_fraction · Dirichlet(dirichlet_alpha), drawn from
    the request's generator; AlphaZero used a fraction of 0.25. 0 turns it off.
    `leaves_per_round` > 1 adds virtual-loss descents per tree and round (module docstring).
    """

    simulations: int = 200
    rule: Rule = "puct"
    exploration: float = 1.25
    fpu_reduction: float = 0.0
    dirichlet_fraction: float = 0.0
    dirichlet_alpha: float = 0.3
    leaves_per_round: int = 1

    def __post_init__(self) -> None:
        if self.simulations < 1:
            raise ValueError(f"simulations must be at least 1, got {self.simulations}")
        if self.rule not in ("puct", "uct"):
            raise ValueError(f"rule must be 'puct' or 'uct', got {self.rule!r}")
        if self.exploration < 0:
            raise ValueError(f"exploration must be >= 0, got {self.exploration}")
        if self.leaves_per_round < 1:
            raise ValueError(f"leaves_per_round must be at least 1, got {self.leaves_per_round}")
        if not 0 <= self.dirichlet_fraction <= 1 or self.dirichlet_alpha <= 0:
            raise ValueError("dirichlet_fraction must be in [0, 1] and dirichlet_alpha > 0")


@dataclass(frozen=True)
class SearchResult:
    """One search: the root's legal actions with their visits, or the fault that stopped it."""

    actions: np.ndarray  # (k,) int: the root's legal actions (flat indices of the one head)
    visits: np.ndarray  # (k,) float64: descents through each action
    priors: np.ndarray  # (k,) float64: the evaluator's priors (before any root noise)
    action_values: np.ndarray  # (k,) float64: each action's mean value for the root's mover, 0 if unvisited
    ending_returns: np.ndarray  # (k,) float64: the mover's return where the action ends the game, else 0
    value: float  # mean value of the root for its player to move, in [-1, 1]
    simulations: int
    fault: str = ""  # not empty: the search failed and the arrays are empty

    @classmethod
    def failed(cls, fault: str) -> SearchResult:
        empty = np.zeros(0)
        return cls(
            actions=empty.astype(np.int64),
            visits=empty,
            priors=empty,
            action_values=empty,
            ending_returns=empty,
            value=0.0,
            simulations=0,
            fault=fault,
        )


def search(
    game: Game, evaluator: Evaluator, requests: Sequence[Request], config: SearchConfig
) -> list[SearchResult]:
    """Search every request's position together, in lockstep; one result per request, in order.

    A tree's result does not depend on the trees searched with it when the evaluator's answer for a
    position depends only on that position and its generator (`RolloutEvaluator` draws a position's
    playouts from it alone): each tree draws only from its request's generator.
    """
    if game.spec.simultaneous:
        game = sequential(game)
        requests = [
            dataclasses.replace(request, state=Sequential(request.state, request.player))
            for request in requests
        ]
    check_searchable(game)
    width = next(iter(game.spec.heads.values()))
    forest = Forest(len(requests) * (config.simulations + 1), width, config)
    rngs = [request.rng for request in requests]
    _check_root_players(game, requests)
    roots, faults = _expand(game, evaluator, forest, [request.state for request in requests], rngs)
    root_priors = [child_priors(forest, node) for node in roots.tolist()]
    live = np.flatnonzero(roots >= 0)  # the trees still searching
    if config.dirichlet_fraction > 0:
        add_root_noise(forest, roots[live], [rngs[tree] for tree in live], config)
    for done in range(0, config.simulations, config.leaves_per_round):
        if not live.size:
            break
        descents = min(config.leaves_per_round, config.simulations - done)
        failed = _search_round(game, evaluator, forest, roots[live], [rngs[tree] for tree in live], descents)
        if failed:
            faults.update({int(live[lane]): fault for lane, fault in failed.items()})
            live = np.array([tree for tree in live.tolist() if tree not in faults], dtype=np.int64)
    return [
        SearchResult.failed(faults[tree])
        if tree in faults
        else root_result(forest, node, root_priors[tree], config)
        for tree, node in enumerate(roots.tolist())
    ]


def check_searchable(game: Game) -> None:
    """Raises ValueError unless `game` is two-player, zero-sum, with one action head."""
    spec = game.spec
    if spec.num_players != 2 or not spec.zero_sum:
        raise ValueError(f"tree search needs a two-player zero-sum game; {spec.name} is not")
    if len(spec.heads) != 1:
        raise ValueError(f"tree search needs one action head; {spec.name} has {len(spec.heads)}")


def choose_action(result: SearchResult, temperature: float, rng: np.random.Generator) -> int:
    """The move of a search: the best by `best_first` at temperature 0, else a draw with
    probability proportional to visits^(1 / temperature)."""
    if temperature == 0:
        return int(result.actions[best_first(result)[0]])
    weights = (result.visits / result.visits.max()) ** (1.0 / temperature)
    return int(result.actions[rng.choice(weights.size, p=weights / weights.sum())])


def best_first(result: SearchResult) -> np.ndarray:
    """Indices of the result's actions, best first, by OpenSpiel MCTSBot's order: a move found to
    win the game at once, else not one found to lose it; then most visits (ties: higher prior,
    then higher mean value). A UCT search with fewer simulations than moves visits each move it
    tries once: its best is a win it found, else the move whose playout went best."""
    return np.lexsort((-result.action_values, -result.priors, -result.visits, -result.ending_returns))


def describe(result: SearchResult, top: int = TOP_MOVES) -> dict[str, Any]:
    """The replay insight of a search (JSON-safe): root value, the `top` moves best first with
    their share of the visits and their prior (`best_first`), and the number of simulations."""
    order = best_first(result)[:top]
    total = result.visits.sum()
    moves = [
        {"action": [int(action)], "share": round(float(visits / total), 4), "prior": round(float(prior), 4)}
        for action, visits, prior in zip(
            result.actions[order], result.visits[order], result.priors[order], strict=True
        )
    ]
    return {"value": round(result.value, 4), "top": moves, "simulations": result.simulations}


def _search_round(
    game: Game,
    evaluator: Evaluator,
    forest: Forest,
    roots: np.ndarray,
    rngs: Sequence[np.random.Generator],
    descents_per_tree: int,
) -> dict[int, str]:
    """`descents_per_tree` descents per tree (lane) of `roots`, ONE evaluation of all their new
    leaves, and the backups; returns the faults by lane.

    Every descent but the last of a round leaves a virtual loss on its path and marks its new leaf
    pending, so the next descent of the same tree looks elsewhere; a descent that meets a pending
    leaf (a collision) backs up that leaf's value once more. A faulted lane's tree gets meaningless
    backups; its search is abandoned.
    """
    descents = []
    for index in range(descents_per_tree):
        descents.append(forest.descend(roots))
        if index < descents_per_tree - 1:
            forest.add_virtual_loss(descents[-1])
    new = [np.flatnonzero(descent.leaf_nodes == UNEXPANDED) for descent in descents]
    lanes = np.concatenate(new)
    edges = np.concatenate([descent.leaf_edges[rows] for descent, rows in zip(descents, new, strict=True)])
    parents = np.concatenate(
        [descent.leaf_parents[rows] for descent, rows in zip(descents, new, strict=True)]
    )
    actions = forest.edge_action[edges].tolist()
    states = [game.step(forest.states[p], [(a,)]) for p, a in zip(parents.tolist(), actions, strict=True)]
    nodes, faults = _expand(game, evaluator, forest, states, [rngs[lane] for lane in lanes.tolist()])
    added = nodes >= 0
    forest.edge_child[edges[added]] = nodes[added]
    for index, descent in enumerate(descents):
        forest.backup(descent, virtual=index < descents_per_tree - 1)
    return {int(lanes[row]): fault for row, fault in faults.items()}


def _expand(
    game: Game,
    evaluator: Evaluator,
    forest: Forest,
    states: Sequence[Any],
    rngs: Sequence[np.random.Generator],
) -> tuple[np.ndarray, dict[int, str]]:
    """Evaluates `states` (finished games need none) and adds them to the forest.

    Returns their node ids (-1 where the evaluation failed: not added) and the faults by row.
    """
    players = [_player_to_move(game, state) for state in states]
    live = [row for row, player in enumerate(players) if player >= 0]  # the rows to evaluate
    movers = np.array([players[row] for row in live], dtype=np.int64)
    masks = [game.legal_masks(states[row], players[row])[0] for row in live]
    legal = np.stack(masks) if masks else np.zeros((0, forest.width), dtype=bool)
    evaluation, live_faults = evaluate_rows(
        lambda rows: evaluator.evaluate(
            game,
            [states[live[row]] for row in rows],
            movers[rows],
            legal[rows],
            [rngs[live[row]] for row in rows],
        ),
        len(live),
        forest.width,
    )
    kept = [index for index in range(len(live)) if index not in live_faults]
    rows = [live[index] for index in kept]
    nodes = np.full(len(states), -1, dtype=np.int64)
    nodes[rows] = forest.add_positions(
        [states[row] for row in rows],
        movers[kept],
        legal[kept],
        evaluation.priors[kept],
        evaluation.values[kept],
        [rngs[row] for row in rows],
    )
    finished = [row for row, player in enumerate(players) if player < 0]
    if finished:
        returns = np.array([game.returns(states[row]) for row in finished], dtype=np.float64)
        nodes[finished] = forest.add_finished([states[row] for row in finished], returns)
    return nodes, {live[index]: fault for index, fault in live_faults.items()}


def evaluate_rows(
    evaluate: Callable[[list[int]], Evaluation], count: int, width: int
) -> tuple[Evaluation, dict[int, str]]:
    """The evaluation of `count` rows, `evaluate(rows)` giving the rows named (indices, in order),
    and the faults of the rows that failed (their rows hold zeros); `width`: the head's actions.

    Rows named by an EvaluationFault fail alone and the others are evaluated again; any other
    exception (the model or its host failed) fails every row.
    """
    faults: dict[int, str] = {}
    rows = list(range(count))
    while rows:
        try:
            evaluation = evaluate(rows)
        except EvaluationFault as fault:
            failed, message = ([rows[i] for i in fault.rows] if fault.rows else rows), str(fault)
        except Exception as error:
            failed, message = rows, f"{type(error).__name__}: {error}"
        else:
            if not faults:
                return evaluation, faults
            priors, values = np.zeros((count, width)), np.zeros(count)
            priors[rows], values[rows] = evaluation
            return Evaluation(priors, values), faults
        faults.update(dict.fromkeys(failed, message))
        rows = [row for row in rows if row not in faults]
    return Evaluation(np.zeros((count, width)), np.zeros(count)), faults


def _player_to_move(game: Game, state: Any) -> int:
    """The one player to move in `state`, or -1 when the game is over."""
    movers = game.to_move(state)
    if len(movers) > 1:
        raise ValueError(f"tree search needs one player to move; {game.name} has {movers}")
    return movers[0] if movers else -1


def _check_root_players(game: Game, requests: Sequence[Request]) -> None:
    """Raises ValueError unless each request's player is the one to move (not a game's end)."""
    for request in requests:
        if game.to_move(request.state) != (request.player,):
            raise ValueError(
                f"request for player {request.player}, but to_move is {game.to_move(request.state)}"
            )


def add_root_noise(
    forest: Any, roots: np.ndarray, rngs: Sequence[np.random.Generator], config: SearchConfig
) -> None:
    """Mixes Dirichlet noise into the priors of each root of `roots` (see SearchConfig), one
    `dirichlet` draw from its generator per root, in the order given. `forest`: as in child_priors;
    its float32 priors take (1 - fraction) · P (float32) + fraction · noise (float64), rounded."""
    fraction = config.dirichlet_fraction
    for node, rng in zip(roots.tolist(), rngs, strict=True):
        span = slice(forest.node_first[node], forest.node_first[node] + forest.node_count[node])
        noise = rng.dirichlet(np.full(forest.node_count[node], config.dirichlet_alpha))
        forest.edge_prior[span] = (1 - fraction) * forest.edge_prior[span] + fraction * noise


def child_priors(forest: Any, node: int) -> np.ndarray:
    """The priors of `node`'s edges (a copy); empty for a failed root (node -1). `forest`: a
    mcts_tree.Forest, or a compiled one with the same node and edge arrays (compiled_puct, compiled_uct)."""
    first = forest.node_first[node]
    return forest.edge_prior[first : first + forest.node_count[node]].astype(np.float64)


def root_result(forest: Any, node: int, priors: np.ndarray, config: SearchConfig) -> SearchResult:
    """The search result of the root `node` of `forest` with its `priors`: a mcts_tree.Forest or a
    compiled tree of the same fields (node_*, edge_*; a finished game's node has player -1)."""
    span = slice(forest.node_first[node], forest.node_first[node] + forest.node_count[node])
    visits = forest.edge_visits[span].astype(np.float64)
    children = forest.edge_child[span]  # a sentinel where unvisited, masked out below
    ended = (visits > 0) & (forest.node_player[children] < 0)
    returns = forest.node_outcome[children, forest.node_player[node]]
    return SearchResult(
        actions=forest.edge_action[span].astype(np.int64),
        visits=visits,
        priors=priors,
        action_values=forest.edge_value[span] / np.maximum(visits, 1.0),
        ending_returns=np.where(ended, returns, 0.0),
        value=float(forest.node_value[node] / forest.node_visits[node]),
        simulations=config.simulations,
    )
