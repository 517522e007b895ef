"""Local play (`arena play`) and the local replay viewer (`arena view`): same seed and files, same games
as the server's runner; bad files refused as on upload; replay files the viewer shows."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlmodel import select

from arena_bots.loading import HOUSE_KINDS
from arena_bots.validation import validate_file
from arena_games.registry import get_game
from arena_games.replay import Replay
from arena_platform import cli
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.local_view import ReplayFileError, local_view_app
from arena_platform.models import GameRecord
from arena_platform.settings import Settings
from arena_platform.store import bots as bot_store
from arena_platform.store import pairings as pairing_store
from arena_platform.store import users
from arena_platform.store.ladders import ensure_ladder
from arena_workers import runner
from arena_workers.context import WorkerContext

ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "bobail"
FINAL, EARLY = ZOO / "az-bobail-final.onnx", ZOO / "az-bobail-early.onnx"
SIMULATIONS = 4  # per move: small, the same on the ladder and locally


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'arena.db'}")
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def context(sqlite_engine: Engine, tmp_path: Path) -> Iterator[WorkerContext]:
    worker = WorkerContext(
        settings=Settings(data_dir=tmp_path),
        engine=sqlite_engine,
        blobs=BlobStore(str(tmp_path / "blobs")),
        enqueue=lambda name, *args: None,
    )
    yield worker
    worker.close()


def _server_games(context: WorkerContext, first: Path, second: Path) -> tuple[int, list[Replay]]:
    """Uploads both files (as the upload route records them) on a bobail ladder at SIMULATIONS, plays
    one pairing first against second through the runner; the pairing's seed and its replays."""
    game = get_game("bobail")
    with session(context.engine) as db:
        ladder = ensure_ladder(db, game="bobail", simulations=SIMULATIONS, seed=11)
        owner, _ = users.create_user(db, name="author")
        ids = []
        for path in (first, second):
            report = validate_file(path, game, {}, simulations=SIMULATIONS)
            bot = bot_store.create_network_bot(
                db,
                ladder_id=ladder.id,
                owner_id=owner.id,
                manifest=report.manifest,
                report=report.to_dict(),
                model_sha256=context.blobs.put(report.model_bytes),
            )
            ids.append(bot.id)
        (pairing,) = pairing_store.create_pairings(
            db, ladder=ladder, pairs=[tuple(ids)], redelivery_seconds=60
        )
        db.commit()
        pairing_id, seed = pairing.id, pairing.seed
    assert [outcome.status for outcome in runner.play_pairings(context, [pairing_id])] == ["recorded"]
    with session(context.engine) as db:
        records = db.exec(select(GameRecord).where(GameRecord.pairing_id == pairing_id)).all()
    records = sorted(records, key=lambda record: record.index)
    return seed, [Replay.from_json(context.blobs.get(record.replay_sha256).decode()) for record in records]


def _without_meta(replay: Replay) -> dict:
    """The replay's game (seed, players, every action and insight, the result), not where it was played."""
    data = replay.to_dict()
    del data["meta"]
    return data


def test_local_play_of_two_zoo_bots_replays_the_servers_pairing_exactly(context, tmp_path, capsys):
    seed, server = _server_games(context, FINAL, EARLY)
    out = tmp_path / "local"
    command = ["play", "--game", "bobail", "--players", str(FINAL), str(EARLY), "--seed", str(seed)]
    assert cli.main([*command, "--games", "2", "--simulations", str(SIMULATIONS), "--out", str(out)]) == 0
    local = [Replay.from_json(path.read_text()) for path in sorted(out.glob("game-*.json"))]
    assert [len(replay.steps) for replay in local] == [len(replay.steps) for replay in server]
    assert local[0].players == server[0].players == ("az-bobail-final", "az-bobail-early")
    assert local[1].players == server[1].players == server[0].players[::-1]  # seats swapped
    assert [_without_meta(replay) for replay in local] == [_without_meta(replay) for replay in server]


def test_a_bad_onnx_file_prints_the_upload_report_and_fails(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a model")
    assert cli.main(["play", "--game", "bobail", "--players", str(bad), "random"]) == 2
    output = capsys.readouterr()
    assert "bot check: REJECTED [not_onnx]" in output.out
    assert f"arena: {bad} was rejected as an upload would be [not_onnx]" in output.err


def test_a_player_that_is_neither_a_house_bot_nor_a_file_is_named(tmp_path, capsys):
    assert cli.main(["play", "--game", "bobail", "--players", "uct", str(tmp_path / "missing.onnx")]) == 2
    assert f"is neither a house bot ({', '.join(HOUSE_KINDS)}) nor an ONNX file" in capsys.readouterr().err


def _plain_export(tmp_path: Path, source: Path) -> Path:
    """`source` as a plain export: the same network with no arena.* metadata."""
    import onnx

    model = onnx.load(source)
    del model.metadata_props[:]
    path = tmp_path / "plain.onnx"
    onnx.save(model, path)
    return path


def test_plain_exports_carry_their_own_name_and_player_after_the_file(tmp_path, capsys):
    plain = _plain_export(tmp_path, FINAL)
    assert cli.main(["play", "--game", "bobail", "--players", str(plain), "random"]) == 2
    error = capsys.readouterr().err
    assert f"{plain}: the manifest lacks arena.name, arena.player; give them after the file" in error
    assert f"{plain}:mine:mcts" in error
    assert "upload" not in error
    out = tmp_path / "replays"
    players = [f"{plain}:mine:mcts", f"{plain}:theirs:greedy"]
    command = ["play", "--game", "bobail", "--players", *players, "--simulations", "2", "--out", str(out)]
    assert cli.main(command) == 0
    replay = Replay.from_json((out / "game-0001.json").read_text())
    assert replay.players == ("mine", "theirs")


def test_the_racer_house_bot_plays_csb_only(capsys):
    assert cli.main(["play", "--game", "bobail", "--players", "racer", "random"]) == 2
    assert "the house bot racer plays csb only, not bobail" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (["--games", "0"], "--games must be at least 1, got 0"),
        (["--games", "2", "--opening"], "--opening and --every-position are for one game"),
        (["--simulations", "0"], "--simulations must be at least 1, got 0"),
    ],
)
def test_bad_play_options_are_named(options, problem, capsys):
    assert cli.main(["play", "--game", "bobail", "--players", "uct", "random", *options]) == 2
    assert problem in capsys.readouterr().err


def test_two_games_print_win_draw_loss_and_an_elo_line_and_write_replays(tmp_path, capsys):
    out = tmp_path / "replays"
    command = ["play", "--game", "bobail", "--players", "uct", "random", "--seed", "5", "--games", "2"]
    assert cli.main([*command, "--simulations", "8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "uct vs random: 2 games, W/D/L " in printed
    elo = next(line for line in printed.splitlines() if line.startswith("Elo difference uct - random: "))
    assert elo.endswith("(95% interval)")
    assert " ± " in elo
    files = sorted(out.iterdir())
    assert [path.name for path in files] == ["game-0001.json", "game-0002.json"]
    replays = [Replay.from_json(path.read_text()) for path in files]
    assert [replay.players for replay in replays] == [("uct", "random"), ("random", "uct")]
    assert replays[0].seed == replays[1].seed == 5  # a pair: one opening, seats swapped
    opening = len(get_game("bobail").opening(5, None))
    assert replays[0].opening_length == replays[1].opening_length == opening
    assert [step.actions for step in replays[0].steps[:opening]] == [
        step.actions for step in replays[1].steps[:opening]
    ]


def test_the_local_viewer_serves_a_written_replay(tmp_path, capsys):
    out = tmp_path / "replays"
    command = ["play", "--game", "bobail", "--players", "uct", "random", "--seed", "2", "--games", "2"]
    assert cli.main([*command, "--simulations", "4", "--out", str(out)]) == 0
    files = sorted(out.iterdir())
    replay = Replay.from_json(files[1].read_text())
    client = TestClient(local_view_app(files))
    page = client.get("/games/2")
    assert page.status_code == 200
    assert "/static/player.js" in page.text
    assert "random" in page.text
    data = json.loads(page.text.split('id="page-data">')[1].split("</script>")[0])
    assert data["frames_url"] == "/api/v1/games/2/frames"
    frames = client.get(data["frames_url"]).json()
    assert frames["game"] == "bobail"
    assert [seat["name"] for seat in frames["seats"]] == list(replay.players)
    assert len(frames["frames"]) == len(replay.steps) + 1
    assert client.get("/static/player.js").status_code == 200
    assert client.get("/", follow_redirects=False).headers["location"] == "/games/1"
    missing = client.get("/api/v1/games/3/frames")
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")


def test_the_local_viewer_refuses_a_file_that_is_no_replay(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1}')
    with pytest.raises(ReplayFileError, match=r"bad\.json cannot be re-played"):
        local_view_app([bad])
    assert cli.main(["view", str(bad)]) == 2
    assert "bad.json cannot be re-played" in capsys.readouterr().err


def _crafted(tmp_path: Path, name: str, craft) -> Path:
    """A replay file that `arena play` wrote, then `craft`ed: a function of its text to the new text."""
    out = tmp_path / "replays"
    command = ["play", "--game", "bobail", "--players", "uct", "random", "--seed", "3"]
    assert cli.main([*command, "--simulations", "4", "--out", str(out)]) == 0
    path = tmp_path / name
    path.write_text(craft((out / "game-0001.json").read_text()))
    return path


def _with(change):
    """A craft that applies `change` to the replay's JSON data."""

    def craft(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data)

    return craft


@pytest.mark.parametrize(
    ("craft", "reason"),
    [
        (_with(lambda d: d["meta"].update(index="x")), "at meta/index: 'x' is not of type 'integer'"),
        (lambda text: "[" * 100_000 + "]" * 100_000, "its arrays or objects nest too deep"),
        (lambda text: text.replace('"seed":3', '"seed":NaN'), "NaN is no JSON number"),
        (_with(lambda d: d["steps"][0].update(insights=[5])), "at steps/0/insights/0: 5 is not of type"),
        (_with(lambda d: d["steps"][0]["insights"][0].update(top=[{"action": "x"}])), "at steps/0/ins"),
        (_with(lambda d: d.update(players=["solo"])), "names 1 players and 2 returns: bobail has 2 seats"),
        (_with(lambda d: d["result"].update(returns=[])), "names 2 players and 0 returns"),
    ],
)
def test_the_local_viewer_refuses_a_crafted_replay_with_its_reason(tmp_path, capsys, craft, reason):
    crafted = _crafted(tmp_path, "crafted.json", craft)
    with pytest.raises(ReplayFileError, match=r"crafted\.json cannot be re-played: ") as refused:
        local_view_app([crafted])
    assert reason in str(refused.value)
    capsys.readouterr()
    assert cli.main(["view", str(crafted)]) == 2
    assert reason in capsys.readouterr().err


def test_arena_view_prints_each_files_address_serves_it_and_stops_on_ctrl_c(tmp_path, capsys):
    out = tmp_path / "replays"
    assert cli.main(["play", "--game", "bobail", "--players", "uct", "random", "--out", str(out)]) == 0
    (replay,) = out.iterdir()
    viewer = subprocess.Popen(
        [sys.executable, "-m", "arena_platform.cli", "view", str(replay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    try:
        first = viewer.stdout.readline()
        assert first.startswith(f"{replay}: http://127.0.0.1:")
        address = first.split(": ", 1)[1].strip()
        assert address.endswith("/games/1")
        assert httpx.get(address.replace("/games/1", "/api/v1/games/1/frames")).json()["game"] == "bobail"
        assert httpx.get(address).status_code == 200
        viewer.send_signal(signal.SIGINT)
        assert viewer.wait(timeout=20) == 0
        assert viewer.stderr.read() == ""  # no traceback
    finally:
        viewer.kill()
        viewer.wait()
