"""Bobail: the 5 x 5 race of the neutral bobail to a home row (rules: shared/games/bobail.md).

Half-move steps with one action head "move" of 200 = 8 directions x 25 squares, relative to the
mover (rules.py); the seed app's 43 x 5 x 5 input planes (encoding.py).
"""

from __future__ import annotations

from arena_games.api import Game, GameSpec
from arena_games.bobail import rules
from arena_games.bobail.encoding import INPUT_SHAPE, encode
from arena_games.bobail.openings import opening
from arena_games.bobail.render import render, view

SPEC = GameSpec(
    name=rules.GAME_NAME,
    version=1,
    title="Bobail",
    num_players=2,
    inputs={"board": INPUT_SHAPE},
    heads={"move": rules.NUM_ACTIONS},
    max_length=rules.MAX_HALF_MOVES,  # one step per half-move; the turn cap ends every game by then
    default_config=rules.DEFAULT_CONFIG,
)

GAME: Game[rules.BobailState] = Game(
    spec=SPEC,
    init=rules.init,
    to_move=rules.to_move,
    legal_masks=rules.legal_masks,
    step=rules.step,
    returns=rules.returns,
    end_reason=rules.end_reason,
    encode=encode,
    render=render,
    view=view,
    to_dict=rules.to_dict,
    from_dict=rules.from_dict,
    opening=opening,
)
