"""Exporting a PyTorch network as a bot file, and the manifest's metadata round trip."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest

from arena_bots.export import export_bot
from arena_bots.manifest import ContractError, Manifest
from arena_bots.runtime import InProcessSession
from arena_bots.validation import ValidationLimits, validate, validate_static
from arena_games.api import Game, GameSpec

torch = pytest.importorskip("torch")

SPEC = GameSpec(
    name="duo",
    version=2,
    title="Duo",
    num_players=2,
    inputs={"planes": (2, 3, 3), "scalars": (3,)},
    heads={"cell": 9, "power": 4},
    max_length=10,
)
# Two heads: played by sampling (tree search plays one-head games only); the value output is optional.
MANIFEST = Manifest(game="duo", game_version=2, name="Duo net", player="sample", simulations=64, c_puct=2.0)


def spec_only(spec: GameSpec) -> Game:
    """A Game of which the exporter reads the spec alone."""
    unused = {field.name: None for field in dataclasses.fields(Game) if field.name != "spec"}
    return Game(spec=spec, **unused)


class DuoNet(torch.nn.Module):
    """Conv + batch norm over the planes, mixed with the scalars; two heads and a value."""

    def __init__(self, with_value: bool = True) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.mix = torch.nn.Linear(8 * 9 + 3, 32)
        self.cell = torch.nn.Linear(32, 9)
        self.power = torch.nn.Linear(32, 4)
        self.value = torch.nn.Linear(32, 1) if with_value else None

    def forward(self, planes, scalars):
        features = torch.relu(self.norm(self.conv(planes))).flatten(1)
        hidden = torch.relu(self.mix(torch.cat([features, scalars], dim=1)))
        heads = (self.cell(hidden), self.power(hidden))
        return heads if self.value is None else (*heads, torch.tanh(self.value(hidden)).squeeze(1))


def test_an_exported_network_passes_validation_and_matches_torch(tmp_path) -> None:
    torch.manual_seed(0)
    net = DuoNet().eval()  # the file holds the evaluation-mode network
    path = tmp_path / "duo.onnx"
    model_bytes = export_bot(net, spec_only(SPEC), MANIFEST, path)
    assert path.read_bytes() == model_bytes
    report = validate_static(model_bytes, SPEC)
    assert report.ok, report.message
    assert report.facts.outputs == {
        "policy_cell": ["batch", 9],
        "policy_power": ["batch", 4],
        "value": ["batch"],
    }
    planes, scalars = torch.rand(5, 2, 3, 3), torch.rand(5, 3)
    with torch.no_grad():
        expected = [tensor.numpy() for tensor in net(planes, scalars)]
    with InProcessSession(model_bytes) as session:
        outputs = session.run({"planes": planes.numpy(), "scalars": scalars.numpy()})
    for name, reference in zip(("policy_cell", "policy_power", "value"), expected, strict=True):
        np.testing.assert_allclose(outputs[name], reference, rtol=1e-4, atol=1e-5)


def test_the_manifest_travels_in_the_metadata() -> None:
    model = onnx.load_from_string(export_bot(DuoNet(), spec_only(SPEC), MANIFEST))
    props = {entry.key: entry.value for entry in model.metadata_props}
    assert set(props) == set(MANIFEST.to_metadata())
    assert Manifest.from_metadata(props) == MANIFEST


def test_metadata_round_trip_and_overrides() -> None:
    props = MANIFEST.to_metadata()
    assert props["arena.c_puct"] == "2.0"
    assert Manifest.from_metadata(props) == MANIFEST
    overridden = Manifest.from_metadata(
        {**props, "other.key": "ignored"}, {"simulations": "800", "name": None}
    )
    assert (overridden.simulations, overridden.name) == (800, "Duo net")
    assert Manifest.from_metadata(props, {"c_puct": 3}).c_puct == 3.0


def test_a_greedy_network_without_a_value() -> None:
    manifest = Manifest(game="duo", game_version=2, name="Duo greedy", player="greedy")
    model = onnx.load_from_string(export_bot(DuoNet(with_value=False), spec_only(SPEC), manifest))
    assert [output.name for output in model.graph.output] == ["policy_cell", "policy_power"]


def test_tree_search_over_two_heads_is_refused() -> None:
    manifest = dataclasses.replace(MANIFEST, player="mcts")
    with pytest.raises(ContractError) as caught:
        export_bot(DuoNet(), spec_only(SPEC), manifest)
    assert caught.value.code == "player_unsupported"


def test_training_mode_is_restored() -> None:
    net = DuoNet().train()
    export_bot(net, spec_only(SPEC), MANIFEST)
    assert net.training


def test_a_bobail_network_passes_the_full_check_on_real_positions() -> None:
    registry = pytest.importorskip("arena_games.registry")
    game = registry.get_game("bobail")
    channels = game.spec.inputs["board"][0]

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(channels, 16, 3, padding=1)
            self.policy = torch.nn.Linear(16 * 25, game.spec.heads["move"])
            self.value = torch.nn.Linear(16 * 25, 1)

        def forward(self, board):
            hidden = torch.relu(self.conv(board)).flatten(1)
            return self.policy(hidden), torch.tanh(self.value(hidden))

    manifest = Manifest(game="bobail", game_version=game.spec.version, name="Tiny", player="mcts")
    limits = ValidationLimits(
        smoke_games=2, latency_runs_batch1=5, latency_runs_batch32=2, max_latency_ms=5_000
    )
    report = validate(export_bot(Tiny(), game, manifest), game, limits=limits)
    assert report.ok, report.message
    assert report.checks[-1] == "runtime"
