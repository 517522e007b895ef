"""Publish trained checkpoints into the zoo, and measure the zoo's bars from its ONNX files.

    .venv/bin/python bots/zoo/measure.py publish --game bobail --run runs/bobail-az
        [--stages final] [--final CHECKPOINT]
    .venv/bin/python bots/zoo/measure.py measure --game bobail [--simulations 100 --uct-pairs 100]
    .venv/bin/python bots/zoo/measure.py measure --game pente --house threats [--house-pairs 100]

`publish` takes a run's first, middle and last checkpoints as bots/zoo/<game>/az-<game>-early,
-middle and -final (.onnx re-exported from the torch state with the zoo name and the measuring
simulation count in its manifest, validated in full), each with a record (.json: training
settings, games, positions, wall time, hardware), and copies the run's curve.png.
`measure` plays the bars (evaluate.measure_bars) from the committed .onnx files alone and writes
the results into the records and bots/zoo/<game>/bars.json. An entry point like the `arena`
CLI, so it may import arena_platform (for fit_ratings).

CSB's bots come from the DQN kit (`arena train dqn`), so `--game csb` publishes and measures them
their own way: `publish` takes the run's first and middle runner checkpoints and its last runner
checkpoint as dqn-csb-early, -middle and -runner (runner-only bots: both pods race), and its last
checkpoint as dqn-csb-final (runner+blocker); `measure` plays every bot against the house racer
(the final one in 200 races, the others in 40) and the final bot against the runner-only one in
200, in seat-swapped pairs through the platform's match loop (`GreedyPlayer` over ONNX Runtime).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

ZOO = Path(__file__).resolve().parent
STAGES = ("early", "middle", "final")
SIMULATIONS = 100  # per move, both sides, for every bar


def bot_name(game: str, stage: str) -> str:
    return f"az-{game}-{stage}"


def checkpoints_until(
    run: Path, checkpoints: list[dict[str, Any]], final: str | None
) -> list[dict[str, Any]]:
    """The run's checkpoints up to the one named `final` (None or "": all of them), the run as it
    stood then; SystemExit naming the run's last when it has no such checkpoint."""
    if not final:
        return checkpoints
    names = [checkpoint["name"] for checkpoint in checkpoints]
    if final not in names:
        raise SystemExit(f"{run} has no checkpoint {final} (its last is {names[-1]})")
    return checkpoints[: names.index(final) + 1]


def first_middle_last(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checkpoints published as the early, middle and final bots."""
    return [checkpoints[0], checkpoints[len(checkpoints) // 2], checkpoints[-1]]


def load_checkpoint(network: nn.Module, run: Path, checkpoint: dict[str, Any]) -> None:
    """The checkpoint's torch weights (checkpoints/<name>.pt of `run`) into `network`."""
    from arena_bots.training.networks import load_weights

    load_weights(network, (run / "checkpoints" / f"{checkpoint['name']}.pt").read_bytes())


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


def publish(
    game_name: str, run: Path, simulations: int, stages: tuple[str, ...] = STAGES, final: str = ""
) -> None:
    """The run's first, middle and last checkpoints as the zoo's early, middle and final bots; only
    `stages` of them (the others stay as published, e.g. from this run's earlier sitting). `final`
    names the checkpoint to take as the last (default: the run's last): the run as it stood then."""
    from arena_bots.export import export_bot
    from arena_bots.manifest import Manifest
    from arena_bots.training.networks import build_network
    from arena_games.registry import get_game

    game = get_game(game_name)
    config = json.loads((run / "config.json").read_text())
    settings = config["settings"]
    checkpoints = json.loads((run / "progress.json").read_text())["checkpoints"]
    chosen = first_middle_last(checkpoints_until(run, checkpoints, final))
    folder = ZOO / game_name
    folder.mkdir(exist_ok=True)
    for stage, checkpoint in zip(STAGES, chosen, strict=True):
        if stage not in stages:
            continue
        name = bot_name(game_name, stage)
        network = build_network(game.spec, settings["blocks"], settings["filters"])
        load_checkpoint(network, run, checkpoint)
        manifest = Manifest(
            game=game_name,
            game_version=game.spec.version,
            name=name,
            player="mcts",
            simulations=simulations,
            c_puct=settings["selfplay"]["c_puct"],
        )
        model = export_bot(network, game, manifest, folder / f"{name}.onnx")
        changes = config.get("changes", [])
        training = {"kit": _kit(settings, changes), "run": run.name, **settings, "changes": changes}
        write_record(folder, name, model, game, checkpoint, training)
    shutil.copy(run / "curve.png", folder / "curve.png")


def _kit(settings: dict, changes: list[dict]) -> str:
    """What trains a run of the AlphaZero kit: self-play or games against its teacher (a house bot
    or a bot file), after the teacher's generations if any, from the generation a resumed run
    turned them on (its config's `changes`)."""
    from arena_bots.training.run import is_bot_file

    teacher = settings.get("teacher", "")
    who = f"the bot {Path(teacher).name}" if is_bot_file(teacher) else f"the {teacher} house bot"
    later = f"games against {who}" if settings.get("teacher_opponent") else "self-play"
    if settings.get("teacher_generations"):
        return (
            f"arena_bots.training (AlphaZero kit: generations 1-{settings['teacher_generations']} are "
            f"{who}'s games, later ones {later})"
        )
    turned_on = [change["generation"] for change in changes if change["settings"].get("teacher_opponent")]
    since = f"self-play, then from generation {turned_on[-1]} " if turned_on else ""
    return f"arena_bots.training (AlphaZero kit: {since}{later})"


def write_record(
    folder: Path, name: str, model: bytes, game: Any, checkpoint: dict, training: dict, **extra: str
) -> None:
    """Validates a published bot in full and writes its record `<name>.json` next to it."""
    from arena_bots.validation import validate

    report = validate(model, game)
    if not report.ok:
        raise SystemExit(f"{name} fails validation: {report.code}: {report.message}")
    record = {
        "bot": name,
        "file": f"{name}.onnx",
        "bytes": len(model),
        **extra,
        "checkpoint": checkpoint,
        "training": training,
        "hardware": hardware(),
        "validation": {"ok": report.ok, "latency": [latency.to_dict() for latency in report.latency]},
    }
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")


def measure(
    game_name: str,
    simulations: int,
    uct_pairs: int,
    duel_pairs: int,
    league_pairs: int,
    house: str = "",
    house_pairs: int = 0,
) -> None:
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
        house=house,
        house_pairs=house_pairs,
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
            **({f"versus_{house}": bars[f"versus_{house}"][name]} if house else {}),
            "bars": {
                key: bars[key]
                for key in ("final_vs_early", "bar_final_beats_uct_90", "bar_final_above_early")
            },
        }
        (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({key: value for key, value in bars.items() if key != "games"}, indent=1))


CSB_STAGES = ("early", "middle", "runner", "final")  # runner-only bots, then the runner+blocker one


def csb_bot_name(stage: str) -> str:
    return f"dqn-csb-{stage}"


def publish_csb(run: Path) -> None:
    """The run's early / middle / last runner-only checkpoints and its last (runner+blocker) one. A
    run that started from a published runner (`--runner-from`) has no runner checkpoints: it
    publishes its final bot only, and its curve as curve-blocker.png next to the runner's run's."""
    from arena_bots.training.dqn import CsbQNet
    from arena_bots.training.dqn_run import export_network
    from arena_games.registry import get_game

    settings = json.loads((run / "config.json").read_text())["settings"]
    checkpoints = json.loads((run / "progress.json").read_text())["checkpoints"]
    runners = [c for c in checkpoints if c["phase"] == "runner"]
    teams = [c for c in checkpoints if c["phase"] == "blocker"]
    chosen = first_middle_last(runners) if runners else [None] * 3
    chosen.append(teams[-1] if teams else None)
    folder = ZOO / "csb"
    folder.mkdir(exist_ok=True)
    for stage, checkpoint in zip(CSB_STAGES, chosen, strict=True):
        if checkpoint is None:
            continue
        name = csb_bot_name(stage)
        network = CsbQNet(settings["layers"], settings["width"], blocker=True)
        load_checkpoint(network, run, checkpoint)
        model = export_network(network, name, stage == "final", folder / f"{name}.onnx")
        training = {"kit": "arena_bots.training.dqn_run (deep Q-learning)", "run": run.name, **settings}
        roles = "pod 0 runner, pod 1 blocker" if stage == "final" else "both pods runners (one network)"
        write_record(folder, name, model, get_game("csb"), checkpoint, training, roles=roles)
    shutil.copy(run / "curve.png", folder / ("curve.png" if runners else "curve-blocker.png"))


def measure_csb(final_pairs: int, other_pairs: int, seed: int = 2024) -> None:
    """Every published CSB bot against the racer, and the final (runner+blocker) bot against the
    last runner-only one."""
    from arena_bots.players import GreedyPlayer, RacerPlayer
    from arena_bots.runtime import InProcessSession
    from arena_bots.training.evaluate import play_pairs, win_draw_loss
    from arena_games.registry import get_game

    game, folder = get_game("csb"), ZOO / "csb"
    stages = [stage for stage in CSB_STAGES if (folder / f"{csb_bot_name(stage)}.json").exists()]
    records = {stage: json.loads((folder / f"{csb_bot_name(stage)}.json").read_text()) for stage in stages}
    players = {
        stage: GreedyPlayer(
            InProcessSession((folder / records[stage]["file"]).read_bytes()),
            head_kind="q",
            name=csb_bot_name(stage),
        )
        for stage in stages
    }
    racer = RacerPlayer()
    games = []
    for stage in stages:
        pairs = final_pairs if stage == "final" else other_pairs
        games += play_pairs(game, players[stage], racer, pairs, seed)
    if "runner" in players:
        games += play_pairs(game, players["final"], players["runner"], final_pairs, seed + 1)
    versus_racer = {
        csb_bot_name(stage): win_draw_loss(games, csb_bot_name(stage), "racer") for stage in stages
    }
    wins, _, losses = versus_racer[csb_bot_name("final")]
    bars: dict = {
        "seeds": f"play_pairs(seed={seed}) against the racer, seed={seed + 1} final vs runner",
        "versus_racer": versus_racer,
        "final_wins_vs_racer": wins / (wins + losses),
        "bar_final_beats_racer_97": wins >= 0.97 * (wins + losses),
    }
    if "runner" in players:
        team_wins, _, team_losses = win_draw_loss(games, csb_bot_name("final"), csb_bot_name("runner"))
        bars["final_vs_runner_only"] = (team_wins, 0, team_losses)
        bars["bar_final_beats_runner_only_75"] = team_wins >= 0.75 * (team_wins + team_losses)
    (folder / "bars.json").write_text(
        json.dumps({**bars, "games": [g.to_dict() for g in games]}, indent=1) + "\n"
    )
    for stage, record in records.items():
        won, drawn, lost = versus_racer[csb_bot_name(stage)]
        record["measured"] = {
            "versus": "racer (the house heuristic racer), seat-swapped pairs, greedy Q-values",
            "games_vs_racer": won + drawn + lost,
            "wins": won,
            "losses": lost,
            "bars": {key: value for key, value in bars.items() if key.startswith(("bar_", "final_"))},
        }
        (folder / f"{csb_bot_name(stage)}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(bars, indent=1))


def _stages(parser: argparse.ArgumentParser, given: str) -> tuple[str, ...]:
    stages = tuple(stage.strip() for stage in given.split(","))
    unknown = [stage for stage in stages if stage not in STAGES]
    if unknown:
        parser.error(f"--stages takes early, middle and final, not {', '.join(unknown)}")
    return stages


def main() -> None:
    parser = argparse.ArgumentParser(prog="bots/zoo/measure.py")
    commands = parser.add_subparsers(dest="command", required=True)
    publishing = commands.add_parser(
        "publish", help="copy a run's early/middle/final checkpoints into the zoo"
    )
    publishing.add_argument("--game", required=True)
    publishing.add_argument("--run", required=True, type=Path)
    publishing.add_argument(
        "--stages",
        default=",".join(STAGES),
        help="which of early,middle,final to publish (default all; the others stay as they are)",
    )
    publishing.add_argument(
        "--final",
        default="",
        help="the checkpoint to publish as final, e.g. spring2021-step055480 (default: the last)",
    )
    measuring = commands.add_parser("measure", help="play the bars from the zoo's ONNX files")
    measuring.add_argument("--game", required=True)
    measuring.add_argument("--uct-pairs", type=int, default=100, help="final vs uct (200 games by default)")
    measuring.add_argument("--duel-pairs", type=int, default=50, help="final vs early")
    measuring.add_argument("--league-pairs", type=int, default=10, help="every other pairing")
    measuring.add_argument(
        "--house", default="", help="a house bot of the game in the league too (e.g. threats)"
    )
    measuring.add_argument(
        "--house-pairs", type=int, default=100, help="final vs --house (200 games by default)"
    )
    for command in (publishing, measuring):
        command.add_argument("--simulations", type=int, default=SIMULATIONS)
    args = parser.parse_args()
    if args.game == "csb":
        publish_csb(args.run) if args.command == "publish" else measure_csb(
            args.uct_pairs, args.league_pairs * 2
        )
    elif args.command == "publish":
        publish(args.game, args.run, args.simulations, _stages(parser, args.stages), args.final)
    else:
        measure(
            args.game,
            args.simulations,
            args.uct_pairs,
            args.duel_pairs,
            args.league_pairs,
            args.house,
            args.house_pairs,
        )


if __name__ == "__main__":
    main()
