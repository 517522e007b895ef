"""The repository's layout rules (ARCHITECTURE §1)."""

from __future__ import annotations

import ast
import platform
import sys
import sysconfig
from pathlib import Path

import arena_games

ROOT = Path(__file__).resolve().parents[1]


def test_platform_is_the_standard_library_module():
    """The folder `platform/` must never become a package that shadows the standard library."""
    assert Path(platform.__file__).parent == Path(sysconfig.get_paths()["stdlib"])
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_game_library_imports_only_the_standard_library_numpy_and_numba():
    allowed = {"arena_games", "numpy", "numba", *sys.stdlib_module_names}  # numba: the compiled kernels
    for path in Path(arena_games.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            outside = [name for name in names if name.split(".")[0] not in allowed]
            assert not outside, f"{path.name} imports {outside}"
