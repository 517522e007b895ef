"""Every registered game passes the one conformance check; the registry refuses unknown names."""

from __future__ import annotations

import pytest

from arena_games.conformance import check_game
from arena_games.registry import GAMES, UnknownGame, get_game


@pytest.mark.parametrize("name", sorted(GAMES))
def test_game_passes_the_conformance_check(name):
    steps = check_game(get_game(name), seeds=range(24))
    assert steps > 24


def test_unknown_game_names_the_known_ones():
    with pytest.raises(UnknownGame, match="known games: bobail, csb, pente, smash, spring2021"):
        get_game("chess")
