"""Engine benchmark: uniformly random playouts, our engines against a public peer, in one run.

Usage: .venv/bin/python bench/engines.py [--quick]

Prints one row per game: moves per second of our batched playouts (`Game.playouts`), of our plain
`step` in a Python loop (what tree search uses), of the peer engine, and our/peer ratios. Every
figure is measured in this run, single-threaded, for about `seconds` of wall time each (moves of
whole games from the start; a measurement always finishes the game or batch it started).
The table is ROWS: one small function per game returning a `Row`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyspiel
from bobail.game import Game as ReferenceBobail

from arena_games.bobail import GAME as BOBAIL
from arena_games.pente import playouts as pente_playouts
from arena_games.pente import rules as pente_rules
from arena_games.pente.tables import EMPTY, NUM_POINTS
from arena_games.spring2021 import GAME as SPRING2021

PENTE_BATCH = 4096  # games per batched playout call


@dataclass(frozen=True)
class Row:
    game: str
    batched: float | None  # our batched random playouts, moves/s (None: the game has no batched path)
    stepped: float  # our `step` in a Python loop, moves/s
    peer: str  # what we compare with
    peer_rate: float  # the peer's random playouts, moves/s


def moves_per_second(play: Callable[[], int], seconds: float) -> float:
    """Calls `play` (which returns the moves it made) until `seconds` have passed; moves per second."""
    moves, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        moves += play()
    return moves / elapsed


def pente_batched(rngs: list[np.random.Generator]) -> int:
    """PENTE_BATCH random games from the start, all at once, game i drawing from rngs[i]; the moves made."""
    batch = pente_playouts.pack([pente_rules.init()] * PENTE_BATCH)
    pente_playouts.finish(batch, rngs)
    return int(batch.plies.sum())


def pente_stepped(rng: np.random.Generator) -> int:
    """One random game by `rules.step`, in a Python loop; the moves made.

    Moves under the opening rules (plies 0 to 2) come from the legal mask, later ones by rejection
    from random points (uniform over the empty points, which are then exactly the legal ones).
    """
    state = pente_rules.init()
    while state.ply <= 2:
        legal = np.flatnonzero(pente_rules.legal_masks(state, state.ply % 2)[0])
        state = pente_rules.step(state, [(int(rng.choice(legal)),)])
    while not state.end:
        for point in rng.integers(0, NUM_POINTS, size=256).tolist():
            if state.board[point] == EMPTY:
                state = pente_rules.step(state, [(point,)])
                if state.end:
                    break
    return state.ply


def openspiel_random_game(game: pyspiel.Game, seed: int) -> int:
    """One game of OpenSpiel's uniform random bots, played in C++; the moves made."""
    state = game.new_initial_state()
    bots = [pyspiel.make_uniform_random_bot(0, 2 * seed), pyspiel.make_uniform_random_bot(1, 2 * seed + 1)]
    pyspiel.evaluate_bots(state, bots, seed)  # plays on `state` in place
    return state.move_number()


def pente_row(seconds: float) -> Row:
    rng = np.random.default_rng(0)
    rngs = rng.spawn(PENTE_BATCH)  # one generator per game, as searches pass them
    gomoku = pyspiel.load_game("gomoku", {"size": 19})
    seeds = iter(range(1 << 62))
    return Row(
        game="pente",
        batched=moves_per_second(lambda: pente_batched(rngs), seconds),
        stepped=moves_per_second(lambda: pente_stepped(rng), seconds),
        peer="OpenSpiel gomoku 19x19 (C++ evaluate_bots)",
        peer_rate=moves_per_second(lambda: openspiel_random_game(gomoku, next(seeds)), seconds),
    )


def bobail_stepped(rng: np.random.Generator) -> int:
    """One random game through the public contract (`random_action`, `step`); the half-moves made."""
    state, moves = BOBAIL.init(0, None), 0
    while players := BOBAIL.to_move(state):
        state = BOBAIL.step(state, [BOBAIL.random_action(state, players[0], rng)])
        moves += 1
    return moves


def bobail_reference_game(rng: np.random.Generator) -> int:
    """One random game of the reference library `bobail` 1.4.2; the half-moves made."""
    game, moves = ReferenceBobail(), 0
    while not game.is_over():
        options = game.get_possible_moves()
        game.move(options[int(rng.integers(len(options)))])
        moves += 1
    return moves


def bobail_row(seconds: float) -> Row:
    rng = np.random.default_rng(0)
    return Row(
        game="bobail",
        batched=None,
        stepped=moves_per_second(lambda: bobail_stepped(rng), seconds),
        peer="bobail 1.4.2 (the reference library, pure Python)",
        peer_rate=moves_per_second(lambda: bobail_reference_game(rng), seconds),
    )


def spring2021_row(seconds: float) -> Row:
    """Random frames (one joint action of the players still to move) from the start of seeded games.

    `step`: through the public contract, frame by frame. Batched: `Game.playouts` on 64 starts at a
    time; it reports only returns, so its frames are counted as games x the stepped games' mean
    frames (the same random play). No public engine of this game runs beside ours (the official
    referee is Java, on the CodinGame SDK), so the peer columns read nan.
    """
    rng, seeds, played = np.random.default_rng(0), iter(range(1 << 62)), [0, 0]  # [games, frames]

    def stepped() -> int:
        state = SPRING2021.init(next(seeds), None)
        while players := SPRING2021.to_move(state):
            state = SPRING2021.step(state, [SPRING2021.random_action(state, p, rng) for p in players])
            played[1] += 1
        played[0] += 1
        return 1

    def batched() -> int:
        starts = [SPRING2021.init(next(seeds), None) for _ in range(64)]
        return len(SPRING2021.random_playouts(starts, rng.spawn(len(starts))))

    step_games = moves_per_second(stepped, seconds)  # `play` functions returning games: games/s
    frames_per_game = played[1] / played[0]
    batched_games = moves_per_second(batched, seconds)
    return Row(
        "spring2021",
        batched_games * frames_per_game,
        step_games * frames_per_game,
        "none public",
        float("nan"),
    )


ROWS: tuple[Callable[[float], Row], ...] = (pente_row, bobail_row, spring2021_row)


def print_table(rows: list[Row]) -> None:
    header = ("game", "batched moves/s", "step moves/s", "peer", "peer moves/s", "batched/peer", "step/peer")
    lines = [header] + [
        (
            row.game,
            "-" if row.batched is None else f"{row.batched:,.0f}",
            f"{row.stepped:,.0f}",
            row.peer,
            f"{row.peer_rate:,.0f}",
            "-" if row.batched is None else f"{row.batched / row.peer_rate:.2f}",
            f"{row.stepped / row.peer_rate:.2f}",
        )
        for row in rows
    ]
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 0.5 s per measurement instead of 3 s")
    seconds = 0.5 if parser.parse_args().quick else 3.0
    print_table([row(seconds) for row in ROWS])


if __name__ == "__main__":
    main()
