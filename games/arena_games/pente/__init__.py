"""Pente (../shared/games/pente.md): 19x19, pair captures, five in a row or five captured pairs.

One action head "move" of 361 points, index y * 19 + x; inputs "board" (6, 19, 19) and "captures"
(2,) as documented in `encoding`; rules, config and defaults in `rules`; batched random playouts
in `playouts`.
"""

from __future__ import annotations

from arena_games.api import Game, GameSpec
from arena_games.pente import encoding, openings, playouts, render, rules
from arena_games.pente.tables import NUM_POINTS

SPEC = GameSpec(
    name=rules.NAME,
    version=1,
    title="Pente",
    num_players=2,
    inputs=encoding.INPUTS,
    heads={"move": NUM_POINTS},
    max_length=rules.MAX_PLIES,
    default_config=rules.DEFAULT_CONFIG,
)

GAME = Game(
    spec=SPEC,
    init=rules.init,
    to_move=rules.to_move,
    legal_masks=rules.legal_masks,
    step=rules.step,
    returns=rules.returns,
    end_reason=rules.end_reason,
    encode=encoding.encode,
    render=render.render,
    view=render.view,
    to_dict=rules.to_dict,
    from_dict=rules.from_dict,
    opening=openings.opening,
    playouts=playouts.playouts,
)

__all__ = ["GAME", "SPEC"]
