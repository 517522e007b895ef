"""The Smash house bots' compiled values (`compiled_smash_bots`) against their NumPy reference, bit for
bit: `ChainPlayer.values_many` on thousands of wells and `LookaheadPlayer.values_many` on hundreds
(the reference costs about 2 and 20 ms a well), from random play and from games between the house
bots (chains, skulls), wells 6 and 3 wide; so the same placements, ties included, on both cores."""

from __future__ import annotations

import numpy as np
import pytest

from arena_bots.match import Request
from arena_bots.players import ChainPlayer, LookaheadPlayer
from arena_games.smash import GAME, rules
from arena_games.smash import playouts as engine

CHAIN_WELLS = 2_000
LOOKAHEAD_WELLS = 160

# wells int8 (m, HEIGHT, width), this turn's pairs and the next int64 (m, 2) each
Wells = tuple[np.ndarray, np.ndarray, np.ndarray]


def played_wells(width: int, games: int, seed: int, house: bool) -> Wells:
    """Both players' wells at every turn of `games` games from seeds `seed`.., with the pairs they
    were to place: uniformly random placements, or (`house`) the chain bot against the lookahead
    bot (compiled: their values are checked below) with one random turn in five."""
    rng = np.random.default_rng(seed)
    batch = engine.pack([rules.init(seed + game, None, width=width) for game in range(games)])
    chain, lookahead = ChainPlayer(core="compiled"), LookaheadPlayer(core="compiled")
    wells, pairs, nexts = [], [], []
    while (rows := np.flatnonzero(batch.running)).size:
        cells = batch.cells[rows]
        pair = batch.pairs[rows, batch.turns[rows]].astype(np.int64)
        following = batch.pairs[rows, batch.turns[rows] + 1].astype(np.int64)
        wells.append(cells.reshape(-1, *cells.shape[2:]))
        pairs.append(np.repeat(pair, 2, axis=0))
        nexts.append(np.repeat(following, 2, axis=0))
        actions = engine.random_actions(batch, rows, rng.random((rows.size, 2)))
        if house:
            bots = np.stack(
                [
                    np.argmax(chain.values_many(cells[:, 0], pair), axis=1),
                    np.argmax(lookahead.values_many(cells[:, 1], pair, following), axis=1),
                ],
                axis=1,
            )
            actions = np.where(rng.random((rows.size, 1)) < 0.2, actions, bots)
        engine.step_many(batch, rows, actions)
    return np.concatenate(wells), np.concatenate(pairs), np.concatenate(nexts)


def sample(wells: Wells, count: int, rng: np.random.Generator) -> Wells:
    rows = np.sort(rng.choice(len(wells[0]), size=min(count, len(wells[0])), replace=False))
    return wells[0][rows], wells[1][rows], wells[2][rows]


@pytest.fixture(scope="module")
def positions() -> dict[int, Wells]:
    """By width: wells of random and house-bot play, CHAIN_WELLS in all, the narrow ones few."""
    rng = np.random.default_rng(7)
    wide = [played_wells(6, 24, 0, house=False), played_wells(6, 16, 100, house=True)]
    narrow = [played_wells(3, 24, 200, house=False), played_wells(3, 12, 300, house=True)]
    share = {6: CHAIN_WELLS * 9 // 20, 3: CHAIN_WELLS // 20}  # per kind of play
    positions = {}
    for width, kinds in ((6, wide), (3, narrow)):
        samples = [sample(wells, share[width], rng) for wells in kinds]
        positions[width] = tuple(np.concatenate(parts) for parts in zip(*samples, strict=True))
    return positions


def assert_bit_equal(compiled: np.ndarray, reference: np.ndarray) -> None:
    assert compiled.dtype == reference.dtype == np.float64
    assert compiled.shape == reference.shape
    different = np.flatnonzero((compiled.view(np.int64) != reference.view(np.int64)).any(axis=1))
    assert not different.size, f"{different.size} wells differ, the first: row {different[:1]}"


def test_the_positions_hold_chains_skulls_and_full_wells(positions):
    wells = np.concatenate([positions[6][0].reshape(-1), positions[3][0].reshape(-1)])
    assert sum(len(w[0]) for w in positions.values()) == CHAIN_WELLS
    assert (wells == rules.SKULL).any()
    assert (positions[6][0] != engine.EMPTY).all(axis=1).any()  # a well with a full column


@pytest.mark.parametrize(
    ("settings", "every"), [({}, 1), ({"potential_weight": 1.3, "height_penalty": 7.5, "safe_height": 5}, 4)]
)
def test_the_compiled_chain_values_are_the_reference_bit_for_bit(positions, settings, every):
    """Every well with the house bot's settings, every `every`th with others."""
    for wells, pairs, _ in positions.values():
        wells, pairs = wells[::every], pairs[::every]
        reference = np.concatenate(  # in parts: its batch's arrays grow 30-fold per well
            [
                ChainPlayer(core="reference", **settings).values_many(
                    wells[start : start + 256], pairs[start : start + 256]
                )
                for start in range(0, len(wells), 256)
            ]
        )
        compiled = ChainPlayer(core="compiled", **settings).values_many(wells, pairs)
        assert_bit_equal(compiled, reference)
        assert np.isneginf(reference).any()
        assert np.isfinite(reference).any()
        ties = (reference == reference.max(axis=1, keepdims=True)).sum(axis=1) > 1
        assert ties.any()  # the lowest index of equal values is played on both cores


def test_the_compiled_lookahead_values_are_the_reference_bit_for_bit(positions):
    rng = np.random.default_rng(11)
    for width, keep in ((6, 8), (3, 4)):
        wells, pairs, nexts = sample(positions[width], LOOKAHEAD_WELLS // 2, rng)
        reference = LookaheadPlayer(core="reference", keep=keep).values_many(wells, pairs, nexts)
        compiled = LookaheadPlayer(core="compiled", keep=keep).values_many(wells, pairs, nexts)
        assert_bit_equal(compiled, reference)
        assert (np.isfinite(reference).sum(axis=1) <= keep).all()


def test_a_well_without_room_is_all_minus_infinity_on_both_cores():
    full = np.zeros((2, rules.HEIGHT, 6), dtype=np.int8)  # skulls to the top
    pairs = np.array([[1, 2], [3, 3]])
    for core in ("reference", "compiled"):
        assert np.isneginf(ChainPlayer(core=core).values_many(full, pairs)).all()
        assert np.isneginf(LookaheadPlayer(core=core).values_many(full, pairs, pairs)).all()


@pytest.mark.parametrize("player", [ChainPlayer, LookaheadPlayer])
def test_the_house_bots_play_the_same_moves_on_both_cores(player):
    states = [GAME.init(seed, None) for seed in range(2)]
    for _ in range(6):
        requests = [Request(state, seat, np.random.default_rng(0)) for state in states for seat in (0, 1)]
        moves = [player(core=core).decide(GAME, requests) for core in ("reference", "compiled")]
        assert moves[0] == moves[1]
        actions = [d.action for d in moves[1]]
        states = [GAME.step(state, actions[2 * i : 2 * i + 2]) for i, state in enumerate(states)]
