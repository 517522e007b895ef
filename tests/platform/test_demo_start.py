"""`arena demo` says what it does while it validates the zoo, before it serves; the server warms up
the games' kernels (arena_bots.warm) beside serving."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import uvicorn

import arena_bots.validation
from arena_platform.blobs import BlobStore
from arena_platform.cli import serve
from arena_platform.db import make_engine, migrate
from arena_platform.settings import Settings

ZOO_BOT = Path(__file__).resolve().parents[2] / "bots" / "zoo" / "bobail" / "az-bobail-final.onnx"


def test_each_zoo_bot_is_announced_before_its_validation_and_named_after_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "zoo" / "bobail").mkdir(parents=True)
    shutil.copy(ZOO_BOT, tmp_path / "zoo" / "bobail")
    monkeypatch.setattr(serve, "ZOO", tmp_path / "zoo")
    validate = arena_bots.validation.validate
    printed_before: list[str] = []

    def announced_validate(*args, **kwargs):
        printed_before.append(capsys.readouterr().out)
        return validate(*args, **kwargs)

    monkeypatch.setattr(arena_bots.validation, "validate", announced_validate)
    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    running = serve.Services(settings, engine, BlobStore(str(tmp_path / "blobs")), lambda *_: None)
    serve.load_zoo_ladder(running, "bobail")
    engine.dispose()
    assert printed_before == ["validating bobail bot az-bobail-final.onnx ... "]
    assert capsys.readouterr().out == "loaded as 'az-bobail-final'\n"


def test_the_server_warms_up_beside_serving(tmp_path, monkeypatch):
    from arena_bots import warm

    threads = []
    monkeypatch.setattr(warm, "warm_up_or_log", lambda: threads.append(threading.current_thread().name))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: threads.append("serving"))
    settings = Settings(data_dir=tmp_path)
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    serve.serve_forever(serve.Services(settings, engine, BlobStore(str(tmp_path / "blobs")), lambda *_: None))
    engine.dispose()
    for thread in threading.enumerate():
        if thread.name == "arena-warm-up":
            thread.join()
    assert sorted(threads) == ["arena-warm-up", "serving"]
