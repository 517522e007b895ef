"""The embedded worker starts quietly (`make demo` prints nothing of Celery's at its start), and
warms up the games' kernels before it takes a task, as its play processes do as they start."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate
from arena_platform.settings import Settings
from arena_workers import embedded, processes
from arena_workers.embedded import EmbeddedWorker


def test_the_embedded_worker_started_as_root_gives_no_superuser_warning(tmp_path: Path, monkeypatch):
    settings = Settings(data_dir=tmp_path).check()
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    for ids in ("getuid", "geteuid"):  # as the demo runs in a container: as root
        monkeypatch.setattr(os, ids, lambda: 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with EmbeddedWorker(settings, engine=engine, blobs=BlobStore(settings.resolved_blob_url)):
            pass
    engine.dispose()
    assert [str(warning.message) for warning in caught if "superuser" in str(warning.message)] == []


def test_the_embedded_worker_warms_up_in_its_own_thread_which_then_takes_tasks(tmp_path: Path, monkeypatch):
    settings = Settings(data_dir=tmp_path).check()
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    threads = []
    monkeypatch.setattr(embedded, "warm_up_or_log", lambda: threads.append(threading.current_thread().name))
    with EmbeddedWorker(settings, engine=engine, blobs=BlobStore(settings.resolved_blob_url)):
        pass
    engine.dispose()
    assert threads == ["arena-embedded-worker"]


def test_a_play_process_warms_up_as_it_starts(tmp_path: Path, monkeypatch):
    settings = Settings(data_dir=tmp_path).check()
    warmed = []
    monkeypatch.setattr(processes, "warm_up_or_log", lambda: warmed.append(True))
    monkeypatch.setattr(processes, "_CHILD", None)
    processes._start_child(settings, threading.Event(), None)  # as a spawned child's initializer
    processes._CHILD.close()
    assert warmed == [True]
