"""`arena train start|list|show|pause|resume|cancel` against a live server (no worker: the enqueue
is recorded), and their errors as one sentence with exit status 2."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine

from arena_platform import cli
from arena_platform.db import session
from arena_platform.queue import TRAIN_SESSION
from arena_platform.store import training


@pytest.fixture
def server(live_server: Callable[..., str], engine: Engine) -> str:
    with session(engine) as db:
        training.beat_worker(db, name="host/1", queues="training")
    return live_server()


def test_a_session_started_listed_shown_paused_resumed_and_cancelled_from_the_command_line(
    server: str, new_user: Callable[[str], str], enqueued: list, capsys
):
    auth = ["--url", server, "--token", new_user("ada")]
    start = ["train", "start", "--game", "bobail", "--episodes", "8", "--minutes", "0.5", "--blocks", "1"]
    assert cli.main([*start, "--name", "tiny", *auth]) == 0
    assert "training session 1 is queued" in capsys.readouterr().out
    assert enqueued == [(TRAIN_SESSION, (1,))]
    assert cli.main(["train", "list", *auth]) == 0
    assert (
        "session 1 queued: bobail alphazero bot 'tiny' | games 0/8 steps 0 | 0/30 s"
        in capsys.readouterr().out
    )
    assert cli.main(["train", "show", "1", *auth]) == 0
    assert "session 1 queued" in capsys.readouterr().out
    for action, status in (("pause", "paused"), ("resume", "queued"), ("cancel", "cancelled")):
        assert cli.main(["train", action, "1", *auth]) == 0
        assert f"session 1 {status}" in capsys.readouterr().out


def test_the_command_line_names_what_is_wrong(
    server: str, new_user: Callable[[str], str], capsys, monkeypatch
):
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    start = ["train", "start", "--game", "bobail", "--episodes", "8", "--minutes", "1", "--url", server]
    assert cli.main(start) == 2
    assert "needs an API token" in capsys.readouterr().err
    assert cli.main([*start, "--token", new_user("ada"), "--kit", "muzero"]) == 2
    assert "unknown kit 'muzero'" in capsys.readouterr().err
    assert cli.main(["train", "cancel", "7", "--url", server, "--token", new_user("bob")]) == 2
    assert "training session 7 does not exist" in capsys.readouterr().err
