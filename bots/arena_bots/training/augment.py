"""Board symmetries of a game, applied to encoded positions and their policy targets.

A symmetry maps a position to an equivalent one (the same value, the policy carried along). Each
game's symmetries act on its network inputs (name -> (n, *shape)) and on (n, A) policy vectors;
`apply` takes one symmetry index per row, 0 being the identity.

- Pente: the 8 rotations and mirrors of the 19x19 board (the dihedral group of the square). Both
  opening rules are symmetric about the centre (the centre point, the tournament rule's square),
  so a transformed position is a legal position with the ban plane transformed alike. Index k:
  rotate by k % 4 quarter turns, then transpose y <-> x when k >= 4. The policy is one plane.
- Bobail: the left-right mirror (col' -> 4 - col' in the mover's view, which is the mirror of the
  real board too, as the mover's view is the real board or its 180-degree rotation). The start
  position is mirror-symmetric, so a mirrored game is a legal game. The policy's 8 direction
  planes flip their columns and swap SW<->SE, W<->E, NW<->NE (codes 0<->5, 1<->6, 2<->7);
  S and N (3, 4) stay.
- Colour swap is not used: Pente's planes say who moved first and the opening rules bind the
  first player only; Bobail's player 0 starts with a pawn-only turn and its turn plane tells the
  players apart. Neither game is the same with the colours exchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from arena_games.api import GameSpec

BOBAIL_MIRRORED_DIRECTIONS = (5, 6, 7, 3, 4, 0, 1, 2)  # direction code -> its mirror image


@dataclass(frozen=True)
class Symmetries:
    """The symmetry group of one game acting on boards and policies.

    kind: "dihedral" (8: rotations, then a transpose), "mirror" (2: columns flipped) or "identity".
    `direction_permutation` (mirror only) permutes the policy planes that stand for directions.
    """

    kind: str
    board_input: str  # the input that carries the board planes; the others are left as they are
    policy_planes: int  # the policy read as (policy_planes, H, W)
    direction_permutation: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return {"dihedral": 8, "mirror": 2, "identity": 1}[self.kind]

    def apply(
        self, inputs: Mapping[str, np.ndarray], policy: np.ndarray, which: np.ndarray
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Row i transformed by symmetry which[i]: new inputs (name -> (n, ...)) and policy (n, A)."""
        if self.kind == "identity":
            return dict(inputs), policy
        board = inputs[self.board_input]
        planes = policy.reshape(len(policy), self.policy_planes, *board.shape[-2:])
        new_board, new_planes = board.copy(), planes.copy()
        for index in np.unique(which).tolist():
            rows = which == index
            new_board[rows] = self.transform_planes(board[rows], index)
            new_planes[rows] = self.transform_policy(planes[rows], index)
        return {**inputs, self.board_input: new_board}, new_planes.reshape(policy.shape)

    def transform_planes(self, planes: np.ndarray, index: int) -> np.ndarray:
        """Symmetry `index` of planes (..., H, W)."""
        if self.kind == "mirror":
            return planes[..., ::-1] if index else planes
        turned = np.rot90(planes, index % 4, axes=(-2, -1))
        return np.swapaxes(turned, -2, -1) if index >= 4 else turned

    def transform_policy(self, planes: np.ndarray, index: int) -> np.ndarray:
        """Symmetry `index` of policy planes (n, P, H, W), direction planes permuted too."""
        moved = self.transform_planes(planes, index)
        if self.direction_permutation and index:
            moved = moved[:, list(self.direction_permutation)]
        return moved


def symmetries_for(spec: GameSpec) -> Symmetries:
    """The symmetries of a game; the identity alone for a game without known ones."""
    board = next(iter(spec.inputs))
    if spec.name == "pente":
        return Symmetries("dihedral", board, policy_planes=1)
    if spec.name == "bobail":
        return Symmetries("mirror", board, len(BOBAIL_MIRRORED_DIRECTIONS), BOBAIL_MIRRORED_DIRECTIONS)
    return Symmetries("identity", board, policy_planes=1)
