"""Batched CSB training environments on the vectorised physics, with the seed's rewards.

Both step B races at once with `physics.play_turn` (no `Game.step` per race) and encode with the
game's own `encoding.encode_races`, so what the network learns on is exactly what the exported
bot sees. Races come from the game's seeded maps (`rules.init`), a new seed per reset.

`RunnerTrack` (phase 1, the runner): all four pods race, each an independent learner of the seed's
runner game. The laps never end (the goal is out of reach, like the seed's endless new
checkpoints). Rewards per pod-turn: +50 per checkpoint passed; -10, terminal, when the pod has gone
100 turns without passing one (its own timeout) or strays more than STRAY_DISTANCE from its next
checkpoint. A race is reset when one of its pods ends that way (the others' transitions are cut
without being terminal) or after `episode_turns` turns (cut, not terminal).

`BlockerTrack` (phase 2, the blocker): real 3-lap races between the learner's team, its pod 0 the
frozen runner and its pod 1 the blocker, and an opponent team: two frozen runners (the runner-only
bot) in half the races, the house racer (`playouts.racer_actions`, the zoo's bar) in the other
half, races 4k and 4k+1 against the racer. The team's seat alternates between races. The
blocker's reward is the seed's blocker idea, hindering the opponent's runner, counted per unit of
progress along the track (`progress`, in checkpoints) so that every turn of delay shows: -50 per
checkpoint of progress the opponent's lead pod makes, +50 per checkpoint its own runner makes (so
ramming its own runner does not pay). Summed over a race that is -50 per pass of the opponent's
lead and +50 per pass of its own runner; the race's end is terminal.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from arena_games.csb import encoding, physics, playouts, rules

CHECKPOINT_REWARD = 50.0
TIMEOUT_REWARD = -10.0  # timing out or straying too far
STRAY_DISTANCE = encoding.MAX_DISTANCE
NEVER = 10**9  # a goal no race reaches

# rows (n, 16) -> (n, 2) angle and thrust indices
Chooser = Callable[[np.ndarray], np.ndarray]


def new_races(seeds: np.ndarray, endless: bool) -> physics.Races:
    """The races of `seeds` before their first turn; with `endless` their laps never end."""
    races = rules.to_races([rules.init(int(seed)) for seed in seeds])
    if endless:
        races.goal[:] = NEVER
    return races


def all_rows(races: physics.Races) -> np.ndarray:
    """float32 (B, 4, 16): every pod's row, pods 0-1 from player 0's view, 2-3 from player 1's."""
    return np.concatenate([encoding.encode_races(races, 0), encoding.encode_races(races, 1)], axis=1)


def play(races: physics.Races, heads: np.ndarray) -> None:
    """One turn of every race: heads (B, 4 pods, 2) angle and thrust indices."""
    physics.play_turn(races, *rules.decode_actions(races, heads.reshape(-1, 2, 4)))


def distance_to_next(races: physics.Races) -> np.ndarray:
    """(B, 4) each pod's distance to its next checkpoint."""
    cx, cy = races.next_checkpoint()
    return np.hypot(cx - races.x, cy - races.y)


def progress(races: physics.Races) -> np.ndarray:
    """(B, 4) how far each pod has come, in checkpoints: its passes plus the share of the leg to its
    next checkpoint already covered (0 at the previous checkpoint, 1 at the next one's centre)."""
    rows = np.arange(len(races.turn))[:, None]
    previous = races.passes % races.counts[:, None]
    start = races.checkpoints[rows, previous]
    cx, cy = races.next_checkpoint()
    leg = np.maximum(np.hypot(cx - start[..., 0], cy - start[..., 1]), 1.0)
    return races.passes + np.clip(1.0 - distance_to_next(races) / leg, 0.0, 1.0)


class Track:
    """B races on seeded maps; `rows` holds the current (B, 4, 16) observations."""

    def __init__(self, batch: int, seed: int, endless: bool) -> None:
        self.seed, self.endless = seed, endless
        self.resets = 0  # races started so far; race k uses seed (seed, k)
        self.races = new_races(self.next_seeds(batch), endless)
        self.rows = all_rows(self.races)

    def next_seeds(self, count: int) -> np.ndarray:
        seeds = [np.random.default_rng((self.seed, self.resets + k)).integers(2**31) for k in range(count)]
        self.resets += count
        return np.array(seeds, dtype=np.int64)

    def restart(self, ended: np.ndarray, rows: np.ndarray) -> None:
        """New races in the rows `ended` (indices), their observations written into `rows`."""
        self.races.put(ended, new_races(self.next_seeds(ended.size), self.endless))
        rows[ended] = all_rows(self.races.take(ended))

    def state(self) -> dict[str, np.ndarray]:
        """Everything needed to continue identically (with `load`)."""
        races = {f"races_{name}": value for name, value in vars(self.races).items()}
        return {**races, "resets": np.array(self.resets)}

    def load(self, state: dict[str, np.ndarray]) -> None:
        self.races = physics.Races(
            **{name.removeprefix("races_"): state[name] for name in state if name.startswith("races_")}
        )
        self.resets = int(state["resets"])
        self.rows = all_rows(self.races)


class RunnerTrack(Track):
    """B endless races of four runners, each pod with its own timeout counter."""

    def __init__(self, batch: int, seed: int, episode_turns: int = 300) -> None:
        super().__init__(batch, seed, endless=True)
        self.episode_turns = episode_turns
        self.timers = np.full((batch, 4), physics.TIMEOUT_TURNS)

    def step(self, heads: np.ndarray) -> dict[str, np.ndarray]:
        """Play heads (B, 4, 2); the transitions of all 4B pods, flattened, then reset ended races."""
        before = self.races.passes.copy()
        play(self.races, heads)
        passed = self.races.passes - before
        self.timers = np.where(passed > 0, physics.TIMEOUT_TURNS, self.timers - 1)
        failed = (self.timers <= 0) | (distance_to_next(self.races) > STRAY_DISTANCE)
        rewards = CHECKPOINT_REWARD * passed + np.where(failed, TIMEOUT_REWARD, 0.0)
        next_rows = all_rows(self.races)
        transitions = {
            "rows": self.rows.reshape(-1, encoding.FEATURES),
            "actions": heads.reshape(-1, 2),
            "rewards": rewards.reshape(-1).astype(np.float32),
            "next_rows": next_rows.reshape(-1, encoding.FEATURES),
            "terminal": failed.reshape(-1),
        }
        ended = np.flatnonzero(failed.any(axis=1) | (self.races.turn >= self.episode_turns))
        if ended.size:
            self.restart(ended, next_rows)
            self.timers[ended] = physics.TIMEOUT_TURNS
        self.rows = next_rows
        return transitions

    def state(self) -> dict[str, np.ndarray]:
        return {**super().state(), "timers": self.timers}

    def load(self, state: dict[str, np.ndarray]) -> None:
        super().load(state)
        self.timers = state["timers"]


class BlockerTrack(Track):
    """B real races: the team (its runner frozen, its blocker learning) against two frozen runners
    or the house racer.

    Race k's team sits in seat k % 2 and faces the racer when k % 4 < 2. `step` takes the
    blocker's heads (B, 2) and returns the blocker's transitions; `runner` chooses for every other
    pod but the racer's.
    """

    def __init__(self, batch: int, seed: int, runner: Chooser) -> None:
        super().__init__(batch, seed, endless=False)
        self.runner = runner
        self.seats = np.arange(batch) % 2
        self.against_racer = np.arange(batch) % 4 < 2

    def blocker_pods(self) -> np.ndarray:
        """(B,) the pod index (0..3) of each race's blocker: its team's second pod."""
        return 2 * self.seats + 1

    def blocker_rows(self) -> np.ndarray:
        return self.rows[np.arange(len(self.seats)), self.blocker_pods()]

    def guide_heads(self) -> np.ndarray:
        """(B, 2) the heuristic blocker's heads for each race's blocker (the exploration guide)."""
        return rules.by_seat(self.races, self.seats, playouts.blocker_actions)

    def step(self, blocker_heads: np.ndarray) -> dict[str, np.ndarray]:
        batch = np.arange(len(self.seats))
        team = np.stack([2 * self.seats, 2 * self.seats + 1], axis=1)
        opponents = np.stack([2 * (1 - self.seats), 2 * (1 - self.seats) + 1], axis=1)
        heads = self.runner(self.rows.reshape(-1, encoding.FEATURES)).reshape(-1, 4, 2)
        racer = rules.by_seat(self.races, 1 - self.seats, playouts.racer_actions).reshape(-1, 2, 2)
        theirs = batch[:, None], opponents
        heads[theirs] = np.where(self.against_racer[:, None, None], racer, heads[theirs])
        heads[batch, self.blocker_pods()] = blocker_heads
        rows = self.blocker_rows()
        before = progress(self.races)
        play(self.races, heads)
        after = progress(self.races)
        own = after[batch, team[:, 0]] - before[batch, team[:, 0]]
        lead = batch[:, None], opponents
        opponent = after[lead].max(axis=1) - before[lead].max(axis=1)
        ended = self.races.winner >= 0
        self.rows = all_rows(self.races)
        transitions = {
            "rows": rows,
            "actions": blocker_heads,
            "rewards": (CHECKPOINT_REWARD * (own - opponent)).astype(np.float32),
            "next_rows": self.blocker_rows(),
            "terminal": ended,
        }
        if ended.any():
            self.restart(np.flatnonzero(ended), self.rows)
        return transitions

    def state(self) -> dict[str, np.ndarray]:
        return {**super().state(), "seats": self.seats, "against_racer": self.against_racer}

    def load(self, state: dict[str, np.ndarray]) -> None:
        super().load(state)
        self.seats, self.against_racer = state["seats"], state["against_racer"]
