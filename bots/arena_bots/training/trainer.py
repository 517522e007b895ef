"""The AlphaZero loss and optimiser: policy cross-entropy + value MSE on replay minibatches.

loss = mean over the batch of  -sum_a pi(a) log softmax(logits)(a)  +  (z - v)^2
with pi the search's visit shares and z the game's result for the mover. AdamW applies the weight
decay (L2 regularisation in AlphaZero's loss) decoupled from the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from arena_bots.training.augment import Symmetries
from arena_bots.training.buffer import ReplayBuffer


@dataclass(frozen=True)
class TrainSettings:
    batch_size: int = 256
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    sample_reuse: float = 4.0  # each new position is drawn this many times on average (sets the steps)


@dataclass(frozen=True)
class Losses:
    policy: float  # cross-entropy in nats, averaged over the steps
    value: float  # mean squared error
    steps: int


def make_optimizer(network: nn.Module, settings: TrainSettings) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        network.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )


def steps_for(new_positions: int, settings: TrainSettings) -> int:
    """Gradient steps after a generation of `new_positions`, so each is drawn `sample_reuse` times."""
    return max(1, round(new_positions * settings.sample_reuse / settings.batch_size))


def train_steps(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    buffer: ReplayBuffer,
    steps: int,
    settings: TrainSettings,
    rng: np.random.Generator,
    symmetries: Symmetries,
) -> Losses:
    """`steps` minibatch updates of `network` from uniformly drawn, randomly transformed positions."""
    network.train()
    policy_total = value_total = 0.0
    for _ in range(steps):
        batch = buffer.sample(settings.batch_size, rng, symmetries)
        inputs = [torch.from_numpy(array) for array in batch.inputs.values()]
        logits, value = network(*inputs)
        policy_loss = -(torch.from_numpy(batch.policy) * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
        value_loss = torch.mean((torch.from_numpy(batch.value) - value) ** 2)
        optimizer.zero_grad()
        (policy_loss + value_loss).backward()
        optimizer.step()
        policy_total += policy_loss.item()
        value_total += value_loss.item()
    network.eval()
    return Losses(policy=policy_total / steps, value=value_total / steps, steps=steps)
