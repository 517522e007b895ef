"""`arena train alphazero --game bobail --hours 1 --out runs/bobail-az [options]`: the training kit,
offline; and `arena train start|list|show|pause|resume|cancel`: training sessions on a server.

`arena train dqn --game csb --hours 1 --out runs/csb-dqn`: the DQN kit (Coders Strike Back only).

Running `alphazero` or `dqn` again with the same --out resumes the run with its saved settings. An
`alphazero` run takes the options marked "resumable" from its next generation (recorded in its
config.json); the others only shape new runs, and a resumed run refuses a different value.
PyTorch is the optional extra `train` (`pip install -e ".[train]"`, which pins torch==2.13.0); the
session commands need only a server with a training worker (`arena worker --queues training`) and
your API token.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arena_games.registry import GAMES
from arena_platform.cli.common import UsageError, add_server_options, server_token

# Each option's help ends with when it counts: a resumed run takes the resumable ones from its next
# generation (arena_bots.training.run.RESUMABLE, which a test holds these markers to).
SHAPE_OPTIONS = {
    "blocks": "residual blocks (an MLP's hidden layers, for a flat-input game; new runs only)",
    "filters": "convolution filters, multiples of 16 are fast on a CPU (an MLP's units; new runs only)",
    "simulations": "MCTS simulations per self-play move (resumable)",
    "games": "self-play games per generation (resumable)",
    "parallel": "self-play games played at once, batched inference (resumable)",
    "temperature-moves": "first moves of a self-play game drawn from the visit shares (resumable)",
    "capacity": "positions kept in the replay window (new runs only)",
    "checkpoint-every": "generations between checkpoints (resumable)",
    "eval-pairs": "seat-swapped pairs per checkpoint evaluation (resumable)",
    "eval-simulations": "simulations per move in evaluations (resumable)",
    "seed": "the run's seed (new runs only)",
}


def add_commands(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser(
        "train", help="train a bot: offline with a kit, or as a session on a server"
    ).add_subparsers(required=True, metavar="COMMAND")
    alphazero = train.add_parser("alphazero", help="AlphaZero self-play training (resumable)")
    alphazero.add_argument("--game", required=True, choices=sorted(GAMES))
    alphazero.add_argument("--out", required=True, type=Path, help="the run folder, e.g. runs/bobail-az")
    alphazero.add_argument("--hours", type=float, help="wall-clock budget of this invocation")
    alphazero.add_argument("--max-steps", type=int, help="stop at this many training steps")
    for option, meaning in SHAPE_OPTIONS.items():
        alphazero.add_argument(f"--{option}", type=int, help=meaning)
    alphazero.add_argument(
        "--learning-rate", type=float, help="AdamW's learning rate (default 0.001; resumable)"
    )
    alphazero.add_argument(
        "--opening-fraction",
        type=float,
        help="share of self-play games started from the game's seeded openings, as the ladder's are; "
        "the others start from the start position (default 0.5, Spring 2021 0; resumable)",
    )
    alphazero.add_argument(
        "--teacher",
        help="a house bot (e.g. gardener) or an ONNX bot file of the game (e.g. an earlier final bot), "
        "validated as an upload, for --teacher-generations and --teacher-opponent (resumable; the run "
        "keeps a copy of a file)",
    )
    alphazero.add_argument(
        "--teacher-generations", type=int, help="first generations played by the teacher (resumable)"
    )
    alphazero.add_argument(
        "--teacher-explore",
        type=float,
        help="share of the teacher's moves played at random (default 0.1; resumable)",
    )
    alphazero.add_argument(
        "--teacher-dagger",
        type=float,
        help="share of the teacher's other moves played by the learner's policy, still labelled by the "
        "teacher (DAgger; default 0; resumable)",
    )
    alphazero.add_argument(
        "--teacher-opponent",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the teacher's generations, the network's searches play the teacher instead of "
        "themselves (resumable: --no-teacher-opponent turns it off)",
    )
    alphazero.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    alphazero.set_defaults(run=_run_alphazero)
    _add_session_commands(train)
    _add_dqn(train)
    _add_actor_critic(train)


SESSION_OPTIONS: dict[str, tuple[type, str]] = {
    "kit": (str, "alphazero (bobail, pente, spring2021; the default), actor-critic (smash) or dqn (csb)"),
    "blocks": (int, "residual blocks of the network (an MLP's hidden layers); default 4"),
    "filters": (int, "convolution filters (an MLP's units per layer); default 32"),
    "seed": (int, "the session's seed (default 0)"),
    "base-bot": (int, "fine-tune this checkpoint bot of one of your sessions (its id)"),
    "name": (str, "the bot its checkpoints are versions of (default: <kit>-<session id>)"),
    "simulations": (int, "MCTS simulations per self-play move (alphazero)"),
    "games-per-generation": (int, "self-play games between two trainings (alphazero)"),
    "checkpoint-every": (int, "generations between checkpoints entered into the ladder (default 5)"),
}
SESSION_FIELDS = {"base-bot": "base_bot_id", "name": "bot_name"}  # option -> API field, where they differ


def _add_session_commands(train: argparse._SubParsersAction) -> None:
    start = train.add_parser("start", help="start a training session on a server")
    start.add_argument("--game", required=True, choices=sorted(GAMES))
    start.add_argument("--episodes", required=True, type=int, help="training games in all")
    start.add_argument("--minutes", required=True, type=float, help="training time in all")
    for option, (kind, meaning) in SESSION_OPTIONS.items():
        start.add_argument(f"--{option}", type=kind, help=meaning)
    add_server_options(start)
    start.set_defaults(run=_run_start)
    listing = train.add_parser("list", help="your training sessions on a server, newest first")
    add_server_options(listing)
    listing.set_defaults(run=_run_list)
    for action, meaning in (
        ("show", "a session's progress and checkpoints with their ratings"),
        ("pause", "pause a session after its current generation"),
        ("resume", "resume a paused or failed session"),
        ("cancel", "cancel a session (its checkpoints stay on the ladder)"),
    ):
        command = train.add_parser(action, help=meaning)
        command.add_argument("session", type=int, help="the session's id")
        add_server_options(command)
        command.set_defaults(run=_run_session_command, action=action)


def _client(args: argparse.Namespace, doing: str):  # -> ArenaClient
    from arena_platform.client import ArenaClient

    return ArenaClient(args.url, server_token(args, doing))


def _calling(call: Any) -> Any:
    """`call()`, its ArenaClientError (an error answer, no server) shown as a usage error."""
    from arena_platform.client import ArenaClientError

    try:
        return call()
    except ArenaClientError as error:
        raise UsageError(str(error)) from None


def _run_start(args: argparse.Namespace) -> int:
    options = {
        SESSION_FIELDS.get(option, option.replace("-", "_")): getattr(args, option.replace("-", "_"))
        for option in SESSION_OPTIONS
    }
    seconds = max(1, round(args.minutes * 60))
    with _client(args, "starting a training session") as client:
        created = _calling(lambda: client.start_training(args.game, args.episodes, seconds, **options))
    print(
        f"training session {created['id']} is {created['status']}: "
        f"`arena train show {created['id']}` follows it"
    )
    return 0


def _run_list(args: argparse.Namespace) -> int:
    with _client(args, "listing your training sessions") as client:
        sessions = _calling(client.training_sessions)
    for item in sessions:
        print(_summary_line(item))
    return 0


def _run_session_command(args: argparse.Namespace) -> int:
    with _client(args, f"{args.action} of a training session") as client:
        if args.action == "show":
            detail = _calling(lambda: client.training_session(args.session))
        else:
            detail = _calling(lambda: client.control_training(args.session, args.action))
    print(_summary_line(detail))
    if args.action == "show":
        for checkpoint in detail["checkpoints"]:
            print("  " + _checkpoint_line(checkpoint))
    return 0


def _summary_line(item: dict[str, Any]) -> str:
    """One line per session: id, status, game and kit, games and steps, training time, loss."""
    progress, asked = item["progress"], item["settings"]
    losses = progress["losses"]
    loss = f" | loss {_losses(losses[-1])}" if losses else ""
    error = f" | {item['error']}" if item["error"] else ""
    return (
        f"session {item['id']} {item['status']}: {item['game']} {item['kit']} bot {item['bot_name']!r} | "
        f"games {progress['games']}/{asked['episodes']} steps {progress['step']} | "
        f"{progress['elapsed_seconds']:.0f}/{asked['time_limit_seconds']} s{loss}{error}"
    )


def _losses(point: dict[str, Any]) -> str:
    """A generation's losses: policy and value, or the value alone (dqn's TD error)."""
    value = f"v {point['value']:.3f}"
    return value if point["policy"] is None else f"p {point['policy']:.3f} {value}"


def _checkpoint_line(checkpoint: dict[str, Any]) -> str:
    head = f"generation {checkpoint['generation']} step {checkpoint['step']}"
    if checkpoint["bot_id"] is None:
        return f"{head}: refused ({checkpoint['error']})"
    if checkpoint["rating"] is None:
        rating = "not rated yet"
    else:
        rating = f"{checkpoint['rating']:+.0f} Elo [{checkpoint['low']:+.0f}, {checkpoint['high']:+.0f}]"
    return f"{head}: bot {checkpoint['bot_id']} (version {checkpoint['version']}) {rating}"


def _run_alphazero(args: argparse.Namespace) -> int:
    _needs_budget(args.hours, args.max_steps, "--max-steps N")
    with _train_extra():
        from arena_bots.training.run import SettingsError, train_alphazero
    from arena_platform.ratings import fit_ratings

    teaching = ("teacher", "teacher_generations", "teacher_explore", "teacher_dagger", "teacher_opponent")
    names = [option.replace("-", "_") for option in SHAPE_OPTIONS] + [
        "learning_rate",
        "opening_fraction",
        *teaching,
    ]
    given = {name: getattr(args, name) for name in names}
    try:
        train_alphazero(
            args.game,
            args.out,
            args.hours,
            max_steps=args.max_steps,
            changes=given,  # over the game's defaults for a new run, the saved settings for a resumed one
            fit_ratings=fit_ratings,
            progress=not args.no_progress,
        )
    except SettingsError as error:
        raise UsageError(str(error)) from None
    return 0


DQN_OPTIONS = {
    "layers": (int, "hidden tanh layers of each role's network"),
    "width": (int, "units per hidden layer"),
    "races": (int, "races stepped at once (4 pod transitions each in phase 1, 1 blocker's in phase 2)"),
    "memory": (int, "transitions kept per role's replay memory"),
    "updates-per-step": (int, "minibatch updates per environment step"),
    "batch-size": (int, "transitions per minibatch"),
    "learning-rate": (float, "Adam's learning rate"),
    "runner-steps": (int, "environment steps of phase 1 (the runner); then the blocker learns"),
    "epsilon-steps": (int, "environment steps over which the runner's epsilon decays from 1 to 0.02"),
    "blocker-epsilon-steps": (int, "blocker steps (after the demonstrations) over which its epsilon decays"),
    "demo-steps": (int, "first blocker steps played by the heuristic blocker, kept as demonstrations"),
    "demo-share": (float, "share of each blocker minibatch drawn from the demonstrations"),
    "checkpoint-every": (int, "environment steps between checkpoints"),
    "eval-pairs": (int, "seat-swapped pairs per checkpoint evaluation"),
    "seed": (int, "the run's seed"),
}


def _add_dqn(train: argparse._SubParsersAction) -> None:
    dqn = train.add_parser("dqn", help="deep Q-learning of CSB runner and blocker pods (resumable)")
    dqn.add_argument("--game", required=True, choices=["csb"])
    dqn.add_argument("--out", required=True, type=Path, help="the run folder, e.g. runs/csb-dqn")
    dqn.add_argument("--hours", type=float, help="wall-clock budget of this invocation")
    dqn.add_argument("--max-steps", type=int, help="stop at this many environment steps")
    for option, (kind, meaning) in DQN_OPTIONS.items():
        dqn.add_argument(f"--{option}", type=kind, help=f"{meaning} (new runs only)")
    dqn.add_argument(
        "--runner-from",
        type=Path,
        help="start from the runner of this CSB bot (.onnx) and train only the blocker (new runs only)",
    )
    dqn.set_defaults(run=_run_dqn)


def _run_dqn(args: argparse.Namespace) -> int:
    _needs_budget(args.hours, args.max_steps, "--max-steps N")
    with _train_extra():
        from arena_bots.training.dqn_run import settings_with, train_dqn
    chosen = {option.replace("-", "_"): getattr(args, option.replace("-", "_")) for option in DQN_OPTIONS}
    if args.runner_from is not None:
        if not args.runner_from.is_file():
            raise UsageError(f"--runner-from: no such file: {args.runner_from}")
        chosen |= {"runner_from": str(args.runner_from), "runner_steps": 0}
    try:
        train_dqn(args.game, args.out, args.hours, max_steps=args.max_steps, settings=settings_with(**chosen))
    except ValueError as error:  # a bad --runner-from bot, a run folder of another game
        raise UsageError(str(error)) from None
    return 0


AC_OPTIONS = {
    "blocks": (int, "residual blocks of the own well's tower"),
    "filters": (int, "convolution filters of that tower (multiples of 16 are fast on a CPU)"),
    "against-chain": (int, "games played against the chain house bot at once"),
    "self-play": (int, "self-play games played at once (two learner seats each)"),
    "segment-steps": (int, "turns per segment in phase 1 (lanes x steps = positions per segment)"),
    "iterations": (int, "passes over each segment (the seed: 1 on-policy + 5 near-on-policy)"),
    "minibatch": (int, "positions per gradient step"),
    "n-step": (int, "V-trace steps (1: one-step)"),
    "phase-two-at": (int, "segments before the seed's phase 2 (lr x 0.7, entropy 0.001)"),
    "imitation-segments": (int, "first segments that also imitate the chain bot (a kick-start)"),
    "demonstration-games": (int, "games of the lookahead house bot recorded before the first segment"),
    "pretrain-passes": (int, "supervised passes over the demonstrations before the first segment"),
    "demonstration-share": (float, "demonstrations added to each minibatch, as a share of it"),
    "checkpoint-every": (int, "segments between checkpoints"),
    "eval-pairs": (int, "seat-swapped pairs against the chain bot per checkpoint"),
    "seed": (int, "the run's seed"),
    "learning-rate": (float, "Adam's learning rate in phase 1"),
}


def _add_actor_critic(train: argparse._SubParsersAction) -> None:
    kit = train.add_parser("actor-critic", help="actor-critic (V-trace) self-play and chain-bot training")
    kit.add_argument("--game", required=True, choices=["smash"], help="the kit's game (Smash the Code)")
    kit.add_argument("--out", required=True, type=Path, help="the run folder, e.g. runs/smash-ac")
    kit.add_argument("--hours", type=float, help="wall-clock budget of this invocation")
    kit.add_argument("--max-segments", type=int, help="stop once the run has this many segments")
    for option, (kind, meaning) in AC_OPTIONS.items():
        kit.add_argument(f"--{option}", type=kind, help=f"{meaning} (new runs only)")
    kit.add_argument("--processes", type=int, default=1, help="processes that record the demonstrations")
    kit.add_argument("--device", default="cpu", help="where the network trains: cpu or cuda")
    kit.set_defaults(run=_run_actor_critic)


def _run_actor_critic(args: argparse.Namespace) -> int:
    _needs_budget(args.hours, args.max_segments, "--max-segments N")
    with _train_extra():
        import torch

        from arena_bots.training.actor_critic import settings_with, train_actor_critic
    given = {option.replace("-", "_"): getattr(args, option.replace("-", "_")) for option in AC_OPTIONS}
    if args.processes < 1:
        raise UsageError(f"--processes must be at least 1, got {args.processes}")
    if args.device not in ("cpu", "cuda"):
        raise UsageError(f"--device is cpu or cuda, got {args.device!r}")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: this machine's PyTorch sees no CUDA device")
    train_actor_critic(
        args.out,
        args.hours,
        max_segments=args.max_segments,
        settings=settings_with(**given),
        processes=args.processes,
        device=args.device,
    )
    return 0


def _needs_budget(hours: float | None, limit: int | None, limit_option: str) -> None:
    """UsageError unless a local run is told how long to train."""
    if hours is None and limit is None:
        raise UsageError(f"say how long to train: --hours H and/or {limit_option}")


@contextmanager
def _train_extra() -> Iterator[None]:
    """Around a kit's import: its ImportError becomes a UsageError naming the missing 'train' extra."""
    try:
        yield
    except ImportError as error:
        raise UsageError(f"training needs the 'train' extra (pip install -e '.[train]'): {error}") from None
