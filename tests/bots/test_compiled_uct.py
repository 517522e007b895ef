"""The compiled UCT against the reference search (`mcts.search`, rule "uct", random rollouts): the
same visits, root value and generator draws from the same seeds, so the `uct` house bot plays the
same games on both cores (ARENA_CORE), on the games the compiled tree searches (Pente, Bobail, and
Spring 2021 and Smash as their sequential views)."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np
import pytest
from pente_positions import near_full_state

from arena_bots import compiled_uct
from arena_bots.core import PLAYOUT_KERNELS, on_core, selected_core
from arena_bots.evaluators import RolloutEvaluator, encode_batch
from arena_bots.match import MatchSetup, Request, play_many
from arena_bots.mcts import SearchConfig, choose_action, search
from arena_bots.players import UctPlayer
from arena_games.api import Game
from arena_games.bobail import GAME as BOBAIL
from arena_games.csb import GAME as CSB
from arena_games.pente import GAME as PENTE
from arena_games.smash import GAME as SMASH
from arena_games.smash import make_game as make_smash
from arena_games.spring2021 import GAME as SPRING2021
from arena_games.spring2021 import rules as spring_rules

SEQUENTIAL = [SMASH, SPRING2021]  # the simultaneous games a tree searches (CSB has four heads: none)


def random_state(seed: int, plies: int, game: Game = PENTE) -> Any:
    """The position after `plies` uniformly random moves from the start (the game may end sooner)."""
    rng = np.random.default_rng(seed)
    state = game.init(0, None)
    for _ in range(plies):
        if game.is_over(state):
            break
        state = game.step(state, [game.random_action(state, player, rng) for player in game.to_move(state)])
    return state


def late_state(seed: int, plies_left: int, game: Game = BOBAIL) -> Any:
    """A position `plies_left` random steps before a random game of `game` ended (deep searches
    reach its end)."""
    rng = np.random.default_rng(seed)
    states = [game.init(seed, None)]
    while not game.is_over(state := states[-1]):
        states.append(
            game.step(state, [game.random_action(state, player, rng) for player in game.to_move(state)])
        )
    return states[max(len(states) - 1 - plies_left, 0)]


def requests_for(game: Game, states: list[Any], seed: int) -> list[Request]:
    """One request per state and player to move (both seats of a simultaneous frame)."""
    return [
        Request(state, player, np.random.default_rng((seed, index, player)))
        for index, state in enumerate(states)
        for player in game.to_move(state)
    ]


def kernel_rows(monkeypatch: pytest.MonkeyPatch, game: Game) -> list[int]:
    """Spies on the kernels' playouts of `game`: the list gets each call's number of states."""
    family = next(name for name in PLAYOUT_KERNELS if game.name.startswith(name))
    kernels = importlib.import_module(PLAYOUT_KERNELS[family])
    rows: list[int] = []
    playouts = kernels.playouts

    def spy(states: list[Any], rngs: list[np.random.Generator]) -> np.ndarray:
        rows.append(len(states))
        return playouts(states, rngs)

    monkeypatch.setattr(kernels, "playouts", spy)
    return rows


def assert_same_searches(game: Game, states: list[Any], config: SearchConfig, seed: int = 0) -> None:
    reference, compiled = requests_for(game, states, seed), requests_for(game, states, seed)
    expected = search(game, RolloutEvaluator(), reference, config)
    assert compiled_uct.supports(game, config, 1, compiled)
    for got, want in zip(compiled_uct.search(game, compiled, config), expected, strict=True):
        assert got.actions.tolist() == want.actions.tolist()
        assert got.visits.tolist() == want.visits.tolist()
        assert got.priors.tolist() == want.priors.tolist()
        assert got.action_values.tolist() == want.action_values.tolist()
        assert got.ending_returns.tolist() == want.ending_returns.tolist()
        assert (got.value, got.simulations) == (want.value, want.simulations)
    for after, want in zip(compiled, reference, strict=True):
        assert after.rng.bit_generator.state == want.rng.bit_generator.state


def test_the_opening_and_middle_game_searches_equal_the_reference():
    """Root and leaves under the opening rules (centre only, tournament rule) and a later position."""
    states = [random_state(0, 0), random_state(1, 1), random_state(2, 2), random_state(3, 30)]
    assert_same_searches(PENTE, states, SearchConfig(simulations=50, rule="uct", exploration=2.0))


def test_searches_that_revisit_children_equal_the_reference():
    """Near-full boards: more simulations than moves, so UCB1's scores (not only the unvisited-first
    order) choose, deep paths reach finished games, and their outcomes are backed up again."""
    states = [near_full_state(seed, empties) for seed, empties in ((0, 6), (1, 9), (2, 14))]
    assert_same_searches(PENTE, states, SearchConfig(simulations=300, rule="uct", exploration=2.0), seed=4)
    assert_same_searches(
        PENTE, states[:1], SearchConfig(simulations=200, rule="uct", exploration=0.5), seed=5
    )


def test_a_win_found_at_the_root_is_reported_and_played():
    """One ply before a random game's end the mover can win at once; with a search of few
    simulations every move tried has one visit, yet the win, once tried, is the move."""
    state = late_state(0, 1, PENTE)
    config = SearchConfig(simulations=60, rule="uct", exploration=2.0)
    assert_same_searches(PENTE, [state], config, seed=7)
    found = 0
    for seed in range(6):
        (result,) = search(PENTE, RolloutEvaluator(), requests_for(PENTE, [state], seed), config)
        assert set(result.ending_returns.tolist()) <= {0.0, 1.0}
        if result.ending_returns.max() == 1.0:
            found += 1
            move = choose_action(result, 0.0, np.random.default_rng(0))
            assert result.ending_returns[result.actions.tolist().index(move)] == 1.0
    assert found  # some of the searches tried a winning move


def test_bobail_searches_equal_the_reference():
    """Bobail's movers go 0, 1, 1, 0 (a pawn move, then the bobail's); late positions end inside the
    tree, so finished leaves are backed up again."""
    states = [random_state(0, 0, BOBAIL), random_state(1, 1, BOBAIL), random_state(2, 9, BOBAIL)]
    states += [late_state(seed, plies_left) for seed, plies_left in ((3, 3), (4, 6))]
    assert_same_searches(BOBAIL, states, SearchConfig(simulations=120, rule="uct", exploration=2.0), seed=6)


SEQUENTIAL_STATES = {  # positions of each simultaneous game the compiled tree searches as its view
    "spring2021": [
        random_state(0, 0, SPRING2021),
        random_state(1, 5, SPRING2021),
        random_state(2, 40, SPRING2021),
    ]
    + [late_state(seed, plies_left, SPRING2021) for seed, plies_left in ((2, 2), (3, 5), (4, 12))],
    "smash": [random_state(0, 0, SMASH), random_state(1, 20, SMASH)]
    + [late_state(seed, plies_left, SMASH) for seed, plies_left in ((2, 2), (3, 4))],
}


@pytest.mark.parametrize("game", SEQUENTIAL, ids=lambda game: game.name)
def test_sequential_searches_equal_the_reference(game: Game):
    """Spring 2021 and Smash searched as their sequential views: the searcher's choice waits for the
    other's reply, a frame favours the searcher (Spring), a playout from a pending choice draws the
    reply first, a frame of one mover (the other waits: Spring) is one ply; both seats search. Late
    positions end inside the tree."""
    states = SEQUENTIAL_STATES[game.name]
    assert game is SMASH or any(len(game.to_move(state)) == 1 for state in states)
    assert_same_searches(game, states, SearchConfig(simulations=150, rule="uct", exploration=2.0), seed=8)
    assert_same_searches(game, states[3:], SearchConfig(simulations=150, rule="uct", exploration=0.5))


@pytest.mark.parametrize(
    "game", [PENTE, BOBAIL, CSB, SMASH, make_smash(4), SPRING2021], ids=lambda game: game.name
)
def test_random_playouts_run_on_the_kernels_draw_for_draw(game: Game, monkeypatch: pytest.MonkeyPatch):
    """`on_core(game, "compiled")` finishes games on the kernels with the reference's returns and
    generator draws; calls the kernels cannot reproduce (a shared or non-PCG64 generator) keep the
    reference's playouts; `on_core(game, "reference")` is the game itself."""
    states = [random_state(seed, 4 * seed, game) for seed in range(4)]
    rows = kernel_rows(monkeypatch, game)
    compiled = on_core(game, "compiled")
    assert on_core(game, "reference") is game
    for rngs in (
        [np.random.default_rng((5, index)) for index in range(4)],
        [np.random.Generator(np.random.MT19937(index)) for index in range(4)],
    ):
        want, got = [np.random.Generator(type(rng.bit_generator)()) for rng in rngs], rngs
        for before, rng in zip(want, got, strict=True):
            before.bit_generator.state = rng.bit_generator.state
        expected = game.random_playouts(states, want)
        assert compiled.random_playouts(states, got).tolist() == expected.tolist()
        assert [rng.random() for rng in got] == [rng.random() for rng in want]  # the same draws
    assert rows == [4]  # the PCG64 call only
    if game.name != PENTE.name:  # Pente's playouts refuse a shared generator
        shared = np.random.default_rng(9)
        expected = game.random_playouts(states, [np.random.default_rng(9)] * 4)
        assert compiled.random_playouts(states, [shared] * 4).tolist() == expected.tolist()
        assert rows == [4]


@pytest.mark.parametrize(
    ("game", "states"),
    [
        (PENTE, [random_state(seed, 12) for seed in range(3)] + [near_full_state(3, 8)]),
        (BOBAIL, [random_state(seed, 2 * seed, BOBAIL) for seed in range(3)] + [late_state(3, 4)]),
        *[(game, [random_state(seed, 3 * seed, game) for seed in range(3)]) for game in SEQUENTIAL],
        (make_smash(4), [random_state(seed, 3 * seed, make_smash(4)) for seed in range(3)]),
    ],
    ids=lambda value: value.name if isinstance(value, Game) else "",
)
def test_the_uct_bot_decides_alike_on_both_cores(
    game: Game, states: list[Any], monkeypatch: pytest.MonkeyPatch
):
    """The compiled tree (Pente, Bobail, Spring, Smash) or the reference tree over the kernels'
    playouts (Smash's wells of other widths, searched as their `sequential` view) make the
    reference's decisions and draws."""
    rows = kernel_rows(monkeypatch, game)
    decisions = []
    for core in ("reference", "compiled"):
        requests = requests_for(game, states, 7)
        decisions.append(UctPlayer(simulations=40, core=core).decide(game, requests))
        decisions.append([request.rng.bit_generator.state for request in requests])
    assert decisions[0] == decisions[2]
    assert decisions[1] == decisions[3]
    assert bool(rows) == (game.name not in compiled_uct.GAMES)  # the compiled tree plays out inside


@pytest.mark.parametrize(
    ("game", "config"),
    [
        (PENTE, {"ply_cap": 14}),
        (BOBAIL, {"max_turns": 8}),
        (SPRING2021, {"MAX_ROUNDS": 2}),
        (SMASH, {"TURN_LIMIT": 6}),
    ],
    ids=["pente", "bobail", "spring2021", "smash"],
)
def test_whole_games_replay_the_same_on_both_cores(game: Game, config: dict):
    """Two games in lockstep, uct against uct, short by their caps (so are the rollouts)."""
    results = []
    for core in ("reference", "compiled"):
        players = (UctPlayer(simulations=30, core=core), UctPlayer(simulations=20, core=core))
        setups = [MatchSetup(players=players, seed=seed, config=config) for seed in (1, 2)]
        results.append(play_many(game, setups))
    assert results[0] == results[1]
    assert all(result.end_reason for result in results[1])  # finished games (a cap or a win)


def test_positions_the_kernels_cannot_hold_stay_on_the_reference():
    """A Spring frame with a rejected command logs the referee's reason, which the arrays cannot
    hold: the uct bot's search and its playouts keep to the reference there, with its draws."""
    state = spring_rules.step_commands(SPRING2021.init(3, None), ["GROW 99", "WAIT"])
    with pytest.raises(ValueError, match="no command the arrays can hold"):
        compiled_uct.search(SPRING2021, requests_for(SPRING2021, [state], 0), SearchConfig(rule="uct"))
    assert (
        on_core(SPRING2021, "compiled").random_playouts([state], [np.random.default_rng(1)]).tolist()
        == SPRING2021.random_playouts([state], [np.random.default_rng(1)]).tolist()
    )
    decisions = []
    for core in ("reference", "compiled"):
        requests = requests_for(SPRING2021, [state], 2)
        decisions.append(UctPlayer(simulations=10, core=core).decide(SPRING2021, requests))
        decisions.append([request.rng.bit_generator.state for request in requests])
    assert decisions[:2] == decisions[2:]


@pytest.mark.parametrize("game", [PENTE, BOBAIL, SPRING2021], ids=lambda game: game.name)
def test_the_compiled_core_encodes_many_states_on_the_kernels(game: Game):
    """`on_core`'s `encode_many` (self-play's training inputs) equals the reference `encode` of each
    state for each player; a batch with a state the arrays cannot hold is encoded by the reference."""
    states = [random_state(seed, plies, game) for seed, plies in ((0, 0), (1, 9), (2, 30))]
    players = [player for _ in states for player in (0, 1)]
    states = [state for state in states for _ in (0, 1)]
    unheld = spring_rules.step_commands(SPRING2021.init(3, None), ["GROW 99", "WAIT"])
    batches = [(states, players)] + ([([*states, unheld], [*players, 1])] if game is SPRING2021 else [])
    for batch in batches:
        encoded = on_core(game, "compiled").encode_many(*batch)
        expected = encode_batch(game, *batch)
        assert encoded.keys() == expected.keys()
        for name in expected:
            np.testing.assert_array_equal(encoded[name], expected[name])
            assert encoded[name].dtype == np.float32
    assert on_core(game, "reference") is game


def test_a_number_beyond_the_kernels_int64_stays_on_the_reference():
    """A crafted position (say, in a predict request) may hold any Python int: a Bobail config of
    2**63 repetitions overflows the arrays, so the search and its playouts keep to the reference."""
    start = BOBAIL.init(0, None)
    state = dataclasses.replace(start, config=dataclasses.replace(start.config, repetitions=2**63))
    decisions = []
    for core in ("reference", "compiled"):
        requests = requests_for(BOBAIL, [state], 2)
        decisions.append(UctPlayer(simulations=10, core=core).decide(BOBAIL, requests))
        decisions.append([request.rng.bit_generator.state for request in requests])
    assert decisions[:2] == decisions[2:]


def test_the_compiled_search_checks_the_player_to_move():
    state = random_state(0, 5)
    with pytest.raises(ValueError, match="player"):
        compiled_uct.search(
            PENTE, [Request(state, 1 - state.ply % 2, np.random.default_rng(0))], SearchConfig(rule="uct")
        )


def test_searches_the_compiled_core_cannot_reproduce_go_to_the_reference():
    requests = requests_for(PENTE, [random_state(0, 5)], 0)
    uct = SearchConfig(rule="uct")
    assert compiled_uct.supports(PENTE, uct, 1, requests)
    assert not compiled_uct.supports(CSB, uct, 1, requests)  # simultaneous: searched in Python
    assert not compiled_uct.supports(PENTE, SearchConfig(rule="puct"), 1, requests)
    assert not compiled_uct.supports(PENTE, SearchConfig(rule="uct", leaves_per_round=2), 1, requests)
    assert not compiled_uct.supports(PENTE, uct, 2, requests)  # several playouts per leaf
    assert not compiled_uct.supports(PENTE, uct, 1, requests * 2)  # one generator for two searches
    mt19937 = [Request(requests[0].state, requests[0].player, np.random.Generator(np.random.MT19937(0)))]
    assert not compiled_uct.supports(PENTE, uct, 1, mt19937)


def test_arena_core_selects_the_core(monkeypatch):
    monkeypatch.delenv("ARENA_CORE", raising=False)
    assert selected_core() == "compiled"
    monkeypatch.setenv("ARENA_CORE", "reference")
    assert selected_core() == "reference"
    assert UctPlayer().core == "reference"
    assert UctPlayer(core="compiled").core == "compiled"
    monkeypatch.setenv("ARENA_CORE", "fast")
    with pytest.raises(ValueError, match=r"\(ARENA_CORE\) must be one of reference, compiled, got .fast."):
        UctPlayer()
