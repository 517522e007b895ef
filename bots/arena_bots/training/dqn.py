"""Deep Q-learning for Coders Strike Back (seed 000): the network, replay memory, epsilon and the update.

Roles. The game's input is one tensor "pods" (n, 2, 16), a row per pod of the player (the seed's
pod-relative inputs, `arena_games.csb.encoding`), and its heads are angle0, thrust0, angle1,
thrust1. `CsbQNet` holds one small MLP per role, each reading one pod's row and giving that pod's
angle Q-values (37) and thrust Q-values (52: 50 thrusts, BOOST, SHIELD), the seed's two Q
networks as two heads of one trunk. Pod 0 is always a runner; pod 1 is a runner too (the
"runner-only" bot, both pods race with the same weights) or the blocker (the "runner+blocker" bot,
which hinders the opponent's lead pod: its row carries that pod's position, speed and checkpoint).

Learning. Every pod-turn is one transition (row, angle, thrust, reward, next row, terminal) in the
role's `ReplayMemory`. Each head is trained as its own Q-function on the shared reward (the seed's
two networks): target = r + gamma * Q_target(s', argmax_a Q_online(s', a)) (double DQN against the
target network, which is copied from the online one every `target_every` updates), Huber loss,
Adam. The max over thrusts skips BOOST where the pod has spent it (feature 14 of its row), as the
game's legal mask does. Exploration is epsilon-greedy with a linear `EpsilonSchedule`.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from google.protobuf.message import DecodeError
from onnx import numpy_helper
from torch import nn

from arena_games.csb import encoding, rules

FEATURES = encoding.FEATURES
ANGLES = rules.ANGLE_STEPS
THRUSTS = rules.THRUST_ACTIONS
BOOST_FEATURE = 14  # 1 while the pod may still BOOST
ROLES = ("runner", "blocker")


class PodQ(nn.Module):
    """One role's Q-network: a pod's row (n, 16) -> angle Q (n, 37), thrust Q (n, 52); tanh layers
    (the seed found tanh converged where ReLU and sigmoid did not)."""

    def __init__(self, layers: int, width: int) -> None:
        super().__init__()
        sizes = [FEATURES] + [width] * layers
        self.trunk = nn.Sequential(
            *(module for a, b in itertools.pairwise(sizes) for module in (nn.Linear(a, b), nn.Tanh()))
        )
        self.angle = nn.Linear(sizes[-1], ANGLES)
        self.thrust = nn.Linear(sizes[-1], THRUSTS)

    def forward(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        trunk = self.trunk(rows)
        return self.angle(trunk), self.thrust(trunk)


class CsbQNet(nn.Module):
    """pods (n, 2, 16) -> Q of angle0, thrust0, angle1, thrust1: the bot contract's heads (head="q").

    Pod 0 is played by the runner; pod 1 by the blocker when `blocker` is set, else by the runner.
    """

    def __init__(self, layers: int = 3, width: int = 64, blocker: bool = False) -> None:
        super().__init__()
        self.runner = PodQ(layers, width)
        self.blocker = PodQ(layers, width) if blocker else None

    def role(self, name: str) -> PodQ:
        module = self.runner if name == "runner" else self.blocker
        if module is None:
            raise ValueError("this network has no blocker")
        return module

    def forward(self, pods: torch.Tensor) -> tuple[torch.Tensor, ...]:
        angle0, thrust0 = self.runner(pods[:, 0])
        angle1, thrust1 = (self.blocker or self.runner)(pods[:, 1])
        return angle0, thrust0, angle1, thrust1


def load_runner(network: CsbQNet, path: str | Path) -> None:
    """Copy the runner of the CSB bot at `path` (an exported CsbQNet, runner-only or team) into
    `network`'s runner; ValueError naming the problem when the file holds no runner of its shape."""
    try:
        model = onnx.load_model_from_string(Path(path).read_bytes())  # whatever its file name says
    except (OSError, DecodeError) as error:
        raise ValueError(f"{path}: not a readable ONNX model ({error})") from None
    weights = {
        tensor.name.removeprefix("runner."): torch.from_numpy(numpy_helper.to_array(tensor).copy())
        for tensor in model.graph.initializer
        if tensor.name.startswith("runner.")
    }
    expected = {name: tuple(value.shape) for name, value in network.runner.state_dict().items()}
    found = {name: tuple(value.shape) for name, value in weights.items()}
    if found != expected:
        raise ValueError(f"{path}: its runner's weights {found or 'are missing'} do not fit {expected}")
    network.runner.load_state_dict(weights)


def greedy_heads(module: PodQ, rows: np.ndarray) -> np.ndarray:
    """int64 (n, 2): each row's best legal angle and thrust index (no BOOST once spent)."""
    with torch.no_grad():
        angle, thrust = module(torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)))
        thrust = _mask_boost(thrust, torch.from_numpy(rows[:, BOOST_FEATURE] > 0.5))
    return np.stack([angle.argmax(1).numpy(), thrust.argmax(1).numpy()], axis=1)


def random_heads(rng: np.random.Generator, rows: np.ndarray) -> np.ndarray:
    """int64 (n, 2): uniformly random legal angle and thrust indices per row."""
    angle = rng.integers(ANGLES, size=len(rows))
    can_boost = rows[:, BOOST_FEATURE] > 0.5
    thrust = (rng.random(len(rows)) * np.where(can_boost, THRUSTS, THRUSTS - 1)).astype(np.int64)
    thrust += ~can_boost & (thrust >= rules.BOOST_ACTION)  # skip the spent BOOST
    return np.stack([angle, thrust], axis=1)


def _mask_boost(thrust: torch.Tensor, can_boost: torch.Tensor) -> torch.Tensor:
    masked = thrust.clone()
    masked[:, rules.BOOST_ACTION] = torch.where(can_boost, thrust[:, rules.BOOST_ACTION], -torch.inf)
    return masked


@dataclass(frozen=True)
class EpsilonSchedule:
    """Linear from `start` to `end` over `decay_steps` environment steps, then `end`."""

    start: float = 1.0
    end: float = 0.05
    decay_steps: int = 20_000

    def __call__(self, step: int) -> float:
        fraction = min(max(step, 0) / self.decay_steps, 1.0) if self.decay_steps else 1.0
        return self.start + (self.end - self.start) * fraction


class ReplayMemory:
    """A ring of the last `capacity` pod transitions; `added` counts all ever added."""

    FIELDS = ("rows", "actions", "rewards", "next_rows", "terminal")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.rows = np.zeros((capacity, FEATURES), dtype=np.float32)
        self.actions = np.zeros((capacity, 2), dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.next_rows = np.zeros((capacity, FEATURES), dtype=np.float32)
        self.terminal = np.zeros(capacity, dtype=bool)
        self.added = 0

    def __len__(self) -> int:
        return min(self.added, self.capacity)

    def add(self, rows, actions, rewards, next_rows, terminal) -> None:
        """Append n transitions (arrays with n rows each), overwriting the oldest when full."""
        slots = (self.added + np.arange(len(rows))) % self.capacity
        for name, values in zip(self.FIELDS, (rows, actions, rewards, next_rows, terminal), strict=True):
            getattr(self, name)[slots] = values
        self.added += len(rows)

    def sample(self, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """`size` transitions drawn uniformly with replacement."""
        picks = rng.integers(len(self), size=size)
        return {name: getattr(self, name)[picks] for name in self.FIELDS}

    def save(self, path: str | Path) -> None:
        arrays = {name: getattr(self, name)[: len(self)] for name in self.FIELDS}
        np.savez_compressed(path, added=self.added, capacity=self.capacity, **arrays)

    def load(self, path: str | Path) -> None:
        with np.load(path) as data:
            if int(data["capacity"]) != self.capacity:
                raise ValueError(f"{path} holds a memory of {int(data['capacity'])}, not {self.capacity}")
            self.added = int(data["added"])
            for name in self.FIELDS:
                getattr(self, name)[: len(data[name])] = data[name]


@dataclass(frozen=True)
class LearnSettings:
    gamma: float = 0.95  # the seed's
    learning_rate: float = 5e-4
    batch_size: int = 256
    target_every: int = 1000  # updates between copies of the online network into the target
    huber: float = 10.0  # Huber's delta, in reward units (a checkpoint is +50)
    margin: float = 5.0  # the large-margin loss on demonstrations: non-demonstrated moves' margin
    margin_weight: float = 1.0  # ...and its weight next to the TD loss


class Learner:
    """The online and target networks of one run and the optimiser; `update` trains one role."""

    def __init__(self, network: CsbQNet, settings: LearnSettings) -> None:
        self.network, self.settings = network, settings
        self.target = copy.deepcopy(network)
        self.optimizer = torch.optim.Adam(network.parameters(), lr=settings.learning_rate)
        self.updates = 0

    def td_errors(self, role: str, batch: dict[str, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, 2) predicted Q of the taken angle and thrust, and their double-DQN targets."""
        online, target = self.network.role(role), self.target.role(role)
        rows, next_rows = torch.from_numpy(batch["rows"]), torch.from_numpy(batch["next_rows"])
        actions = torch.from_numpy(batch["actions"])
        predicted = torch.stack(
            [q.gather(1, actions[:, k : k + 1]).squeeze(1) for k, q in enumerate(online(rows))], dim=1
        )
        with torch.no_grad():
            can_boost = next_rows[:, BOOST_FEATURE] > 0.5
            chosen = list(online(next_rows))
            chosen[1] = _mask_boost(chosen[1], can_boost)
            valued = target(next_rows)
            best = torch.stack(
                [
                    v.gather(1, c.argmax(1, keepdim=True)).squeeze(1)
                    for v, c in zip(valued, chosen, strict=True)
                ],
                dim=1,
            )
            alive = torch.from_numpy(~batch["terminal"]).float()[:, None]
            targets = torch.from_numpy(batch["rewards"])[:, None] + self.settings.gamma * alive * best
        return predicted, targets

    def margin_loss(self, role: str, batch: dict[str, np.ndarray], demonstrated: np.ndarray) -> torch.Tensor:
        """DQfD's large-margin loss over the rows `demonstrated` (bool, n): per head, the best Q with
        `margin` added to every move but the demonstrated one, less the demonstrated move's Q; zero
        once the demonstrated move leads every other by the margin."""
        rows = torch.from_numpy(batch["rows"][demonstrated])
        actions = torch.from_numpy(batch["actions"][demonstrated])
        angle, thrust = self.network.role(role)(rows)
        thrust = _mask_boost(thrust, rows[:, BOOST_FEATURE] > 0.5)
        loss = torch.zeros(())
        for k, q in enumerate((angle, thrust)):
            shown = actions[:, k : k + 1]
            margins = torch.full_like(q, self.settings.margin).scatter(1, shown, 0.0)
            loss = loss + ((q + margins).max(1).values - q.gather(1, shown).squeeze(1)).mean()
        return loss

    def update(
        self, role: str, batch: dict[str, np.ndarray], demonstrated: np.ndarray | None = None
    ) -> float:
        """One gradient step of `role` on `batch` (plus the margin loss on its `demonstrated` rows);
        copies into the target when due. The mean |TD error|."""
        predicted, targets = self.td_errors(role, batch)
        loss = nn.functional.huber_loss(predicted, targets, delta=self.settings.huber)
        if demonstrated is not None and demonstrated.any():
            loss = loss + self.settings.margin_weight * self.margin_loss(role, batch, demonstrated)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        if self.updates % self.settings.target_every == 0:
            self.sync_target()
        return float((predicted - targets).detach().abs().mean())

    def sync_target(self) -> None:
        self.target.load_state_dict(self.network.state_dict())

    def state_dict(self) -> dict:
        return {
            "network": self.network.state_dict(),
            "target": self.target.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.network.load_state_dict(state["network"])
        self.target.load_state_dict(state["target"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = state["updates"]
