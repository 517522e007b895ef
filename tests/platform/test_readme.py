"""The README's statements of the bot contract that code can check."""

from __future__ import annotations

from pathlib import Path

from arena_bots.manifest import HEAD_KINDS, head_output_name
from arena_games.registry import GAMES

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_names_every_output_tensor_of_a_multi_head_game():
    text = README.read_text(encoding="utf-8")
    names = [
        head_output_name(game.spec, head, kind)
        for game in GAMES.values()
        if len(game.spec.heads) > 1
        for kind in HEAD_KINDS
        for head in game.spec.heads
    ]
    assert "`q_angle0`" in [f"`{name}`" for name in names]
    assert [name for name in names if f"`{name}`" not in text] == []
