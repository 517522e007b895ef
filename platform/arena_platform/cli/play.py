"""`arena play`: games between house bots and ONNX files on this machine, as the ladder plays them.

A bot file is validated exactly as an upload is (the same checks, at the same budget) and plays
from the sanitized model as on a worker (`ServedModel`: its own model host, a crash retried once
on a fresh one, a fault of the platform stopping the games). One game (the default) is
printed move by move; `--games N` plays the server's seat-swapped pairs from the game's seeded
openings (`paired_setups`, N games from `--seed` as a pairing of that seed would), batched like a
worker's pairings, and prints W/D/L with the Elo difference of the ladder's Bradley-Terry fit.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from arena_bots.loading import HOUSE_KINDS, house_player, network_player
from arena_bots.manifest import PLAYER_KINDS
from arena_bots.match import MatchResult, MatchSetup, PlatformFault, Player, play_many
from arena_bots.pairs import first_seat_score, paired_setups
from arena_games.api import Game
from arena_games.registry import GAMES, get_game
from arena_platform.blobs import BlobStore
from arena_platform.cli.common import UsageError, add_manifest_options, manifest_overrides
from arena_platform.ratings import GameResult, fit_ratings
from arena_platform.store.pairings import PAIRINGS_PER_TASK
from arena_workers.model_cache import ModelCache, ServedModel

PAIRS_PER_BATCH = PAIRINGS_PER_TASK  # pairs played in one play_many, as one worker task plays them


def add_commands(commands: argparse._SubParsersAction) -> None:
    play = commands.add_parser(
        "play",
        help="play seeded games between house bots and ONNX files, as the ladder would",
        description="Plays games between two bots: house bots (listed under --players) or ONNX files, "
        "each validated as an upload is. One game is printed position by position; --games N plays "
        "seat-swapped pairs from the game's seeded openings, as the server plays a pairing of seed "
        "--seed, and prints W/D/L and the Elo difference of the first bot over the second with its 95%% "
        "interval. The manifest options apply to every ONNX file, as `arena bot check` takes them; "
        "a file given as FILE:NAME:PLAYER (e.g. a.onnx:mine:mcts, or a.onnx:mine) carries its own name "
        "and player, over the file's metadata and --name/--player.",
    )
    play.add_argument("--game", required=True, help=f"one of: {', '.join(sorted(GAMES))}")
    play.add_argument(
        "--players",
        nargs=2,
        default=["uct", "random"],
        metavar="BOT",
        help=f"a house bot ({', '.join(HOUSE_KINDS)}) or an ONNX file, as FILE or FILE:NAME[:PLAYER]",
    )
    play.add_argument("--seed", type=int, default=1, help="the pairing seed (default 1)")
    play.add_argument("--games", type=int, default=1, help="games to play (default 1)")
    play.add_argument(
        "--simulations",
        type=int,
        help="MCTS simulations per move (default: the ladder's, ARENA_LADDER_SIMULATIONS)",
    )
    play.add_argument(
        "--out", type=Path, metavar="DIR", help="write each game's replay as DIR/game-NNNN.json"
    )
    play.add_argument("--opening", action="store_true", help="one game: start from the game's seeded opening")
    play.add_argument("--every-position", action="store_true", help="one game: print every position")
    add_manifest_options(play, leave_out=("simulations",))  # --simulations is the ladder's budget
    play.set_defaults(run=run_play)


def run_play(args: argparse.Namespace) -> int:
    if args.games < 1:
        raise UsageError(f"--games must be at least 1, got {args.games}")
    if args.games > 1 and (args.opening or args.every_position):
        raise UsageError("--opening and --every-position are for one game; --games N plays from the openings")
    simulations = _budget(args.simulations)
    game = get_game(args.game)
    with contextlib.ExitStack() as resources:
        models = _model_cache(resources)
        players = [_player(spec, game, args, simulations, models) for spec in args.players]
        try:
            if args.games == 1:
                results = _play_one(game, players, args)
            else:
                results = _play_pairs(game, players, seed=args.seed, games=args.games)
        except PlatformFault as fault:  # Arena's own failure (a model host that died), not a bot's
            raise UsageError(f"the games stopped: {fault}") from None
    if args.out is not None:
        _write_replays(args.out, results)
    return 0


def _budget(simulations: int | None) -> int:
    """The simulations per move: the given ones, else the ladder's (as uploads are judged and play)."""
    from arena_platform.settings import SettingsError, load_settings

    if simulations is not None:
        if simulations < 1:
            raise UsageError(f"--simulations must be at least 1, got {simulations}")
        return simulations
    try:
        return load_settings().ladder_simulations
    except SettingsError as error:
        raise UsageError(str(error)) from None


def _model_cache(resources: contextlib.ExitStack) -> ModelCache:
    """Model hosts as a worker keeps them (a crash retried on a fresh host, a fault of the platform
    stopping the games rather than losing them), over a blob folder that lives as long as the play."""
    folder = resources.enter_context(tempfile.TemporaryDirectory(prefix="arena-play-"))
    models = ModelCache(BlobStore(folder))
    resources.callback(models.close)
    return models


def _player(spec: str, game: Game, args: argparse.Namespace, simulations: int, models: ModelCache) -> Player:
    """The house bot named `spec`, or the ONNX file of `spec` (FILE[:NAME[:PLAYER]]) validated as an
    upload and served as a worker serves it. A rejected file prints its report and raises UsageError."""
    if spec in HOUSE_KINDS:
        try:
            return house_player(spec, simulations=simulations, game=game.name)
        except ValueError as error:
            raise UsageError(str(error)) from None
    path, own = _bot_file(spec)
    from arena_bots.validation import validate_file  # onnx is heavy: only bot files need it

    try:  # checks the size before reading
        report = validate_file(path, game, manifest_overrides(args) | own, simulations=simulations)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    if report.code == "manifest_missing_field":  # a plain export: this command's way to name it
        lacks = report.message.partition(":")[0]  # "the manifest lacks arena.name, arena.player"
        raise UsageError(
            f"{path}: {lacks}; give them after the file, as {path}:NAME:PLAYER with PLAYER one of "
            f"{', '.join(PLAYER_KINDS)} (e.g. {path}:mine:mcts), or as --name and --player for every file"
        )
    if not report.ok:
        print(report.format_text())
        raise UsageError(f"{path} was rejected as an upload would be [{report.code}]: {report.message}")
    sha256 = models.blobs.put(report.model_bytes)  # the sanitized model, as the server stores and runs it
    return network_player(report.manifest, ServedModel(models, sha256), simulations=simulations)


def _bot_file(spec: str) -> tuple[Path, dict[str, str]]:
    """The file of a FILE[:NAME[:PLAYER]] spec and the manifest fields it names (name, player; an
    empty one is not given). A spec that is itself a file's path is that file, colons and all."""
    if Path(spec).is_file():
        return Path(spec), {}
    path, *fields = spec.split(":")
    if not Path(path).is_file() or len(fields) > 2:
        raise UsageError(
            f"{spec!r} is neither a house bot ({', '.join(HOUSE_KINDS)}) nor an ONNX file "
            "(FILE or FILE:NAME[:PLAYER])"
        )
    named = zip(("name", "player"), fields, strict=False)
    return Path(path), {field: value for field, value in named if value}


def _play_one(game: Game, players: Sequence[Player], args: argparse.Namespace) -> list[MatchResult]:
    """One game from `--seed` (from its opening with --opening), printed as the game renders it."""
    opening = game.opening(args.seed, None) if args.opening else ()
    setup = MatchSetup(players=tuple(players), seed=args.seed, opening=opening)
    (result,) = play_many(game, [setup])
    state = game.init(args.seed, None)
    for number, step in enumerate(result.replay.steps, start=1):
        state = game.step(state, step.actions)
        if args.every_position:
            print(f"step {number}: {[list(action) for action in step.actions]}\n{game.render(state)}\n")
    if not args.every_position:
        print(game.render(state))
    names = " vs ".join(f"{name} (player {seat + 1})" for seat, name in enumerate(result.replay.players))
    print(f"\n{game.spec.title}, seed {args.seed}: {names}")
    print(f"{len(result.replay.steps)} steps; {result.end_reason}; returns {list(result.returns)}")
    return [result]


def _play_pairs(game: Game, players: Sequence[Player], *, seed: int, games: int) -> list[MatchResult]:
    """`games` games of the pairing of seed `seed` between `players` (the first has the first seat in
    game 0), PAIRS_PER_BATCH pairs per play_many; a progress bar counts finished pairs. Prints the
    first bot's W/D/L and Elo difference."""
    pair = (0, 1)
    results: list[MatchResult] = []
    batch_games = 2 * PAIRS_PER_BATCH
    with tqdm(total=(games + 1) // 2, unit="pair", desc="playing") as progress:
        for start in range(0, games, batch_games):
            # a batch starts at an even game, so its game k is the pairing's game start + k
            setups = paired_setups(
                game,
                pair,
                dict(enumerate(players)),
                seed=seed + start // 2,
                count=min(batch_games, games - start),
                meta=lambda index, seats, start=start: {"index": start + index, "seats": list(seats)},
            )
            batch = play_many(game, setups)
            results += batch
            progress.update((len(batch) + 1) // 2)
    print(_summary(players, results))
    return results


def _summary(players: Sequence[Player], results: Sequence[MatchResult]) -> str:
    """W/D/L of the first bot against the second, and its Elo difference with a 95% interval from the
    ladder's Bradley-Terry fit of these games (anchored on the second bot, with the same prior; the
    interval measured against the second bot, so it is the difference's)."""
    names = _distinct_names(players)
    games = [
        GameResult(
            game_id=str(number),
            first=names[result.replay.meta["seats"][0]],
            second=names[result.replay.meta["seats"][1]],
            score=first_seat_score(result.returns),
        )
        for number, result in enumerate(results)
    ]
    row = fit_ratings(games, anchors=[names[1]], reference=[names[1]])[names[0]]
    return (
        f"{names[0]} vs {names[1]}: {len(games)} games, "
        f"W/D/L {row.wins}/{row.draws}/{row.losses} for {names[0]}\n"
        f"Elo difference {names[0]} - {names[1]}: {row.rating:+.1f} ± {row.half_width:.1f} (95% interval)"
    )


def _distinct_names(players: Sequence[Player]) -> list[str]:
    """The players' names, told apart by seat when they are the same ("uct (1)", "uct (2)")."""
    names = [player.name for player in players]
    if names[0] != names[1]:
        return names
    return [f"{name} ({number})" for number, name in enumerate(names, start=1)]


def _write_replays(folder: Path, results: Sequence[MatchResult]) -> None:
    """Each game's replay (`Replay.to_json`, as the server stores it) as folder/game-0001.json, ..."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        width = max(4, len(str(len(results))))
        for number, result in enumerate(results, start=1):
            (folder / f"game-{number:0{width}d}.json").write_text(result.replay.to_json(), encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write the replays to {folder}: {error.strerror}") from None
    print(f"{len(results)} replays written to {folder}")
