"""Random playouts of Spring 2021 without the contract's per-step overhead.

Each state is finished by uniformly random legal frames: every player to move picks one of its
legal action indices (`rules.action_commands`) with equal probability, and `rules.resolve_frame`, the
same frame resolution `step` uses, plays them. What this saves over `Game.random_playouts`' generic
loop is the masks, their checks in `step` and one NumPy call per draw: uniform numbers come from
`rngs[i]` in blocks of DRAW_BLOCK, so the result of states[i] depends on rngs[i] alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena_games.spring2021.rules import SpringState, action_commands, resolve_frame, returns, to_move

DRAW_BLOCK = 128  # uniform numbers drawn from a state's generator at a time


def playouts(states: Sequence[SpringState], rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """Returns of each state finished by uniformly random legal play, float (len(states), 2)."""
    results = np.zeros((len(states), 2), dtype=np.float64)
    for index, (state, rng) in enumerate(zip(states, rngs, strict=True)):
        draws: list[float] = []
        while players := to_move(state):
            commands = {}
            for player in players:
                legal = list(action_commands(state, player).values())
                if not draws:
                    draws = rng.random(DRAW_BLOCK).tolist()
                commands[player] = legal[min(int(draws.pop() * len(legal)), len(legal) - 1)]
            state = resolve_frame(state, commands)
        results[index] = returns(state)
    return results
