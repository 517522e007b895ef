"""Engine benchmark: uniformly random playouts, our engines against a public peer, in one run.

Usage: .venv/bin/python bench/engines.py [--quick]

Prints one row per game: moves per second of our batched playouts (`Game.playouts`) over a batch
of many games and over one game at a time, of our plain `step` in a Python loop (what tree search
uses), of the peer engine (one game at a time, as it plays), and the ratios, each labelled:
many-at-once against the peer's one-at-a-time is not like for like (one core either way, but the
peer has no batched path); one game against one game is. Every figure is measured in this run,
single-threaded, for about `seconds` of wall time each (moves of whole games from the start; a
measurement always finishes the game or batch it started). The table is ROWS: one small function
per game returning a `Row`. OpenSpiel (`open-spiel`, in the bench extra) is optional: without it
the Pente row says so and leaves its peer cells empty.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from bobail.game import Game as ReferenceBobail
from timing import moves_per_second

from arena_games.bobail import GAME as BOBAIL
from arena_games.pente import playouts as pente_playouts
from arena_games.pente import rules as pente_rules
from arena_games.pente.tables import EMPTY, NUM_POINTS
from arena_games.spring2021 import GAME as SPRING2021
from arena_games.spring2021.rules import SpringState

try:
    import pyspiel
except ImportError:  # the bench extra is not installed: the Pente row has no peer
    pyspiel = None

PENTE_BATCH = 4096  # games per batched playout call (--quick: QUICK_PENTE_BATCH)
QUICK_PENTE_BATCH = 256


@dataclass(frozen=True)
class Row:
    game: str
    batch: int  # games per call of our batched playouts (0: the game has no batched path)
    batched: float | None  # our batched random playouts, `batch` games per call, moves/s
    single: float | None  # the same code given one game per call, moves/s
    stepped: float  # our `step` in a Python loop, one game, moves/s
    peer: str  # what we compare with, or why it is missing
    peer_rate: float | None  # the peer's random playouts, one game at a time, moves/s


def pente_batched(rngs: list[np.random.Generator]) -> int:
    """len(rngs) random games from the start, all at once, game i drawing from rngs[i]; the moves made."""
    batch = pente_playouts.pack([pente_rules.init()] * len(rngs))
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


def pente_row(seconds: float, batch: int) -> Row:
    rng = np.random.default_rng(0)
    rngs = rng.spawn(batch)  # one generator per game, as searches pass them
    peer, peer_rate = "OpenSpiel not installed (pip install open-spiel, the bench extra): no peer", None
    if pyspiel is not None:
        gomoku = pyspiel.load_game("gomoku", {"size": 19})
        seeds = iter(range(1 << 62))
        peer = "OpenSpiel gomoku 19x19 (C++ evaluate_bots)"
        peer_rate = moves_per_second(lambda: openspiel_random_game(gomoku, next(seeds)), seconds)
    return Row(
        game="pente",
        batch=batch,
        batched=moves_per_second(lambda: pente_batched(rngs), seconds),
        single=moves_per_second(lambda: pente_batched(rngs[:1]), seconds),
        stepped=moves_per_second(lambda: pente_stepped(rng), seconds),
        peer=peer,
        peer_rate=peer_rate,
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


def bobail_row(seconds: float, batch: int) -> Row:
    rng = np.random.default_rng(0)
    return Row(
        game="bobail",
        batch=0,
        batched=None,
        single=None,
        stepped=moves_per_second(lambda: bobail_stepped(rng), seconds),
        peer="bobail 1.4.2 (the reference library, pure Python)",
        peer_rate=moves_per_second(lambda: bobail_reference_game(rng), seconds),
    )


SPRING2021_BATCH = 64  # games per batched playout call


def spring2021_stepped(state: SpringState, rng: np.random.Generator) -> int:
    """`state` played to its end through the public contract (`random_action` for each player to
    move, `step`); the frames played."""
    frames = 0
    while players := SPRING2021.to_move(state):
        state = SPRING2021.step(state, [SPRING2021.random_action(state, p, rng) for p in players])
        frames += 1
    return frames


def spring2021_row(seconds: float, batch: int) -> Row:
    """Random frames (one joint action of the players still to move) from the start of seeded games.

    `step`: through the public contract, frame by frame. Batched: `Game.playouts` on
    SPRING2021_BATCH starts at a time, and on one; it reports only returns, so its frames are counted
    as games x the stepped games' mean frames (the same random play). No public engine of this game
    runs beside ours (the official referee is Java, on the CodinGame SDK): no peer.
    """
    rng, seeds, played = np.random.default_rng(0), iter(range(1 << 62)), [0, 0]  # [games, frames]

    def stepped() -> int:
        played[1] += spring2021_stepped(SPRING2021.init(next(seeds), None), rng)
        played[0] += 1
        return 1

    def batched(games: int) -> int:
        starts = [SPRING2021.init(next(seeds), None) for _ in range(games)]
        return len(SPRING2021.random_playouts(starts, rng.spawn(games)))

    step_games = moves_per_second(stepped, seconds)  # the `play` functions count games: games/s
    frames_per_game = played[1] / played[0]
    return Row(
        game="spring2021",
        batch=SPRING2021_BATCH,
        batched=moves_per_second(lambda: batched(SPRING2021_BATCH), seconds) * frames_per_game,
        single=moves_per_second(lambda: batched(1), seconds) * frames_per_game,
        stepped=step_games * frames_per_game,
        peer="none public (the official referee is Java on the CodinGame SDK)",
        peer_rate=None,
    )


ROWS: tuple[Callable[[float, int], Row], ...] = (pente_row, bobail_row, spring2021_row)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(ours: float | None, peer: float | None) -> str:
    return "-" if ours is None or peer is None else f"{ours / peer:.2f}"


def print_table(rows: list[Row]) -> None:
    """The rates, then the ratios to the peer, each column saying what it compares."""
    header = ("game", "batched moves/s", "1 game/call moves/s", "step moves/s", "peer", "peer moves/s")
    lines = [header] + [
        (
            row.game,
            "-" if row.batched is None else f"{row.batched:,.0f} ({row.batch} games/call)",
            _rate(row.single),
            f"{row.stepped:,.0f}",
            row.peer,
            _rate(row.peer_rate),
        )
        for row in rows
    ]
    _print_lines(lines)
    print("\nratios to the peer (which plays one game at a time):")
    header = ("game", "batched/peer (N games vs 1: not like for like)", "1 game/peer (like for like)")
    lines = [header] + [
        (
            row.game,
            _ratio(row.batched, row.peer_rate),
            _ratio(row.single, row.peer_rate) + f" (step loop: {_ratio(row.stepped, row.peer_rate)})",
        )
        for row in rows
    ]
    _print_lines(lines)


def _print_lines(lines: list[tuple[str, ...]]) -> None:
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"0.3 s per measurement, {QUICK_PENTE_BATCH} games per batch"
    )
    quick = parser.parse_args().quick
    seconds, batch = (0.3, QUICK_PENTE_BATCH) if quick else (3.0, PENTE_BATCH)
    print_table([row(seconds, batch) for row in ROWS])


if __name__ == "__main__":
    main()
