"""PUCT with a network's priors and values, compiled (Numba): the AlphaZero player's search on the
compiled core (ARCHITECTURE §9).

It is `arena_bots.mcts.search` with rule "puct" (lockstep over the requests, `leaves_per_round`
descents per tree and round with virtual loss, root noise) on a game's kernels (`GAMES`:
Bobail's and Pente's, and Spring 2021's and Smash's, wells 6 wide, as `sequential.sequential`
views them: the searcher's choice waits for the other's), with a `NetworkEvaluator`. The trees,
the descents, the steps to the new leaves, their legal masks and encodings (every input of the
game's spec) run in compiled code; Python is back once per round with the batch of the new leaves'
encodings, which it hands to `NetworkEvaluator.evaluate_inputs` (the model host; the priors from
the logits by `compiled_softmax`, bit for bit the NumPy original's), and gives the priors and values
to the compiled expansion and backup. The tree's functions take the game's tag and call its kernels
through `compiled_uct`'s stubs (bound by the tag's type, so Numba's cache holds across processes).
Scores are computed in the reference's precisions (edge visits, values and priors float32, node
visits and values float64), so with a deterministic evaluator the visits, priors and root value are
the reference's (tests/bots/test_compiled_puct.py). Root noise is the reference's own
`mcts.add_root_noise` on this forest's arrays, after the roots' evaluation: NumPy's `dirichlet` from
each live request's generator, in request order, the only draws either search makes.

Layout: one forest for all trees of a call. Nodes (at most requests x (simulations + 1)) with
their state arrays (the game's (board, info)), first edge, edge count, visits, value sum, player
to move (-1 once over) and outcome per player; edges (each node's legal actions, contiguous, in
action order) with action, prior, visits, value sum and child (_UNEXPANDED; _PENDING while its
new leaf waits for the evaluator). A round's descents are records (lane, path span, leaf edge, new
node or -1, virtual or not) over flat path arrays; its new running leaves are rows of `_Leaves`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from arena_bots.compiled_softmax import masked_softmax
from arena_bots.compiled_uct import GAMES as TREE_GAMES
from arena_bots.compiled_uct import (
    SMASH_WELLS,
    BobailTag,
    PenteTag,
    SmashTag,
    SpringTag,
    TreeGame,
    _copy,
    _legal_mask,
    _mover,
    _returns_of,
    _step,
    by_tag,
    node_and_edge_arrays,
)
from arena_bots.evaluators import Evaluation, NetworkEvaluator
from arena_bots.match import Request
from arena_bots.mcts import (
    SearchConfig,
    SearchResult,
    add_root_noise,
    child_priors,
    evaluate_rows,
    root_result,
)
from arena_games.api import Game
from arena_games.bobail import kernels as bobail
from arena_games.pente import kernels as pente
from arena_games.smash import kernels as smash
from arena_games.spring2021 import kernels as spring2021

_UNEXPANDED, _PENDING = -1, -2  # an edge's child before expansion; while its leaf is evaluated


@njit(cache=True)
def _bobail_encode(history: np.ndarray, info: np.ndarray, player: int, inputs: tuple, row: int) -> None:
    bobail.encode(history, info, player, inputs[0][row])


@njit(cache=True)
def _pente_encode(board: np.ndarray, info: np.ndarray, player: int, inputs: tuple, row: int) -> None:
    pente.encode(board, info, player, inputs[0][row], inputs[1][row])


@njit(cache=True)
def _spring_encode(board: np.ndarray, info: np.ndarray, player: int, inputs: tuple, row: int) -> None:
    """Of the sequential view's arrays: the game's encoder reads only the game's info fields, not
    the two the view appends."""
    spring2021.encode(board, info, player, inputs[0][row])


@njit(cache=True)
def _smash_encode(board: np.ndarray, info: np.ndarray, player: int, inputs: tuple, row: int) -> None:
    """Of the sequential view's arrays (its board: the wells, then the pairs); "own", "opponent"
    and "pieces" as the game's encoder writes them."""
    wells, pairs = board[:SMASH_WELLS], board[SMASH_WELLS:]
    smash.encode(wells, pairs, info, player, inputs[0][row], inputs[1][row], inputs[2][row])


# Per tag: (board, info, player, inputs, row) writes the network input of the position for `player`
# into row `row` of each array of `inputs` (one per input of the game's spec, in its order).
_ENCODERS = {
    BobailTag: _bobail_encode,
    PenteTag: _pente_encode,
    SpringTag: _spring_encode,
    SmashTag: _smash_encode,
}
_encode = by_tag(_ENCODERS.__getitem__)

# The games with kernels and an encoder (_ENCODERS); Spring 2021 and Smash as `sequential` views them.
GAMES = {name: TREE_GAMES[name] for name in ("bobail", "pente", "spring2021", "smash")}


def supports(game: Game, evaluator: object, config: SearchConfig) -> bool:
    """Whether this search reproduces `mcts.search` for these arguments: a game of GAMES, PUCT
    (root noise or not), a NetworkEvaluator (it takes the encodings the tree writes)."""
    return game.name in GAMES and config.rule == "puct" and isinstance(evaluator, NetworkEvaluator)


class _Forest(NamedTuple):
    """The trees of one search call (module docstring). N nodes, E edges, A actions."""

    sizes: np.ndarray  # int64 (2,): [nodes, edges] in use
    boards: np.ndarray  # (N, board size), the game's dtype: each node's position
    infos: np.ndarray  # int64 (N, fields): ... and its scalars
    node_first: np.ndarray  # int64 (N,)
    node_count: np.ndarray  # int64 (N,): legal actions; 0 for a finished game or one not yet evaluated
    node_visits: np.ndarray  # float64 (N,): its own evaluation included
    node_value: np.ndarray  # float64 (N,): value sum for its player to move
    node_player: np.ndarray  # int64 (N,): player to move, -1 once over
    node_outcome: np.ndarray  # float64 (N, 2): return per player (the game's, or (v, -v) by player)
    edge_action: np.ndarray  # int32 (E,)
    edge_prior: np.ndarray  # float32 (E,)
    edge_visits: np.ndarray  # float32 (E,)
    edge_value: np.ndarray  # float32 (E,): value sum for the player choosing it
    edge_child: np.ndarray  # int32 (E,): child node, or _UNEXPANDED / _PENDING
    board: np.ndarray  # (board size,): scratch for a new leaf's position
    info: np.ndarray  # int64 (fields,): ... and its scalars


class _Leaves(NamedTuple):
    """A round's new running leaves, one row each (R: trees x descents per round), and the round's
    descents (D rows, also trees x descents) over its flat path arrays."""

    node: np.ndarray  # int64 (R,): the leaf's node
    lane: np.ndarray  # int64 (R,): the tree it belongs to
    player: np.ndarray  # int64 (R,): its player to move
    legal: np.ndarray  # bool (R, A)
    inputs: tuple  # per input of the spec, float32 (R, *its shape): the encoding for its player to move
    descent_lane: np.ndarray  # int64 (D,)
    descent_start: np.ndarray  # int64 (D,): its first level in path_nodes / path_edges
    descent_depth: np.ndarray  # int64 (D,): its levels
    descent_new: np.ndarray  # int64 (D,): the node it added, -1 if none (a collision or an end)
    descent_virtual: np.ndarray  # bool (D,): it left a virtual loss (all but a tree's last)
    path_nodes: np.ndarray  # int64 (D x max depth,)
    path_edges: np.ndarray  # int64 (D x max depth,)


def search(
    game: Game, evaluator: NetworkEvaluator, requests: Sequence[Request], config: SearchConfig
) -> list[SearchResult]:
    """One PUCT search per request of `game` (one of GAMES), in lockstep, as `mcts.search` gives it
    (`supports`); a request whose evaluation failed gets SearchResult.failed. ValueError if a
    request's player is not to move."""
    tree_game = GAMES[game.name]
    positions = [tree_game.from_state(request.state, request.player) for request in requests]
    for request, (_, info) in zip(requests, positions, strict=True):
        if tree_game.kernels.mover(info) != request.player:
            raise ValueError(f"request for player {request.player}, but the position's mover differs")
    names, tag = tuple(game.spec.inputs), tree_game.tag
    forest = _new_forest(tree_game, positions[0], len(requests) * (config.simulations + 1))
    leaves = _new_leaves(tree_game, game.spec.inputs.values(), len(requests) * config.leaves_per_round)
    boards = np.stack([board for board, _ in positions])
    infos = np.stack([info for _, info in positions])
    roots = _add_roots(tag, forest, boards, infos, leaves)
    evaluation, evaluated, faults = _evaluate(evaluator, names, leaves, len(requests), tree_game.actions)
    _attach(forest, leaves, evaluation.priors, evaluation.values, evaluated)
    live = np.array([lane for lane in range(len(requests)) if lane not in faults], dtype=np.int64)
    root_priors = {lane: child_priors(forest, roots[lane]) for lane in live.tolist()}
    if config.dirichlet_fraction > 0:
        add_root_noise(forest, roots[live], [requests[lane].rng for lane in live.tolist()], config)
    for done in range(0, config.simulations, config.leaves_per_round):
        if not live.size:
            break
        descents = min(config.leaves_per_round, config.simulations - done)
        count, descended = _descend(
            tag, forest, roots, live, descents, config.exploration, config.fpu_reduction, leaves
        )
        evaluation, evaluated, failed = _evaluate(evaluator, names, leaves, count, tree_game.actions)
        failed_lanes = {int(leaves.lane[row]): fault for row, fault in failed.items()}
        dropped = np.array(sorted(failed_lanes), dtype=np.int64)
        _finish_round(forest, leaves, evaluation.priors, evaluation.values, evaluated, descended, dropped)
        if failed_lanes:
            faults.update(failed_lanes)
            live = live[~np.isin(live, dropped)]
    return [
        SearchResult.failed(faults[lane])
        if lane in faults
        else root_result(forest, root, root_priors[lane], config)
        for lane, root in enumerate(roots.tolist())
    ]


def _evaluate(
    evaluator: NetworkEvaluator, names: tuple[str, ...], leaves: _Leaves, count: int, width: int
) -> tuple[Evaluation, np.ndarray, dict[int, str]]:
    """Evaluates the first `count` leaves in one model call (fewer, again, where some rows fail: the
    reference's `evaluate_rows`): their evaluation, which rows were evaluated (bool (count,)) and
    the faults by row."""

    def rows_of(rows: list[int]) -> Evaluation:
        take = slice(count) if len(rows) == count else np.asarray(rows, dtype=np.int64)
        inputs = {name: planes[take] for name, planes in zip(names, leaves.inputs, strict=True)}
        return evaluator.evaluate_inputs(inputs, leaves.legal[take], masked_softmax)

    evaluation, faults = evaluate_rows(rows_of, count, width)
    evaluated = np.ones(count, dtype=np.bool_)
    evaluated[list(faults)] = False
    return evaluation, evaluated, faults


def _new_forest(game: TreeGame, position: tuple[np.ndarray, np.ndarray], nodes: int) -> _Forest:
    """Room for `nodes` nodes of the game whose positions look like `position` (board, info)."""
    board, info = position
    return _Forest(*node_and_edge_arrays(game, board, info, nodes), np.empty_like(board), np.empty_like(info))


def _new_leaves(game: TreeGame, shapes: Iterable[tuple[int, ...]], rows: int) -> _Leaves:
    """Room for a round of `rows` descents (trees x descents per round), of a game whose network
    inputs have these shapes."""
    return _Leaves(
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
        np.empty((rows, game.actions), dtype=np.bool_),
        tuple(np.empty((rows, *shape), dtype=np.float32) for shape in shapes),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.bool_),
        np.empty(rows * game.max_depth, dtype=np.int64),
        np.empty(rows * game.max_depth, dtype=np.int64),
    )


@njit(cache=True)
def _add_node(tag: tuple, forest: _Forest, board: np.ndarray, info: np.ndarray) -> int:
    """Adds the position as a node with one visit and no edges yet; returns its id. A finished
    game keeps its returns; a running one waits for `_attach`."""
    node = forest.sizes[0]
    forest.sizes[0] += 1
    _copy(tag, board, info, forest.boards[node], forest.infos[node])
    forest.node_visits[node] = 1.0
    forest.node_count[node] = 0
    forest.node_player[node] = _mover(tag, info)
    if forest.node_player[node] < 0:
        forest.node_outcome[node, 0], forest.node_outcome[node, 1] = _returns_of(tag, board, info)
    return node


@njit(cache=True)
def _queue(tag: tuple, forest: _Forest, node: int, lane: int, leaves: _Leaves, row: int) -> None:
    """Makes the running `node` of tree `lane` the leaf `row`: its legal mask and its encoding."""
    player = forest.node_player[node]
    leaves.node[row], leaves.lane[row], leaves.player[row] = node, lane, player
    _legal_mask(tag, forest.boards[node], forest.infos[node], leaves.legal[row])
    _encode(tag, forest.boards[node], forest.infos[node], player, leaves.inputs, row)


@njit(cache=True)
def _add_roots(
    tag: tuple, forest: _Forest, boards: np.ndarray, infos: np.ndarray, leaves: _Leaves
) -> np.ndarray:
    """Adds the running roots (n, board size), (n, fields) as nodes and leaves 0..n-1; their ids."""
    roots = np.empty(infos.shape[0], dtype=np.int64)
    for lane in range(infos.shape[0]):
        roots[lane] = _add_node(tag, forest, boards[lane], infos[lane])
        _queue(tag, forest, roots[lane], lane, leaves, lane)
    return roots


@njit(cache=True)
def _attach(
    forest: _Forest, leaves: _Leaves, priors: np.ndarray, values: np.ndarray, evaluated: np.ndarray
) -> None:
    """Gives each evaluated leaf row its edges (its legal actions in action order, with their priors
    (rows, A) as float32) and its value (rows,) for its player to move
    (mcts_tree.Forest.add_positions)."""
    for row in range(evaluated.size):
        if not evaluated[row]:
            continue
        node, player, value = leaves.node[row], leaves.player[row], values[row]
        first = forest.sizes[1]
        count = 0
        for action in range(leaves.legal.shape[1]):
            if leaves.legal[row, action]:
                edge = first + count
                forest.edge_action[edge] = action
                forest.edge_prior[edge] = np.float32(priors[row, action])
                forest.edge_visits[edge] = 0.0
                forest.edge_value[edge] = 0.0
                forest.edge_child[edge] = _UNEXPANDED
                count += 1
        forest.sizes[1] += count
        forest.node_first[node], forest.node_count[node] = first, count
        forest.node_outcome[node, player], forest.node_outcome[node, 1 - player] = value, -value
        forest.node_value[node] = value


@njit(cache=True)
def _select(forest: _Forest, node: int, exploration: float, fpu_reduction: float) -> int:
    """The edge of `node` with the highest PUCT score, the first on a tie; computed as
    mcts_tree.Forest._puct_scores does (the mean and prior in float32, the rest in float64)."""
    parent_visits = forest.node_visits[node]
    first_play = forest.node_value[node] / parent_visits - fpu_reduction
    weight = exploration * math.sqrt(parent_visits)
    first = forest.node_first[node]
    best, best_score = first, -math.inf
    for edge in range(first, first + forest.node_count[node]):
        visits = forest.edge_visits[edge]
        mean = np.float64(forest.edge_value[edge] / visits) if visits > 0 else first_play
        score = mean + weight * np.float64(forest.edge_prior[edge]) / np.float64(np.float32(1.0) + visits)
        if score > best_score:
            best, best_score = edge, score
    return best


@njit(cache=True)
def _descend(
    tag: tuple,
    forest: _Forest,
    roots: np.ndarray,
    live: np.ndarray,
    descents: int,
    exploration: float,
    fpu_reduction: float,
    leaves: _Leaves,
) -> tuple[int, int]:
    """`descents` descents per live tree (lanes into `roots`), every one but a tree's last leaving
    a virtual loss; a descent stepping to a new position adds it (a running one as a leaf row to
    evaluate, its edge _PENDING). Returns (leaf rows, descents) recorded in `leaves`."""
    rows, done, level = 0, 0, 0
    for index in range(descents):  # the reference's order of leaf rows: descent by descent
        for lane in live:
            node = roots[lane]
            leaves.descent_lane[done], leaves.descent_start[done] = lane, level
            while True:
                edge = _select(forest, node, exploration, fpu_reduction)
                leaves.path_nodes[level], leaves.path_edges[level] = node, edge
                level += 1
                child = forest.edge_child[edge]
                if child < 0 or forest.node_count[child] == 0:
                    break
                node = child
            leaves.descent_depth[done] = level - leaves.descent_start[done]
            leaves.descent_new[done] = -1
            if child == _UNEXPANDED:
                _copy(tag, forest.boards[node], forest.infos[node], forest.board, forest.info)
                _step(tag, forest.board, forest.info, forest.edge_action[edge])
                new = _add_node(tag, forest, forest.board, forest.info)
                if forest.node_player[new] >= 0:
                    _queue(tag, forest, new, lane, leaves, rows)
                    rows += 1
                leaves.descent_new[done] = new
                forest.edge_child[edge] = _PENDING
            leaves.descent_virtual[done] = index < descents - 1
            if leaves.descent_virtual[done]:
                _virtual_loss(forest, leaves, done)
            done += 1
    return rows, done


@njit(cache=True)
def _virtual_loss(forest: _Forest, leaves: _Leaves, descent: int) -> None:
    """Counts the descent as lost for every player on its path (mcts_tree.Forest.add_virtual_loss)."""
    start = leaves.descent_start[descent]
    for level in range(start, start + leaves.descent_depth[descent]):
        node, edge = leaves.path_nodes[level], leaves.path_edges[level]
        forest.edge_visits[edge] += np.float32(1.0)
        forest.edge_value[edge] -= np.float32(1.0)
        forest.node_visits[node] += 1.0
        forest.node_value[node] -= 1.0


@njit(cache=True)
def _finish_round(
    forest: _Forest,
    leaves: _Leaves,
    priors: np.ndarray,
    values: np.ndarray,
    evaluated: np.ndarray,
    descents: int,
    dropped: np.ndarray,
) -> None:
    """The end of a round, in one call (each call of a compiled function costs about 15 µs to type
    its arguments): attaches the evaluated leaves (`_attach`), links each new leaf to its edge, then
    adds each descent's leaf outcome along its path, at each node for that node's player
    (mcts_tree.Forest.backup), in place of its virtual loss if it left one. The trees of `dropped`
    lanes (their evaluation failed) are abandoned: not backed up."""
    _attach(forest, leaves, priors, values, evaluated)
    for descent in range(descents):
        new = leaves.descent_new[descent]
        if new >= 0:
            last = leaves.descent_start[descent] + leaves.descent_depth[descent] - 1
            forest.edge_child[leaves.path_edges[last]] = new
    for descent in range(descents):
        lane = leaves.descent_lane[descent]
        if np.any(dropped == lane):
            continue
        start, depth = leaves.descent_start[descent], leaves.descent_depth[descent]
        leaf = forest.edge_child[leaves.path_edges[start + depth - 1]]
        virtual = leaves.descent_virtual[descent]
        for level in range(start, start + depth):
            node, edge = leaves.path_nodes[level], leaves.path_edges[level]
            gain = forest.node_outcome[leaf, forest.node_player[node]]
            if virtual:
                gain += 1.0
            else:
                forest.edge_visits[edge] += np.float32(1.0)
                forest.node_visits[node] += 1.0
            forest.edge_value[edge] = np.float32(np.float64(forest.edge_value[edge]) + gain)
            forest.node_value[node] += gain
