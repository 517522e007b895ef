"""UCT with random rollouts, compiled (Numba): the `uct` house bot's search on the compiled core.

It is `arena_bots.mcts.search` with rule "uct", one leaf per round and a `RolloutEvaluator` of one
playout per leaf, for one tree at a time, run entirely in compiled code on a game's kernels
(`GAMES`: Pente's and Bobail's, and Spring 2021's and Smash's, wells 6 wide, as
`sequential.sequential` views them, the searcher's choice waiting for the other's; other games
search in Python, their playouts on the kernels: `core.on_core`). One tree, generic over the game:
its functions take the game's tag (an empty named tuple of a class per game) and call the game's
`GameKernels` through `_kernel` stubs, which Numba binds by the tag's type, so it compiles the tree
once per game and its cache holds across processes. It reproduces the reference search exactly, draw
for draw from the request's PCG64 generator (`arena_games.pcg64`): the root's playout, then its
children's shuffle keys; per simulation the new leaf's playout and shuffle keys (a finished leaf
draws nothing). The selection computes UCB1 in the reference's precisions (edge visits and values
float32, node visits float64), so the visit counts, the root value and the generator's state
afterwards are the reference's (tests/bots/test_compiled_uct.py). Searches of several requests are
independent (one generator each), as in the reference's lockstep.

Layout, per search: nodes (expanded positions, at most simulations + 1) with their state arrays (the
game's (board, info) pair), first edge, edge count, visits, value sum, player to move (-1 once over)
and outcome per player; edges (each node's legal moves, contiguous, in shuffled order) with action,
prior, visits (float32), value sum (float32) and child node (-1 until expanded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, SearchResult, child_priors, root_result
from arena_games import pcg64
from arena_games.api import Game
from arena_games.bobail import kernel_game as bobail_positions
from arena_games.bobail import kernels as bobail
from arena_games.bobail.rules import NUM_ACTIONS as BOBAIL_ACTIONS
from arena_games.mask_choice import nth_true
from arena_games.pente import kernel_game as pente_positions
from arena_games.pente import kernels as pente
from arena_games.pente.playouts import BLOCK, RUNNING
from arena_games.pente.rules import MAX_PLIES
from arena_games.pente.tables import NUM_POINTS
from arena_games.smash import SPEC as SMASH_SPEC
from arena_games.smash import kernel_game as smash_positions
from arena_games.smash import kernels as smash
from arena_games.smash.rules import DEFAULT_WIDTH as SMASH_WIDTH
from arena_games.smash.rules import HEIGHT as SMASH_HEIGHT
from arena_games.spring2021 import SPEC as SPRING_SPEC
from arena_games.spring2021 import kernel_game as spring_positions
from arena_games.spring2021 import kernels as spring
from arena_games.spring2021.playouts import DRAW_BLOCK
from arena_games.spring2021.rules import NUM_ACTIONS as SPRING_ACTIONS

_UNEXPANDED = -1  # an edge's child before expansion


class GameKernels(NamedTuple):
    """The jitted functions the tree calls on one game (board, info): a game's state arrays."""

    copy: Callable  # (board, info, to_board, to_info) -> None
    mover: Callable  # (info) -> the player to move, -1 once the game is over
    legal_mask: Callable  # (board, info, out bool (actions,)) -> how many are legal
    step: Callable  # (board, info, action) -> anything (ignored)
    returns_of: Callable  # (board, info) -> (float, float): each player's return, 0 while running
    random_playout: Callable  # (board, info, rng PCG64 state, scratch) -> anything (ignored)


class PenteTag(NamedTuple):
    """Pente's tag: compiled code finds Pente's kernels by this type."""


class BobailTag(NamedTuple):
    """Bobail's tag: compiled code finds Bobail's kernels by this type."""


class SpringTag(NamedTuple):
    """Spring 2021's tag: compiled code finds the kernels of its sequential view by this type."""


class SmashTag(NamedTuple):
    """Smash the Code's tag (wells 6 wide): compiled code finds its view's kernels by this type."""


class TreeGame(NamedTuple):
    """A turn-based game the compiled tree searches: its tag, its kernels and what sizes a tree."""

    tag: tuple  # an instance of the game's own tag class (PenteTag, ...)
    kernels: GameKernels
    from_state: Callable[
        [Any, int], tuple[np.ndarray, np.ndarray]
    ]  # (reference state, searcher) -> (board, info)
    actions: int  # flat actions of the game's one head
    max_depth: int  # plies of the longest game, plus one: the deepest path
    playout_scratch: Callable[[], Any]  # new scratch (arrays) for `random_playout`


@njit(cache=True)
def _pente_mover(info: np.ndarray) -> int:
    return -1 if info[pente.END] != RUNNING else info[pente.PLY] % 2


@njit(cache=True)
def _pente_returns(board: np.ndarray, info: np.ndarray) -> tuple[float, float]:
    return pente.returns_of(info)


@njit(cache=True)
def _bobail_returns(history: np.ndarray, info: np.ndarray) -> tuple[float, float]:
    return bobail.returns_of(info)


@njit(cache=True)
def _smash_returns(board: np.ndarray, info: np.ndarray) -> tuple[float, float]:
    return smash.returns_of(info)


@njit(cache=True)
def _bobail_copy(history: np.ndarray, info: np.ndarray, to_history: np.ndarray, to_info: np.ndarray) -> None:
    """Copies the boards played so far and the scalars (the rest of a history is unused)."""
    for half_move in range(info[bobail.HALF_MOVES] + 1):
        to_history[half_move] = history[half_move]
    for field in range(bobail.FIELDS):
        to_info[field] = info[field]


# The simultaneous games searched as `sequential.sequential` views them: a view is the game's
# kernel arrays (board, info), its info followed by two fields, the searching seat and its chosen
# action (-1: none pending). Smash's board is its wells, then its pair sequence.


@njit(cache=True)
def _view_mover(movers: int, info: np.ndarray, fields: int) -> int:
    """The view's player to move (sequential.to_move), the real movers given as a bit mask: of two
    movers the searcher, then the other; -1 once over. `fields`: the game's info fields."""
    if movers == 0:
        return -1
    if movers == 3:
        return info[fields] if info[fields + 1] < 0 else 1 - info[fields]
    return movers >> 1  # 1: player 0, 2: player 1


@njit(cache=True)
def _view_frame(movers: int, info: np.ndarray, fields: int, action: int) -> tuple[bool, int, int]:
    """sequential's step of `action`: the searcher's choice of a frame of two movers waits in info
    (False, -1, -1); otherwise the frame to play (True, player 0's action, player 1's), a lone
    mover's action in both seats (the other's is ignored)."""
    searcher, chosen = info[fields], info[fields + 1]
    if movers == 3 and chosen < 0:
        info[fields + 1] = action
        return False, -1, -1
    info[fields + 1] = -1
    if chosen < 0:
        return True, action, action
    return (True, chosen, action) if searcher == 0 else (True, action, chosen)


def _view(from_state: Callable) -> Callable[[Any, int], tuple[np.ndarray, np.ndarray]]:
    """(state, searcher) -> the (board, info) of `Sequential(state, searcher)`, nothing chosen yet,
    from the kernels' `from_state` (its arrays but the last are concatenated into the board)."""

    def view(state: Any, searcher: int) -> tuple[np.ndarray, np.ndarray]:
        *boards, info = from_state(state)
        return np.concatenate(boards), np.concatenate([info, np.array([searcher, -1], dtype=np.int64)])

    return view


@njit(cache=True)
def _view_copy(board: np.ndarray, info: np.ndarray, to_board: np.ndarray, to_info: np.ndarray) -> None:
    for cell in range(board.size):
        to_board[cell] = board[cell]
    for field in range(info.size):
        to_info[field] = info[field]


@njit(cache=True)
def _spring_mover(info: np.ndarray) -> int:
    return _view_mover(spring.to_move(info), info, spring.FIELDS)


@njit(cache=True)
def _spring_legal_mask(board: np.ndarray, info: np.ndarray, out: np.ndarray) -> int:
    return spring.legal_mask(board, info, _spring_mover(info), out)


@njit(cache=True)
def _spring_step(board: np.ndarray, info: np.ndarray, action: int) -> None:
    """A frame resolves in the searcher's favour (`Game.step_favouring`), as the view steps it."""
    searcher = info[spring.FIELDS]
    play, first, second = _view_frame(spring.to_move(info), info, spring.FIELDS, action)
    if play:
        spring.step_favouring(board, info, first, second, searcher)


@njit(cache=True)
def _spring_playout(board: np.ndarray, info: np.ndarray, rng: np.ndarray, scratch: tuple) -> None:
    """sequential's playouts: the other's uniformly random reply to a pending choice (one
    integers(count), as `Game.random_action` draws it), then the game's. Scratch: (draws, legal)."""
    draws, legal = scratch
    if info[spring.FIELDS + 1] >= 0:
        _spring_step(board, info, nth_true(legal, pcg64.bounded(rng, _spring_legal_mask(board, info, legal))))
    spring.random_playout(board, info, rng, draws, legal)


SMASH_WELLS = 2 * SMASH_WIDTH * SMASH_HEIGHT  # cells of the two wells at the view board's start


@njit(cache=True)
def _smash_mover(info: np.ndarray) -> int:
    return _view_mover(3 if smash.to_move(info) else 0, info, smash.FIELDS)


@njit(cache=True)
def _smash_legal_mask(board: np.ndarray, info: np.ndarray, out: np.ndarray) -> int:
    return smash.legal_mask(board[:SMASH_WELLS], info, _smash_mover(info), out)


@njit(cache=True)
def _smash_step(board: np.ndarray, info: np.ndarray, action: int) -> None:
    play, first, second = _view_frame(3 if smash.to_move(info) else 0, info, smash.FIELDS, action)
    if play:
        smash.step(board[:SMASH_WELLS], board[SMASH_WELLS:], info, first, second)


@njit(cache=True)
def _smash_playout(board: np.ndarray, info: np.ndarray, rng: np.ndarray, legal: np.ndarray) -> None:
    """As `_spring_playout`; scratch: a legal mask."""
    if info[smash.FIELDS + 1] >= 0:
        _smash_step(board, info, nth_true(legal, pcg64.bounded(rng, _smash_legal_mask(board, info, legal))))
    smash.random_playout(board[:SMASH_WELLS], board[SMASH_WELLS:], info, rng)


GAMES = {
    "pente": TreeGame(
        PenteTag(),
        GameKernels(
            pente.copy_game,
            _pente_mover,
            pente.legal_mask,
            pente.step,
            _pente_returns,
            pente.random_playout,
        ),
        lambda state, searcher: pente_positions.arrays(state),  # a reference state or a kernel position
        NUM_POINTS,
        MAX_PLIES + 1,
        lambda: np.empty(2 * BLOCK, dtype=np.uint64),  # a playout's block of draws
    ),
    "bobail": TreeGame(
        BobailTag(),
        GameKernels(
            _bobail_copy,
            bobail.to_move,
            bobail.legal_mask,
            bobail.step,
            _bobail_returns,
            bobail.random_playout,
        ),
        lambda state, searcher: bobail_positions.arrays(state),  # a reference state or a kernel position
        BOBAIL_ACTIONS,
        bobail.HISTORY,
        lambda: np.empty(BOBAIL_ACTIONS, dtype=np.bool_),  # a playout's legal mask
    ),
    "spring2021": TreeGame(
        SpringTag(),
        GameKernels(
            _view_copy,
            _spring_mover,
            _spring_legal_mask,
            _spring_step,
            spring.returns_of,
            _spring_playout,
        ),
        _view(spring_positions.arrays),  # a reference state or the match loop's kernel position
        SPRING_ACTIONS,
        2 * SPRING_SPEC.max_length + 1,
        lambda: (np.empty(DRAW_BLOCK), np.empty(SPRING_ACTIONS, dtype=np.bool_)),  # draws, legal mask
    ),
    "smash": TreeGame(
        SmashTag(),
        GameKernels(_view_copy, _smash_mover, _smash_legal_mask, _smash_step, _smash_returns, _smash_playout),
        _view(smash_positions.arrays),  # a reference state or the match loop's kernel position
        SMASH_SPEC.heads["place"],
        2 * SMASH_SPEC.max_length + 1,
        lambda: np.empty(SMASH_SPEC.heads["place"], dtype=np.bool_),  # a legal mask
    ),
}

_KERNELS = {type(game.tag): game.kernels for game in GAMES.values()}


def by_tag(kernel_of: Callable[[type], Callable]) -> Callable:
    """`call(tag, *args)`, for compiled code only: the kernel `kernel_of(type(tag))` of the game whose
    tag it is given, bound when Numba compiles the caller. (A kernel passed as an argument would be
    typed by its dispatcher object, new in every process: no cache hit ever.)"""

    def call(tag: tuple, *args: Any) -> Any:
        raise TypeError("a game's kernel is called through its tag from compiled code only")

    @overload(call)
    def _bind(tag, *args):  # unannotated: Numba checks it against the implementation, name by name
        kernel = kernel_of(tag.instance_class)
        return lambda tag, *args: kernel(*args)

    return call


def _kernel(operation: str) -> Callable:
    """`call(tag, *args)`: the `operation` kernel (a GameKernels field) of the tag's game (by_tag)."""
    return by_tag(lambda tag_class: getattr(_KERNELS[tag_class], operation))


_copy, _mover, _legal_mask, _step, _returns_of, _random_playout = map(_kernel, GameKernels._fields)


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


def search(game: Game, requests: Sequence[Request], config: SearchConfig) -> list[SearchResult]:
    """One UCT search per request of `game` (one of GAMES), as `mcts.search` gives it; each request's
    generator is advanced as the reference advances it. ValueError, before any draw, if a request's
    player is not to move or its position is one the kernels' arrays cannot hold (Spring's
    `from_state`)."""
    tree_game = GAMES[game.name]
    positions = [tree_game.from_state(request.state, request.player) for request in requests]
    for request, (_, info) in zip(requests, positions, strict=True):
        if tree_game.kernels.mover(info) != request.player:
            raise ValueError(f"request for player {request.player}, but the position's mover differs")
    results = []
    for request, (board, info) in zip(requests, positions, strict=True):
        tree = _new_tree(tree_game, board, info, config.simulations + 1)
        rng = pcg64.state_of(request.rng)
        uct_search(tree_game.tag, tree, board, info, rng, config.simulations, config.exploration)
        pcg64.restore(request.rng, rng)
        results.append(root_result(tree, 0, child_priors(tree, 0), config))
    return results


class _Tree(NamedTuple):
    """One search's arrays (module docstring); `sizes` holds the nodes and edges in use. A: the
    game's actions."""

    sizes: np.ndarray  # int64 (2,): [nodes, edges]
    boards: np.ndarray  # (nodes, board size), the game's dtype: each node's position (kernels' board)
    infos: np.ndarray  # int64 (nodes, fields): ... and its scalars (kernels' info)
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
    legal: np.ndarray  # bool (A,): scratch for a legal mask
    keys: np.ndarray  # float64 (A,): scratch for the shuffle keys
    order: np.ndarray  # int64 (A,): scratch for their sorted order
    merged: np.ndarray  # int64 (A,): scratch for the merge sort
    scratch: Any  # the game's playout scratch (TreeGame.playout_scratch)
    playout_board: np.ndarray  # (board size,): scratch for a playout's board
    playout_info: np.ndarray  # int64 (fields,): ... and its scalars
    path_nodes: np.ndarray  # int64 (max depth,): a descent's nodes
    path_edges: np.ndarray  # int64 (max depth,): ... and the edges chosen at them


def node_and_edge_arrays(game: TreeGame, board: np.ndarray, info: np.ndarray, nodes: int) -> tuple:
    """The first fields of a compiled tree (this module's _Tree, compiled_puct's _Forest), from
    `sizes` to `edge_child`: room for `nodes` nodes of the game whose positions look like (board,
    info), and for all their legal actions as edges."""
    edges = nodes * game.actions
    return (
        np.zeros(2, dtype=np.int64),
        np.empty((nodes, board.size), dtype=board.dtype),
        np.empty((nodes, info.size), dtype=np.int64),
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
    )


def _new_tree(game: TreeGame, board: np.ndarray, info: np.ndarray, nodes: int) -> _Tree:
    """Room for `nodes` nodes of the game whose positions look like (board, info)."""
    actions = game.actions
    return _Tree(
        *node_and_edge_arrays(game, board, info, nodes),
        np.empty(actions, dtype=np.bool_),
        np.empty(actions),
        np.empty(actions, dtype=np.int64),
        np.empty(actions, dtype=np.int64),
        game.playout_scratch(),
        np.empty_like(board),
        np.empty_like(info),
        np.empty(game.max_depth, dtype=np.int64),
        np.empty(game.max_depth, dtype=np.int64),
    )


@njit(cache=True)
def _add(tag: tuple, tree: _Tree, board: np.ndarray, info: np.ndarray, rng: np.ndarray) -> int:
    """Adds the position as a node with one visit; returns its id. A running game is valued by one
    random playout, then its legal moves are shuffled by keys drawn after it (mcts._expand and
    mcts_tree.Forest.add_positions: a stable sort by the keys); a finished one keeps its returns."""
    node = tree.sizes[0]
    tree.sizes[0] += 1
    _copy(tag, board, info, tree.boards[node], tree.infos[node])
    tree.node_visits[node] = 1.0
    player = _mover(tag, info)
    if player < 0:
        tree.node_player[node] = -1
        tree.node_outcome[node, 0], tree.node_outcome[node, 1] = _returns_of(tag, board, info)
        return node
    _copy(tag, board, info, tree.playout_board, tree.playout_info)
    _random_playout(tag, tree.playout_board, tree.playout_info, rng, tree.scratch)
    value = _returns_of(tag, tree.playout_board, tree.playout_info)[player]
    count = _legal_mask(tag, board, info, tree.legal)
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
    Computed as mcts_tree.Forest._uct_scores does: the mean in float32, the rest in float64."""
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
    tag: tuple,
    tree: _Tree,
    board: np.ndarray,
    info: np.ndarray,
    rng: np.ndarray,
    simulations: int,
    exploration: float,
) -> None:
    """Grows the empty `tree` (room for simulations + 1 nodes) by `simulations` descents from the
    running position (board, info, used as scratch) at its node 0 (`mcts.root_result` reads it).
    `rng`: a PCG64 state, advanced in place."""
    _add(tag, tree, board, info, rng)
    for _ in range(simulations):
        depth, node = 0, 0
        while True:
            edge = _select(tree, node, exploration)
            tree.path_nodes[depth], tree.path_edges[depth] = node, edge
            depth += 1
            child = tree.edge_child[edge]
            if child == _UNEXPANDED or tree.node_count[child] == 0:
                break
            node = child
        if child == _UNEXPANDED:
            _copy(tag, tree.boards[node], tree.infos[node], board, info)
            _step(tag, board, info, tree.edge_action[edge])
            child = _add(tag, tree, board, info, rng)
            tree.edge_child[edge] = child
        _backup(tree, tree.path_nodes[:depth], tree.path_edges[:depth], child)
