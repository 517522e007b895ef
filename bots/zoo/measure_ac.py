"""Publish the actor-critic Smash the Code checkpoints into the zoo, and measure its bar.

    .venv/bin/python bots/zoo/measure_ac.py publish --run runs/smash-ac [--final smash-ac-seg00300]
    .venv/bin/python bots/zoo/measure_ac.py measure [--pairs 100 --league-pairs 20]

`publish` takes the run's first checkpoint, the one halfway, and the last (or `--final`) as
bots/zoo/smash/ac-smash-early, -middle and -final: .onnx re-exported from the torch state with the
zoo name (player greedy over the policy; the sigmoid value head is kept, so `mcts` works too),
validated in full, each with a record (.json: checkpoint, training settings, hardware, latency),
and copies the run's curve.png. `measure` plays the bar from the committed .onnx files alone: the
final bot against the chain house bot in `pairs` seat-swapped pairs (each pair one seed, so both
seatings get the same piece sequence), the early and middle bots in `league_pairs`; results go
into the records and bots/zoo/smash/bars.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from measure import STAGES, ZOO, checkpoints_until, first_middle_last, load_checkpoint, write_record

GAME_NAME = "smash"
BAR = 0.9  # the final bot's share of wins against the chain bot


def bot_name(stage: str) -> str:
    return f"ac-{GAME_NAME}-{stage}"


def publish(run: Path, final: str | None) -> None:
    from arena_bots.export import export_bot
    from arena_bots.manifest import Manifest
    from arena_bots.training.actor_critic import ActorCriticSettings, build_network
    from arena_games.smash import GAME

    settings = json.loads((run / "config.json").read_text())["settings"]
    checkpoints = json.loads((run / "progress.json").read_text())["checkpoints"]
    chosen = first_middle_last(checkpoints_until(run, checkpoints, final))
    folder = ZOO / GAME_NAME
    folder.mkdir(exist_ok=True)
    for stage, checkpoint in zip(STAGES, chosen, strict=True):
        name = bot_name(stage)
        network = build_network(ActorCriticSettings.from_dict(settings))
        load_checkpoint(network, run, checkpoint)
        manifest = Manifest(
            game=GAME_NAME, game_version=GAME.spec.version, name=name, player="greedy", value="sigmoid"
        )
        model = export_bot(network, GAME, manifest, folder / f"{name}.onnx")
        training = {"kit": "arena_bots.training.actor_critic (V-trace)", "run": run.name, **settings}
        write_record(folder, name, model, GAME, checkpoint, training)
    shutil.copy(run / "curve.png", folder / "curve.png")


def measure(pairs: int, league_pairs: int, seed: int) -> None:
    from arena_bots.loading import house_player, network_player
    from arena_bots.manifest import Manifest
    from arena_bots.runtime import InProcessSession
    from arena_bots.training.evaluate import play_pairs, win_draw_loss
    from arena_games.smash import GAME

    folder = ZOO / GAME_NAME
    chain = house_player("chain", simulations=1)
    results, games = {}, []
    for stage in STAGES:
        name = bot_name(stage)
        model = (folder / f"{name}.onnx").read_bytes()
        manifest = Manifest.from_model(model)
        bot = network_player(manifest, InProcessSession(model, threads=1))
        played = play_pairs(GAME, bot, chain, pairs if stage == "final" else league_pairs, seed)
        games += [record.to_dict() for record in played]
        wins, draws, losses = win_draw_loss(played, name, chain.name)
        results[name] = {"player": manifest.player, "wins": wins, "draws": draws, "losses": losses}
        print(name, results[name], flush=True)
    final = results[bot_name("final")]
    share = final["wins"] / (final["wins"] + final["draws"] + final["losses"])
    bars = {
        "opponent": "chain (ChainPlayer, the greedy chain builder house bot)",
        "pairs": "seat-swapped: both games of a pair use one seed, so the same piece sequence",
        "seed": seed,
        "versus_chain": results,
        "final_win_share": round(share, 4),
        "bar_final_wins_90_percent_vs_chain": share >= BAR,
        "games": games,
    }
    (folder / "bars.json").write_text(json.dumps(bars, indent=1) + "\n")
    for stage in STAGES:
        path = folder / f"{bot_name(stage)}.json"
        record = json.loads(path.read_text())
        record["measured"] = {
            "versus_chain": results[bot_name(stage)],
            "bar": bars["bar_final_wins_90_percent_vs_chain"],
        }
        path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({key: value for key, value in bars.items() if key != "games"}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(prog="bots/zoo/measure_ac.py")
    commands = parser.add_subparsers(dest="command", required=True)
    publishing = commands.add_parser(
        "publish", help="copy a run's early/middle/final checkpoints into the zoo"
    )
    publishing.add_argument("--run", required=True, type=Path)
    publishing.add_argument("--final", help="the checkpoint to publish as final (default: the last)")
    measuring = commands.add_parser("measure", help="play the bar from the zoo's ONNX files")
    measuring.add_argument("--pairs", type=int, default=100, help="final vs chain (200 games by default)")
    measuring.add_argument("--league-pairs", type=int, default=20, help="early and middle vs chain")
    measuring.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    if args.command == "publish":
        publish(args.run, args.final)
    else:
        measure(args.pairs, args.league_pairs, args.seed)


if __name__ == "__main__":
    main()
