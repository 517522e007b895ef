"""The `arena` command line without a server or a database: `bot check`, `upload`'s options, `warm`."""

from __future__ import annotations

import dataclasses
import re
import socket

import pytest

from arena_bots.manifest import MAX_MODEL_BYTES, Manifest
from arena_platform import cli
from arena_platform.api.routes.bots import UploadForm
from arena_platform.cli.common import MANIFEST_OPTIONS
from arena_platform.client import default_url
from arena_platform.settings import UPLOAD_FORM_BYTES, Settings

NOT_MANIFEST = {"game"}  # the upload form's field besides the file that overrides no manifest field


def test_check_and_upload_take_the_upload_forms_manifest_fields() -> None:
    form = set(UploadForm.model_fields) - NOT_MANIFEST
    fields = {field.name for field in dataclasses.fields(Manifest)} - {"game", "game_version"}
    assert set(MANIFEST_OPTIONS) == form == fields
    for command in (["bot", "check"], ["upload"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])


def test_bot_check_passes_a_file_without_metadata_given_its_manifest(onnx_bot, tmp_path, capsys) -> None:
    path = tmp_path / "bare.onnx"
    path.write_bytes(onnx_bot())  # no arena.* metadata at all
    assert cli.main(["bot", "check", str(path), "--game", "bobail"]) == 1
    assert "REJECTED [manifest_missing_field]" in capsys.readouterr().out
    options = ["--name", "bare", "--player", "mcts", "--simulations", "40", "--c-puct", "2.5"]
    options += ["--temperature", "0.5", "--value", "tanh", "--head", "policy"]
    assert cli.main(["bot", "check", str(path), "--game", "bobail", *options]) == 0
    report = capsys.readouterr().out
    assert report.startswith("bot check: OK")
    assert "'bare' for bobail v1: mcts with 40 simulations, c_puct 2.5" in report
    assert "(101 evaluations of one position)" in report  # judged at the ladder's budget, 100


def test_bot_check_refuses_a_file_the_api_would_refuse(tmp_path, capsys) -> None:
    path = tmp_path / "big.onnx"
    path.write_bytes(b"\0" * (Settings().max_upload_bytes - UPLOAD_FORM_BYTES + 1))  # the model's share, +1
    assert cli.main(["bot", "check", str(path), "--game", "bobail"]) == 1
    assert f"at most {MAX_MODEL_BYTES:,} are allowed" in capsys.readouterr().out


def test_bot_check_judges_a_move_at_the_ladders_budget(onnx_bot, tmp_path, monkeypatch, capsys) -> None:
    path = tmp_path / "bot.onnx"
    path.write_bytes(onnx_bot(metadata={"name": "budget", "player": "mcts"}))
    monkeypatch.setenv("ARENA_LADDER_SIMULATIONS", "9")
    assert cli.main(["bot", "check", str(path), "--game", "bobail"]) == 0
    assert "(10 evaluations of one position)" in capsys.readouterr().out
    monkeypatch.setenv("ARENA_LADDER_SIMULATIONS", "many")
    assert cli.main(["bot", "check", str(path), "--game", "bobail"]) == 2
    assert "ARENA_LADDER_SIMULATIONS" in capsys.readouterr().err


def test_upload_goes_to_arena_host_and_port_by_default(onnx_bot, tmp_path, monkeypatch, capsys) -> None:
    port = _closed_port()
    monkeypatch.setenv("ARENA_HOST", "127.0.0.1")
    monkeypatch.setenv("ARENA_PORT", str(port))
    assert default_url() == f"http://127.0.0.1:{port}"
    path = tmp_path / "bot.onnx"
    path.write_bytes(onnx_bot())
    upload = ["upload", str(path), "--game", "bobail", "--name", "x", "--token", "t"]
    assert cli.main(upload) == 2
    assert f"no answer from http://127.0.0.1:{port}" in capsys.readouterr().err
    monkeypatch.setenv("ARENA_HOST", "::1")
    assert default_url() == f"http://[::1]:{port}"
    monkeypatch.setenv("ARENA_PORT", "eighty")
    assert cli.main(upload) == 2
    assert "ARENA_PORT must be int" in capsys.readouterr().err


def _closed_port() -> int:
    """A local port that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # torch.onnx.export's dynamo exporter takes a few seconds
def test_bot_check_accepts_a_plain_torch_export(tmp_path, capsys) -> None:
    """The README's path: torch.onnx.export with its default exporter (dynamo, with onnxscript from
    the train extra), then `arena bot check` with the manifest on the command line."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(43, 16, 3, padding=1)
            self.policy = torch.nn.Linear(16 * 5 * 5, 200)
            self.value = torch.nn.Linear(16 * 5 * 5, 1)

        def forward(self, board):
            features = torch.relu(self.conv(board)).flatten(1)
            return self.policy(features), torch.tanh(self.value(features))

    path, split = tmp_path / "net.onnx", tmp_path / "split.onnx"
    exported = {"input_names": ["board"], "output_names": ["policy", "value"]}
    batch = {"board": {0: torch.export.Dim("batch")}}
    example = (torch.zeros(2, 43, 5, 5),)
    torch.onnx.export(Net().eval(), example, path, **exported, dynamic_shapes=batch, external_data=False)
    torch.onnx.export(Net().eval(), example, split, **exported, dynamic_shapes=batch)  # weights in a 2nd file
    capsys.readouterr()  # the exporter's progress lines
    check = ["bot", "check", "--game", "bobail", "--name", "plain", "--player", "mcts"]
    assert cli.main([*check, str(path)]) == 0
    assert capsys.readouterr().out.startswith("bot check: OK")
    assert cli.main([*check, str(split)]) == 1
    assert "external_data=False" in capsys.readouterr().out


def test_warm_compiles_the_named_games_and_names_an_unknown_one(capsys) -> None:
    assert cli.main(["warm", "bobail"]) == 0
    assert re.fullmatch(r"bobail: ready \(\d+\.\d CPU-s\)\n", capsys.readouterr().out)
    assert cli.main(["warm", "chess"]) == 2
    assert "unknown game 'chess'" in capsys.readouterr().err


def test_warm_on_the_reference_core_compiles_nothing_and_a_bad_core_is_named(monkeypatch, capsys) -> None:
    monkeypatch.setenv("ARENA_CORE", "reference")
    assert cli.main(["warm"]) == 0
    assert capsys.readouterr().out == "ARENA_CORE is reference: nothing to compile\n"
    monkeypatch.setenv("ARENA_CORE", "fast")
    assert cli.main(["warm"]) == 2
    assert "must be one of reference, compiled, got 'fast'" in capsys.readouterr().err


def test_a_celery_worker_warms_up_before_its_pool_forks(tmp_path, monkeypatch) -> None:
    from arena_bots import warm
    from arena_workers import celery_app

    order = []
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ARENA_BROKER_URL", "redis://127.0.0.1:6379/15")  # never reached: no pool starts
    monkeypatch.setattr(warm, "warm_up_or_log", lambda: order.append("warm up"))
    monkeypatch.setattr(celery_app.ArenaCelery, "worker_main", lambda self, argv: order.append("pool"))
    monkeypatch.setattr("arena_workers.training.WorkerBeater.start", lambda self: self)
    monkeypatch.setattr("arena_workers.training.WorkerBeater.stop", lambda self: None)
    assert cli.main(["worker"]) == 0
    assert order == ["warm up", "pool"]
