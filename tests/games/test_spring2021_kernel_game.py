"""Spring 2021's kernel game (the match loop's engine on the compiled core) against the reference
game, function by function, on positions of whole games: the same masks, frames (favoured ones
too), returns, end reasons, inputs, playouts, the gardener's moves and errors."""

from __future__ import annotations

import numpy as np
import pytest

from arena_games.api import GameError, IllegalAction
from arena_games.spring2021 import GAME, kernel_game, rules
from arena_games.spring2021.gardener import gardener_action
from arena_games.spring2021.kernel_game import GAME as KERNEL_GAME

GAMES = 6  # games from their starts, played to the end: about 1,000 positions


@pytest.fixture(scope="module")
def games() -> list[list[tuple[rules.SpringState, kernel_game.Forest]]]:
    """Per game, every position (reference state, kernel position) from its start, both played on
    their own engine: uniformly random actions, in every other game the gardener's for seat 0 (its
    trees grow and complete), short games (8 days) in every third."""
    played = []
    for seed in range(GAMES):
        rng = np.random.default_rng(seed)
        config = {"MAX_ROUNDS": 8} if seed % 3 == 2 else None
        state, position = GAME.init(seed, config), KERNEL_GAME.init(seed, config)
        positions = [(state, position)]
        while players := GAME.to_move(state):
            joint = [GAME.random_action(state, player, rng) for player in players]
            if seed % 2 and players[0] == 0:
                joint[0] = (gardener_action(state, 0),)
            state, position = GAME.step(state, joint), KERNEL_GAME.step(position, joint)
            positions.append((state, position))
        played.append(positions)
    return played


def test_every_position_of_a_game_equals_the_reference(games):
    for positions in games:
        for state, position in positions:
            engines = ((KERNEL_GAME, position), (GAME, state))
            assert kernel_game.to_reference(position) == state
            assert KERNEL_GAME.to_move(position) == GAME.to_move(state)
            assert KERNEL_GAME.returns(position) == GAME.returns(state)
            assert KERNEL_GAME.end_reason(position) == GAME.end_reason(state)
            for player in (0, 1):
                (got,), (expected,) = (engine.legal_masks(at, player) for engine, at in engines)
                assert np.array_equal(got, expected)
                if GAME.to_move(state):
                    assert kernel_game.gardener_action(position, player) == gardener_action(state, player)
        assert GAME.is_over(positions[-1][0])  # every game ran to its end


def test_a_favoured_frame_equals_the_reference(games):
    rng = np.random.default_rng(1)
    for state, position in games[0][1::9]:
        if players := GAME.to_move(state):
            joint = [GAME.random_action(state, player, rng) for player in players]
            for favoured in (0, 1):
                got = KERNEL_GAME.step_favouring(position, joint, favoured)
                assert kernel_game.to_reference(got) == GAME.step_favouring(state, joint, favoured)


def test_inputs_and_playouts_equal_the_reference(games):
    pairs = [pair for played in games for pair in played[::11] if GAME.to_move(pair[0])]
    states, positions = [state for state, _ in pairs], [position for _, position in pairs]
    players = [GAME.to_move(state)[0] for state in states]
    got = KERNEL_GAME.encode_many(positions, players)["obs"]
    expected = np.stack([GAME.encode(at, seat)["obs"] for at, seat in zip(states, players, strict=True)])
    assert np.array_equal(got.view(np.int32), expected.view(np.int32))
    assert np.array_equal(KERNEL_GAME.encode(positions[1], 1)["obs"], GAME.encode(states[1], 1)["obs"])
    distinct = [[np.random.default_rng(i) for i in range(len(states))] for _ in range(2)]
    shared = [[np.random.default_rng(7)] * len(states) for _ in range(2)]
    other = [[np.random.Generator(np.random.MT19937(i)) for i in range(len(states))] for _ in range(2)]
    for kernel_rngs, reference_rngs in (distinct, shared, other):  # kernels, kernels, reference states
        assert np.array_equal(
            KERNEL_GAME.random_playouts(positions, kernel_rngs), GAME.random_playouts(states, reference_rngs)
        )
        assert [rng.random() for rng in kernel_rngs] == [rng.random() for rng in reference_rngs]


def test_a_bad_joint_action_is_refused_as_the_reference_refuses_it(games):
    state, position = games[0][3]
    waiting = next(state for state, _ in games[0] if len(GAME.to_move(state)) == 1)
    illegal = next(action for action in range(rules.NUM_ACTIONS) if not GAME.legal_masks(state, 1)[0][action])
    bad = {
        "malformed": (state, [(1, 2), (37,)]),
        "one player short": (state, [(37,)]),
        "a bool": (state, [(True,), (37,)]),
        "not legal": (state, [(37,), (illegal,)]),
        "out of range": (state, [(37,), (38,)]),
        "a waiting player's": (waiting, [(37,), (37,)]),
        "over": (games[0][-1][0], [(37,), (37,)]),
    }
    for name, (reference, joint) in bad.items():
        with pytest.raises(IllegalAction) as expected:
            GAME.step(reference, joint)
        with pytest.raises(IllegalAction) as got:
            KERNEL_GAME.step(kernel_game.from_reference(reference), joint)
        assert str(got.value) == str(expected.value), name
    with pytest.raises(GameError, match="one player"):
        KERNEL_GAME.encode_many([position], [2])
    with pytest.raises(GameError, match="0 or 1"):
        KERNEL_GAME.legal_masks(position, 2)


def test_what_is_shown_or_stored_is_the_references(games):
    state, position = games[1][60]
    assert KERNEL_GAME.to_dict(position) == GAME.to_dict(state)
    assert kernel_game.to_reference(KERNEL_GAME.from_dict(GAME.to_dict(state))) == state
    assert KERNEL_GAME.render(position) == GAME.render(state)
    assert KERNEL_GAME.view(position) == GAME.view(state)
    assert KERNEL_GAME.opening(3, None) == GAME.opening(3, None)


def test_a_step_leaves_the_position_it_started_from_unchanged(games):
    state, position = games[2][5]
    board, info = position.board.copy(), position.info.copy()
    KERNEL_GAME.step(position, [(rules.WAIT_ACTION,)] * len(GAME.to_move(state)))
    assert np.array_equal(position.board, board)
    assert np.array_equal(position.info, info)
