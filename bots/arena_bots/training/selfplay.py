"""Batched self-play with the project's MCTS: many games in lockstep, one search call per step.

`play_generation` plays `games` games of the current network against itself, `parallel` at a
time: each round, every running game's position is searched together (`arena_bots.mcts.search`,
so the network sees one batch of all their leaves per simulation), every game makes its move, and
a finished game's slot starts the next game until the generation's quota is played. In a
simultaneous-move game (Spring 2021) each player to move searches the position for itself (seed
001's sequential search), both searches in the same batch, and the step plays their joint action.

Per move: PUCT with Dirichlet noise mixed into the root's priors, on the selected core
(`players.puct_search`, ARENA_CORE: the compiled PUCT for Bobail, Pente and Spring 2021, the same
games from the same seeds as the reference; the training inputs of a round's positions are encoded
in one batch, on the kernels on the compiled core: `core.on_core`); the move is drawn by visits
(temperature 1) for the first `temperature_moves` steps of the game (counted after the opening),
then the most visited one (temperature 0). With probability `opening_fraction` a game starts
from the game's own seeded opening (`game.opening`), else from the start position.
Targets (AlphaZero): per searched position, the root's visit distribution over the head's
actions (policy, sums to 1) and the game's final return for the player who moved there (value:
+1 win, -1 loss, 0 draw). `game_config` can shorten games for self-play (e.g. Pente's `ply_cap`,
Bobail's `max_turns`): a game stopped by the cap is a draw and its positions learn value 0. There
is no resignation: every game is played to its end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from arena_bots.core import on_core, selected_core
from arena_bots.evaluators import NetworkEvaluator, encode_batch
from arena_bots.match import Decision, Player, Request
from arena_bots.mcts import SearchConfig, SearchResult, choose_action
from arena_bots.players import puct_search
from arena_bots.runtime import InProcessSession
from arena_games.api import Game


@dataclass(frozen=True)
class SelfPlaySettings:
    games: int = 64  # per generation
    parallel: int = 64  # games in lockstep (the search batch)
    simulations: int = 64  # per move, after the root's evaluation
    c_puct: float = 1.5
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    temperature_moves: int = 12  # steps played at temperature 1 before temperature 0
    opening_fraction: float = 0.5  # share of games that start from a seeded opening
    game_config: Mapping[str, Any] = field(default_factory=dict)  # passed to game.init


@dataclass(frozen=True)
class Positions:
    """Training examples: n positions with their inputs, policy and value targets."""

    inputs: dict[str, np.ndarray]  # name -> float32 (n, *spec.inputs[name]), from the mover's view
    policy: np.ndarray  # float32 (n, A): visit shares of the root's actions
    value: np.ndarray  # float32 (n,): the final return of the mover

    def __len__(self) -> int:
        return len(self.value)

    @staticmethod
    def concatenate(parts: list[Positions]) -> Positions:
        return Positions(
            inputs={name: np.concatenate([p.inputs[name] for p in parts]) for name in parts[0].inputs},
            policy=np.concatenate([p.policy for p in parts]),
            value=np.concatenate([p.value for p in parts]),
        )


@dataclass(frozen=True)
class GenerationStats:
    games: int
    positions: int
    wins: tuple[int, int]  # games won by player 0 and by player 1
    draws: int
    mean_length: float  # steps per game, openings included
    learner_wins: int | None = None  # games the network won against the teacher (versus the teacher only)


@dataclass
class _Game:
    """One self-play game in progress and the examples it has produced so far."""

    state: Any
    rng: np.random.Generator
    moves: int = 0  # steps played by the search (the opening excluded)
    length: int = 0  # steps in all
    encoded: list[dict[str, np.ndarray]] = field(default_factory=list)
    policies: list[np.ndarray] = field(default_factory=list)
    movers: list[int] = field(default_factory=list)
    teacher_seat: int = -1  # the seat the teacher plays in a game against it, else -1

    def requests(self, game: Game) -> list[Request]:
        """One search per player to move (two in a simultaneous frame), all drawing from the game's
        generator."""
        return [Request(self.state, player, self.rng) for player in game.to_move(self.state)]


# One lockstep round's choices: for every running game, for each of its requests, the policy
# target recorded for that position (float32 (A,)) and the action index played.
Choices = list[list[tuple[np.ndarray, int]]]


def play_generation(
    game: Game,
    model: bytes,
    settings: SelfPlaySettings,
    seed: int,
    core: str | None = None,
    teacher: Player | None = None,
) -> tuple[Positions, GenerationStats]:
    """Self-play `settings.games` games of the ONNX bot `model`; every random draw from `seed`.
    `core`: as `core.selected_core` takes it (None: ARENA_CORE). Given a house bot `teacher`, each
    game is the network's searches against it instead, the teacher in seat `index % 2` of game
    `index`: the network's positions learn their visit shares, the teacher's its choice (one-hot,
    so the network's model of the opponent in its searches stays the teacher), and both the game's
    result against the teacher."""
    core = selected_core(core)
    session = InProcessSession(model, threads=1)
    evaluator = NetworkEvaluator(session, game)
    config = SearchConfig(
        simulations=settings.simulations,
        exploration=settings.c_puct,
        dirichlet_fraction=settings.dirichlet_fraction,
        dirichlet_alpha=settings.dirichlet_alpha,
    )
    width = next(iter(game.spec.heads.values()))

    def searched(running: list[_Game], requests: list[list[Request]]) -> Choices:
        pairs = [(g, r) for g, rs in zip(running, requests, strict=True) for r in rs]
        searches = [r for g, r in pairs if r.player != g.teacher_seat]
        taught = [r for g, r in pairs if r.player == g.teacher_seat]
        results = iter(puct_search(game, evaluator, searches, config, core) if searches else [])
        decisions = iter(teacher.decide(game, taught) if taught else [])
        choices = []
        for g, own in zip(running, requests, strict=True):
            temperature = 1.0 if g.moves < settings.temperature_moves else 0.0
            choices.append(
                [
                    _teacher_choice(game, next(decisions), request, 0.0, g.rng, width)
                    if request.player == g.teacher_seat
                    else _visit_choice(next(results), temperature, g.rng, width)
                    for request in own
                ]
            )
        return choices

    try:
        return _play(game, settings, seed, searched, core, versus_teacher=teacher is not None)
    finally:
        session.close()


def play_teacher_generation(
    game: Game,
    teacher: Player,
    settings: SelfPlaySettings,
    seed: int,
    explore: float,
    core: str | None = None,
    learner: bytes | None = None,
    learner_share: float = 0.0,
) -> tuple[Positions, GenerationStats]:
    """`settings.games` games of the house bot `teacher` against itself, as demonstrations: each
    position's policy target is the teacher's choice (one-hot), its value the game's result. With
    probability `explore` the move played is a uniformly random legal one instead (the position
    still learns the teacher's choice), so the games reach positions the teacher alone never
    would, as a searching network's games do. Otherwise, with probability `learner_share`, the move
    played is the learner's: the most likely legal move of the ONNX bot `learner`'s policy (DAgger,
    Ross et al. 2011: the teacher labels the positions the learner's own play leads to)."""
    width = next(iter(game.spec.heads.values()))
    session = InProcessSession(learner, threads=1) if learner is not None and learner_share > 0 else None
    evaluator = NetworkEvaluator(session, game) if session is not None else None

    def taught(running: list[_Game], requests: list[list[Request]]) -> Choices:
        flat = [r for rs in requests for r in rs]
        decisions = iter(teacher.decide(game, flat))
        learned = iter(_learner_moves(game, evaluator, flat) if evaluator else [None] * len(flat))
        choices = []
        for g, own in zip(running, requests, strict=True):
            choices.append(
                [
                    _teacher_choice(
                        game, next(decisions), request, explore, g.rng, width, next(learned), learner_share
                    )
                    for request in own
                ]
            )
        return choices

    try:
        return _play(game, settings, seed, taught, selected_core(core))
    finally:
        if session is not None:
            session.close()


def _learner_moves(game: Game, evaluator: NetworkEvaluator, requests: list[Request]) -> list[int]:
    """The most likely legal move of the evaluator's policy for each request, in one batch."""
    priors = evaluator.evaluate(game, [r.state for r in requests], [r.player for r in requests]).priors
    return [int(row) for row in np.argmax(priors, axis=1)]


def _play(
    game: Game,
    settings: SelfPlaySettings,
    seed: int,
    choose: Callable[[list[_Game], list[list[Request]]], Choices],
    core: str,
    versus_teacher: bool = False,
) -> tuple[Positions, GenerationStats]:
    """Plays `settings.games` games `parallel` at a time in lockstep, each round's moves and
    targets from `choose`; a finished game's slot starts the next game until the quota is played.
    Each round's positions are encoded in one batch, on `core`. `versus_teacher`: game `index`
    has the teacher in seat `index % 2` (`_Game.teacher_seat`)."""
    coded = on_core(game, core)
    started = min(settings.parallel, settings.games)
    running = [_start_game(game, settings, seed, index, versus_teacher) for index in range(started)]
    finished: list[tuple[_Game, tuple[float, ...]]] = []
    while running:
        requests = [g.requests(game) for g in running]
        flat = [request for own in requests for request in own]
        inputs = encode_batch(coded, [r.state for r in flat], [r.player for r in flat])
        encoded = iter([{name: planes[row] for name, planes in inputs.items()} for row in range(len(flat))])
        still_running = []
        for g, own, choices in zip(running, requests, choose(running, requests), strict=True):
            _play_step(game, g, own, [next(encoded) for _ in own], choices)
            if not game.is_over(g.state):
                still_running.append(g)
                continue
            finished.append((g, game.returns(g.state)))
            if started < settings.games:
                still_running.append(_start_game(game, settings, seed, started, versus_teacher))
                started += 1
        running = still_running
    return _examples(finished), _stats(finished)


def _start_game(
    game: Game, settings: SelfPlaySettings, seed: int, index: int, versus_teacher: bool = False
) -> _Game:
    """Game `index` of the generation: its own generator, and a seeded opening or the start."""
    rng = np.random.default_rng((seed, index))
    game_seed = int(rng.integers(2**31))
    state = game.init(game_seed, settings.game_config)
    opening = (
        game.opening(game_seed, settings.game_config) if rng.random() < settings.opening_fraction else ()
    )
    for joint in opening:
        state = game.step(state, joint)
    return _Game(state=state, rng=rng, length=len(opening), teacher_seat=index % 2 if versus_teacher else -1)


def _visit_choice(
    result: SearchResult, temperature: float, rng: np.random.Generator, width: int
) -> tuple[np.ndarray, int]:
    """A search's target (the root's visit shares) and the move drawn from it at `temperature`."""
    if result.fault:
        raise RuntimeError(f"self-play search failed: {result.fault}")
    policy = np.zeros(width, dtype=np.float32)
    policy[result.actions] = result.visits / result.visits.sum()
    return policy, choose_action(result, temperature, rng)


def _teacher_choice(
    game: Game,
    decision: Decision,
    request: Request,
    explore: float,
    rng: np.random.Generator,
    width: int,
    learner_move: int | None = None,
    learner_share: float = 0.0,
) -> tuple[np.ndarray, int]:
    """The teacher's choice as a one-hot target, and the move played: with probability `explore`
    a uniformly random legal move, else with probability `learner_share` `learner_move` (when
    given), else the teacher's choice."""
    if decision.action is None:
        raise RuntimeError(f"the teacher failed: {decision.fault}")
    (action,) = decision.action
    policy = np.zeros(width, dtype=np.float32)
    policy[action] = 1.0
    if rng.random() < explore:
        (mask,) = game.legal_masks(request.state, request.player)
        action = int(rng.choice(np.flatnonzero(mask)))
    elif learner_move is not None and rng.random() < learner_share:
        action = learner_move
    return policy, action


def _play_step(
    game: Game,
    g: _Game,
    requests: list[Request],
    encoded: list[dict[str, np.ndarray]],
    choices: list[tuple[np.ndarray, int]],
) -> None:
    """Records each position's example (its `encoded` inputs, per request) and plays the chosen
    moves together."""
    for request, inputs, (policy, _) in zip(requests, encoded, choices, strict=True):
        g.encoded.append(inputs)
        g.policies.append(policy)
        g.movers.append(request.player)
    g.state = game.step(g.state, [(action,) for _, action in choices])
    g.moves += 1
    g.length += 1


def _examples(finished: list[tuple[_Game, tuple[float, ...]]]) -> Positions:
    parts = [
        Positions(
            inputs={name: np.stack([e[name] for e in g.encoded]) for name in g.encoded[0]},
            policy=np.stack(g.policies),
            value=np.array([returns[mover] for mover in g.movers], dtype=np.float32),
        )
        for g, returns in finished
        if g.encoded
    ]
    return Positions.concatenate(parts)


def _stats(finished: list[tuple[_Game, tuple[float, ...]]]) -> GenerationStats:
    outcomes = [returns for _, returns in finished]
    return GenerationStats(
        games=len(finished),
        positions=sum(len(g.movers) for g, _ in finished),
        wins=(sum(r[0] > 0 for r in outcomes), sum(r[1] > 0 for r in outcomes)),
        draws=sum(r[0] == 0 for r in outcomes),
        mean_length=float(np.mean([g.length for g, _ in finished])),
        learner_wins=sum(r[1 - g.teacher_seat] > 0 for g, r in finished)
        if finished and finished[0][0].teacher_seat >= 0
        else None,
    )
