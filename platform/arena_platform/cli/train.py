"""`arena train alphazero --game bobail --hours 1 --out runs/bobail-az [options]`: the training kit.

`arena train dqn --game csb --hours 1 --out runs/csb-dqn`: the DQN kit (Coders Strike Back only).

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
    _add_dqn(train)


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


def _add_dqn(train: argparse._SubParsersAction) -> None:
    dqn = train.add_parser("dqn", help="deep Q-learning of CSB runner and blocker pods (resumable)")
    dqn.add_argument("--game", required=True, choices=["csb"])
    dqn.add_argument("--out", required=True, type=Path, help="the run folder, e.g. runs/csb-dqn")
    dqn.add_argument("--hours", type=float, help="wall-clock budget of this invocation")
    dqn.add_argument("--max-steps", type=int, help="stop at this many environment steps")
    dqn.add_argument("--seed", type=int, help="the run's seed (new runs only)")
    dqn.set_defaults(run=_run_dqn)


def _run_dqn(args: argparse.Namespace) -> int:
    if args.hours is None and args.max_steps is None:
        raise UsageError("say how long to train: --hours H and/or --max-steps N")
    try:
        from arena_bots.training.dqn_run import DqnSettings, train_dqn
    except ImportError as error:
        raise UsageError(f"training needs the 'train' extra (pip install -e '.[train]'): {error}") from None
    settings = DqnSettings() if args.seed is None else DqnSettings(seed=args.seed)
    train_dqn(args.game, args.out, args.hours, max_steps=args.max_steps, settings=settings)
    return 0
