"""Checkpoint tournaments: bots against each other and the house bots, ratings and the curve.

Games are played in seat-swapped pairs from the game's seeded openings (ARCHITECTURE §4) with
`play_many`, so each player's searches of all games run batched. Ratings come from an injected
fit (`arena_bots` must not import `arena_platform`): the CLI passes
`arena_platform.ratings.fit_ratings`, which reads the results' `game_id`, `first`, `second`,
`score` (the first bot's: 1 win, 0.5 draw, 0 loss) and returns a table whose rows carry `bot`,
`rating` and `half_width` (Elo, 95%), anchored on the house bots named.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from arena_bots import loading
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.match import MatchSetup, Player, play_many
from arena_bots.players import MctsPlayer
from arena_bots.runtime import InProcessSession
from arena_games.api import Game

UCT, RANDOM = "uct", "random"  # the house bots' names in ratings
HOUSE_BOTS = (UCT, RANDOM)


@dataclass(frozen=True)
class GameRecord:
    """One finished game, in the shape the rating fit reads."""

    game_id: str
    first: str
    second: str
    score: float  # first's: 1 win, 0.5 draw, 0 loss

    def to_dict(self) -> dict[str, Any]:
        return {"game_id": self.game_id, "first": self.first, "second": self.second, "score": self.score}


class _Row(Protocol):
    bot: str
    rating: float | None
    half_width: float


class _Table(Protocol):
    rows: Sequence[_Row]


RatingFit = Callable[[Iterable[GameRecord], Collection[str]], _Table]  # (results, anchors) -> table
Ratings = dict[str, tuple[float, float]]  # bot -> (rating, 95% half-width), Elo


def network_player(name: str, model: bytes, game: Game, simulations: int, c_puct: float) -> MctsPlayer:
    """The AlphaZero player of an ONNX bot at temperature 0, its model run in this process."""
    evaluator = NetworkEvaluator(InProcessSession(model, threads=1), game)
    return MctsPlayer(evaluator, simulations=simulations, c_puct=c_puct, name=name)


def house_player(name: str, simulations: int, game: str | None = None) -> Player:
    """A house bot by its kind, which is its rating name (`arena_bots.loading.HOUSE_KINDS`): UCT with
    random rollouts at `simulations`, uniform random, or a game's heuristic bot. Given `game`, a bot
    that cannot play it is a ValueError."""
    return loading.house_player(name, simulations=simulations, game=game)


def play_pairs(
    game: Game, first: Player, second: Player, pairs: int, seed: int, config: Mapping[str, Any] | None = None
) -> list[GameRecord]:
    """2 * `pairs` games: pair i plays opening i twice, seats swapped; scores are `first`'s."""
    setups = []
    for index in range(pairs):
        game_seed = int(np.random.default_rng((seed, index)).integers(2**31))
        opening = game.opening(game_seed, config)
        for players in ((first, second), (second, first)):
            setups.append(MatchSetup(players=players, seed=game_seed, config=config, opening=opening))
    records = []
    for number, (setup, result) in enumerate(zip(setups, play_many(game, setups), strict=True)):
        seat = setup.players.index(first)
        score = (result.returns[seat] + 1.0) / 2.0  # returns are +1, 0, -1 (forfeits too)
        game_id = f"{first.name}|{second.name}|{seed}|{number}"
        records.append(GameRecord(game_id, first.name, second.name, score))
    return records


def fit(records: Iterable[GameRecord], fit_ratings: RatingFit, anchors: Collection[str] = (UCT,)) -> Ratings:
    """Ratings of every bot that played, anchored on `anchors` (those that played)."""
    records = list(records)
    played = {r.first for r in records} | {r.second for r in records}
    table = fit_ratings(records, [name for name in anchors if name in played])
    return {row.bot: (row.rating, row.half_width) for row in table.rows if row.rating is not None}


def plot_curve(ratings: Ratings, steps: Mapping[str, int], path: str, title: str) -> None:
    """PNG of each checkpoint's rating (95% interval as error bars) against its training step,
    with the house bots as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    names = sorted((name for name in steps if name in ratings), key=lambda name: steps[name])
    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    if names:
        axes.errorbar(
            [steps[n] for n in names],
            [ratings[n][0] for n in names],
            yerr=[ratings[n][1] for n in names],
            marker="o",
            capsize=3,
            label="checkpoints",
        )
    for house, style in zip(HOUSE_BOTS, ("--", ":"), strict=True):
        if house in ratings:
            axes.axhline(ratings[house][0], linestyle=style, color="grey", label=house)
    axes.set_xlabel("training step (minibatches)")
    axes.set_ylabel("Elo (anchor: uct = 0), 95% interval")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def measure_bars(
    game: Game,
    bots: Mapping[str, bytes],
    fit_ratings: RatingFit,
    *,
    simulations: int,
    uct_pairs: int,
    duel_pairs: int,
    league_pairs: int,
    c_puct: float,
    seed: int = 2024,
    house: str = "",
    house_pairs: int = 0,
) -> dict[str, Any]:
    """The zoo's bars for `bots` (name -> ONNX bytes, ordered early ... final).

    Seat-swapped pairs, all at `simulations` per move for both sides: the final bot against UCT
    (`uct_pairs`) and against the first bot (`duel_pairs`); every other pairing of the bots and
    UCT in `league_pairs`. Given `house` (a house bot of the game, e.g. Pente's `threats`), it
    joins the league too and the final bot plays it `house_pairs` pairs. Returns each bot's
    results against UCT (wins, draws, losses) and against `house`, the ratings of all (anchor:
    uct = 0 Elo), and whether the two bars hold: the final bot wins at least 90% of its games
    against UCT, and its rating interval lies above the first bot's.
    """
    names = list(bots)
    final, early = names[-1], names[0]
    players = {name: network_player(name, model, game, simulations, c_puct) for name, model in bots.items()}
    players[UCT] = house_player(UCT, simulations)
    opponents = [UCT]
    if house:
        players[house] = house_player(house, simulations, game=game.name)
        opponents.append(house)
    special = {(final, UCT): uct_pairs, (early, final): duel_pairs, (final, house): house_pairs}
    records: list[GameRecord] = []
    for index, name in enumerate(names):
        for other in [*names[index + 1 :], *opponents]:
            pairs = special.get((name, other), league_pairs)
            records += play_pairs(game, players[name], players[other], pairs, seed + len(records))
    if house:
        records += play_pairs(game, players[house], players[UCT], league_pairs, seed + len(records))
    ratings = fit(records, fit_ratings)
    versus_uct = {name: win_draw_loss(records, name, UCT) for name in names}
    wins, draws, losses = versus_uct[final]
    versus_house = (
        {f"versus_{house}": {name: win_draw_loss(records, name, house) for name in names}} if house else {}
    )
    return {
        "simulations": simulations,
        "versus_uct": versus_uct,
        **versus_house,
        "final_vs_early": win_draw_loss(records, final, early),
        "ratings": ratings,
        "final_wins_vs_uct": wins / (wins + draws + losses),
        "bar_final_beats_uct_90": wins >= 0.9 * (wins + draws + losses),
        "bar_final_above_early": ratings[final][0] - ratings[final][1]
        > ratings[early][0] + ratings[early][1],
        "games": [r.to_dict() for r in records],
    }


def win_draw_loss(records: Iterable[GameRecord], bot: str, opponent: str) -> tuple[int, int, int]:
    """`bot`'s wins, draws and losses against `opponent`."""
    counts = [0, 0, 0]
    for r in records:
        if {r.first, r.second} == {bot, opponent}:
            score = r.score if r.first == bot else 1.0 - r.score
            counts[0 if score == 1.0 else 1 if score == 0.5 else 2] += 1
    return counts[0], counts[1], counts[2]
