"""AlphaZero networks in the shapes the bot contract wants: residual towers for the board games,
a plain MLP for a game whose input is one flat vector (Spring 2021, seed 001).

A flat input (n, F) -> `hidden layers` dense layers of `width` units with ReLU ->
    policy: dense to A logits;  value: dense to 1 -> tanh
The seed's network is 534 -> 96 -> 96 -> (38 policy, 1 value): `build_network(spec, 2, 96)`.

One architecture serves Bobail and Pente (and any one-head game whose first input is a board):
  board (C, H, W) -> 3x3 conv stem -> `blocks` residual blocks of `filters` channels ->
    policy: 1x1 conv to A / (H * W) planes, flattened -> (A,) logits
    value:  1x1 conv to 2 planes, flattened [+ extras] -> dense 64 -> ReLU -> dense 1 -> tanh
Extra flat inputs (Pente's "captures" (2,)) go through a small dense layer (EXTRA_FEATURES units,
ReLU); the result is concatenated twice: as constant planes in front of the stem (so every square
sees the capture score) and into the value head.

The fully convolutional policy head needs the action layout to be "plane, row, column", which both
games have: Pente's action is y * 19 + x (one plane); Bobail's is direction * 25 + row' * 5 + col'
in the mover's view, like its input planes (8 planes). So the policy is translation-equivariant and
the board symmetries act on it exactly as on the input planes (see `augment`).

Sizes: the seeds used 6 blocks (Bobail, 75 filters); on our CPU (ARCHITECTURE §8) filter counts
that are multiples of 16 are much faster, so the defaults are 4 blocks x 32 filters, which
evaluates in well under a millisecond for both games. Export uses only Conv, BatchNormalization,
Relu, Add, Mul, Unsqueeze, Concat, Flatten/Reshape, Gemm and Tanh: all on the validator's list.
"""

from __future__ import annotations

import io
import itertools
import math

import torch
from torch import nn

from arena_games.api import GameSpec

EXTRA_FEATURES = 16  # units of the dense layer over the extra flat inputs
VALUE_HIDDEN = 64
VALUE_PLANES = 2


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN, plus the input, then ReLU; shape-preserving (n, filters, H, W)."""

    def __init__(self, filters: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(x + self.norm2(self.conv2(y)))


class AlphaZeroNet(nn.Module):
    """forward(board, *extras) -> (policy logits (n, A), value (n,) in [-1, 1]).

    board: float32 (n, C, H, W); extras: float32 (n, k_i) each, in the game's input order.
    """

    def __init__(
        self,
        board_shape: tuple[int, int, int],
        extra_sizes: tuple[int, ...],
        actions: int,
        blocks: int = 4,
        filters: int = 32,
    ) -> None:
        super().__init__()
        channels, height, width = board_shape
        if actions % (height * width):
            raise ValueError(f"{actions} actions are not whole planes of {height}x{width}")
        self.board_shape = board_shape
        extra_total = sum(extra_sizes)
        self.extra = nn.Linear(extra_total, EXTRA_FEATURES) if extra_total else None
        planes_in = channels + (EXTRA_FEATURES if extra_total else 0)
        self.stem = nn.Sequential(
            nn.Conv2d(planes_in, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters), nn.ReLU()
        )
        self.tower = nn.Sequential(*(ResidualBlock(filters) for _ in range(blocks)))
        self.policy = nn.Conv2d(filters, actions // (height * width), 1)
        self.value_planes = nn.Sequential(
            nn.Conv2d(filters, VALUE_PLANES, 1, bias=False), nn.BatchNorm2d(VALUE_PLANES), nn.ReLU()
        )
        value_in = VALUE_PLANES * height * width + (EXTRA_FEATURES if extra_total else 0)
        self.value = nn.Sequential(
            nn.Linear(value_in, VALUE_HIDDEN), nn.ReLU(), nn.Linear(VALUE_HIDDEN, 1), nn.Tanh()
        )

    def forward(self, board: torch.Tensor, *extras: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = None
        if self.extra is not None:
            features = torch.relu(self.extra(torch.cat(extras, dim=1)))
            ones = board.new_ones((1, 1, *self.board_shape[1:]))
            board = torch.cat([board, features[:, :, None, None] * ones], dim=1)
        trunk = self.tower(self.stem(board))
        policy = torch.flatten(self.policy(trunk), 1)
        value_in = torch.flatten(self.value_planes(trunk), 1)
        if features is not None:
            value_in = torch.cat([value_in, features], dim=1)
        return policy, self.value(value_in).squeeze(1)


class MlpNet(nn.Module):
    """forward(features) -> (policy logits (n, A), value (n,) in [-1, 1]); features float32 (n, F)."""

    def __init__(self, inputs: int, actions: int, layers: int, width: int) -> None:
        super().__init__()
        sizes = [inputs] + [width] * layers
        self.trunk = nn.Sequential(
            *(module for a, b in itertools.pairwise(sizes) for module in (nn.Linear(a, b), nn.ReLU()))
        )
        self.policy = nn.Linear(sizes[-1], actions)
        self.value = nn.Sequential(nn.Linear(sizes[-1], 1), nn.Tanh())

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        trunk = self.trunk(features)
        return self.policy(trunk), self.value(trunk).squeeze(1)


def build_network(spec: GameSpec, blocks: int = 4, filters: int = 32) -> AlphaZeroNet | MlpNet:
    """The network for `spec`. A board game (its first input (C, H, W), the others flat vectors)
    gets a tower of `blocks` residual blocks of `filters` channels; a game with one flat input
    gets an MLP of `blocks` hidden layers of `filters` units."""
    shapes = list(spec.inputs.values())
    if len(shapes) == 1 and len(shapes[0]) == 1 and len(spec.heads) == 1:
        return MlpNet(shapes[0][0], next(iter(spec.heads.values())), blocks, filters)
    board, extras = shapes[0], shapes[1:]
    if len(board) != 3 or any(len(shape) != 1 for shape in extras) or len(spec.heads) != 1:
        raise ValueError(f"{spec.name}: needs a (C, H, W) board first, flat extras and one head")
    actions = next(iter(spec.heads.values()))
    return AlphaZeroNet(tuple(board), tuple(math.prod(s) for s in extras), actions, blocks, filters)


def parameter_count(module: nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


def weights_bytes(module: nn.Module) -> bytes:
    """The module's torch state (its weights) as bytes: what `load_weights` takes back."""
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    return buffer.getvalue()


def load_weights(module: nn.Module, data: bytes) -> None:
    """Loads `weights_bytes` of a module of the same shape into `module`."""
    module.load_state_dict(torch.load(io.BytesIO(data), weights_only=True))


class TwoTowerNet(nn.Module):
    """Seed 003's actor-critic network for Smash the Code, scaled for a CPU.

    forward(own, opponent, pieces) -> (policy logits (n, A), value (n,) in (0, 1): P(the mover wins)).
    own, opponent: float32 (n, C, H, W) wells; pieces: float32 (n, P, H, W) constant planes
    (`arena_games.smash.encoding`). As in the seed: a residual tower over the own well (`blocks`
    blocks of `filters`), a shallow one over the opponent's (blocks // 2, at least 1, of
    filters // 2) ending in a 1x1 convolution to 2 planes, and the pieces and meters through a 1x1
    convolution to 3 planes with tanh; the three are concatenated, then
        policy: 1x1 conv to 4 planes, flatten, batch norm, ReLU, dense to A logits
        value:  1x1 conv to 2 planes, flatten, batch norm, ReLU, dense to 1, sigmoid.
    One change from the seed: the pieces planes also enter the own tower's stem, so the tower can
    see where this turn's pair fits (the seed joined them only after the tower).
    """

    def __init__(
        self,
        well_shape: tuple[int, int, int],
        piece_planes: int,
        actions: int,
        blocks: int = 2,
        filters: int = 32,
    ) -> None:
        super().__init__()
        channels, height, width = well_shape
        shallow = max(filters // 2, 16)
        self.own = nn.Sequential(
            nn.Conv2d(channels + piece_planes, filters, 3, padding=1, bias=False),
            nn.BatchNorm2d(filters),
            nn.ReLU(),
            *(ResidualBlock(filters) for _ in range(blocks)),
        )
        self.opponent = nn.Sequential(
            nn.Conv2d(channels, shallow, 3, padding=1, bias=False),
            nn.BatchNorm2d(shallow),
            nn.ReLU(),
            *(ResidualBlock(shallow) for _ in range(max(blocks // 2, 1))),
            nn.Conv2d(shallow, 2, 1),
        )
        self.pieces = nn.Sequential(nn.Conv2d(piece_planes, 3, 1), nn.Tanh())
        joined = filters + 2 + 3
        self.policy = _flat_head(joined, 4, height * width, actions)
        self.value = nn.Sequential(_flat_head(joined, 2, height * width, 1), nn.Sigmoid())

    def forward(
        self, own: torch.Tensor, opponent: torch.Tensor, pieces: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        joined = torch.cat(
            [self.own(torch.cat([own, pieces], dim=1)), self.opponent(opponent), self.pieces(pieces)], dim=1
        )
        return self.policy(joined), self.value(joined).squeeze(1)


def _flat_head(channels: int, planes: int, cells: int, outputs: int) -> nn.Sequential:
    """1x1 conv to `planes`, flatten, batch norm, ReLU, dense to `outputs` (the seed's heads)."""
    return nn.Sequential(
        nn.Conv2d(channels, planes, 1),
        nn.Flatten(),
        nn.BatchNorm1d(planes * cells),
        nn.ReLU(),
        nn.Linear(planes * cells, outputs),
    )
