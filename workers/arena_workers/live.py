"""Writing the games of a batch while they are played, for viewers to follow (issue 25.4).

A `LiveWriter` is `play_many`'s watcher for one batch: before a round it writes what the games
played since its last write (their new steps, the result of those that ended) in one transaction
(`arena_platform.store.live`), at most once per `interval` seconds, so a game's viewers lag at
most that much behind the worker plus their own polling. A write that fails (the database is busy
or away) is skipped and its steps go with the next one: a viewer's delay never costs a game.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from arena_bots.match import GameInProgress
from arena_games.replay import step_to_dict
from arena_platform.db import session
from arena_platform.store.live import LiveProgress, NewLiveGame, add_progress, open_games

log = logging.getLogger(__name__)


class LiveWriter:
    """Writes the games of one `play_many` batch for the claim `owner`, at most every
    `interval` seconds of `clock` (the first call writes at once). A game's setup `meta` names its
    `pairing_id`, `index`, `ladder_id` and `bot_ids` by seat (as the runner's setups do)."""

    def __init__(
        self,
        engine: Engine,
        owner: str,
        *,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engine = engine
        self._owner = owner
        self._interval = interval
        self._clock = clock
        self._due = float("-inf")  # when the next write may happen, on `clock`
        self._ids: list[int] = []  # the live_game ids of the batch's games, in setups order
        self._written: list[int] = []  # steps written per game
        self._ended: list[bool] = []  # whether a game's result is written

    def __call__(self, games: Sequence[GameInProgress]) -> None:
        now = self._clock()
        if now < self._due:
            return
        self._due = now + self._interval
        try:
            with session(self._engine) as db:
                if not self._ids:
                    self._ids = open_games(db, owner=self._owner, games=[self._opened(g) for g in games])
                    self._written, self._ended = [0] * len(games), [False] * len(games)
                news = {
                    number: p for number, match in enumerate(games) if (p := self._progress(number, match))
                }
                add_progress(db, progress=list(news.values()))
        except SQLAlchemyError as error:
            log.warning("games in progress not written (the next write brings them): %s", error)
            return
        for number, progress in news.items():
            self._written[number] = progress.first_ply + len(progress.steps)
            self._ended[number] = progress.result is not None

    def _opened(self, match: GameInProgress) -> NewLiveGame:
        meta = match.setup.meta
        header = match.replay().to_dict()
        del header["steps"], header["result"]
        first, second = meta["bot_ids"]
        return NewLiveGame(
            pairing_id=meta["pairing_id"],
            index=meta["index"],
            ladder_id=meta["ladder_id"],
            first_bot_id=first,
            second_bot_id=second,
            header=header,
        )

    def _progress(self, number: int, match: GameInProgress) -> LiveProgress | None:
        """What game `number` played since its last write; None when nothing."""
        if self._ended[number]:
            return None
        written = self._written[number]
        over = match.is_over()
        if len(match.steps) == written and not over:
            return None
        result = match.replay().to_dict()["result"] if over else None
        steps = [step_to_dict(step) for step in match.steps[written:]]
        return LiveProgress(live_game_id=self._ids[number], first_ply=written, steps=steps, result=result)
