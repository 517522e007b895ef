"""A simultaneous-move game seen as a turn-based one, for tree search (seed 001's sequential MCTS).

The searching player chooses first, the opponent second, and the game advances only when both
have chosen: a frame where both act becomes two plies of `sequential(game)`, and a frame where
one player acts alone stays one ply. The opponent's node is evaluated on the real position (its
legal actions and network inputs do not show the searcher's choice), but the tree does condition
its reply on that choice: the pessimistic view of a sequential search. Where that hurts most, a
conflict between the two actions (in Spring 2021, both seeding one cell), the searcher wins
(`Game.step_favouring`), as seed 001 did: letting the opponent always counter exactly "was causing
problems in my search".

A state of the view is `Sequential(state, searcher, chosen)`: the real state, the seat that
searches, and the searcher's action while the opponent's is still to come. Values and returns are
the real game's, so the turn-based search backs them up unchanged (every node's value is its own
player's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from arena_games.api import Action, Game


@dataclasses.dataclass(frozen=True)
class Sequential:
    state: Any  # the real game's state
    searcher: int  # the seat whose search this is: it chooses first and wins conflicts
    chosen: Action | None = None  # the searcher's action, waiting for the opponent's


def sequential(game: Game) -> Game:
    """`game` (two players, simultaneous moves) as a turn-based game of `Sequential` states.

    Only what a search uses is defined: to_move, legal_masks, step, returns, end_reason, encode,
    and random playouts (the real game's, fast path included). The rest raise: a view state is never shown,
    stored or sent.
    """
    favoured_step = game.step_favouring

    def movers(view: Sequential) -> tuple[int, ...]:
        return game.to_move(view.state)

    def to_move(view: Sequential) -> tuple[int, ...]:
        players = movers(view)
        if len(players) < 2:
            return players
        return (view.searcher,) if view.chosen is None else (1 - view.searcher,)

    def step(view: Sequential, joint: Sequence[Action]) -> Sequential:
        (action,) = joint
        players = movers(view)
        if len(players) == 2 and view.chosen is None:  # the real step checks the pair, next ply
            return dataclasses.replace(view, chosen=tuple(action))
        if len(players) == 2:
            by_seat = {view.searcher: view.chosen, 1 - view.searcher: tuple(action)}
            real = [by_seat[player] for player in players]
        else:
            real = [tuple(action)]
        if favoured_step is None:
            return Sequential(game.step(view.state, real), view.searcher)
        return Sequential(favoured_step(view.state, real, view.searcher), view.searcher)

    def playouts(views: Sequence[Sequential], rngs: Sequence[np.random.Generator]) -> np.ndarray:
        """The real game's playouts, after the opponent's random reply to a pending choice."""
        settled = [
            view
            if view.chosen is None
            else step(view, [game.random_action(view.state, 1 - view.searcher, rng)])
            for view, rng in zip(views, rngs, strict=True)
        ]
        return game.random_playouts([view.state for view in settled], rngs)

    def unused(*_: Any) -> Any:
        raise NotImplementedError("a sequential view of a game is for search only")

    return Game(
        spec=dataclasses.replace(game.spec, simultaneous=False, max_length=2 * game.spec.max_length),
        init=unused,
        to_move=to_move,
        legal_masks=lambda view, player: game.legal_masks(view.state, player),
        step=step,
        returns=lambda view: game.returns(view.state),
        end_reason=lambda view: game.end_reason(view.state),
        encode=lambda view, player: game.encode(view.state, player),
        render=unused,
        view=unused,
        to_dict=unused,
        from_dict=unused,
        opening=unused,
        playouts=playouts,
    )
