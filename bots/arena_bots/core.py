"""Which core runs the games and searches that have compiled kernels (ARCHITECTURE "Compiled core").

`ARENA_CORE=reference|compiled` (default compiled), read here and nowhere else: "reference" runs
the readable Python rules and the NumPy tree, "compiled" the Numba kernels where a game has them
(the same games from the same seeds: the differential tests hold them to it). `arena_games` never
reads the environment; the players ask `selected_core()` when they are built.
"""

from __future__ import annotations

import os

CORES = ("reference", "compiled")
DEFAULT_CORE = "compiled"
CORE_VARIABLE = "ARENA_CORE"


def selected_core(choice: str | None = None) -> str:
    """`choice`, else the core ARENA_CORE names, else DEFAULT_CORE; ValueError naming the cores if
    it is none of them."""
    core = choice or os.environ.get(CORE_VARIABLE, DEFAULT_CORE)
    if core not in CORES:
        raise ValueError(f"the core ({CORE_VARIABLE}) must be one of {', '.join(CORES)}, got {core!r}")
    return core
