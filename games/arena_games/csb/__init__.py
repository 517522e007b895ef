"""Coders Strike Back (../shared/games/csb.md): 2 players x 2 pods racing round checkpoints.

One step is one turn of both players (simultaneous). Four action heads per player: angle0 and
angle1 (37: turn -18..+18 degrees), thrust0 and thrust1 (52: 50 thrust levels, BOOST, SHIELD)
(rules.py); seed 000's pod-relative inputs plus the opponent's lead pod, one tensor "pods" (2, 16)
(encoding.py); the turn itself, the community referee's arithmetic over many races at once in NumPy
(physics.py); batched random playouts and the house racer (playouts.py).
"""

from __future__ import annotations

from arena_games.api import Game, GameSpec
from arena_games.csb import encoding, openings, playouts, render, rules

SPEC = GameSpec(
    name=rules.GAME_NAME,
    version=1,
    title="Coders Strike Back",
    num_players=2,
    inputs=encoding.INPUTS,
    heads=rules.HEADS,
    max_length=rules.MAX_STEPS,  # the referee's 500-turn cap
    simultaneous=True,
    default_config=rules.DEFAULT_CONFIG,
)

GAME: Game[rules.CsbState] = Game(
    spec=SPEC,
    init=rules.init,
    to_move=rules.to_move,
    legal_masks=rules.legal_masks,
    step=rules.step,
    returns=rules.returns,
    end_reason=rules.end_reason,
    encode=encoding.encode,
    encode_many=encoding.encode_many,
    render=render.render,
    view=render.view,
    to_dict=rules.to_dict,
    from_dict=rules.from_dict,
    opening=openings.opening,
    playouts=playouts.playouts,
)

__all__ = ["GAME", "SPEC"]
