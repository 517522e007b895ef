"""The tree of Monte Carlo tree search (`arena_bots.mcts`): every tree of one search call in one
forest of flat arrays, with selection (PUCT or UCT), expansion, virtual loss and backup.

Layout (ARCHITECTURE §8: no Python object per child): all trees of one call live in one forest of
flat NumPy arrays. Nodes (expanded positions): first edge, number of edges, visits, value sum,
player to move (-1 once the game is over), outcome. Edges (a node's legal actions, contiguous):
action, prior, visits, value sum, child node (-1 until expanded). One selection step serves every
descending tree at once through a (trees, most children) padded gather, so the Python cost of a
tree level is paid once per round, not once per tree. Nothing recurses: descents loop over levels
and backups are vectorised over whole paths. Memory: 20 bytes per legal action of each expanded
node (64 Pente searches of 200 simulations hold about 4 M edges, 80 MB).

Values and the selection rules are those of `arena_bots.mcts`'s docstring: a node's value sum is
from the point of view of its own player to move, an edge's from that of the player who chooses it.
The driver (`mcts.search`) evaluates the new leaves a descent finds and adds them with
`Forest.add_positions` / `Forest.add_finished`; the forest never calls the game or the evaluator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from arena_bots.mcts import SearchConfig


# An edge's child before expansion: unexpanded, or pending (its expansion is in this round's batch).
# Both index sentinel nodes with no children at the end of the node arrays.
UNEXPANDED, _PENDING = -1, -2


@dataclass(frozen=True)
class Descent:
    """One descent per lane (tree) of a round: the path level by level, and where it stopped."""

    path: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per level: lanes, nodes, chosen edges
    leaf_parents: np.ndarray  # (lanes,) the last node of each path
    leaf_edges: np.ndarray  # (lanes,) the edge taken from it
    leaf_nodes: np.ndarray  # (lanes,) that edge's child: a finished game, UNEXPANDED or _PENDING


class Forest:
    """The trees of one search call, as flat arrays (see the module docstring)."""

    def __init__(self, node_capacity: int, width: int, config: SearchConfig) -> None:
        size = node_capacity + 2  # + the sentinels _PENDING and UNEXPANDED index, in that order
        self.width = width  # actions of the head
        self.states: list[Any] = []
        self.node_first = np.zeros(size, dtype=np.int64)
        self.node_count = np.zeros(size, dtype=np.int64)
        self.node_visits = np.zeros(size)
        self.node_value = np.zeros(size)
        self.node_player = np.full(size, -1, dtype=np.int64)
        self.node_outcome = np.zeros((size, 2))  # return per player: the game's, or (v, -v) by player
        edges = node_capacity * min(width, 16) + width
        # 4-byte fields, 20 bytes per edge: float32 counts visits exactly up to 2^24
        self.edge_action = np.zeros(edges, dtype=np.int32)
        self.edge_prior = np.zeros(edges, dtype=np.float32)
        self.edge_visits = np.zeros(edges, dtype=np.float32)
        self.edge_value = np.zeros(edges, dtype=np.float32)
        self.edge_child = np.full(edges, UNEXPANDED, dtype=np.int32)
        self.num_edges = 0
        self._columns = np.arange(width)
        self._scores = self._puct_scores if config.rule == "puct" else self._uct_scores
        self._shuffle = config.rule == "uct"
        self._exploration = config.exploration
        self._fpu_reduction = config.fpu_reduction

    def add_positions(
        self,
        states: Sequence[Any],
        players: np.ndarray,
        legal: np.ndarray,
        priors: np.ndarray,
        values: np.ndarray,
        rngs: Sequence[np.random.Generator],
    ) -> np.ndarray:
        """Adds evaluated positions as nodes with one visit; returns their ids.

        players (n,): the player to move; legal and priors (n, width); values (n,): the
        evaluation for the player to move; rngs: each position's search generator. Under UCT a
        node's edges are shuffled with it, so that the unvisited ones are tried in a random order
        (as OpenSpiel's MCTS does, against a bias from the order of actions).
        """
        ids = self._new_ids(states)
        counts = legal.sum(axis=1)
        total = int(counts.sum())
        self._reserve_edges(total)
        span = slice(self.num_edges, self.num_edges + total)
        rows, actions = np.nonzero(legal)
        if self._shuffle and total:
            keys = np.concatenate(
                [rng.random(count) for rng, count in zip(rngs, counts.tolist(), strict=True)]
            )
            actions = actions[np.lexsort((keys, rows))]
        self.edge_action[span] = actions
        self.edge_prior[span] = priors[rows, actions]
        self.node_first[ids] = self.num_edges + np.cumsum(counts) - counts
        self.num_edges = span.stop
        self.node_count[ids] = counts
        self.node_player[ids] = players
        self.node_outcome[ids, players] = values
        self.node_outcome[ids, 1 - players] = -values
        self.node_value[ids] = values
        return ids

    def add_finished(self, states: Sequence[Any], returns: np.ndarray) -> np.ndarray:
        """Adds finished games (n,) with their returns (n, 2) as nodes with one visit and no
        children; returns their ids."""
        ids = self._new_ids(states)
        self.node_outcome[ids] = returns
        return ids

    def _new_ids(self, states: Sequence[Any]) -> np.ndarray:
        """Ids for new nodes holding `states`, counted as visited once."""
        ids = np.arange(len(self.states), len(self.states) + len(states))
        self.states.extend(states)
        self.node_visits[ids] = 1.0
        return ids

    def _reserve_edges(self, extra: int) -> None:
        """Room for `extra` more edges, plus `width` so a padded gather never runs off the end."""
        needed = self.num_edges + extra + self.width
        if needed <= self.edge_action.size:
            return
        grow = max(needed, 2 * self.edge_action.size) - self.edge_action.size
        for name in ("edge_action", "edge_prior", "edge_visits", "edge_value", "edge_child"):
            array = getattr(self, name)
            fill = UNEXPANDED if name == "edge_child" else 0
            setattr(self, name, np.concatenate([array, np.full(grow, fill, dtype=array.dtype)]))

    def descend(self, roots: np.ndarray) -> Descent:
        """From each root, follow the selection rule to a new (or pending) leaf or a finished game."""
        lanes, nodes = np.arange(roots.size), roots
        leaf_parents, leaf_edges, leaf_nodes = (np.empty(roots.size, dtype=np.int64) for _ in range(3))
        path = []
        while lanes.size:
            edges = self.select(nodes)
            children = self.edge_child[edges]
            path.append((lanes, nodes, edges))
            going = self.node_count[children] > 0  # expanded and not finished (sentinels have none)
            if not going.all():
                stop, stopped = ~going, lanes[~going]
                leaf_parents[stopped], leaf_edges[stopped] = nodes[stop], edges[stop]
                leaf_nodes[stopped] = children[stop]
                lanes, children = lanes[going], children[going]
            nodes = children
        return Descent(path, leaf_parents, leaf_edges, leaf_nodes)

    def select(self, nodes: np.ndarray) -> np.ndarray:
        """The chosen edge of each node in `nodes` (k,), all of them expanded and unfinished."""
        counts, firsts = self.node_count[nodes], self.node_first[nodes]
        columns = self._columns[: counts.max()]
        edges = firsts[:, None] + columns  # (k, most children); past a node's count: padding
        scores = self._scores(nodes, edges)
        scores[columns >= counts[:, None]] = -np.inf
        return firsts + scores.argmax(axis=1)

    def _puct_scores(self, nodes: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """PUCT scores (k, m) of the edges (k, m) of `nodes` (k,)."""
        visits, parent_visits = self.edge_visits[edges], self.node_visits[nodes]
        first_play = self.node_value[nodes] / parent_visits - self._fpu_reduction
        mean = np.where(visits > 0, self.edge_value[edges] / np.maximum(visits, 1.0), first_play[:, None])
        weight = self._exploration * np.sqrt(parent_visits)
        return mean + weight[:, None] * self.edge_prior[edges] / (1.0 + visits)

    def _uct_scores(self, nodes: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """UCB1 scores (k, m) of the edges (k, m) of `nodes` (k,); unvisited edges score +inf."""
        visits = self.edge_visits[edges]
        counted = np.maximum(visits, 1.0)
        mean = np.where(visits > 0, self.edge_value[edges] / counted, np.inf)
        return mean + self._exploration * np.sqrt(np.log(self.node_visits[nodes])[:, None] / counted)

    def add_virtual_loss(self, descent: Descent) -> None:
        """Counts `descent` as lost for every player on its paths, and marks its new leaves pending."""
        _, nodes, edges = _whole_paths(descent)
        self.edge_visits[edges] += 1.0
        self.edge_value[edges] -= 1.0
        self.node_visits[nodes] += 1.0
        self.node_value[nodes] -= 1.0
        new = descent.leaf_nodes == UNEXPANDED
        self.edge_child[descent.leaf_edges[new]] = _PENDING

    def backup(self, descent: Descent, virtual: bool) -> None:
        """Adds each lane's outcome along its path, at each node for that node's player; with
        `virtual`, in place of the virtual loss the descent left (its visits are counted)."""
        lanes, nodes, edges = _whole_paths(descent)
        outcomes = self.node_outcome[self.edge_child[descent.leaf_edges]]  # (lanes, 2)
        gains = outcomes[lanes, self.node_player[nodes]]
        if virtual:
            gains += 1.0
        else:
            self.edge_visits[edges] += 1.0
            self.node_visits[nodes] += 1.0
        self.edge_value[edges] += gains
        self.node_value[nodes] += gains


def _whole_paths(descent: Descent) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lanes, nodes and edges of all levels of a descent, concatenated; within one descent
    no node or edge appears twice, so fancy-index updates are exact."""
    lanes, nodes, edges = (np.concatenate(parts) for parts in zip(*descent.path, strict=True))
    return lanes, nodes, edges
