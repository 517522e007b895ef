"""The bot contract (ARCHITECTURE §3): the manifest that says how a bot plays, and its tensor names.

A bot is one ONNX file plus a `Manifest`. The manifest may travel inside the file, as
`metadata_props` entries `arena.<field>` (all values are strings there, e.g. `arena.game=bobail`,
`arena.simulations=400`); values given explicitly (the upload form, the CLI) override those.

Tensors: the inputs are exactly the game's input tensors (`GameSpec.inputs`, float32, a dynamic
batch dimension first). The outputs are one tensor per action head, shaped (batch, head size) and
named by `head_output_name`, plus `value`, shaped (batch,) or (batch, 1), which `mcts` players need
and the others may have. Arena masks illegal actions itself; the model never sees a legal mask.

Every bad value raises `ContractError(code, message)`: a stable machine code and a sentence the
bot's author can act on.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from arena_games.api import GameSpec

MAX_MODEL_BYTES = 32 << 20  # a bot's ONNX file, everywhere: validation (the CLI's checks too) and uploads
METADATA_PREFIX = "arena."
VALUE_OUTPUT = "value"
PLAYER_KINDS = ("mcts", "greedy", "sample")
VALUE_KINDS = ("tanh", "sigmoid")  # tanh: in [-1, 1] for the player to move; sigmoid: P(win), read as 2p - 1
HEAD_KINDS = ("policy", "q")  # policy: logits; q: action values of a DQN (greedy or sampled over)

_GAME_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_MAX_NAME_CHARS = 64


class ContractError(ValueError):
    """A bot breaks the contract. `code` is stable snake_case; `message` is for the bot's author."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class _Rule:
    """How one manifest field is typed and checked; `describes` completes "must be ..."."""

    kind: type  # str, int or float: what a metadata string is parsed into
    valid: Callable[[Any], bool]
    describes: str


_RULES: dict[str, _Rule] = {
    "game": _Rule(str, lambda v: _GAME_NAME.fullmatch(v) is not None, "a game name such as 'bobail'"),
    "game_version": _Rule(int, lambda v: 1 <= v <= 1_000_000, "the game's version, a whole number >= 1"),
    "name": _Rule(
        str,
        lambda v: 0 < len(v) <= _MAX_NAME_CHARS and v.isprintable() and v == v.strip(),
        f"1 to {_MAX_NAME_CHARS} printable characters without surrounding spaces",
    ),
    "player": _Rule(str, lambda v: v in PLAYER_KINDS, f"one of {', '.join(PLAYER_KINDS)}"),
    "simulations": _Rule(int, lambda v: 1 <= v <= 100_000, "a whole number from 1 to 100000"),
    "c_puct": _Rule(float, lambda v: 0 < v <= 100, "a number above 0 and at most 100"),
    "temperature": _Rule(float, lambda v: 0 < v <= 100, "a number above 0 and at most 100"),
    "value": _Rule(str, lambda v: v in VALUE_KINDS, f"one of {', '.join(VALUE_KINDS)}"),
    "head": _Rule(str, lambda v: v in HEAD_KINDS, f"one of {', '.join(HEAD_KINDS)}"),
}


@dataclass(frozen=True)
class Manifest:
    """How a bot plays. Constructing one checks every field (ContractError on a bad value).

    `simulations` and `c_puct` drive `mcts` (PUCT search: network evaluations per move, exploration
    weight); `temperature` drives `sample` (softmax(logits / temperature)). A ladder may impose
    its own simulation budget; the manifest's is the author's choice elsewhere.
    """

    game: str
    game_version: int
    name: str
    player: str
    simulations: int = 200
    c_puct: float = 1.5
    temperature: float = 1.0
    value: str = "tanh"
    head: str = "policy"

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check_field(field.name, getattr(self, field.name))
        if self.player == "mcts" and self.head != "policy":
            raise ContractError(
                "manifest_conflict",
                "an mcts player needs policy logits as priors: use head=policy, or play a q head "
                "with player=greedy or player=sample",
            )

    @classmethod
    def from_metadata(cls, props: Mapping[str, str], overrides: Mapping[str, Any] | None = None) -> Manifest:
        """The manifest from `arena.*` metadata entries, overridden by `overrides` (field -> value).

        Other metadata keys are ignored; an unknown `arena.*` key or override is an error (it is
        most likely a typo that would silently change how the bot plays). An override of None
        counts as not given. Values may be strings (as in metadata) or already typed.
        """
        raw: dict[str, Any] = {}
        for key, value in props.items():
            if key.startswith(METADATA_PREFIX):
                raw[_known_field(key.removeprefix(METADATA_PREFIX), f"metadata key {key!r}")] = value
        for key, value in (overrides or {}).items():
            if value is not None:
                raw[_known_field(key, f"setting {key!r}")] = value
        missing = [f.name for f in dataclasses.fields(cls) if _is_required(f) and f.name not in raw]
        if missing:
            keys = ", ".join(METADATA_PREFIX + name for name in missing)
            raise ContractError(
                "manifest_missing_field",
                f"the manifest lacks {keys}: put it in the model's metadata_props or give it on upload",
            )
        return cls(**{name: _parsed(name, value) for name, value in raw.items()})

    @classmethod
    def from_model(cls, model: bytes) -> Manifest:
        """The manifest a serialised ONNX bot carries in its metadata (`from_metadata`)."""
        import onnx  # heavy: only readers of whole bot files need it

        return cls.from_metadata(
            {entry.key: entry.value for entry in onnx.load_from_string(model).metadata_props}
        )

    def evaluations_per_move(self, simulations: int | None = None) -> int:
        """Network evaluations one move costs at most: an mcts search evaluates its root, then one
        leaf per simulation (`simulations`, a ladder's budget, replaces the manifest's, as in
        `loading.network_player`); greedy and sample players evaluate the position once."""
        if self.player != "mcts":
            return 1
        return (simulations or self.simulations) + 1

    def to_metadata(self) -> dict[str, str]:
        """Every field as an `arena.*` metadata entry; `from_metadata` reads it back exactly."""
        return {METADATA_PREFIX + name: _formatted(value) for name, value in self.to_dict().items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ExpectedOutput:
    """One output tensor of the contract: `size` is the head size, None for `value`."""

    name: str
    size: int | None
    required: bool

    def describe(self) -> str:
        """The contract shape in words, e.g. "(batch, 200)"."""
        return "(batch,) or (batch, 1)" if self.size is None else f"(batch, {self.size})"


def head_output_name(spec: GameSpec, head: str, kind: str) -> str:
    """The output tensor of action head `head`: `policy`/`q` in a one-head game, else `policy_<head>`."""
    return kind if len(spec.heads) == 1 else f"{kind}_{head}"


def expected_outputs(spec: GameSpec, manifest: Manifest) -> tuple[ExpectedOutput, ...]:
    """The outputs a bot for `spec` may have: one per head (in head order, required), then `value`."""
    heads = tuple(
        ExpectedOutput(head_output_name(spec, head, manifest.head), size, required=True)
        for head, size in spec.heads.items()
    )
    return (*heads, ExpectedOutput(VALUE_OUTPUT, None, required=manifest.player == "mcts"))


def _is_required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING


def _known_field(name: str, where: str) -> str:
    if name not in _RULES:
        raise ContractError(
            "manifest_unknown_key", f"unknown {where}; the manifest fields are {', '.join(_RULES)}"
        )
    return name


def _parsed(name: str, value: Any) -> Any:
    """`value` (a metadata string or a typed value) as the field's type; ContractError if it is not."""
    kind = _RULES[name].kind
    if type(value) is kind:
        return value
    if kind is float and type(value) is int:
        return float(value)
    if isinstance(value, str):
        try:
            return kind(value)  # int() and float() allow surrounding spaces
        except ValueError:
            pass
    raise _bad_value(name, value)


def _check_field(name: str, value: Any) -> None:
    rule = _RULES[name]
    typed = type(value) is rule.kind
    if not typed or (rule.kind is float and not math.isfinite(value)) or not rule.valid(value):
        raise _bad_value(name, value)


def _formatted(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _bad_value(name: str, value: Any) -> ContractError:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return ContractError(
        "manifest_bad_value", f"{METADATA_PREFIX}{name} must be {_RULES[name].describes}, got {shown}"
    )
