"""The match loop: plays games between players, and is the ONE place where a bad move loses.

Players are batch-first: in every round the loop hands each player object all the decisions it
owes across the games ready to step, in one `decide` call, so a search player can evaluate the
leaves of every game in one inference batch (ARCHITECTURE §4); a game waits a round where that
brings a player's games into step (`_play_round`). `play` is the one-game case.

A player loses the game (a forfeit, with its cause in the replay) when it returns no action (a
fault traced to its model: it timed out, failed or produced non-finite numbers) or an action the
engine's legal masks forbid. If every acting player of a simultaneous step forfeits, the game is a
draw. A fault of the platform is never a forfeit: a player (Arena's own code) that raises, or an
inference backend that raises `PlatformFault`, stops the whole batch with a `PlatformFault`, and the
caller gives its games back to be played again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from arena_bots.core import MatchEngine, match_engine, selected_core
from arena_games.api import Action, Config, Game, JointAction
from arena_games.replay import Forfeit, Replay, Step


class PlatformFault(BaseException):
    """The platform, not a bot, failed to produce a move: the batch stops and no game of it counts.

    A BaseException, like KeyboardInterrupt, so that it passes through the players' and the search's
    `except Exception` blocks, which turn a model's own faults into forfeits.
    """


@dataclass(frozen=True)
class Request:
    """One decision a player owes: `player` (a seat) is to move in `state`.

    `rng` is the seat's own generator for this game, seeded from the match seed: players draw
    every random number from it, so a match replays the same on any machine.
    """

    state: Any
    player: int
    rng: np.random.Generator


@dataclass(frozen=True)
class Decision:
    """A player's answer to a Request: an action, or None with the fault that prevented one.

    `insight` is JSON-safe and goes into the replay for the viewer (search players put the root
    value and their top moves with visit shares and priors there).
    """

    action: Action | None
    insight: dict[str, Any] | None = None
    fault: str = ""


class Player(Protocol):
    """Anything that can choose moves. `decide` answers every request, in order."""

    name: str

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]: ...


@dataclass(frozen=True)
class MatchSetup:
    """One game to play: the players by seat, the seed, the game config and an imposed opening."""

    players: tuple[Player, ...]
    seed: int
    config: Config | None = None
    opening: tuple[JointAction, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatchResult:
    returns: tuple[float, ...]
    end_reason: str
    forfeit: Forfeit | None
    replay: Replay
    final_state: Any  # the position after the last played step (before a forfeited move)


def play(
    game: Game,
    players: Sequence[Player],
    seed: int,
    *,
    opening: Sequence[JointAction] = (),
    config: Config | None = None,
    core: str | None = None,
) -> MatchResult:
    """Play one game of `game` between `players` (by seat) from `opening`, seeded by `seed`, on
    `core` (as `play_many`)."""
    setup = MatchSetup(players=tuple(players), seed=seed, config=config, opening=tuple(opening))
    return play_many(game, [setup], core=core)[0]


def play_many(
    game: Game,
    setups: Sequence[MatchSetup],
    *,
    before_round: Callable[[], None] | None = None,
    watch: Callable[[Sequence[GameInProgress]], None] | None = None,
    core: str | None = None,
) -> list[MatchResult]:
    """Play all `setups` at once, batching each player object's decisions per round.

    The games are played on `core`'s engine of `game` (default: `core.selected_core()`, ARENA_CORE;
    `core.match_engine`: on "compiled" the games of MATCH_GAMES step on their kernels, and their
    players get the kernels' states with the kernel game), the same games on either core.
    `before_round` is called before every round; it may raise (a PlatformFault when the worker
    shuts down, say) to stop the batch. `watch` is called after it with every game of the batch,
    in `setups` order, those already over included (a live view of the games; it must not change
    them). Raises PlatformFault when a player raises.
    """
    engine = match_engine(game, selected_core(core))
    games = [GameInProgress.start(engine, setup) for setup in setups]
    while running := [match for match in games if not match.is_over()]:
        if before_round is not None:
            before_round()
        if watch is not None:
            watch(games)
        _play_round(engine.game, running)
    return [match.result() for match in games]


@dataclass
class GameInProgress:
    """The mutable bookkeeping of one game while it is played; states themselves are immutable.
    `state` is a state of `engine.game` (the kernels' on the compiled core, where it has them);
    `steps` are the steps played so far, the opening's included."""

    setup: MatchSetup
    engine: MatchEngine
    state: Any
    rngs: tuple[np.random.Generator, ...]
    steps: list[Step]
    forfeit: Forfeit | None = None
    all_forfeited: str = ""  # every acting player of one step forfeited: a draw, with this cause

    @classmethod
    def start(cls, engine: MatchEngine, setup: MatchSetup) -> GameInProgress:
        game = engine.game
        if len(setup.players) != game.spec.num_players:
            raise ValueError(f"{game.name} needs {game.spec.num_players} players, got {len(setup.players)}")
        state = game.init(setup.seed, setup.config)
        steps = []
        for joint in setup.opening:
            state = game.step(state, joint)
            steps.append(Step(actions=tuple(tuple(action) for action in joint)))
        rngs = tuple(np.random.default_rng((setup.seed, seat)) for seat in range(game.spec.num_players))
        return cls(setup=setup, engine=engine, state=state, rngs=rngs, steps=steps)

    def is_over(self) -> bool:
        return self.forfeit is not None or bool(self.all_forfeited) or self.engine.game.is_over(self.state)

    def apply(self, actors: tuple[int, ...], decisions: Sequence[Decision]) -> None:
        """Step with the actors' decisions, or end the game on the first bad one."""
        game = self.engine.game
        forfeits = [
            Forfeit(player=seat, cause=cause, action=_as_action(decision.action))
            for seat, decision in zip(actors, decisions, strict=True)
            if (cause := fault_cause(game, self.state, seat, decision))
        ]
        if forfeits and len(forfeits) == len(actors) > 1:
            self.all_forfeited = "every player forfeits: " + "; ".join(f.cause for f in forfeits)
        elif forfeits:
            self.forfeit = forfeits[0]
        else:
            joint = tuple(decision.action for decision in decisions)
            self.state = game.step(self.state, joint)
            self.steps.append(Step(actions=joint, insights=tuple(d.insight for d in decisions)))
            if len(self.steps) > game.spec.max_length:
                raise RuntimeError(f"{game.name} ran past its max_length {game.spec.max_length}: engine bug")

    def result(self) -> MatchResult:
        replay = self.replay()
        return MatchResult(
            returns=replay.returns,
            end_reason=replay.end_reason,
            forfeit=self.forfeit,
            replay=replay,
            final_state=self.engine.reference_state(self.state),
        )

    def replay(self) -> Replay:
        """The replay so far: once the game is over its whole replay; before, its steps so far with
        returns of 0 and an empty end reason."""
        game = self.engine.game
        returns, end_reason = self._outcome() if self.is_over() else ((0.0,) * game.spec.num_players, "")
        return Replay(
            game=game.spec.name,
            game_version=game.spec.version,
            seed=self.setup.seed,
            config=dict(self.setup.config or {}),
            players=tuple(player.name for player in self.setup.players),
            opening_length=len(self.setup.opening),
            steps=tuple(self.steps),
            returns=returns,
            end_reason=end_reason,
            forfeit=self.forfeit,
            meta=dict(self.setup.meta),
        )

    def _outcome(self) -> tuple[tuple[float, ...], str]:
        game = self.engine.game
        num_players = game.spec.num_players
        if self.all_forfeited:
            return (0.0,) * num_players, self.all_forfeited
        if self.forfeit is not None:
            return forfeit_outcome(num_players, self.forfeit)
        return tuple(game.returns(self.state)), game.end_reason(self.state)


def forfeit_outcome(num_players: int, forfeit: Forfeit) -> tuple[tuple[float, ...], str]:
    """The returns (the loser -1, the others sharing +1) and end reason of a game `forfeit` ended."""
    loser = forfeit.player
    returns = tuple(-1.0 if seat == loser else 1.0 / (num_players - 1) for seat in range(num_players))
    return returns, f"player {loser + 1} forfeits: {forfeit.cause}"


def _play_round(game: Game, running: Sequence[GameInProgress]) -> None:
    """One step of the games that are ready: every actor of a game decides for it, each player
    object for all its ready games in one call.

    A game is ready when each of its actors is owed a move in every running game it plays in; when
    no game is, the games of the player owed the most moves (the first met on a tie) are. So a
    player's games fall into step rather than alternate: the two seat-swapped games of a pairing of
    an alternating game wait on the same player after the first round, and each of its calls carries
    the positions of both (issue 24 item 5). The games are the same whichever wait: players draw
    only from their requests' own generators.
    """
    actors = [game.to_move(match.state) for match in running]
    movers = [
        {id(match.setup.players[seat]) for seat in seats}
        for match, seats in zip(running, actors, strict=True)
    ]
    playing: dict[int, int] = {}  # id(player) -> running games it plays in
    owed: dict[int, int] = {}  # id(player) -> running games that wait on its move
    for match, waiting_on in zip(running, movers, strict=True):
        for key in {id(player) for player in match.setup.players}:
            playing[key] = playing.get(key, 0) + 1
        for key in waiting_on:
            owed[key] = owed.get(key, 0) + 1
    ready = [index for index, keys in enumerate(movers) if all(owed[key] == playing[key] for key in keys)]
    if not ready:
        busiest = max(owed, key=owed.__getitem__)
        ready = [index for index, keys in enumerate(movers) if busiest in keys]
    pending: dict[int, list[tuple[int, int]]] = {}  # id(player) -> [(game index, seat)]
    players: dict[int, Player] = {}
    for index in ready:
        for seat in actors[index]:
            player = running[index].setup.players[seat]
            players[id(player)] = player
            pending.setdefault(id(player), []).append((index, seat))
    decisions: dict[tuple[int, int], Decision] = {}
    for key, requested in pending.items():
        requests = [Request(running[i].state, seat, running[i].rngs[seat]) for i, seat in requested]
        decisions.update(zip(requested, _decide(players[key], game, requests), strict=True))
    for index in ready:
        seats = actors[index]
        running[index].apply(seats, [decisions[index, seat] for seat in seats])


def _decide(player: Player, game: Game, requests: Sequence[Request]) -> list[Decision]:
    """The player's decisions. Players are Arena's code (a bot is data): one that raises or
    miscounts is a platform fault, never the bot's loss."""
    try:
        decisions = list(player.decide(game, requests))
    except Exception as error:
        raise PlatformFault(f"player {player.name!r} raised {type(error).__name__}: {error}") from error
    if len(decisions) != len(requests):
        count = f"{len(decisions)} decisions for {len(requests)} requests"
        raise PlatformFault(f"player {player.name!r} answered {count}")
    return decisions


def fault_cause(game: Game, state: Any, seat: int, decision: Decision) -> str:
    """Why `decision` cannot be played by `seat` in `state`, or "" when it is legal (the forfeit's
    cause: the decision's fault, or the malformed or illegal action named)."""
    if decision.action is None:
        return decision.fault or "no move given"
    action = _as_action(decision.action)
    masks = game.legal_masks(state, seat)
    if action is None or len(action) != len(masks):
        return f"malformed action {decision.action!r}: expected {len(masks)} integer(s), one per action head"
    for head, (index, mask) in enumerate(zip(action, masks, strict=True)):
        if not 0 <= index < mask.size or not mask[index]:
            name = list(game.spec.heads)[head]
            return f"illegal action {index} on head {name!r}"
    return ""


def _as_action(action: Any) -> Action | None:
    """`action` as a tuple of Python ints, or None when it is not a sequence of integers."""
    try:
        items = tuple(action)
    except TypeError:
        return None
    if not all(isinstance(item, int | np.integer) and not isinstance(item, bool) for item in items):
        return None
    return tuple(int(item) for item in items)
