"""Publish trained checkpoints into the zoo, and measure the zoo's bars from its ONNX files.

    .venv/bin/python bots/zoo/measure.py publish --game bobail --run runs/bobail-az
    .venv/bin/python bots/zoo/measure.py measure --game bobail [--simulations 100 --uct-pairs 100]

`publish` takes a run's first, middle and last checkpoints as bots/zoo/<game>/az-<game>-early,
-middle and -final (.onnx re-exported from the torch state with the zoo name and the measuring
simulation count in its manifest, validated in full), each with a record (.json: training
settings, games, positions, wall time, hardware), and copies the run's curve.png.
`measure` plays the bars (evaluate.measure_bars) from the committed .onnx files alone and writes
the results into the records and bots/zoo/<game>/bars.json. An entry point like the `arena`
CLI, so it may import arena_platform (for fit_ratings).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
from pathlib import Path
from typing import Any

ZOO = Path(__file__).resolve().parent
STAGES = ("early", "middle", "final")
SIMULATIONS = 100  # per move, both sides, for every bar


def bot_name(game: str, stage: str) -> str:
    return f"az-{game}-{stage}"


def hardware() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    return f"{model}; {os.cpu_count()} cores shared with other work; 1 thread per training process; no GPU"


def write_record(
    folder: Path, name: str, model: bytes, game: Any, checkpoint: dict[str, Any], training: dict[str, Any]
) -> None:
    """Validates the bot `model` in full (SystemExit if it fails) and writes its record <name>.json."""
    from arena_bots.validation import validate

    report = validate(model, game)
    if not report.ok:
        raise SystemExit(f"{name} fails validation: {report.code}: {report.message}")
    record = {
        "bot": name,
        "file": f"{name}.onnx",
        "bytes": len(model),
        "checkpoint": checkpoint,
        "training": training,
        "hardware": hardware(),
        "validation": {"ok": report.ok, "latency": [latency.to_dict() for latency in report.latency]},
    }
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")


def publish(game_name: str, run: Path, simulations: int) -> None:
    import torch

    from arena_bots.export import export_bot
    from arena_bots.manifest import Manifest
    from arena_bots.training.networks import build_network
    from arena_games.registry import get_game

    game = get_game(game_name)
    config = json.loads((run / "config.json").read_text())
    settings = config["settings"]
    checkpoints = json.loads((run / "progress.json").read_text())["checkpoints"]
    chosen = [checkpoints[0], checkpoints[len(checkpoints) // 2], checkpoints[-1]]
    folder = ZOO / game_name
    folder.mkdir(exist_ok=True)
    for stage, checkpoint in zip(STAGES, chosen, strict=True):
        name = bot_name(game_name, stage)
        network = build_network(game.spec, settings["blocks"], settings["filters"])
        network.load_state_dict(
            torch.load(run / "checkpoints" / f"{checkpoint['name']}.pt", weights_only=True)
        )
        manifest = Manifest(
            game=game_name,
            game_version=game.spec.version,
            name=name,
            player="mcts",
            simulations=simulations,
            c_puct=settings["selfplay"]["c_puct"],
        )
        model = export_bot(network, game, manifest, folder / f"{name}.onnx")
        training = {"kit": "arena_bots.training (AlphaZero self-play)", "run": run.name, **settings}
        write_record(folder, name, model, game, checkpoint, training)
    shutil.copy(run / "curve.png", folder / "curve.png")


def measure(game_name: str, simulations: int, uct_pairs: int, duel_pairs: int, league_pairs: int) -> None:
    from arena_bots.training.evaluate import measure_bars
    from arena_games.registry import get_game
    from arena_platform.ratings import fit_ratings

    game = get_game(game_name)
    folder = ZOO / game_name
    records = {
        stage: json.loads((folder / f"{bot_name(game_name, stage)}.json").read_text()) for stage in STAGES
    }
    bots = {bot_name(game_name, stage): (folder / records[stage]["file"]).read_bytes() for stage in STAGES}
    c_puct = records["final"]["training"]["selfplay"]["c_puct"]
    bars = measure_bars(
        game,
        bots,
        fit_ratings,
        simulations=simulations,
        uct_pairs=uct_pairs,
        duel_pairs=duel_pairs,
        league_pairs=league_pairs,
        c_puct=c_puct,
    )
    (folder / "bars.json").write_text(json.dumps(bars, indent=1) + "\n")
    for stage, record in records.items():
        name = bot_name(game_name, stage)
        wins, draws, losses = bars["versus_uct"][name]
        record["measured"] = {
            "versus": f"uct (UctPlayer, random rollouts) at {simulations} simulations per move, both sides",
            "games_vs_uct": wins + draws + losses,
            "wins": wins,
            "draws": draws,
            "losses": losses,
            "rating_elo_vs_uct": bars["ratings"][name],
            "bars": {
                key: bars[key]
                for key in ("final_vs_early", "bar_final_beats_uct_90", "bar_final_above_early")
            },
        }
        (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({key: value for key, value in bars.items() if key != "games"}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(prog="bots/zoo/measure.py")
    commands = parser.add_subparsers(dest="command", required=True)
    publishing = commands.add_parser(
        "publish", help="copy a run's early/middle/final checkpoints into the zoo"
    )
    publishing.add_argument("--game", required=True)
    publishing.add_argument("--run", required=True, type=Path)
    measuring = commands.add_parser("measure", help="play the bars from the zoo's ONNX files")
    measuring.add_argument("--game", required=True)
    measuring.add_argument("--uct-pairs", type=int, default=100, help="final vs uct (200 games by default)")
    measuring.add_argument("--duel-pairs", type=int, default=50, help="final vs early")
    measuring.add_argument("--league-pairs", type=int, default=10, help="every other pairing")
    for command in (publishing, measuring):
        command.add_argument("--simulations", type=int, default=SIMULATIONS)
    args = parser.parse_args()
    if args.command == "publish":
        publish(args.game, args.run, args.simulations)
    else:
        measure(args.game, args.simulations, args.uct_pairs, args.duel_pairs, args.league_pairs)


if __name__ == "__main__":
    main()
