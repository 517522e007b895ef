"""`run_quick`: a benchmark run as `make bench` runs it (a subprocess) in its quick mode, for the tests
in this folder (one file per kind of bench, so that the suite's processes share them out).

Every benchmark runs in its quick mode and prints its ratios, so `make bench` cannot rot: a test
checks that the script exits 0 and prints its ratio lines, never the figures themselves (speed is
read from the bench's output, not asserted in tests). OpenSpiel, the Pente engine's peer, is in the
bench extra only: without it the engines bench prints why its peer cells are empty, and the test
checks that instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
TIMEOUT_S = 240  # a quick run takes seconds; the limit only stops a hung one


def run_quick(script: str, env: dict[str, str] | None = None) -> str:
    """The output of `bench/<script> --quick`; fails with the output if the script fails."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "ORT_DISABLE_TELEMETRY": "1", **(env or {})},
    )
    assert done.returncode == 0, f"bench/{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout
