"""A game between a person and a bot, as plain functions over its replay (no I/O, no clock).

The game is its replay so far (`arena_games.replay.Replay`, no imposed opening): every request
re-plays it through the engine, applies the person's move, and lets the bot answer until the
person is to move again or the game is over. The bot is a callable that answers one `Request`
with a `Decision`, i.e. the very player code the ladder runs (the API passes the bot's player at
its ladder's budget). Its random draws at step k come from a generator seeded with
(game seed, k, seat), so a human game re-plays the same however its requests were spread.

A person's illegal or malformed move is refused (`MoveRefused`) and changes nothing; a bot that
gives no legal move forfeits, as on the ladder (`arena_bots.match.fault_cause`). A simultaneous
step takes the person's action and the bot's choice made on the same position, neither seeing
the other's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arena_bots.match import Decision, Request, fault_cause, forfeit_outcome
from arena_games.api import Action, Game
from arena_games.replay import Forfeit, Replay, Step, replay_states

BotMove = Callable[[Request], Decision]  # the bot's answer in one position


class MoveRefused(ValueError):
    """A request the game cannot take: `code` is "bad_seat", "game_over", "not_your_turn" or
    "illegal_action"."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def new_game(game: Game, *, seed: int, human_seat: int, names: Sequence[str], bot_move: BotMove) -> Replay:
    """The game from `init(seed)` with `names` by seat, after the bot's moves if it starts."""
    if not 0 <= human_seat < game.spec.num_players:
        seats = f"seats 0 to {game.spec.num_players - 1}"
        raise MoveRefused("bad_seat", f"{game.name} has {seats}, not {human_seat}")
    start = Replay(
        game=game.spec.name,
        game_version=game.spec.version,
        seed=seed,
        config={},
        players=tuple(names),
        opening_length=0,
        steps=(),
        returns=(0.0,) * game.spec.num_players,
        end_reason="",
    )
    return _advance(game, start, game.init(seed, None), human_seat, None, bot_move)


def human_move(game: Game, replay: Replay, *, human_seat: int, action: Action, bot_move: BotMove) -> Replay:
    """The game after the person's `action` and the bot's answers; MoveRefused changes nothing."""
    state = current_state(game, replay)
    _check_turn(game, replay, state, human_seat)
    cause = fault_cause(game, state, human_seat, Decision(tuple(action)))
    if cause:
        raise MoveRefused("illegal_action", f"{cause}: not a legal move here")
    return _advance(game, replay, state, human_seat, tuple(action), bot_move)


def resign(game: Game, replay: Replay, *, human_seat: int) -> Replay:
    """The game ended by the person's resignation, recorded as their forfeit ("player 2 resigns")."""
    if is_over(replay):
        raise MoveRefused("game_over", f"the game is over: {replay.end_reason}")
    ended = _finished(replay, replay.steps, game, None, Forfeit(player=human_seat, cause="resigned"))
    return dataclasses.replace(ended, end_reason=f"player {human_seat + 1} resigns")


def is_over(replay: Replay) -> bool:
    return bool(replay.end_reason)


def current_state(game: Game, replay: Replay) -> Any:
    """The position after the replay's steps (BadReplay if it does not re-play)."""
    return replay_states(game, replay)[-1]


def legal_actions(game: Game, state: Any, seat: int) -> list[list[int]]:
    """Per action head, the indices `seat` may play in `state` (empty lists when it is not to move)."""
    if seat not in game.to_move(state):
        return [[] for _ in game.spec.heads]
    return [np.flatnonzero(mask).tolist() for mask in game.legal_masks(state, seat)]


def _check_turn(game: Game, replay: Replay, state: Any, human_seat: int) -> None:
    if is_over(replay):
        raise MoveRefused("game_over", f"the game is over: {replay.end_reason}")
    if human_seat not in game.to_move(state):
        raise MoveRefused("not_your_turn", "it is the bot's turn, not yours")


def _advance(
    game: Game, replay: Replay, state: Any, human_seat: int, human_action: Action | None, bot_move: BotMove
) -> Replay:
    """Plays steps from `state` until the person is to move without an action given, or the end."""
    steps = list(replay.steps)
    while not game.is_over(state):
        actors = game.to_move(state)
        if human_seat in actors and human_action is None:
            return dataclasses.replace(replay, steps=tuple(steps))
        decisions = [
            Decision(human_action)
            if seat == human_seat
            else bot_move(_request(replay, state, len(steps), seat))
            for seat in actors
        ]
        human_action = None if human_seat in actors else human_action
        for seat, decision in zip(actors, decisions, strict=True):
            if seat != human_seat and (cause := fault_cause(game, state, seat, decision)):
                return _finished(replay, steps, game, None, Forfeit(player=seat, cause=cause))
        joint = tuple(tuple(int(index) for index in decision.action or ()) for decision in decisions)
        state = game.step(state, joint)
        steps.append(Step(actions=joint, insights=tuple(decision.insight for decision in decisions)))
    return _finished(replay, steps, game, state, None)


def _request(replay: Replay, state: Any, step: int, seat: int) -> Request:
    return Request(state, seat, np.random.default_rng((replay.seed, step, seat)))


def _finished(
    replay: Replay, steps: Sequence[Step], game: Game, final: Any | None, forfeit: Forfeit | None
) -> Replay:
    """The replay of the ended game: by `forfeit` when given, else by the rules at `final`."""
    if forfeit is not None:
        returns, reason = forfeit_outcome(game.spec.num_players, forfeit)
    else:
        returns, reason = tuple(game.returns(final)), game.end_reason(final)
    return dataclasses.replace(
        replay, steps=tuple(steps), returns=returns, end_reason=reason, forfeit=forfeit
    )
