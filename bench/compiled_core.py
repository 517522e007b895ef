"""Compiled core benchmark: Pente's compiled UCT and step loop against OpenSpiel's C++ on gomoku,
and the compiled step loops of the other games with kernels against their reference step loops.

Usage: .venv/bin/python bench/compiled_core.py [--quick] [--only uct|house|step|cores|puct]

Two comparisons (issue 24's targets), each figure per CPU second of this process (time.process_time:
the searching thread's CPU, so a loaded machine slows the wall clock, not the figure), the
measurements interleaved round by round so that a change in load hits every row alike:
  uct   simulations/CPU-s of one tree, UCT (c = 2) with one uniformly random rollout per leaf:
        OpenSpiel's C++ `MCTSBot` + `RandomRolloutEvaluator` on gomoku 19x19 against the `uct`
        house bot's search on Pente on each core (`compiled_uct.search`, and the reference
        `mcts.search`, fewer simulations: it is about 50x slower). Both games start from the
        same stones: the seeded Pente openings, played as gomoku moves at the same points.
        Target: compiled >= 1x OpenSpiel.
  house the `uct` house bot's simulations/CPU-s on the other games it plays, one move per call
        (`UctPlayer.decide` on one position of the seeded openings) on each core: on the compiled
        core Bobail's, Smash's and Spring 2021's searches run in the compiled tree (the last two
        as their sequential views); CSB has four heads, no tree. Moves/CPU-s at the ladder's
        budget are simulations/CPU-s divided by it.
  step  moves/CPU-s of whole uniformly random games from the start, one game per call, the loop
        in compiled code (`kernels.playout_returns`) against OpenSpiel's C++ loop
        (`evaluate_bots` with uniform random bots). Target: >= 1x OpenSpiel.
  cores moves/CPU-s of whole uniformly random games from the start on each core: Bobail's, CSB's
        and Smash's compiled loops (`kernels.playout_returns`) against today's step loop, the
        reference `Game.step` on uniformly random actions (engines.py's `bobail_stepped`;
        `turns_stepped`). Target: compiled >= 5x reference. Spring 2021's frames/CPU-s the
        same way (`kernels.random_playout`, which counts its frames, against engines.py's
        `spring2021_stepped`), from the maps of seeds 0.. . Target: compiled >= 10x reference.
  puct  the AlphaZero player's search on Bobail, Pente, Spring 2021 and Smash (PUCT,
        `players.SEARCH_LEAVES` descents per tree and round, the positions searched in lockstep:
        Bobail's and Pente's seeded openings; Spring's mid-game frames (day 8; its openings are
        day 0, a handful of actions) and Smash's (turn 10 of random play; it starts with empty
        wells) by both seats, seed 001's sequential search) with a trivial network
        (`TrivialNetwork`: fixed logits, a value from two spans' sums), on each core:
        `compiled_puct.search` and the reference `mcts.search`. Its CPU per simulation is what a
        simulation costs outside the model (tree + engine + encode + glue; no model host, so no
        IPC). Targets: Bobail <= 12 µs, Pente <= 20 µs, Spring <= 10 µs (issue 24's figures for a
        real worker batch, IPC included; bench/search.py measures Pente's and Spring's through the
        model host); Smash has none.
Pente's games are longer and its step does more (captures), so neither pair is the same work;
they are the games the issue compares. OpenSpiel (`open-spiel`, in the bench extra) is optional:
without it the peer rows say so and the ratios are "-".
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from engines import bobail_stepped, spring2021_stepped
from timing import CpuMeter, opening_positions, played_positions, spring_positions

from arena_bots import compiled_puct, compiled_uct
from arena_bots.evaluators import NetworkEvaluator, RolloutEvaluator
from arena_bots.match import Request
from arena_bots.mcts import SearchConfig, search
from arena_bots.players import SEARCH_LEAVES, UctPlayer
from arena_games import pcg64
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.bobail import kernels as bobail_kernels
from arena_games.csb import GAME as CSB
from arena_games.csb import kernels as csb_kernels
from arena_games.pente import GAME as PENTE
from arena_games.pente import kernels
from arena_games.smash import GAME as SMASH
from arena_games.smash import kernels as smash_kernels
from arena_games.spring2021 import GAME as SPRING2021
from arena_games.spring2021 import kernels as spring2021_kernels
from arena_games.spring2021.encoding import PLAYER_BLOCKS

try:
    import pyspiel
except ImportError:  # the bench extra is not installed: no peer rows
    pyspiel = None

STEP_TARGET = 5.0  # Bobail's (and CSB's, Smash's) compiled step loop against today's (issue 24)
STEP_TARGETS = {"Spring 2021": 10.0}  # the games whose step-loop target is not STEP_TARGET
# CPU per simulation outside the model (issue 24), by game title
PUCT_TARGETS_US = {"Bobail": 12.0, "Pente": 20.0, "Spring Challenge 2021": 10.0}
EXPLORATION = 2.0  # UCB1's c, OpenSpiel's default for its MCTS bot; the `uct` house bot's too
NO_PEER = "OpenSpiel not installed (pip install open-spiel, the bench extra): no peer"


@dataclass(frozen=True)
class Plan:
    rounds: int  # interleaved rounds; each measurement runs once per round
    simulations: int  # per search, OpenSpiel and the compiled UCT
    reference_simulations: int  # per search of the reference core
    house_simulations: int  # per move of the `uct` house bot on the other games, either core
    games_per_call: int  # random games per step-loop measurement
    reference_games: int  # ... of the reference core
    puct_searches: int  # positions searched in lockstep per PUCT call, either core and game
    puct_simulations: int  # per search


FULL = Plan(
    rounds=10,
    simulations=2000,
    reference_simulations=100,
    house_simulations=100,
    games_per_call=200,
    reference_games=40,
    puct_searches=8,
    puct_simulations=100,
)
QUICK = Plan(
    rounds=2,
    simulations=200,
    reference_simulations=10,
    house_simulations=10,
    games_per_call=20,
    reference_games=4,
    puct_searches=4,
    puct_simulations=20,
)
HOUSE_GAMES = (BOBAIL, SMASH, SPRING2021)  # the other games the `uct` house bot plays


def uct_meters(plan: Plan, states: list) -> list[CpuMeter]:
    def compiled(call: int) -> int:
        state = states[call % len(states)]
        request = Request(state, state.ply % 2, np.random.default_rng(call))
        compiled_uct.search(PENTE, [request], SearchConfig(plan.simulations, "uct", EXPLORATION))
        return plan.simulations

    def reference(call: int) -> int:
        state = states[call % len(states)]
        config = SearchConfig(plan.reference_simulations, "uct", EXPLORATION)
        search(
            PENTE, RolloutEvaluator(), [Request(state, state.ply % 2, np.random.default_rng(call))], config
        )
        return plan.reference_simulations

    meters = [
        CpuMeter(compiled, "uct, Pente, compiled core", "simulations"),
        CpuMeter(reference, "uct, Pente, reference core", "simulations"),
    ]
    if pyspiel is not None:
        gomoku = pyspiel.load_game("gomoku", {"size": 19})

        def openspiel(call: int) -> int:
            state = gomoku.new_initial_state()
            for point in np.frombuffer(states[call % len(states)].board, np.uint8).nonzero()[0].tolist():
                state.apply_action(point)  # the opening's stones; colours may differ, the count not
            evaluator = pyspiel.RandomRolloutEvaluator(1, call)
            pyspiel.MCTSBot(gomoku, evaluator, EXPLORATION, plan.simulations, 1000, False, call, False).step(
                state
            )
            return plan.simulations

        meters.append(CpuMeter(openspiel, "uct, gomoku 19x19, OpenSpiel C++ MCTSBot", "simulations"))
    return meters


def house_meters(plan: Plan) -> list[CpuMeter]:
    """The `uct` house bot's moves on HOUSE_GAMES, compiled then reference core per game."""
    return [
        house_meter(game, opening_positions(game, 8), core, plan.house_simulations)
        for game in HOUSE_GAMES
        for core in ("compiled", "reference")
    ]


def house_meter(game: Game, states: list, core: str, simulations: int) -> CpuMeter:
    """One `uct` move per call on `core`, from states[call] (cycled), by one of its movers."""
    player = UctPlayer(simulations, EXPLORATION, core=core)

    def move(call: int) -> int:
        state = states[call % len(states)]
        movers = game.to_move(state)
        player.decide(game, [Request(state, movers[call % len(movers)], np.random.default_rng(call))])
        return simulations

    return CpuMeter(move, f"uct, {game.spec.title}, {core} core", "simulations")


def step_meters(plan: Plan) -> list[CpuMeter]:
    start = kernels.pack([PENTE.init(0, None)])

    def compiled(call: int) -> int:
        games = plan.games_per_call
        boards, infos = np.repeat(start[0], games, axis=0), np.repeat(start[1], games, axis=0)
        rngs = np.stack([pcg64.state_of(np.random.default_rng((call, game))) for game in range(games)])
        kernels.playout_returns(boards, infos, rngs)
        return int(infos[:, kernels.PLY].sum())

    meters = [CpuMeter(compiled, "step, Pente, compiled random games", "moves")]
    if pyspiel is not None:
        gomoku = pyspiel.load_game("gomoku", {"size": 19})

        def openspiel(call: int) -> int:
            moves = 0
            for game in range(plan.games_per_call):
                seed = call * plan.games_per_call + game
                state = gomoku.new_initial_state()
                bots = [
                    pyspiel.make_uniform_random_bot(0, 2 * seed),
                    pyspiel.make_uniform_random_bot(1, 2 * seed + 1),
                ]
                pyspiel.evaluate_bots(state, bots, seed)
                moves += state.move_number()
            return moves

        meters.append(CpuMeter(openspiel, "step, gomoku 19x19, OpenSpiel C++ random games", "moves"))
    return meters


def random_pcg64_states(rng: np.random.Generator, count: int) -> np.ndarray:
    """uint64 (count, pcg64.STATE_WORDS): `count` random PCG64 states (any state, an odd increment),
    drawn in one call: a Generator per game would cost more than a short compiled game."""
    states = rng.integers(0, 2**64, size=(count, pcg64.STATE_WORDS), dtype=np.uint64, endpoint=False)
    states[:, pcg64.INC_LO] |= np.uint64(1)
    states[:, pcg64.HAS_UINT32] = 0
    return states


def core_meters(plan: Plan) -> list[CpuMeter]:
    """The step loops of Bobail, CSB, Smash and Spring 2021 on each core, whole random games."""
    return bobail_meters(plan) + csb_meters(plan) + smash_meters(plan) + spring2021_meters(plan)


def step_loop_meters(
    plan: Plan,
    game: str,
    unit: str,
    compiled_games: Callable[[np.ndarray], int],
    reference_game: Callable[[int, np.random.Generator], int],
) -> list[CpuMeter]:
    """A game's step loop on each core: `compiled_games(rngs)` plays plan.games_per_call games on the
    kernels, row i drawing from the random PCG64 state rngs[i]; `reference_game(game, rng)` plays
    game number `game` on the reference core (plan.reference_games a call). Each returns its work."""

    def compiled(call: int) -> int:
        return compiled_games(random_pcg64_states(np.random.default_rng(call), plan.games_per_call))

    def reference(call: int) -> int:
        games = range(plan.reference_games)
        return sum(reference_game(game, np.random.default_rng((call, game))) for game in games)

    return [
        CpuMeter(compiled, f"step, {game}, compiled core", unit),
        CpuMeter(reference, f"step, {game}, reference core", unit),
    ]


def bobail_meters(plan: Plan) -> list[CpuMeter]:
    histories, infos = bobail_kernels.pack([BOBAIL.init(0, None)] * plan.games_per_call)
    rng_of_row = np.arange(plan.games_per_call)

    def compiled(rngs: np.ndarray) -> int:
        played = infos.copy()
        bobail_kernels.playout_returns(histories.copy(), played, rngs, rng_of_row)
        return int(played[:, bobail_kernels.HALF_MOVES].sum())

    return step_loop_meters(plan, "Bobail", "half-moves", compiled, lambda _, rng: bobail_stepped(rng))


def turns_stepped(game: Game, seed: int, rng: np.random.Generator) -> int:
    """One game of `seed` (CSB, Smash: simultaneous) through `Game.step`, every player's action
    uniformly random; the turns."""
    state = game.init(seed, None)
    while players := game.to_move(state):
        state = game.step(state, [game.random_action(state, player, rng) for player in players])
    return state.turn


def csb_meters(plan: Plan) -> list[CpuMeter]:
    starts = csb_kernels.pack([CSB.init(seed, None) for seed in range(plan.games_per_call)])

    def compiled(rngs: np.ndarray) -> int:
        motions, checkpoints, infos = (array.copy() for array in starts)
        csb_kernels.playout_returns(motions, checkpoints, infos, rngs)
        return int(infos[:, csb_kernels.TURN].sum())

    return step_loop_meters(plan, "CSB", "turns", compiled, lambda race, rng: turns_stepped(CSB, race, rng))


def smash_meters(plan: Plan) -> list[CpuMeter]:
    starts = smash_kernels.pack([SMASH.init(seed, None) for seed in range(plan.games_per_call)])
    rng_of_row = np.arange(plan.games_per_call)

    def compiled(rngs: np.ndarray) -> int:
        wells, pairs, infos = (array.copy() for array in starts)
        smash_kernels.playout_returns(wells, pairs, infos, rngs, rng_of_row)
        return int(infos[:, smash_kernels.TURN].sum())

    return step_loop_meters(
        plan, "Smash", "turns", compiled, lambda game, rng: turns_stepped(SMASH, game, rng)
    )


def spring2021_meters(plan: Plan) -> list[CpuMeter]:
    starts = [SPRING2021.init(seed, None) for seed in range(plan.games_per_call)]
    boards, infos = spring2021_kernels.pack(starts)
    draws = np.empty(spring2021_kernels.DRAW_BLOCK)
    legal = np.empty(spring2021_kernels.NUM_ACTIONS, dtype=np.bool_)

    def compiled(rngs: np.ndarray) -> int:
        played_boards, played_infos = boards.copy(), infos.copy()
        playout = spring2021_kernels.random_playout
        return sum(
            playout(played_boards[row], played_infos[row], rngs[row], draws, legal)
            for row in range(len(starts))
        )

    def reference(game: int, rng: np.random.Generator) -> int:
        return spring2021_stepped(starts[game], rng)

    return step_loop_meters(plan, "Spring 2021", "frames", compiled, reference)


def value_spans(game: Game) -> tuple[slice, slice]:
    """The features of `game`'s first network input (flat) whose sums' difference TrivialNetwork
    values: a board game's first two planes (Smash's: its own well's skulls and first colour), the
    two players' blocks of Spring 2021's."""
    if game is SPRING2021:
        mine, theirs = PLAYER_BLOCKS
        return slice(mine, theirs), slice(theirs, 2 * theirs - mine)
    plane = int(np.prod(next(iter(game.spec.inputs.values()))[1:]))
    return slice(0, plane), slice(plane, 2 * plane)


class TrivialNetwork:
    """A backend of `game` (its first input, its one head) that costs next to nothing: the same
    random logits for every position and a value from two spans' sums (`value_spans`, so that the
    trees are not all ties). `seconds`: the CPU its calls took (the model's part, left out of the
    figure)."""

    def __init__(self, game: Game) -> None:
        (actions,) = game.spec.heads.values()
        self.logits = np.random.default_rng(0).normal(0, 1, actions).astype(np.float32)
        self.spans = value_spans(game)
        self.seconds = 0.0

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        start = time.process_time()
        first = next(iter(inputs.values()))
        features = first.reshape(len(first), -1)
        mine, theirs = self.spans
        values = np.tanh(features[:, mine].sum(axis=1) - features[:, theirs].sum(axis=1))
        policy = np.broadcast_to(self.logits, (len(first), self.logits.size))
        self.seconds += time.process_time() - start
        return {"policy": policy, "value": values}


class PuctMeter(CpuMeter):
    """A meter of searches with a TrivialNetwork, whose CPU it can leave out."""

    def __init__(self, name: str, work: Callable[[int], int], network: TrivialNetwork) -> None:
        super().__init__(work, name, "simulations")
        self.network = network

    @property
    def micros_outside_model(self) -> float:
        """CPU µs per simulation, the network's calls left out (after warm-up: its seconds restart)."""
        return 1e6 * (self.seconds - self.network.seconds) / self.done


PUCT_GAMES = (BOBAIL, PENTE, SPRING2021, SMASH)  # the games the compiled PUCT searches
SMASH_TURN = 10  # Smash's positions to search: turn 10 of random play (its games last about 40)


def puct_positions(game: Game, count: int) -> list:
    """`count` positions to search: the seeded openings, Spring 2021's and Smash's mid-game frames."""
    if game is SMASH:
        return played_positions(SMASH, count, lambda state: state.turn >= SMASH_TURN)
    return spring_positions(count) if game is SPRING2021 else opening_positions(game, count)


def puct_meters(plan: Plan) -> list[CpuMeter]:
    """The PUCT searches of PUCT_GAMES on each core (compiled, then reference, per game),
    plan.puct_searches positions in lockstep per call."""
    return [
        puct_meter(game, core, run, plan)
        for game in PUCT_GAMES
        for core, run in (("compiled", compiled_puct.search), ("reference", search))
    ]


def puct_meter(game: Game, core: str, run: Callable, plan: Plan) -> PuctMeter:
    """`game`'s PUCT searches by `run` (one core's search) with a TrivialNetwork, plan.puct_searches
    positions (`puct_positions`) in lockstep per call, by every player to move."""
    seats = [
        (state, player)
        for state in puct_positions(game, plan.puct_searches)
        for player in game.to_move(state)
    ]
    config = SearchConfig(plan.puct_simulations, leaves_per_round=SEARCH_LEAVES)
    network = TrivialNetwork(game)
    evaluator = NetworkEvaluator(network, game)

    def work(call: int) -> int:
        if call == 0:
            network.seconds = 0.0  # call 0 runs twice, untimed (warm-up) then timed: restart
        requests = [Request(state, player, np.random.default_rng(call)) for state, player in seats]
        run(game, evaluator, requests, config)
        return len(seats) * plan.puct_simulations

    return PuctMeter(f"puct, {game.spec.title}, {core} core", work, network)


GROUPS = {  # the measurements by name, each a list of meters
    "uct": lambda plan: uct_meters(plan, opening_positions(PENTE, 8)),
    "house": house_meters,
    "step": step_meters,
    "cores": core_meters,
    "puct": puct_meters,
}


def measure(plan: Plan, only: str | None = None) -> dict[str, list[CpuMeter]]:
    """Every meter of GROUPS (or of the group `only`) once to compile and warm up (untimed), then
    `plan.rounds` interleaved rounds; the meters by group."""
    groups = {name: make(plan) for name, make in GROUPS.items() if only in (None, name)}
    meters = [meter for group in groups.values() for meter in group]
    for meter in meters:
        meter.work(0)
    for _ in range(plan.rounds):
        for meter in meters:
            meter.run()
    return groups


def print_comparison(title: str, meters: list[CpuMeter], target: float) -> None:
    """Each meter's rate, then each of ours against OpenSpiel's (the last meter, when installed) beside
    the target, and the compiled core against the reference where both ran."""
    print(f"\n{title}")
    for meter in meters:
        cost = f"{meter.calls} calls, {meter.seconds:.2f} CPU-s"
        print(f"  {meter.name}: {meter.rate:,.0f} {meter.unit}/CPU-s ({cost})")
    peer = meters[-1] if "OpenSpiel" in meters[-1].name else None
    if peer is None:
        print(f"  {NO_PEER}; compiled/OpenSpiel: - (target >= {target:g}x)")
    for meter in meters if peer else []:
        if meter is not peer:
            ratio = meter.rate / peer.rate
            print(f"  {meter.name.split(', ', 1)[1]}/OpenSpiel: {ratio:.2f}x (target >= {target:g}x)")
    cores = [meter for meter in meters if "core" in meter.name]
    if len(cores) == 2:
        print(f"  compiled/reference core: {cores[0].rate / cores[1].rate:.0f}x")


def print_cores(title: str, meters: list[CpuMeter], target: float | None) -> None:
    """Each meter's rate, then compiled against reference (meters in pairs) beside the target (the
    step loops'; None: the `uct` house bot's, whose target is the ladders' rated games)."""
    print(f"\n{title}")
    for meter in meters:
        cost = f"{meter.calls} calls, {meter.seconds:.2f} CPU-s"
        print(f"  {meter.name}: {meter.rate:,.0f} {meter.unit}/CPU-s ({cost})")
    for compiled, reference in zip(meters[::2], meters[1::2], strict=True):
        kind, game = compiled.name.split(", ")[:2]
        ratio = compiled.rate / reference.rate
        if target is None:
            print(f"  {game} {kind}, compiled/reference core: {ratio:.1f}x")
        else:
            goal = STEP_TARGETS.get(game, target)
            print(f"  {game} step loop, compiled/reference core: {ratio:.1f}x (target >= {goal:g}x)")


def print_puct(title: str, meters: list[PuctMeter]) -> None:
    """The PUCT meters' CPU per simulation outside the model, then per game (meters in pairs,
    compiled then reference) the compiled core's beside the target, and compiled against reference."""
    print(f"\n{title}")
    for meter in meters:
        cost = f"{meter.calls} calls, {meter.seconds:.2f} CPU-s, the network's {meter.network.seconds:.2f}"
        micros = meter.micros_outside_model
        print(f"  {meter.name}: {micros:.1f} µs per simulation outside the model ({cost})")
    for compiled, reference in zip(meters[::2], meters[1::2], strict=True):
        game = compiled.name.split(", ")[1]
        ratio = reference.micros_outside_model / compiled.micros_outside_model
        target = f"target <= {PUCT_TARGETS_US[game]:g} µs" if game in PUCT_TARGETS_US else "no target"
        print(
            f"  {game}: compiled core {compiled.micros_outside_model:.1f} µs "
            f"({target}); reference/compiled: {ratio:.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few calls per measurement (seconds in all)")
    parser.add_argument("--only", choices=tuple(GROUPS), help="one of the measurements")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    load = os.getloadavg()
    print(f"machine load (1, 5, 15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    groups = measure(plan, args.only)
    games = f"{plan.games_per_call} (compiled) and {plan.reference_games} (reference) random games per call"
    searches = (
        f"{plan.puct_searches} positions searched in lockstep (Spring's and Smash's by both seats), "
        f"{plan.puct_simulations} simulations each"
    )
    reports = {
        "uct": lambda meters: print_comparison(
            f"UCT, one tree, {plan.simulations} simulations per search", meters, 1.0
        ),
        "house": lambda meters: print_cores(
            f"`uct` house bot on each core, {plan.house_simulations} simulations per move", meters, None
        ),
        "step": lambda meters: print_comparison(
            f"step loop, {plan.games_per_call} random games per call", meters, 1.0
        ),
        "cores": lambda meters: print_cores(f"step loop on each core, {games}", meters, STEP_TARGET),
        "puct": lambda meters: print_puct(f"PUCT with a trivial network, {searches}", meters),
    }
    for name, meters in groups.items():
        reports[name](meters)


if __name__ == "__main__":
    main()
