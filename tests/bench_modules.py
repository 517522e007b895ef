"""`load_bench`: a benchmark script of bench/ as a module, for tests that reuse its methods (the
simulated ladders of bench/ratings.py, the project's rating-accuracy method)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(script: str) -> ModuleType:
    """bench/<script>.py as the module `bench_<script>` (loaded once per process)."""
    name = f"bench_{script}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module
