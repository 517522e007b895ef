"""Play Smash the Code games through CodinGame's referee and print them as JSON (README.md here).

    python drive.py 'java -cp <referee classes> Referee' GAMES FIRST_SEED > ../smash_referee_games.json

The referee speaks its harness protocol on stdin/stdout: `[[INIT] 2]` with `seed=<seed>`, then per
turn of each seat `[[GET_GAME_INFO] 0]` (answered by blocks up to NEXT_PLAYER_INFO, or up to SCORES
once the game is over) and `[[SET_PLAYER_OUTPUT] 1]` with the seat's command. Each seat chooses
from what it is shown (its input lines), in one of three styles:
  chain    the chain house bot (`arena_bots.players.ChainPlayer`): builds chains, sends skulls;
  stacker  piles pairs upright in its tallest column with room (so skulls overflow its well);
  random   a uniformly random placement that fits.
A seat with no placement that fits sends a random on-board one (and the referee ends it).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np

from arena_bots.players import ChainPlayer
from arena_games.smash import playouts, rules

WIDTH = 6
STYLES = ("chain", "stacker", "random")
CHAIN = ChainPlayer()


class Referee:
    """One referee process and its block protocol: `[[COMMAND] line count]` then the lines."""

    def __init__(self, command: str, seed: int) -> None:
        self.process = subprocess.Popen(
            command,
            shell=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.send(f"[[INIT] 2]\n2\nseed={seed}\n")

    def send(self, text: str) -> None:
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def blocks_until(self, *last: str) -> dict[str, list[list[str]]]:
        """Every block up to one whose command is in `last` (included): command -> [lines, ...]."""
        found: dict[str, list[list[str]]] = {}
        while True:
            header = self.process.stdout.readline().strip()
            command, count = header[2:].split("] ")
            count = int(count.rstrip("]"))
            found.setdefault(command, []).append(
                [self.process.stdout.readline().rstrip("\n") for _ in range(count)]
            )
            if command in last:
                return found

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def key_frame(view: list[str]) -> dict:
    """A KEY_FRAME view: per seat [score, nuisance received not yet dropped, death or None]."""
    body = view[3:] if view[1:2] == ["SmashTheCode"] else view[1:]
    seats = []
    for seat in (0, 1):
        score, nuisance, _, death = body[5 * seat].split()
        seats.append([int(score), float(nuisance), None if death == "-" else death])
    reason = view[0].split()[2] if len(view[0].split()) > 2 else None
    return {"seats": seats, "reason": reason}


def seen(lines: list[str]) -> dict:
    """A seat's input: 8 pairs, its score, its 12 rows, the other's score and 12 rows."""
    return {
        "pairs": "".join(line.replace(" ", "") for line in lines[:8]),
        "scores": [int(lines[8]), int(lines[21])],
        "wells": ["".join(lines[9:21]), "".join(lines[22:34])],
    }


def choose(style: str, shown: dict, rng: random.Random) -> str:
    """The command of a seat of `style` shown `shown` (its own well first)."""
    well = rules.well_from_rows(
        [shown["wells"][0][row * WIDTH : (row + 1) * WIDTH] for row in range(12)], WIDTH
    )
    fits = np.flatnonzero(rules.legal_placements(well)).tolist()
    table = rules.placements(WIDTH)
    if not fits:
        return "{} {}".format(*rng.choice(table))
    if style == "chain" and rng.random() < 0.9:
        pair = np.array([[int(shown["pairs"][0]), int(shown["pairs"][1])]])
        values = CHAIN.values_many(playouts.well_array(well, WIDTH)[None], pair)[0]
        action = int(np.argmax(values))
    elif style == "stacker" and rng.random() < 0.8:
        height = rules.heights(well)
        upright = [a for a in fits if table[a][1] in (1, 3)]
        action = max(upright or fits, key=lambda a: (height[table[a][0]], rng.random()))
    else:
        action = rng.choice(fits)
    return "{} {}".format(*table[action])


def play(command: str, seed: int, styles: tuple[str, str], rng: random.Random) -> dict:
    referee = Referee(command, seed)
    turns, frames = [], []
    while True:
        referee.send("[[GET_GAME_INFO] 0]\n")
        blocks = referee.blocks_until("NEXT_PLAYER_INFO", "SCORES")
        frames += [key_frame(view) for view in blocks.get("VIEW", []) if view[0].startswith("KEY_FRAME")]
        if "SCORES" in blocks:
            referee.close()
            final = [int(line.split()[1]) for line in blocks["SCORES"][0]]
            return {
                "seed": seed,
                "styles": list(styles),
                "turns": turns,
                "frames": frames,
                "final_scores": final,
            }
        seat = int(blocks["NEXT_PLAYER_INFO"][0][0])
        shown = seen(blocks["NEXT_PLAYER_INPUT"][0])
        if seat == 0:
            turns.append({"seen": shown, "commands": []})
        chosen = choose(styles[seat], shown, rng)
        turns[-1]["commands"].append(chosen)
        referee.send(f"[[SET_PLAYER_OUTPUT] 1]\n{chosen}\n")


def main() -> None:
    command, games, first = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(first)
    print("[")
    for index in range(games):
        seed = first + index if index % 4 else rng.randrange(-(1 << 63), 1 << 63)
        styles = (STYLES[index % 3], STYLES[(index // 3) % 3])
        end = "," if index < games - 1 else ""
        print(json.dumps(play(command, seed, styles, rng), separators=(",", ":")) + end)
    print("]")


if __name__ == "__main__":
    main()
