"""Spring Challenge 2021 (../shared/games/spring2021.md): the hex forest, simultaneous moves.

One step is one ACTIONS frame of the players who have not waited today (rules.py); one action head
"move" of 38 = 37 cells + WAIT; the seed bot's 534 inputs in one tensor "obs" (encoding.py);
the official map generator seed for seed (board.py); random playouts without the
contract's per-step overhead (playouts.py).
"""

from __future__ import annotations

from arena_games.api import Game, GameSpec
from arena_games.spring2021 import encoding, openings, playouts, render, rules

SPEC = GameSpec(
    name=rules.GAME_NAME,
    version=1,
    title="Spring Challenge 2021",
    num_players=2,
    inputs=encoding.INPUTS,
    heads={"move": rules.NUM_ACTIONS},
    max_length=rules.MAX_STEPS,  # 24 days x at most 38 frames a day
    simultaneous=True,
    default_config=rules.DEFAULT_CONFIG,
)

GAME: Game[rules.SpringState] = Game(
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
    step_favouring=rules.step_favouring,
)

__all__ = ["GAME", "SPEC"]
