"""Plays scripted races through the community CSB referee and prints them as golden JSON.

Usage: python drive.py REFEREE_BINARY GAMES SEED > ../csb_referee_games.json
The referee binary is robostac's csbref.go with the debug prints README.md describes; this script
plays both seats itself (###Validate mode, checkpoints given), choosing moves from what each seat
is shown, and records every move and the referee's full-precision state after every turn.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile

import numpy as np

from arena_games.csb.rules import MAPS  # the 13 stock maps (Agade09/CSB-Runner-Arena)


def choose_map(rng: np.random.Generator) -> list[list[int]]:
    stock = MAPS[int(rng.integers(len(MAPS)))]
    offset = int(rng.integers(len(stock)))
    rotated = stock[offset:] + stock[:offset]
    return [[x + int(rng.integers(-30, 31)), y + int(rng.integers(-30, 31))] for x, y in rotated]


def pod_move(rng, style, me, pods, checkpoints, turn):
    """One output line for pod `me` (x y vx vy angle next) among `pods` (the seat's view)."""
    x, y, vx, vy, angle, nxt = pods[me]
    cx, cy = checkpoints[nxt]
    tx, ty = cx - 3 * vx, cy - 3 * vy
    heading = math.radians(angle)
    wanted = math.atan2(ty - y, tx - x)
    off = abs((wanted - heading + math.pi) % (2 * math.pi) - math.pi)
    thrust = "100" if off < math.pi / 2 or turn == 0 else "20"
    roll = rng.random()
    if style == "lazy":
        thrust = "0" if rng.random() < 0.9 else str(int(rng.integers(0, 30)))
        tx, ty = x + int(rng.integers(-3000, 3000)), y + int(rng.integers(-3000, 3000))
    elif roll < 0.10:  # ram the nearest opponent
        ox, oy = min(((p[0], p[1]) for p in pods[2:]), key=lambda p: (p[0] - x) ** 2 + (p[1] - y) ** 2)
        tx, ty = ox + 2 * pods[2][2], oy + 2 * pods[2][3]
    elif roll < 0.14:
        thrust = "SHIELD"
    elif roll < 0.17:
        thrust = "BOOST"
    elif roll < 0.22:
        thrust = str(int(rng.integers(0, 201)))
    elif roll < 0.24:
        tx, ty = x, y  # target on the pod itself: no rotation, no thrust
    if (
        any((p[0] - x) ** 2 + (p[1] - y) ** 2 < 1300**2 for i, p in enumerate(pods) if i != me)
        and rng.random() < 0.15
    ):
        thrust = "SHIELD"
    if rng.random() < 0.15:  # fractional targets
        return f"{tx + rng.random():.4f} {ty - rng.random():.4f} {thrust}"
    return f"{tx} {ty} {thrust}"


SCRIPT = {  # (turn, pod) -> line from the pod's x, y: the edge cases of spec §12 in the first game
    (0, 0): "{x_plus} {y} 0",  # faces exactly east
    (1, 0): "{x_minus} {y} 0",  # the target exactly behind: turns -18 degrees
    (0, 1): "{x} {y} 100",  # the target on the pod: no turn (the angle stays -1 degree), no thrust
    (1, 1): "{x_plus} {y} BOOST",
    (2, 1): "{x_plus} {y} BOOST",  # a second BOOST: thrust 200
    (3, 1): "{x_plus} {y} 200",
}


def scripted(turn: int, me: int, pods: list) -> str | None:
    line = SCRIPT.get((turn, me))
    x, y = pods[me][0], pods[me][1]
    return line and line.format(x=x, y=y, x_plus=x + 1000, x_minus=x - 1000)


def play(binary: str, seed: int, script: bool) -> dict:
    rng = np.random.default_rng(seed)
    checkpoints = choose_map(rng)
    styles = [["race", "lazy"][int(rng.random() < 0.2)] for _ in range(2)]
    with tempfile.TemporaryFile(mode="w+") as log:  # the debug prints; a pipe would fill up and block
        proc = subprocess.Popen(
            [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1
        )
        proc.stdin.write(f"###Validate\n{len(checkpoints)}\n")
        proc.stdin.write("".join(f"{x} {y}\n" for x, y in checkpoints))
        proc.stdin.flush()
        turns: list[list[str]] = [[]]
        shown: list[list[int]] = []
        turn = 0
        initialised: set[int] = set()
        while True:
            line = proc.stdout.readline()
            if not line:
                break
            line = line.strip()
            if line.startswith("###Input"):
                player = int(line.split()[1])
                if player not in initialised:  # the init block: laps, count, the checkpoints
                    initialised.add(player)
                    proc.stdout.readline()
                    for _ in range(int(proc.stdout.readline())):
                        proc.stdout.readline()
                    continue
                shown = [[int(v) for v in proc.stdout.readline().split()] for _ in range(4)]
            elif line.startswith("###Output"):
                player = int(line.split()[1])
                pods = shown
                moves = [
                    (script and player == 0 and scripted(turn, me, pods))
                    or pod_move(rng, styles[player], me, pods, checkpoints, turn)
                    for me in (0, 1)
                ]
                turns[-1].extend(moves)
                proc.stdin.write("\n".join(moves) + "\n")
                proc.stdin.flush()
                if player == 1:
                    turns.append([])
                    turn += 1
            elif line.startswith("###End"):
                break
        proc.stdin.close()
        proc.wait()
        log.seek(0)
        err = log.read()
    states, timeouts, end = [], [], None
    current: list = []  # angles to 12 significant digits: the test allows for libm's last bits
    for text in err.splitlines():
        parts = text.split()
        if parts[0] == "STATE":
            current.append(
                [
                    float(parts[2]),
                    float(parts[3]),
                    float(parts[4]),
                    float(parts[5]),
                    float(f"{float(parts[6]):.12g}"),
                    int(parts[7]),
                    int(parts[8]),
                    int(parts[9]),
                    parts[10] == "true",
                ]
            )
            if len(current) == 4:
                states.append(current)
                current = []
        elif parts[0] == "TIMEOUT":
            timeouts.append([int(parts[1]), int(parts[2])])
        elif parts[0] == "END" and parts[1] != "invalid":
            end = int(parts[1])
        elif parts[0] == "CAP":
            end = "cap"
    if turns and not turns[-1]:
        turns.pop()
    return {
        "seed": seed,
        "checkpoints": checkpoints,
        "styles": styles,
        "moves": turns,
        "states": states,
        "timeouts": timeouts,
        "winner": end,
    }


def main() -> None:
    binary, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    games = [play(binary, seed + index, script=index == 0) for index in range(count)]
    print("[")
    print(",\n".join(json.dumps(game, separators=(",", ":")) for game in games))
    print("]")


if __name__ == "__main__":
    main()
