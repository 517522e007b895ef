"""Demonstrations for the actor-critic kit: the lookahead house bot's own games, recorded.

A fresh policy never beats the chain bot, so it gets no reward to learn from; the CSB blocker
showed the way out (DQfD, Hester et al. 2018): start from a demonstrator's play and keep it in the
loss. The demonstrator is `LookaheadPlayer` (the chain bot looking one pair further), which beats
the chain bot about 9 games in 10 and sees what the network sees (this turn's and the next pair).

Games, stepped together on the batched engine: even-numbered ones the lookahead bot against the
chain bot (its seat alternating), odd-numbered ones the lookahead bot against itself. Every
position where the lookahead bot moves is recorded with its choice and the game's result for
the mover (1 win, 0.5 draw, 0 loss: the value head's scale). `record` splits the games over
processes; each part is reproducible from its seeds alone.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass, fields

import numpy as np

from arena_bots.players import ChainPlayer, LookaheadPlayer
from arena_games.smash import GAME
from arena_games.smash import playouts as engine
from arena_games.smash.encoding import encode_many


@dataclass
class Demonstrations:
    """N recorded positions in the batched engine's layout (encoded per minibatch by `inputs`)."""

    cells: np.ndarray  # int8 (N, 2, HEIGHT, width): both wells, row 0 the bottom
    pairs: np.ndarray  # int8 (N, 2, 2): this turn's pair and the next
    unsent: np.ndarray  # int64 (N, 2): both players' nuisance points waiting
    seat: np.ndarray  # int64 (N,): the mover
    action: np.ndarray  # int64 (N,): the lookahead bot's placement
    outcome: np.ndarray  # float32 (N,): the game's result for the mover, 1 / 0.5 / 0

    def __len__(self) -> int:
        return self.action.size

    def inputs(self, rows: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The network inputs of positions `rows` (float32) and their legal masks bool (m, A)."""
        cells, seat = self.cells[rows], self.seat[rows]
        encoded = encode_many(cells, self.pairs[rows], self.unsent[rows], seat)
        return encoded, engine.legal(cells[np.arange(rows.size), seat])

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Demonstrations:
        return cls(**{f.name: np.asarray(arrays[f.name]) for f in fields(cls)})

    @classmethod
    def concatenate(cls, parts: list[Demonstrations]) -> Demonstrations:
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls)})


def play(seeds: list[int]) -> Demonstrations:
    """The games of `seeds` (game k of the list numbered k, see the module's doc), to their end."""
    teacher, chain = LookaheadPlayer(), ChainPlayer()
    n = len(seeds)
    batch = engine.pack([GAME.init(seed, None) for seed in seeds])
    versus_chain = np.arange(n) % 2 == 0
    teacher_seat = (np.arange(n) // 2) % 2
    records: list[tuple[np.ndarray, ...]] = []
    rows = np.flatnonzero(batch.running)
    while rows.size:
        turn = batch.turns[rows]
        pairs = batch.pairs[rows[:, None], turn[:, None] + np.arange(2)]
        joint = np.zeros((rows.size, 2), dtype=np.intp)
        for seat in (0, 1):
            taught = ~versus_chain[rows] | (teacher_seat[rows] == seat)
            wells = batch.cells[rows, seat]
            if taught.any():
                values = teacher.values_many(wells[taught], pairs[taught, 0], pairs[taught, 1])
                joint[taught, seat] = np.argmax(values, axis=1)
            if (~taught).any():
                joint[~taught, seat] = np.argmax(chain.values_many(wells[~taught], pairs[~taught, 0]), axis=1)
            mine = rows[taught]
            seats = np.full(mine.size, seat)
            records.append(
                (mine, batch.cells[mine], pairs[taught], batch.unsent[mine], seats, joint[taught, seat])
            )
        engine.step_many(batch, rows, joint)
        rows = rows[batch.running[rows]]
    results = (engine.batch_returns(batch) + 1.0) / 2.0  # (n, 2)
    game, cells, pairs, unsent, seat, action = (
        np.concatenate(column) for column in zip(*records, strict=True)
    )
    return Demonstrations(
        cells=cells.astype(np.int8),
        pairs=pairs.astype(np.int8),
        unsent=unsent.astype(np.int64),
        seat=seat.astype(np.int64),
        action=action.astype(np.int64),
        outcome=results[game, seat].astype(np.float32),
    )


def record(games: int, seed: int, processes: int = 1, games_per_part: int = 64) -> Demonstrations:
    """`games` games from seed `seed` on, in parts of `games_per_part` over `processes` processes
    (the same positions for any number of processes)."""
    seeds = list(range(seed, seed + games))
    parts = [seeds[start : start + games_per_part] for start in range(0, games, games_per_part)]
    if processes <= 1:
        return Demonstrations.concatenate([play(part) for part in parts])
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return Demonstrations.concatenate(pool.map(play, parts))
