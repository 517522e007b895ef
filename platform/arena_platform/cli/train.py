"""`arena train alphazero --game bobail --hours 1 --out runs/bobail-az [options]`: the training kit.

Running it again with the same --out resumes the run (the run's saved settings win over the
options, which only shape new runs). PyTorch is the optional extra `train`
(`pip install -e ".[train]"`, which pins torch==2.13.0).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arena_games.registry import GAMES
from arena_platform.cli.common import UsageError

SHAPE_OPTIONS = {
    "blocks": "residual blocks of the network (an MLP's hidden layers, for a flat-input game)",
    "filters": "convolution filters, multiples of 16 are fast on a CPU (an MLP's units per layer)",
    "simulations": "MCTS simulations per self-play move",
    "games": "self-play games per generation",
    "parallel": "self-play games played at once (batched inference)",
    "capacity": "positions kept in the replay window",
    "checkpoint-every": "generations between checkpoints",
    "eval-pairs": "seat-swapped pairs per checkpoint evaluation",
    "eval-simulations": "simulations per move in evaluations",
    "seed": "the run's seed",
}


def add_commands(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser("train", help="train a bot from scratch").add_subparsers(
        required=True, metavar="KIT"
    )
    alphazero = train.add_parser("alphazero", help="AlphaZero self-play training (resumable)")
    alphazero.add_argument("--game", required=True, choices=sorted(GAMES))
    alphazero.add_argument("--out", required=True, type=Path, help="the run folder, e.g. runs/bobail-az")
    alphazero.add_argument("--hours", type=float, help="wall-clock budget of this invocation")
    alphazero.add_argument("--max-steps", type=int, help="stop at this many training steps")
    for option, meaning in SHAPE_OPTIONS.items():
        alphazero.add_argument(f"--{option}", type=int, help=f"{meaning} (new runs only)")
    alphazero.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    alphazero.set_defaults(run=_run_alphazero)
    _add_actor_critic(train)


def _run_alphazero(args: argparse.Namespace) -> int:
    if args.hours is None and args.max_steps is None:
        raise UsageError("say how long to train: --hours H and/or --max-steps N")
    try:
        from arena_bots.training.run import settings_for, train_alphazero
    except ImportError as error:
        raise UsageError(f"training needs the 'train' extra (pip install -e '.[train]'): {error}") from None
    from arena_platform.ratings import fit_ratings

    shape = {option.replace("-", "_"): getattr(args, option.replace("-", "_")) for option in SHAPE_OPTIONS}
    train_alphazero(
        args.game,
        args.out,
        args.hours,
        max_steps=args.max_steps,
        settings=settings_for(args.game, **shape),
        fit_ratings=fit_ratings,
        progress=not args.no_progress,
    )
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
    kit.set_defaults(run=_run_actor_critic)


def _run_actor_critic(args: argparse.Namespace) -> int:
    if args.hours is None and args.max_segments is None:
        raise UsageError("say how long to train: --hours H and/or --max-segments N")
    try:
        from arena_bots.training.actor_critic import settings_with, train_actor_critic
    except ImportError as error:
        raise UsageError(f"training needs the 'train' extra (pip install -e '.[train]'): {error}") from None
    given = {option.replace("-", "_"): getattr(args, option.replace("-", "_")) for option in AC_OPTIONS}
    train_actor_critic(args.out, args.hours, max_segments=args.max_segments, settings=settings_with(**given))
    return 0
