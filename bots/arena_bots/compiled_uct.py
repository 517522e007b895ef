"""UCT with random rollouts, compiled (Numba): the `uct` house bot's search on the compiled core.

It is `arena_bots.mcts.search` with rule "uct", one leaf per round and a `RolloutEvaluator` of one
playout per leaf, for one tree at a time, run entirely in compiled code on the game's kernels
(`arena_games.pente.kernels`; Pente is the first game with kernels). It reproduces the reference
search exactly, draw for draw from the request's PCG64 generator (`arena_games.pcg64`): the root's
playout, then its children's shuffle keys; per simulation the new leaf's playout and shuffle keys
(a finished leaf draws nothing). The selection computes UCB1 in the reference's precisions (edge
visits and values float32, node visits float64), so the visit counts, the root value and the
generator's state afterwards are the reference's (tests/bots/test_compiled_uct.py). Searches of
several requests are independent (one generator each), as in the reference's lockstep.

Layout, per search: nodes (expanded positions, at most simulations + 1) with their state arrays,
first edge, edge count, visits, value sum, player to move (-1 once over) and outcome per player;
edges (each node's legal moves, contiguous, in shuffled order) with action, prior, visits (float32),
value sum (float32) and child node (-1 until expanded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, SearchResult
from arena_games import pcg64
from arena_games.api import Game
from arena_games.pente import kernels as pente
from arena_games.pente.playouts import BLOCK, RUNNING, STRIDE
from arena_games.pente.rules import MAX_PLIES
from arena_games.pente.tables import NUM_POINTS

GAMES = ("pente",)  # the games with kernels this search runs on
_UNEXPANDED = -1  # an edge's child before expansion
MAX_DEPTH = MAX_PLIES + 1  # a path is at most one game long


def supports(game: Game, config: SearchConfig, playouts_per_leaf: int, requests: Sequence[Request]) -> bool:
    """Whether this search reproduces `mcts.search` for these arguments: a game with kernels, UCT
    with one leaf per round and one playout per leaf, PCG64 generators, one per request."""
    return (
        game.name in GAMES
        and config.rule == "uct"
        and config.leaves_per_round == 1
        and config.dirichlet_fraction == 0
        and playouts_per_leaf == 1
        and all(pcg64.is_pcg64(request.rng) for request in requests)
        and len({id(request.rng) for request in requests}) == len(requests)
    )


def search(requests: Sequence[Request], config: SearchConfig) -> list[SearchResult]:
    """One UCT search per request (Pente), as `mcts.search` gives it; each request's generator is
    advanced as the reference advances it. ValueError if a request's player is not to move."""
    results = []
    for request in requests:
        board, info = pente.from_state(request.state)
        if info[pente.END] != RUNNING or info[pente.PLY] % 2 != request.player:
            raise ValueError(f"request for player {request.player}, but the position's mover differs")
        rng = pcg64.state_of(request.rng)
        actions, visits, priors, value = uct_search(board, info, rng, config.simulations, config.exploration)
        pcg64.restore(request.rng, rng)
        results.append(
            SearchResult(
                actions=actions.astype(np.int64),
                visits=visits.astype(np.float64),
                priors=priors.astype(np.float64),
                value=value,
                simulations=config.simulations,
            )
        )
    return results


class _Tree(NamedTuple):
    """One search's arrays (module docstring); `sizes` holds the nodes and edges in use."""

    sizes: np.ndarray  # int64 (2,): [nodes, edges]
    boards: np.ndarray  # int8 (nodes, STRIDE): each node's position (kernels' board)
    infos: np.ndarray  # int64 (nodes, FIELDS): ... and its scalars (kernels' info)
    node_first: np.ndarray  # int64 (nodes,)
    node_count: np.ndarray  # int64 (nodes,): legal moves; 0 for a finished game
    node_visits: np.ndarray  # float64 (nodes,): its own evaluation included
    node_value: np.ndarray  # float64 (nodes,): value sum for its player to move
    node_player: np.ndarray  # int64 (nodes,): player to move, -1 once over
    node_outcome: np.ndarray  # float64 (nodes, 2): return per player (the game's, or (v, -v) by player)
    edge_action: np.ndarray  # int32 (edges,)
    edge_prior: np.ndarray  # float32 (edges,): 1 / legal moves (unused by UCT, reported)
    edge_visits: np.ndarray  # float32 (edges,)
    edge_value: np.ndarray  # float32 (edges,): value sum for the player choosing it
    edge_child: np.ndarray  # int32 (edges,): child node, _UNEXPANDED until expanded
    legal: np.ndarray  # bool (NUM_POINTS,): scratch for a legal mask
    keys: np.ndarray  # float64 (NUM_POINTS,): scratch for the shuffle keys
    order: np.ndarray  # int64 (NUM_POINTS,): scratch for their sorted order
    merged: np.ndarray  # int64 (NUM_POINTS,): scratch for the merge sort
    words: np.ndarray  # uint64 (2 * BLOCK,): scratch for a playout's block of draws
    playout_board: np.ndarray  # int8 (STRIDE,): scratch for a playout's board
    playout_info: np.ndarray  # int64 (FIELDS,): ... and its scalars


@njit(cache=True)
def _new_tree(nodes: int) -> _Tree:
    edges = nodes * NUM_POINTS
    return _Tree(
        np.zeros(2, dtype=np.int64),
        np.empty((nodes, STRIDE), dtype=np.int8),
        np.empty((nodes, pente.FIELDS), dtype=np.int64),
        np.zeros(nodes, dtype=np.int64),
        np.zeros(nodes, dtype=np.int64),
        np.zeros(nodes),
        np.zeros(nodes),
        np.zeros(nodes, dtype=np.int64),
        np.zeros((nodes, 2)),
        np.empty(edges, dtype=np.int32),
        np.empty(edges, dtype=np.float32),
        np.empty(edges, dtype=np.float32),
        np.empty(edges, dtype=np.float32),
        np.empty(edges, dtype=np.int32),
        np.empty(NUM_POINTS, dtype=np.bool_),
        np.empty(NUM_POINTS),
        np.empty(NUM_POINTS, dtype=np.int64),
        np.empty(NUM_POINTS, dtype=np.int64),
        np.empty(2 * BLOCK, dtype=np.uint64),
        np.empty(STRIDE, dtype=np.int8),
        np.empty(pente.FIELDS, dtype=np.int64),
    )


@njit(cache=True)
def _add(tree: _Tree, board: np.ndarray, info: np.ndarray, rng: np.ndarray) -> int:
    """Adds the position as a node with one visit; returns its id. A running game is valued by one
    random playout, then its legal moves are shuffled by keys drawn after it (mcts._expand and
    _Forest.add_positions: a stable sort by the keys); a finished one keeps its returns."""
    node = tree.sizes[0]
    tree.sizes[0] += 1
    pente.copy_game(board, info, tree.boards[node], tree.infos[node])
    tree.node_visits[node] = 1.0
    if info[pente.END] != RUNNING:
        tree.node_player[node] = -1
        tree.node_outcome[node, 0], tree.node_outcome[node, 1] = pente.returns_of(info)
        return node
    player = info[pente.PLY] % 2
    pente.copy_game(board, info, tree.playout_board, tree.playout_info)
    pente.random_playout(tree.playout_board, tree.playout_info, rng, tree.words)
    value = pente.returns_of(tree.playout_info)[player]
    count = pente.legal_mask(board, info, tree.legal)
    for index in range(count):
        tree.keys[index] = pcg64.next_double(rng)
    _stable_order(tree.keys, count, tree.order, tree.merged)
    actions = np.flatnonzero(tree.legal)
    first = tree.sizes[1]
    tree.sizes[1] += count
    prior = np.float32(1.0 / count)
    for index in range(count):
        edge = first + index
        tree.edge_action[edge] = actions[tree.order[index]]
        tree.edge_prior[edge] = prior
        tree.edge_visits[edge] = 0.0
        tree.edge_value[edge] = 0.0
        tree.edge_child[edge] = _UNEXPANDED
    tree.node_first[node], tree.node_count[node] = first, count
    tree.node_player[node] = player
    tree.node_outcome[node, player], tree.node_outcome[node, 1 - player] = value, -value
    tree.node_value[node] = value
    return node


@njit(cache=True)
def _stable_order(keys: np.ndarray, count: int, order: np.ndarray, merged: np.ndarray) -> None:
    """order[:count] = the indices of keys[:count] by increasing key, equal keys by index (a stable
    sort: NumPy's lexsort order); a bottom-up merge sort (Numba's own argsort compiles slowly)."""
    for index in range(count):
        order[index] = index
    width = 1
    while width < count:
        for low in range(0, count, 2 * width):
            middle, high = min(low + width, count), min(low + 2 * width, count)
            left, right = low, middle
            for out in range(low, high):
                if right < high and (left == middle or keys[order[right]] < keys[order[left]]):
                    merged[out] = order[right]
                    right += 1
                else:
                    merged[out] = order[left]
                    left += 1
        for index in range(count):
            order[index] = merged[index]
        width *= 2


@njit(cache=True)
def _select(tree: _Tree, node: int, exploration: float) -> int:
    """The edge of `node` with the highest UCB1 score, the first on a tie; unvisited edges first.
    Computed as mcts._Forest._uct_scores does: the mean in float32, the rest in float64."""
    log_visits = math.log(tree.node_visits[node])
    first = tree.node_first[node]
    best, best_score = first, -math.inf
    for edge in range(first, first + tree.node_count[node]):
        visits = tree.edge_visits[edge]
        if visits == 0:
            return edge  # scores +inf: the first unvisited edge wins
        mean = np.float64(tree.edge_value[edge] / visits)
        score = mean + exploration * math.sqrt(log_visits / np.float64(visits))
        if score > best_score:
            best, best_score = edge, score
    return best


@njit(cache=True)
def _backup(tree: _Tree, nodes: np.ndarray, edges: np.ndarray, leaf: int) -> None:
    """Adds the leaf's outcome along the path, at each node for that node's player to move."""
    for level in range(nodes.size):
        node, edge = nodes[level], edges[level]
        gain = tree.node_outcome[leaf, tree.node_player[node]]
        tree.edge_visits[edge] += np.float32(1.0)
        tree.edge_value[edge] = np.float32(np.float64(tree.edge_value[edge]) + gain)
        tree.node_visits[node] += 1.0
        tree.node_value[node] += gain


@njit(cache=True)
def uct_search(
    board: np.ndarray, info: np.ndarray, rng: np.ndarray, simulations: int, exploration: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The root's edges after `simulations` descents from the running position (board, info, used
    as scratch): actions int32 (k,), visits float32 (k,), priors float32 (k,), and the root's mean
    value for its mover. `rng`: a PCG64 state, advanced in place."""
    tree = _new_tree(simulations + 1)
    _add(tree, board, info, rng)
    path_nodes = np.empty(MAX_DEPTH, dtype=np.int64)
    path_edges = np.empty(MAX_DEPTH, dtype=np.int64)
    for _ in range(simulations):
        depth, node = 0, 0
        while True:
            edge = _select(tree, node, exploration)
            path_nodes[depth], path_edges[depth] = node, edge
            depth += 1
            child = tree.edge_child[edge]
            if child == _UNEXPANDED or tree.node_count[child] == 0:
                break
            node = child
        if child == _UNEXPANDED:
            pente.copy_game(tree.boards[node], tree.infos[node], board, info)
            pente.step(board, info, tree.edge_action[edge])
            child = _add(tree, board, info, rng)
            tree.edge_child[edge] = child
        _backup(tree, path_nodes[:depth], path_edges[:depth], child)
    first, count = tree.node_first[0], tree.node_count[0]
    value = tree.node_value[0] / tree.node_visits[0]
    return (
        tree.edge_action[first : first + count].copy(),
        tree.edge_visits[first : first + count].copy(),
        tree.edge_prior[first : first + count].copy(),
        value,
    )
