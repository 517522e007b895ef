"""Parallel Smash the Code games stepped in batches, for the actor-critic kit.

`SmashEnvironments` holds `against_chain + self_play` games as rows of one `playouts.Batch` and
plays one turn of all of them per `step`, through the batched engine (never `Game.step` per game).
A *lane* is one learner seat whose positions are trained on, its games one after another:
  - each of the first `against_chain` games has one lane; the other seat is the chain house bot
    (`ChainPlayer`, over those games at once, on the core ARENA_CORE names when the environments
    are made: its compiled values by default, the same games as the reference's); the learner's
    seat alternates game by game;
  - each self-play game has two lanes: both seats play the learner's policy.
A finished game is replaced at once by a new one (next seed), so every row is always running.
Rewards come at a game's last step, for the lane's seat: 1 win, 0.5 draw, 0 loss (the value
head's P(win) scale); every other step rewards 0.

The whole state (arrays, seats, the seed counter) round-trips through `to_arrays`/`from_arrays`,
so a run resumes exactly where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena_bots.players import ChainPlayer
from arena_games.smash import GAME
from arena_games.smash import playouts as engine
from arena_games.smash.encoding import encode_many

_FIELDS = ("cells", "pairs", "turns", "turn_limits", "offsetting", "scores", "unsent", "losses")


@dataclass
class StepResult:
    rewards: np.ndarray  # float32 (L,): the lane's reward for this step
    dones: np.ndarray  # bool (L,): the lane's game ended at this step (a new one has begun)
    chain_actions: (
        np.ndarray
    )  # intp (L,): what the chain bot would play in the lane's place (-1 if not asked)


class SmashEnvironments:
    """See the module's doc. `seed` starts the sequence of game seeds."""

    def __init__(self, against_chain: int, self_play: int, seed: int) -> None:
        if against_chain < 0 or self_play < 0 or against_chain + self_play == 0:
            raise ValueError("need at least one game, against the chain bot or in self-play")
        self.against_chain, self.self_play = against_chain, self_play
        games = against_chain + self_play
        self.next_seed = seed
        self.batch = engine.pack([GAME.init(self._new_seed(), None) for _ in range(games)])
        self.learner_seat = np.arange(against_chain) % 2  # per chain game
        self.chain = ChainPlayer()
        # Lanes: (game row, seat); chain games' seats are read from learner_seat at each step.
        self.lane_game = np.concatenate(
            [np.arange(against_chain), np.repeat(np.arange(against_chain, games), 2)]
        )
        self.lane_self_seat = np.concatenate([np.zeros(against_chain, int), np.tile([0, 1], self_play)])

    @property
    def lanes(self) -> int:
        return self.lane_game.size

    def lane_seats(self) -> np.ndarray:
        """int (L,): the seat each lane plays now."""
        seats = self.lane_self_seat.copy()
        seats[: self.against_chain] = self.learner_seat
        return seats

    def observe(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The lanes' network inputs (`encode_many`, float32 (L, ...)) and legal masks bool (L, A)."""
        b, rows, seats = self.batch, self.lane_game, self.lane_seats()
        pairs = b.pairs[rows[:, None], b.turns[rows][:, None] + np.arange(2)]  # this turn's and the next
        inputs = encode_many(b.cells[rows], pairs, b.unsent[rows], seats)
        return inputs, engine.legal(b.cells[rows, seats])

    def chain_actions(self, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """intp (m,): the chain bot's placement for seat `seats` of games `rows`."""
        b = self.batch
        values = self.chain.values_many(b.cells[rows, seats], b.pairs[rows, b.turns[rows]])
        return np.argmax(values, axis=1)

    def step(self, lane_actions: np.ndarray, *, imitate: bool = False) -> StepResult:
        """One turn of every game: the lanes play `lane_actions` (intp (L,), legal), the chain bot
        the other seat of chain games. `imitate` also returns the chain bot's choice per lane."""
        b, games = self.batch, self.batch.turns.size
        seats = self.lane_seats()
        guide = self.chain_actions(self.lane_game, seats) if imitate else np.full(self.lanes, -1)
        joint = np.zeros((games, 2), dtype=np.intp)
        joint[self.lane_game, seats] = lane_actions
        chain_rows = np.arange(self.against_chain)
        if chain_rows.size:
            opponent = 1 - self.learner_seat
            joint[chain_rows, opponent] = self.chain_actions(chain_rows, opponent)
        engine.step_many(b, np.arange(games), joint)
        ended = ~b.running
        returns = engine.batch_returns(b)  # (games, 2), +1 / 0 / -1
        lane_ended = ended[self.lane_game]
        rewards = np.where(lane_ended, (returns[self.lane_game, seats] + 1.0) / 2.0, 0.0)
        for row in np.flatnonzero(ended):
            self._restart(int(row))
        return StepResult(rewards.astype(np.float32), lane_ended, guide)

    def _restart(self, row: int) -> None:
        fresh = engine.pack([GAME.init(self._new_seed(), None)])
        for name in _FIELDS:
            getattr(self.batch, name)[row] = getattr(fresh, name)[0]
        if row < self.against_chain:
            self.learner_seat[row] = 1 - self.learner_seat[row]

    def _new_seed(self) -> int:
        self.next_seed += 1
        return self.next_seed - 1

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to continue exactly (for np.savez)."""
        arrays = {name: getattr(self.batch, name) for name in _FIELDS}
        return {**arrays, "learner_seat": self.learner_seat, "next_seed": np.array(self.next_seed)}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        for name in _FIELDS:
            setattr(self.batch, name, np.array(arrays[name]))
        self.learner_seat = np.array(arrays["learner_seat"])
        self.next_seed = int(arrays["next_seed"])
