"""A threat-space Pente strategy, the `threats` house bot: one move per request by fixed priorities.

1. Win now: five in a row, or the capture that makes five captured pairs.
2. Never leave the opponent a win on its next move: of the best-scored candidates (`CANDIDATES`,
   plus every point where the opponent would win and every capture, which can break its line),
   play the best one after which the opponent has no winning point; then prefer a move that leaves
   two winning points of one's own, then one that leaves the opponent no open four to make.
3. Otherwise the best score (`scores`): the value of a point to the player (attack) plus DEFENCE
   times its value to the opponent (the block), where a point's value is, by weight: an open four
   (.XXXX.), a four-three or double four, a four, an open three, a capture (more as the captured
   pairs near five) or a capture threat, threes and twos in open windows of five; minus the own
   pairs it leaves the opponent to capture; plus stones near it, minus its distance from the centre.

Only moves of the legal mask are played (it carries the opening rules: the centre first, and under
the tournament rule P1's second stone at distance >= 3 from the centre). Ties break by the request's
generator (a random fraction added to every score), so a game is reproducible from its seed.

Boards are uint8 (361,) cell values by point (EMPTY, or p + 1 for a stone of player p), as
`rules.PenteState.board` and the kernels' boards (without their sentinel cell) hold them. The
shapes are computed for the points that matter only (`near`): a win needs a stone next to its
point, a threat one within two points.
"""

from __future__ import annotations

import numpy as np

from arena_games.pente.rules import PAIRS_TO_WIN, PenteState, legal_masks
from arena_games.pente.tables import EMPTY, NUM_POINTS, OFF_BOARD, OFF_BOARD_CELL, RAYS, SIZE

CANDIDATES = 12  # best-scored moves checked by playing them (step 2)
DEFENCE = 0.9  # weight of a point's value to the opponent in its score

# Weights of a point's value to a player placing a stone there.
OPEN_FOUR = 100_000.0  # .XXXX. made: two winning points
DOUBLE_THREAT = 50_000.0  # two fours, or a four and an open three, or two open threes, on different axes
FOUR = 12_000.0  # per axis with a window of five holding four own stones and one empty point
OPEN_THREE = 6_000.0  # per axis with a window of six, ends empty, three own stones in its middle four
CAPTURE = 4_000.0  # per pair captured, plus CAPTURE_STEP per pair the player already has
CAPTURE_STEP = 2_000.0
CAPTURE_THREAT = 1_200.0  # per opponent pair flanked on one side by the new stone, the other side empty
EXPOSED_PAIR = 1_500.0  # per own pair the new stone leaves capturable (attack only)
THREE_WINDOW = 120.0  # per open window of five with three own stones
TWO_WINDOW = 15.0  # per open window of five with two own stones
NEAR_STONE = 4.0  # per stone within distance 2 (own stones count twice)
CENTRE_PULL = 1.0  # per unit of Chebyshev distance from the centre (subtracted)

# LINES[p, a]: the 9 points of axis a centred on p, from distance 4 backwards to 4 forwards,
# OFF_BOARD past the edge; index 4 is p. int (361, 4, 9).
_CENTRES = np.broadcast_to(np.arange(NUM_POINTS)[:, None, None], (NUM_POINTS, 4, 1))
LINES = np.concatenate([RAYS[:, 1::2, ::-1], _CENTRES, RAYS[:, 0::2]], axis=2)
_OPPOSITE = [1, 0, 3, 2, 5, 4, 7, 6]  # per direction, the opposite one (DIRECTIONS come in pairs)
_X, _Y = np.arange(NUM_POINTS) % SIZE, np.arange(NUM_POINTS) // SIZE
_DISTANCES = np.maximum(abs(_X[:, None] - _X[None, :]), abs(_Y[:, None] - _Y[None, :]))  # Chebyshev
# WITHIN[r][p, q]: 0 < Chebyshev distance(p, q) <= r, for r = 1, 2. float (361, 361).
WITHIN = {radius: np.isin(_DISTANCES, range(1, radius + 1)).astype(np.float64) for radius in (1, 2)}
CENTRE_DISTANCE = np.maximum(abs(_X - SIZE // 2), abs(_Y - SIZE // 2)).astype(np.float64)
for _table in (LINES, CENTRE_DISTANCE, *WITHIN.values()):
    _table.flags.writeable = False


def extended(boards: np.ndarray) -> np.ndarray:
    """Boards (n, 361) with the off-board sentinel cell at index OFF_BOARD. uint8 (n, 362)."""
    boards = np.atleast_2d(boards).astype(np.uint8)
    return np.concatenate([boards, np.full((len(boards), 1), OFF_BOARD_CELL, dtype=np.uint8)], axis=1)


def near(boards: np.ndarray, radius: int) -> np.ndarray:
    """The points with a stone of any of `boards` (n, 361) within Chebyshev distance `radius` (1 or
    2), empty or not. int (k,)."""
    stones = (np.atleast_2d(boards) != EMPTY).any(axis=0).astype(np.float64)
    return np.flatnonzero(WITHIN[radius] @ stones > 0)


def _capture_rays(exts: np.ndarray, points: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray]:
    """Per board, point and direction, a stone of `player` on the point: whether the next two points
    hold an opponent pair, and the cell beyond them. bool (n, k, 8), uint8 (n, k, 8)."""
    rays = exts[:, RAYS[points]]  # (n, k, 8, 4)
    opponent = 2 - player
    return (rays[..., 0] == opponent) & (rays[..., 1] == opponent), rays[..., 2]


def captured_pairs(exts: np.ndarray, points: np.ndarray, player: int) -> np.ndarray:
    """Per board and point, the pairs `player` would capture by a stone there. int (n, k)."""
    flanked, beyond = _capture_rays(exts, points, player)
    return (flanked & (beyond == player + 1)).sum(axis=-1)


def _prefix_sums(cells: np.ndarray) -> np.ndarray:
    """Prefix sums along the last axis (9 cells): out[..., j] counts cells[..., :j]. int16 (..., 10)."""
    sums = np.zeros((*cells.shape[:-1], 10), dtype=np.int16)
    np.cumsum(cells, axis=-1, out=sums[..., 1:])
    return sums


def _lines(exts: np.ndarray, points: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per board, point and axis, a stone of `player` placed on the point: prefix sums
    (`_prefix_sums`) of own stones and of blocked cells (opponent or edge) along the 9 points of
    `LINES`, and which of them are empty. (n, k, 4, 10), (n, k, 4, 10), bool (n, k, 4, 9)."""
    line = exts[:, LINES[points]]
    own = line == player + 1
    own[..., 4] = True
    empty = line == EMPTY
    empty[..., 4] = False
    return _prefix_sums(own), _prefix_sums(~own & ~empty), empty


def winning(exts: np.ndarray, points: np.ndarray, captures: np.ndarray, player: int) -> np.ndarray:
    """Per board and point, whether a stone of `player` there wins at once (the point empty, and a
    line of five or more, or the fifth captured pair); `captures` int (n, 2). bool (n, k)."""
    own, _, _ = _lines(exts, points, player)
    five = ((own[..., 5:] - own[..., :5]) == 5).any(axis=(-2, -1))
    by_capture = captures[:, player, None] + captured_pairs(exts, points, player) >= PAIRS_TO_WIN
    return (exts[:, points] == EMPTY) & (five | by_capture)


def winning_points(board: np.ndarray, captures: tuple[int, int], player: int) -> np.ndarray:
    """The empty points of `board` (361,) where a stone of `player` wins at once. int (k,)."""
    points = near(board, 1)
    return points[winning(extended(board), points, np.array([captures]), player)[0]]


def _axis_shapes(exts: np.ndarray, points: np.ndarray, player: int) -> tuple[np.ndarray, ...]:
    """Per board, point and axis, a stone of `player` placed on the point: whether it makes a four,
    how many open windows of five hold three and two own stones, whether it makes an open four
    (.XXXX.) and an open three (a window of six, ends empty, three own stones and one empty point in
    its middle four; not when the axis has a four). (n, k, 4) each."""
    own, blocked, empty = _lines(exts, points, player)
    own_sum, open_window = own[..., 5:] - own[..., :5], blocked[..., 5:] == blocked[..., :5]
    fours = ((own_sum == 4) & open_window).any(axis=-1)
    threes = ((own_sum == 3) & open_window).sum(axis=-1)
    twos = ((own_sum == 2) & open_window).sum(axis=-1)
    # Windows of six starting at w = 0..3: ends w and w + 5, middle w + 1 .. w + 4.
    ends_empty = empty[..., 0:4] & empty[..., 5:9]
    middle_own = own[..., 5:9] - own[..., 1:5]
    middle_open = blocked[..., 5:9] == blocked[..., 1:5]
    open_four = (ends_empty & (middle_own == 4)).any(axis=-1)
    open_three = (ends_empty & middle_open & (middle_own == 3)).any(axis=-1) & ~fours
    return fours, threes, twos, open_four, open_three


def makes_open_four(exts: np.ndarray, points: np.ndarray, player: int) -> np.ndarray:
    """Per board and point, whether a stone of `player` there (empty) makes an open four. bool (n, k)."""
    return (exts[:, points] == EMPTY) & _axis_shapes(exts, points, player)[3].any(axis=-1)


def values(exts: np.ndarray, points: np.ndarray, captures: np.ndarray, player: int) -> np.ndarray:
    """Per board and point, the threat value to `player` of a stone there: the weights above,
    without the exposed pairs and the positional terms; `captures` int (n, 2). float (n, k)."""
    fours, threes, twos, open_four, open_three = _axis_shapes(exts, points, player)
    four_axes, open_three_axes = fours.sum(axis=-1), open_three.sum(axis=-1)
    double = (four_axes >= 2) | ((four_axes >= 1) & (open_three_axes >= 1)) | (open_three_axes >= 2)
    flanked, beyond = _capture_rays(exts, points, player)
    pairs = (flanked & (beyond == player + 1)).sum(axis=-1)
    capture_threats = (flanked & (beyond == EMPTY)).sum(axis=-1)
    return (
        OPEN_FOUR * open_four.any(axis=-1)
        + DOUBLE_THREAT * double
        + FOUR * four_axes
        + OPEN_THREE * open_three_axes
        + (CAPTURE + CAPTURE_STEP * captures[:, player, None]) * pairs
        + CAPTURE_THREAT * capture_threats
        + THREE_WINDOW * threes.sum(axis=-1)
        + TWO_WINDOW * twos.sum(axis=-1)
    )


def exposed_pairs(exts: np.ndarray, points: np.ndarray, player: int) -> np.ndarray:
    """Per board and point, the own pairs a stone of `player` there would leave capturable next
    move: the new stone and one own neighbour (not three in a row), an opponent stone behind one
    end and an empty point behind the other. int (n, k)."""
    own, opponent = player + 1, 2 - player
    rays = exts[:, RAYS[points]]  # (n, k, 8, 4)
    behind, beyond = rays[..., _OPPOSITE, 0], rays[..., 1]
    pair = (rays[..., 0] == own) & (beyond != own) & (behind != own)
    capturable = ((behind == opponent) & (beyond == EMPTY)) | ((behind == EMPTY) & (beyond == opponent))
    return (pair & capturable).sum(axis=-1)


def scores(board: np.ndarray, captures: tuple[int, int], player: int) -> np.ndarray:
    """Per point of `board` (361,), the score of a stone of `player` there (step 3 of the module's
    priorities): for the empty points within distance 2 of a stone, -inf elsewhere. float (361,)."""
    exts, points = extended(board), near(board, 2)
    points = points[board[points] == EMPTY]
    counts = np.array([captures])
    attack = values(exts, points, counts, player) - EXPOSED_PAIR * exposed_pairs(exts, points, player)
    block = values(exts, points, counts, 1 - player)
    stones = (board == player + 1) * 2.0 + (board == 2 - player)
    nearby = WITHIN[2][points] @ stones
    result = np.full(NUM_POINTS, -np.inf)
    positional = NEAR_STONE * nearby - CENTRE_PULL * CENTRE_DISTANCE[points]
    result[points] = attack[0] + DEFENCE * block[0] + positional
    return result


def play(
    board: np.ndarray, captures: tuple[int, int], player: int, point: int
) -> tuple[np.ndarray, tuple[int, int]]:
    """The board and captured pairs after `player` puts a stone on the empty `point` (`rules.step`'s
    placement and captures, without its end checks)."""
    own, opponent = player + 1, 2 - player
    after = board.copy()
    after[point] = own
    pairs = 0
    for a, b, flank in RAYS[point, :, :3]:
        if flank != OFF_BOARD and after[a] == opponent and after[b] == opponent and after[flank] == own:
            after[a] = after[b] = EMPTY
            pairs += 1
    counts = [captures[0], captures[1]]
    counts[player] += pairs
    return after, (counts[0], counts[1])


def threats_move(
    board: np.ndarray, captures: tuple[int, int], player: int, legal: np.ndarray, rng: np.random.Generator
) -> int:
    """The point the threats strategy plays for `player` (to move) on `board` with `captures`
    pairs captured by each player; `legal` bool (361,) the legal mask, at least one point."""
    board = np.asarray(board, dtype=np.uint8)
    noise = rng.random(NUM_POINTS)  # in [0, 1): breaks ties only, far below every weight
    own_wins = np.zeros(NUM_POINTS, dtype=bool)
    own_wins[winning_points(board, captures, player)] = True
    if (own_wins & legal).any():
        return int(np.argmax(np.where(own_wins & legal, noise, -1.0)))
    # Points far from every stone score -inf: the legal ones among them rank by noise alone.
    score = scores(board, captures, player)
    score = np.where(legal, np.where(np.isfinite(score), score, -1e9) + noise, -np.inf)
    order = np.argsort(-score, kind="stable")
    candidates = list(order[: min(CANDIDATES, int(legal.sum()))])
    opponent_wins = winning_points(board, captures, 1 - player)
    if opponent_wins.size:  # its winning points, and the captures that might break its line
        points = near(board, 1)
        breaks = np.zeros(NUM_POINTS, dtype=bool)
        breaks[opponent_wins] = True
        breaks[points[captured_pairs(extended(board), points, player)[0] > 0]] = True
        extra = np.flatnonzero(breaks & legal)
        extra = extra[np.argsort(-score[extra], kind="stable")]
        candidates += [point for point in extra if point not in candidates]
    safety = _safety(board, captures, player, np.array(candidates))
    keys = [(*flags, score[point]) for flags, point in zip(safety, candidates, strict=True)]
    return int(candidates[max(range(len(candidates)), key=keys.__getitem__)])


def _safety(
    board: np.ndarray, captures: tuple[int, int], player: int, moves: np.ndarray
) -> list[tuple[bool, bool, bool]]:
    """Per move of `player` in `moves`, how safe it leaves the game, best first when compared: the
    opponent has no winning point; the player then has two winning points; the opponent has no open
    four to make (or the player has a winning point, which the opponent must answer first)."""
    played = [play(board, captures, player, int(point)) for point in moves]
    afters = np.stack([after for after, _ in played])
    counts = np.array([count for _, count in played])
    exts = extended(afters)
    adjacent, within_two = near(afters, 1), near(afters, 2)
    opponent_wins = winning(exts, adjacent, counts, 1 - player).any(axis=1)
    own_wins = winning(exts, adjacent, counts, player).sum(axis=1)
    opponent_open_fours = makes_open_four(exts, within_two, 1 - player).any(axis=1)
    return [
        (False, False, False) if lost else (True, wins >= 2, wins >= 1 or not open_four)
        for lost, wins, open_four in zip(opponent_wins, own_wins, opponent_open_fours, strict=True)
    ]


def threats_action(state: PenteState, player: int, rng: np.random.Generator) -> int:
    """The point the threats strategy plays for `player`, to move in the running `state`."""
    (legal,) = legal_masks(state, player)
    return threats_move(np.frombuffer(state.board, dtype=np.uint8), state.captures, player, legal, rng)
