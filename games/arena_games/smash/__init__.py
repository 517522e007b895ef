"""Smash the Code (CodinGame, 2016; ../shared/games/smash_the_code.md): two wells, shared pairs, skulls.

Simultaneous: both players place this turn's pair at once. One action head "place" of
4 * width - 2 placements (22 at width 6, `rules.placements`); inputs "own", "opponent" and
"pieces", planes of HEIGHT x width (`encoding`); batched random playouts in `playouts`.
The rules are width-generic: `make_game(width)` builds the game of that width (its inputs and
head are sized for it); the registry holds the contest's, 6 wide (GAME).
"""

from __future__ import annotations

import functools

from arena_games.api import Game, GameSpec
from arena_games.smash import encoding, openings, playouts, render, rules

# The game's version (ARCHITECTURE §2: bumped on any change of rules, encoding or action meaning).
# 2: the official referee's rules (rules.py's spec note): skulls that do not fit are discarded, the
#    pairs are java.util.Random's, a player who lost reports 0. Results of v1 games differ; the
#    inputs and the actions mean what they meant in v1, so v1 networks play v2 unchanged.
VERSION = 2


def make_game(width: int = rules.DEFAULT_WIDTH) -> Game[rules.SmashState]:
    """The game with wells `width` columns wide (2 or more)."""
    if width < 2:
        raise ValueError(f"smash: a well needs 2 columns or more, got {width}")
    spec = GameSpec(
        name=rules.GAME_NAME if width == rules.DEFAULT_WIDTH else f"{rules.GAME_NAME}{width}",
        version=VERSION,
        title="Smash the Code" if width == rules.DEFAULT_WIDTH else f"Smash the Code, {width} wide",
        num_players=2,
        inputs=encoding.inputs(width),
        heads={"place": len(rules.placements(width))},
        max_length=rules.MAX_TURN_LIMIT,
        simultaneous=True,
        default_config=rules.default_config(width),
    )
    return Game(
        spec=spec,
        init=functools.partial(rules.init, width=width),
        to_move=rules.to_move,
        legal_masks=rules.legal_masks,
        step=rules.step,
        returns=rules.returns,
        end_reason=rules.end_reason,
        encode=encoding.encode,
        render=render.render,
        view=render.view,
        to_dict=rules.to_dict,
        from_dict=functools.partial(rules.from_dict, width=width),
        opening=openings.opening,
        playouts=playouts.playouts,
    )


GAME = make_game()
SPEC = GAME.spec

__all__ = ["GAME", "SPEC", "make_game"]
