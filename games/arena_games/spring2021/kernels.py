"""Spring 2021's compiled kernels (Numba): the rules of `rules` and the input of `encoding` on arrays.

`rules` and `encoding` stay the readable reference; these kernels must agree with them bit for bit
(tests/games/test_spring2021_kernels.py checks masks, frames, returns, end reasons and encodings on
10,000+ positions, and the random playouts against `playouts.playouts` draw for draw).

A game is two arrays, changed in place by the kernels:
  board  int8 (BOARD,): per cell its richness (at RICHNESS + cell), its tree code (`rules.tree_code`,
         NO_TREE for none; at TREES + cell) and today's shadow size (at SHADOWS + cell).
  info   int64 (FIELDS,): the scalars below, indexed by the field constants (a player's field at
         field + player), then today's log: per frame, per player, a log code (below).
A batch is the struct of arrays boards (n, BOARD) and infos (n, FIELDS); the `*_batch` kernels loop
over its rows. Actions given to `step` are not checked: they come from a legal mask (the
reference's `rules.step` says why an action is illegal). A frame's joint action is one action per
player, the action of a player who is not to move ignored.

A log code is NOT_ACTED (-1) for a player who did not act in the frame, else the resolved command
`verb | first << 2 | second << 8 | conflict << 14` (verbs WAIT, GROW, COMPLETE, SEED; `first` the
cell, or the source of a SEED and `second` its target). That holds every frame `step` and
`step_favouring` play; the frames of `rules.step_commands` whose line was rejected or malformed log
the referee's reasons, which the arrays do not hold (`from_state` refuses them).

Random playouts draw from a PCG64 state (`arena_games.pcg64`) as `playouts.playouts` draws from the
state's generator: uniform doubles in blocks of DRAW_BLOCK, used last first, the unused rest of the
last block discarded; each player to move takes the nth of its legal actions in index order.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from numba import njit

from arena_games import kernel_batches, pcg64
from arena_games.mask_choice import nth_true
from arena_games.spring2021.board import COORDS, NEIGHBOURS, NUM_CELLS
from arena_games.spring2021.board import RICHNESS_BONUS as _RICHNESS_BONUS
from arena_games.spring2021.encoding import (
    DAY,
    DAYS,
    DORMANT,
    FLOATS,
    INPUT_SIZE,
    NUTRIENT_SLOTS,
    NUTRIENTS,
    PLAYER_BLOCKS,
    SCALE,
    SIZE0,
    SUN_SLOTS,
    WAITING,
)
from arena_games.spring2021.encoding import SUN as SUN_SLOT
from arena_games.spring2021.playouts import DRAW_BLOCK
from arena_games.spring2021.rules import (
    COMPLETE_COST,
    DEACTIVATED_SCORE,
    DORMANT_BIT,
    LARGE,
    MAX_FRAMES_PER_DAY,
    NO_TREE,
    NUM_ACTIONS,
    OWNER_SHIFT,
    SIZE_BITS,
    WAIT_ACTION,
    SpringConfig,
    SpringState,
    command_text,
)

# Offsets in `board`.
RICHNESS, TREES, SHADOWS = 0, NUM_CELLS, 2 * NUM_CELLS
BOARD = 3 * NUM_CELLS
# Fields of `info`; SUN, SCORE, GATHERED and WAITING hold player 0's value, player 1's follows.
# FRAMES: how many frames of day LOG_DAY the log holds.
DAY_FIELD, NUTRIENTS_FIELD, SUN, SCORE, GATHERED, WAITING_FIELD = 0, 1, 2, 4, 6, 8
LOG_DAY, FRAMES, STARTING_SUN, STARTING_NUTRIENTS, MAX_ROUNDS, MAX_EMPTY_CELLS = range(10, 16)
LOG = 16  # the log: info[LOG + 2 * frame + player]
LOG_FRAMES = MAX_FRAMES_PER_DAY  # no day has more frames (rules.MAX_FRAMES_PER_DAY)
FIELDS = LOG + 2 * LOG_FRAMES
# Log codes.
NOT_ACTED = -1
VERBS = ("WAIT", "GROW", "COMPLETE", "SEED")
WAIT_VERB, GROW_VERB, COMPLETE_VERB, SEED_VERB = range(4)
FIRST_SHIFT, SECOND_SHIFT, CONFLICT_BIT = 2, 8, 1 << 14
CONFLICT = " (conflict)"
# End codes: why the game is over (rules.end_reason).
RUNNING, LAST_DAY, TIE_BREAK, DEACTIVATED = range(4)

_COORDS = np.array(COORDS, dtype=np.int8)  # (37, 3): cube coordinates
_NEIGHBOURS = np.array(NEIGHBOURS, dtype=np.int8)  # (37, 6): the next cell per direction, -1 off
_BONUS = np.array(_RICHNESS_BONUS, dtype=np.int64)
_GROW_BASE = np.array((1, 3, 7), dtype=np.int64)  # rules.BASE_COST of sizes 1..3
# Signatures of the kernels that the others call with constant arguments: without one, Numba
# compiles a kernel again for each constant it is called with (a literal type), tripling the
# cold compile. Games are C-contiguous arrays (rows of a C-contiguous batch are).
_CELL_COUNT = "int64(int8[::1], int64, int64)"  # (board, player, cell or size) -> int
_FRAME = "void(int8[::1], int64[::1], int64, int64"  # (board, info, action_0, action_1 ...


# --- conversions -------------------------------------------------------------------------------------


def from_state(state: SpringState) -> tuple[np.ndarray, np.ndarray]:
    """The arrays (board, info) of a reference state; ValueError for a log the arrays cannot hold
    (a `step_commands` frame's rejected or malformed line, or more frames today than a day holds)."""
    board = np.empty(BOARD, dtype=np.int8)
    board[RICHNESS:TREES] = state.richness
    board[TREES:SHADOWS] = state.trees
    board[SHADOWS:] = state.shadows
    info = np.full(FIELDS, NOT_ACTED, dtype=np.int64)
    info[DAY_FIELD], info[NUTRIENTS_FIELD] = state.day, state.nutrients
    info[SUN : SUN + 2], info[SCORE : SCORE + 2] = state.sun, state.score
    info[GATHERED : GATHERED + 2], info[WAITING_FIELD : WAITING_FIELD + 2] = state.gathered, state.waiting
    info[LOG_DAY], info[FRAMES] = state.log_day, len(state.log)
    config = state.config
    info[STARTING_SUN], info[STARTING_NUTRIENTS] = config.starting_sun, config.starting_nutrients
    info[MAX_ROUNDS], info[MAX_EMPTY_CELLS] = config.max_rounds, config.max_empty_cells
    awake = sum(code != NO_TREE and not code & DORMANT_BIT for code in state.trees)
    if len(state.log) > LOG_FRAMES or (state.log_day == state.day and len(state.log) + awake >= LOG_FRAMES):
        raise ValueError(f"spring2021: a log of {len(state.log)} frames today cannot be played on")
    for frame, entry in enumerate(state.log):
        for player, text in enumerate(entry):
            info[LOG + 2 * frame + player] = _log_code(text)
    return board, info


@functools.lru_cache(maxsize=1 << 12)  # a game logs a few hundred distinct commands
def _log_code(text: str) -> int:
    """The log code of a logged command; ValueError for text that is no resolved command."""
    if not text:
        return NOT_ACTED
    command = text.removesuffix(CONFLICT)
    verb, *cells = command.split(" ")
    if verb in VERBS and all(cell.isdigit() for cell in cells):
        code = VERBS.index(verb) | _cells_code(*(int(cell) for cell in cells))
        if _log_text(code) == command:
            return code | (CONFLICT_BIT if command != text else 0)
    raise ValueError(f"spring2021: the log entry {text!r} is no command the arrays can hold")


def _cells_code(first: int = 0, second: int = 0) -> int:
    return first << FIRST_SHIFT | second << SECOND_SHIFT


@functools.lru_cache(maxsize=1 << 12)
def _log_text(code: int) -> str:
    """The logged text of a log code (frames._play_frame's `said`)."""
    if code == NOT_ACTED:
        return ""
    verb = VERBS[code & 3]
    first, second = code >> FIRST_SHIFT & 63, code >> SECOND_SHIFT & 63
    cells = () if verb == "WAIT" else (first, second) if verb == "SEED" else (first,)
    return command_text((verb, *cells)) + (CONFLICT if code & CONFLICT_BIT else "")


def to_state(board: np.ndarray, info: np.ndarray) -> SpringState:
    """The reference state of the arrays (board, info)."""
    config = SpringConfig(
        starting_sun=int(info[STARTING_SUN]),
        starting_nutrients=int(info[STARTING_NUTRIENTS]),
        max_rounds=int(info[MAX_ROUNDS]),
        max_empty_cells=int(info[MAX_EMPTY_CELLS]),
    )
    log = info[LOG : LOG + 2 * info[FRAMES]].reshape(-1, 2).tolist()
    return SpringState(
        config=config,
        richness=tuple(board[RICHNESS:TREES].tolist()),
        trees=tuple(board[TREES:SHADOWS].tolist()),
        day=int(info[DAY_FIELD]),
        nutrients=int(info[NUTRIENTS_FIELD]),
        sun=(int(info[SUN]), int(info[SUN + 1])),
        score=(int(info[SCORE]), int(info[SCORE + 1])),
        gathered=(int(info[GATHERED]), int(info[GATHERED + 1])),
        waiting=(bool(info[WAITING_FIELD]), bool(info[WAITING_FIELD + 1])),
        shadows=tuple(board[SHADOWS:].tolist()),
        log_day=int(info[LOG_DAY]),
        log=tuple((_log_text(first), _log_text(second)) for first, second in log),
    )


def pack(states: Sequence[SpringState]) -> tuple[np.ndarray, ...]:
    """The states as a batch: boards int8 (n, BOARD), infos int64 (n, FIELDS)."""
    return kernel_batches.pack_rows(states, from_state, (BOARD, np.int8), (FIELDS, np.int64))


# --- to move, masks ------------------------------------------------------------------------------------


@njit("boolean(int64[::1])", cache=True)
def is_over(info: np.ndarray) -> bool:
    """rules.SpringState.is_over: the last day is done, or a player was deactivated."""
    return (
        info[DAY_FIELD] >= info[MAX_ROUNDS]
        or info[SCORE] == DEACTIVATED_SCORE
        or info[SCORE + 1] == DEACTIVATED_SCORE
    )


@njit("int64(int64[::1])", cache=True)
def to_move(info: np.ndarray) -> int:
    """rules.to_move as a bit mask: bit p set while player p is to move (3 both, 0 once over)."""
    if is_over(info):
        return 0
    return (1 - info[WAITING_FIELD]) | (1 - info[WAITING_FIELD + 1]) << 1


@njit(cache=True, inline="always")
def _owner(code: int) -> int:
    return code >> OWNER_SHIFT


@njit("int64(int64, int64)", cache=True)
def _distance(first: int, second: int) -> int:
    """board.distance: the hex distance between two cells."""
    steps = 0
    for axis in range(3):
        steps += abs(_COORDS[first, axis] - _COORDS[second, axis])
    return steps // 2


@njit(_CELL_COUNT, cache=True)
def _owned(board: np.ndarray, player: int, size: int) -> int:
    """How many trees of `size` `player` owns (rules.size_counts), dormant or not."""
    count = 0
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        count += code != NO_TREE and _owner(code) == player and code & SIZE_BITS == size
    return count


@njit(_CELL_COUNT, cache=True)
def _grow_cost(board: np.ndarray, player: int, size: int) -> int:
    """rules.grow_cost: what growing (COMPLETE_COST: completing) a tree of `size` costs `player`."""
    if size >= LARGE:
        return COMPLETE_COST
    return _GROW_BASE[size] + _owned(board, player, size + 1)


@njit(cache=True, inline="always")
def _is_source(code: int, player: int) -> bool:
    """Whether the tree `code` is an awake tree of `player` that can throw a seed."""
    return code != NO_TREE and _owner(code) == player and not code & DORMANT_BIT and code & SIZE_BITS > 0


@njit(_CELL_COUNT, cache=True)
def _seed_source(board: np.ndarray, player: int, target: int) -> int:
    """The source rules.action_commands names for `player` seeding `target`: the smallest awake tree
    that reaches it, then the lowest cell; -1 for none."""
    best, best_size = -1, LARGE + 1
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        size = code & SIZE_BITS
        if _is_source(code, player) and size < best_size and _distance(cell, target) <= size:
            best, best_size = cell, size
    return best


@njit("int64(int8[::1], int64[::1], int64, boolean[::1])", cache=True)
def legal_mask(board: np.ndarray, info: np.ndarray, player: int, out: np.ndarray) -> int:
    """Writes `player`'s legal actions into `out` (bool (NUM_ACTIONS,); all False unless it is to
    move) and returns how many there are (rules.action_commands)."""
    for action in range(NUM_ACTIONS):
        out[action] = False
    if is_over(info) or info[WAITING_FIELD + player]:
        return 0
    sun = info[SUN + player]
    count, sources = 1, 0
    out[WAIT_ACTION] = True
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        if code == NO_TREE or _owner(code) != player or code & DORMANT_BIT:
            continue
        size = code & SIZE_BITS
        sources += size > 0
        if sun >= _grow_cost(board, player, size):
            out[cell] = True
            count += 1
    if sources == 0 or sun < _owned(board, player, 0):
        return count
    for target in range(NUM_CELLS):
        if (
            board[TREES + target] == NO_TREE
            and board[RICHNESS + target]
            and _seed_source(board, player, target) >= 0
        ):
            out[target] = True
            count += 1
    return count


# --- a frame -----------------------------------------------------------------------------------------


@njit("UniTuple(int64, 3)(int8[::1], int64[::1], int64, int64, int64)", cache=True)
def _act(board: np.ndarray, info: np.ndarray, player: int, action: int, log: int) -> tuple[int, int, int]:
    """Plays `player`'s action of the frame (-1: not to move) and logs it at info[log]; returns the
    sent seed's target and cost (-1, 0 for none) and the completed cell (-1 for none)."""
    if action < 0:
        info[log] = NOT_ACTED
        return -1, 0, -1
    if action == WAIT_ACTION:
        info[WAITING_FIELD + player] = 1
        info[log] = WAIT_VERB
        return -1, 0, -1
    code = board[TREES + action]
    if code == NO_TREE:
        source = _seed_source(board, player, action)
        cost = _owned(board, player, 0)
        info[SUN + player] -= cost
        board[TREES + source] |= DORMANT_BIT
        info[log] = SEED_VERB | source << FIRST_SHIFT | action << SECOND_SHIFT
        return action, cost, -1
    size = code & SIZE_BITS
    info[SUN + player] -= _grow_cost(board, player, size)
    if size < LARGE:
        board[TREES + action] = player << OWNER_SHIFT | DORMANT_BIT | (size + 1)
        info[log] = GROW_VERB | action << FIRST_SHIFT
        return -1, 0, -1
    board[TREES + action] |= DORMANT_BIT
    info[log] = COMPLETE_VERB | action << FIRST_SHIFT
    return -1, 0, action


@njit("void(int8[::1], int64[::1], int64, int64, int64, boolean, int64)", cache=True)
def _plant(
    board: np.ndarray, info: np.ndarray, player: int, target: int, cost: int, lost: bool, log: int
) -> None:
    """Plants `player`'s sent seed dormant on `target` (none: -1), or, when it `lost` a conflict to
    the favoured seed, refunds its cost and logs the conflict."""
    if target < 0:
        return
    if lost:
        info[SUN + player] += cost
        info[log] |= CONFLICT_BIT
    else:
        board[TREES + target] = player << OWNER_SHIFT | DORMANT_BIT


@njit("void(int8[::1], int64[::1])", cache=True)
def _next_day(board: np.ndarray, info: np.ndarray) -> None:
    """frames._next_day: the sun moves (day + 1, shadows recomputed) and, unless the game is over,
    GATHERING: every tree wakes and each tree not spooked gives its owner sun equal to its size."""
    info[DAY_FIELD] += 1
    if info[DAY_FIELD] >= info[MAX_ROUNDS]:
        return
    direction = info[DAY_FIELD] % 6
    for cell in range(NUM_CELLS):
        board[SHADOWS + cell] = 0
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        size = code & SIZE_BITS if code != NO_TREE else 0
        shaded = cell
        for _ in range(size):
            shaded = _NEIGHBOURS[shaded, direction]
            if shaded < 0:
                break
            board[SHADOWS + shaded] = max(board[SHADOWS + shaded], size)
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        if code != NO_TREE:
            board[TREES + cell] = code & ~DORMANT_BIT
            if board[SHADOWS + cell] < code & SIZE_BITS:
                info[SUN + _owner(code)] += code & SIZE_BITS
                info[GATHERED + _owner(code)] += code & SIZE_BITS
    info[WAITING_FIELD], info[WAITING_FIELD + 1] = 0, 0


@njit(_FRAME + ", int64)", cache=True)
def frame(board: np.ndarray, info: np.ndarray, action_0: int, action_1: int, favoured: int) -> None:
    """rules.resolve_frame of the legal actions of the players to move (`favoured` -1 for none):
    the frame, then the day's end if both players now wait."""
    movers = to_move(info)
    if info[LOG_DAY] != info[DAY_FIELD]:
        info[LOG_DAY], info[FRAMES] = info[DAY_FIELD], 0
    log = LOG + 2 * info[FRAMES]
    info[FRAMES] += 1
    sun_0, sun_1 = info[SUN], info[SUN + 1]
    target_0, cost_0, dying_0 = _act(board, info, 0, action_0 if movers & 1 else -1, log)
    target_1, cost_1, dying_1 = _act(board, info, 1, action_1 if movers & 2 else -1, log + 1)
    if target_0 >= 0 and target_0 == target_1 and favoured < 0:  # nothing planted, all refunded
        info[SUN], info[SUN + 1] = sun_0, sun_1
        info[log] |= CONFLICT_BIT
        info[log + 1] |= CONFLICT_BIT
    else:
        conflict = target_0 >= 0 and target_0 == target_1
        _plant(board, info, 0, target_0, cost_0, conflict and favoured != 0, log)
        _plant(board, info, 1, target_1, cost_1, conflict and favoured != 1, log + 1)
    dying = (dying_1, dying_0) if favoured == 1 else (dying_0, dying_1)
    nutrients, completed = info[NUTRIENTS_FIELD], 0
    for cell in dying:
        if cell >= 0:
            info[SCORE + _owner(board[TREES + cell])] += nutrients + _BONUS[board[RICHNESS + cell]]
            board[TREES + cell] = NO_TREE
            completed += 1
            if favoured >= 0:  # the favoured tree went first: the other finds one nutrient less
                nutrients = max(0, nutrients - 1)
    info[NUTRIENTS_FIELD] = max(0, info[NUTRIENTS_FIELD] - completed)
    if info[WAITING_FIELD] and info[WAITING_FIELD + 1]:
        _next_day(board, info)


@njit(_FRAME + ")", cache=True)
def step(board: np.ndarray, info: np.ndarray, action_0: int, action_1: int) -> None:
    """rules.step: one frame, each player to move playing its legal action (unchecked)."""
    frame(board, info, action_0, action_1, -1)


@njit(_FRAME + ", int64)", cache=True)
def step_favouring(board: np.ndarray, info: np.ndarray, action_0: int, action_1: int, favoured: int) -> None:
    """rules.step_favouring: the frame as a search of `favoured` simulates it."""
    frame(board, info, action_0, action_1, favoured)


# --- the end -----------------------------------------------------------------------------------------


@njit(cache=True)
def final_scores(board: np.ndarray, info: np.ndarray) -> tuple[int, int]:
    """rules.final_scores: each active player adds floor(sun / 3), then, if the active players'
    scores are one value, 1 per own tree; a deactivated player keeps DEACTIVATED_SCORE."""
    active_0, active_1 = info[SCORE] != DEACTIVATED_SCORE, info[SCORE + 1] != DEACTIVATED_SCORE
    first = info[SCORE] + (info[SUN] // 3 if active_0 else 0)
    second = info[SCORE + 1] + (info[SUN + 1] // 3 if active_1 else 0)
    if active_0 != active_1 or (active_0 and first == second):
        for cell in range(NUM_CELLS):
            code = board[TREES + cell]
            if code != NO_TREE and _owner(code) == 0 and active_0:
                first += 1
            elif code != NO_TREE and _owner(code) == 1 and active_1:
                second += 1
    return first, second


@njit(cache=True)
def returns_of(board: np.ndarray, info: np.ndarray) -> tuple[float, float]:
    """rules.returns: (0, 0) while running or after a draw; +1 for the winner, -1 for the loser."""
    if not is_over(info):
        return 0.0, 0.0
    first, second = final_scores(board, info)
    if first == second:
        return 0.0, 0.0
    return (1.0, -1.0) if first > second else (-1.0, 1.0)


@njit(cache=True)
def end_code(info: np.ndarray) -> int:
    """Why the game is over: RUNNING, DEACTIVATED, TIE_BREAK (the scores with the sun were equal,
    so the trees counted) or LAST_DAY."""
    if not is_over(info):
        return RUNNING
    if info[SCORE] == DEACTIVATED_SCORE or info[SCORE + 1] == DEACTIVATED_SCORE:
        return DEACTIVATED
    if info[SCORE] + info[SUN] // 3 == info[SCORE + 1] + info[SUN + 1] // 3:
        return TIE_BREAK
    return LAST_DAY


def end_reason(board: np.ndarray, info: np.ndarray) -> str:
    """rules.end_reason of the game: why and how it ended, "" while it runs."""
    code = end_code(info)
    if code == RUNNING:
        return ""
    first, second = final_scores(board, info)
    outcome = "a draw" if first == second else f"player {1 if first > second else 2} wins"
    if code == DEACTIVATED:
        out = [info[SCORE + player] == DEACTIVATED_SCORE for player in (0, 1)]
        who = "both players were" if all(out) else f"player {out.index(True) + 1} was"
        day = info[DAY_FIELD]
        return f"{who} deactivated for a malformed command on day {day}: {first} to {second}, {outcome}"
    tie_break = " after the tie-break on trees" if code == TIE_BREAK else ""
    return f"day {info[MAX_ROUNDS] - 1} is over: {first} to {second}{tie_break}, {outcome}"


# --- the network input -------------------------------------------------------------------------------


@njit(cache=True)
def encode(board: np.ndarray, info: np.ndarray, player: int, out: np.ndarray) -> None:
    """Writes `encoding.encode(state, player)["obs"]` into `out` (float32 (INPUT_SIZE,))."""
    for index in range(INPUT_SIZE):
        out[index] = 0.0
    for cell in range(NUM_CELLS):
        code = board[TREES + cell]
        if code == NO_TREE:
            if not board[RICHNESS + cell]:
                out[cell] = 1.0
            continue
        out[cell] = 1.0
        block = PLAYER_BLOCKS[0] if _owner(code) == player else PLAYER_BLOCKS[1]
        out[block + SIZE0 + NUM_CELLS * (code & SIZE_BITS) + cell] = 1.0
        if code & DORMANT_BIT:
            out[block + DORMANT + cell] = 1.0
    out[DAY + min(info[DAY_FIELD], DAYS - 1)] = 1.0
    out[NUTRIENTS + min(info[NUTRIENTS_FIELD], NUTRIENT_SLOTS - 1)] = 1.0
    for side in range(2):
        who = player if side == 0 else 1 - player
        sun = info[SUN + who]
        if sun:
            out[PLAYER_BLOCKS[side] + SUN_SLOT + min(sun, SUN_SLOTS) - 1] = 1.0
        out[WAITING + side] = info[WAITING_FIELD + who]
        out[FLOATS + 3 * side] = info[SCORE + who] / SCALE
        out[FLOATS + 3 * side + 1] = sun / SCALE
        out[FLOATS + 3 * side + 2] = info[GATHERED + who] / SCALE


# --- batches -----------------------------------------------------------------------------------------


@njit(cache=True)
def step_batch(boards: np.ndarray, infos: np.ndarray, actions: np.ndarray) -> None:
    """`step` in every row: row i plays actions[i] (int (n, 2), one action per player)."""
    for row in range(infos.shape[0]):
        step(boards[row], infos[row], actions[row, 0], actions[row, 1])


@njit(cache=True)
def legal_mask_batch(boards: np.ndarray, infos: np.ndarray) -> np.ndarray:
    """bool (n, 2, NUM_ACTIONS): `legal_mask` of every row for each player."""
    masks = np.empty((infos.shape[0], 2, NUM_ACTIONS), dtype=np.bool_)
    for row in range(infos.shape[0]):
        for player in range(2):
            legal_mask(boards[row], infos[row], player, masks[row, player])
    return masks


@njit(cache=True)
def encode_batch(boards: np.ndarray, infos: np.ndarray, players: np.ndarray) -> np.ndarray:
    """float32 (n, INPUT_SIZE): row i `encode`d for players[i]."""
    inputs = np.empty((infos.shape[0], INPUT_SIZE), dtype=np.float32)
    for row in range(infos.shape[0]):
        encode(boards[row], infos[row], players[row], inputs[row])
    return inputs


def encode_many(states: Sequence[SpringState], players: Sequence[int]) -> dict[str, np.ndarray]:
    """`encoding.encode` of every state for its player in one batch: {"obs": float32 (n, 534)} (a
    `Game.encode_many` on the kernels: `arena_bots.core.on_core`); ValueError as `from_state`."""
    boards, infos = pack(states)
    return {"obs": encode_batch(boards, infos, np.asarray(players, dtype=np.int64))}


# --- random playouts ---------------------------------------------------------------------------------


@njit(cache=True)
def _random_action(
    board: np.ndarray, info: np.ndarray, player: int, uniform: float, legal: np.ndarray
) -> int:
    """`player`'s nth legal action in index order, n = floor(uniform * count) (playouts.playouts)."""
    count = legal_mask(board, info, player, legal)
    return nth_true(legal, min(int(uniform * count), count - 1)) if count else WAIT_ACTION


@njit(cache=True)
def random_playout(
    board: np.ndarray, info: np.ndarray, rng: np.ndarray, draws: np.ndarray, legal: np.ndarray
) -> int:
    """Finishes the game with uniformly random legal frames drawn from the PCG64 state `rng` as
    `playouts.playouts` draws them; returns how many frames it played. Scratch: `draws` float64
    (DRAW_BLOCK,), `legal` bool (NUM_ACTIONS,)."""
    left, frames = 0, 0
    while True:
        movers = to_move(info)
        if movers == 0:
            return frames
        action_0, action_1 = -1, -1
        for player in range(2):
            if movers >> player & 1:
                if left == 0:
                    for index in range(DRAW_BLOCK):
                        draws[index] = pcg64.next_double(rng)
                    left = DRAW_BLOCK
                left -= 1
                action = _random_action(board, info, player, draws[left], legal)
                if player == 0:
                    action_0 = action
                else:
                    action_1 = action
        step(board, info, action_0, action_1)
        frames += 1


@njit(cache=True)
def playout_returns(
    boards: np.ndarray, infos: np.ndarray, rngs: np.ndarray, rng_of_row: np.ndarray
) -> np.ndarray:
    """float64 (n, 2): the returns after `random_playout` of every row (in place), in row order, row
    i drawing from the PCG64 state rngs[rng_of_row[i]] (uint64 (k, pcg64.STATE_WORDS), advanced in
    place; rows may share one)."""
    draws, legal = np.empty(DRAW_BLOCK), np.empty(NUM_ACTIONS, dtype=np.bool_)
    results = np.zeros((infos.shape[0], 2))
    for row in range(infos.shape[0]):
        random_playout(boards[row], infos[row], rngs[rng_of_row[row]], draws, legal)
        results[row, 0], results[row, 1] = returns_of(boards[row], infos[row])
    return results


def playouts(states: Sequence[SpringState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """`playouts.playouts` on the compiled kernels: the same returns and the same generator states
    after, given PCG64 generators (a generator shared by several states is drawn from in state
    order, as the reference does)."""
    return kernel_batches.compiled_playouts(states, rngs, pack, playout_returns, shared_generators=True)
