"""Fixtures for tests on real services: a fresh PostgreSQL database per test module, a dedicated Redis
database flushed before and after, and `arena worker` processes torn down after each test; a
migrated database on SQLite and PostgreSQL (`database`, `engine`), tiny valid ONNX bots (`onnx_bot`)
and a hostile model for the platform, worker and web tests.

When PostgreSQL or Redis cannot be reached the tests that need them are skipped with the reason,
unless the environment variable CI is set: there they always run, and fail if a service is missing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
import uvicorn
from fastapi import FastAPI
from onnx import TensorProto, helper, numpy_helper
from sqlalchemy import Engine, text
from sqlmodel import SQLModel

from arena_bots.manifest import head_output_name
from arena_games.registry import get_game
from arena_platform.db import make_engine, migrate

POSTGRES_ADMIN_URL = os.environ.get(
    "ARENA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
REDIS_SERVER_URL = os.environ.get("ARENA_TEST_REDIS_URL", "redis://127.0.0.1:6379")
# A database number the tests own, flushed before and after each module; two suites that run at once
# on one machine each need their own. Each test process of the suite (pytest-xdist's gw0, gw1, ...)
# takes the next number after it, modulo Redis's 16.
REDIS_TEST_DB = (
    int(os.environ.get("ARENA_TEST_REDIS_DB", "13"))
    + int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
) % 16
WORKER_READY_TIMEOUT_S = 60.0


def unavailable(service: str, error: Exception) -> None:
    """Skips the test for a missing service, or fails it in CI, where services are always there."""
    message = f"{service} is unreachable: {error}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextlib.contextmanager
def _new_postgres_database(template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (a copy of `template`, when given) while the block runs, dropped
    afterwards: its SQLAlchemy URL. Skips or, in CI, fails when the server is missing."""
    from sqlalchemy import create_engine, make_url
    from sqlalchemy.exc import OperationalError

    name = f"arena_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    copy = f' TEMPLATE "{template}"' if template else ""
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    except OperationalError as error:
        admin.dispose()
        unavailable(f"PostgreSQL at {POSTGRES_ADMIN_URL}", error.orig)
    try:
        yield make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def migrated_template() -> Iterator[str]:
    """The name of a PostgreSQL database migrated once per test process, which every module's
    database copies (`postgres_url`): a copy takes about 0.15 s, migrating anew about 1 s."""
    from sqlalchemy import make_url

    with _new_postgres_database() as url:
        engine = make_engine(url)
        migrate(engine)
        engine.dispose()  # a template is copied only while nobody is connected to it
        yield make_url(url).database


@pytest.fixture(scope="module")
def postgres_url(migrated_template: str) -> Iterator[str]:
    """The SQLAlchemy URL of a new PostgreSQL database with the migrated schema and no rows,
    dropped after the module."""
    with _new_postgres_database(template=migrated_template) as url:
        yield url


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A broker URL on the tests' own Redis database, empty at the start and flushed at the end."""
    import redis

    url = f"{REDIS_SERVER_URL}/{REDIS_TEST_DB}"
    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.flushdb()
    except redis.RedisError as error:
        unavailable(f"Redis at {REDIS_SERVER_URL}", error)
    yield url
    client.flushdb()
    client.close()


@dataclass
class WorkerProcess:
    """An `arena worker` process (the leader of its own process group, with its pool children)."""

    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout: float = WORKER_READY_TIMEOUT_S) -> WorkerProcess:
        """Blocks until Celery reports the worker ready to consume."""
        deadline = time.monotonic() + timeout
        while " ready." not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the worker did not start; its log:\n{self.output()}")
            time.sleep(0.1)
        return self

    def kill(self) -> None:
        """SIGKILL to the whole group: the worker and its pool children die at once, mid-task."""
        if self.process.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]


@pytest.fixture
def worker_environment(postgres_url: str, redis_url: str, tmp_path: Path) -> Callable[..., dict[str, str]]:
    """`worker_environment(**settings)`: ARENA_* variables for a worker on the module's PostgreSQL
    database and the tests' Redis database, with blobs in `tmp_path / "blobs"`; `settings` adds
    more fields (lease_seconds=3, ...)."""

    def build(**settings: object) -> dict[str, str]:
        environment = {
            "ARENA_ENV": "production",
            "ARENA_DATABASE_URL": postgres_url,
            "ARENA_BROKER_URL": redis_url,
            "ARENA_BLOB_URL": str(tmp_path / "blobs"),
            "ARENA_DATA_DIR": str(tmp_path),
        }
        return environment | {f"ARENA_{name.upper()}": str(value) for name, value in settings.items()}

    return build


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    """`start_worker(environment, beat=False, queues=None, ready=True)`: starts `arena worker` (on
    `queues`, e.g. "training", when given) and waits until it is ready (without `ready`, the caller
    calls `wait_ready`: several workers then start at once).

    Every worker started is killed (SIGKILL to its process group) when the test ends.
    """
    started: list[WorkerProcess] = []

    def start(
        environment: Mapping[str, str], *, beat: bool = False, queues: str | None = None, ready: bool = True
    ) -> WorkerProcess:
        log = tmp_path / f"worker-{len(started)}.log"
        command = [sys.executable, "-m", "arena_platform.cli", "worker", *(["--beat"] if beat else [])]
        command += [f"--queues={queues}"] if queues else []
        with log.open("wb") as output:
            process = subprocess.Popen(
                command,
                env={**os.environ, **environment},
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so that kill() reaches the pool too
            )
        worker = WorkerProcess(process, log)
        started.append(worker)
        return worker.wait_ready() if ready else worker

    yield start
    for worker in started:  # SIGKILL: the test is over, and a warm shutdown waits for the task in play
        worker.kill()


UVICORN_TIMEOUT_S = 10.0  # to start, and to stop


@contextlib.contextmanager
def _serving(app: FastAPI | uvicorn.Config) -> Iterator[str]:
    """Serves `app` under uvicorn in a thread on a free local port while the block runs; its base
    URL. Given a uvicorn.Config, serves that (its host and port are ignored)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = app if isinstance(app, uvicorn.Config) else uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + UVICORN_TIMEOUT_S
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=UVICORN_TIMEOUT_S)


@pytest.fixture(scope="session")
def serving() -> Callable[[FastAPI], AbstractContextManager[str]]:
    """`with serving(app) as url:` serves the app under uvicorn on a free local port (raw HTTP and
    browser tests)."""
    return _serving


# --- Databases and models shared by the platform, worker and web tests ---------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """A migrated database per test module and backend; PostgreSQL's is `postgres_url`'s (a copy of
    the migrated template), which skips or, in CI, fails when the server is missing."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('db') / 'arena.db'}")
        migrate(engine)
    else:
        engine = make_engine(request.getfixturevalue("postgres_url"))
    yield engine
    engine.dispose()


@pytest.fixture
def engine(database: Engine) -> Iterator[Engine]:
    """The module's database, emptied after each test (`empty_tables`)."""
    yield database
    empty_tables(database)


def empty_tables(engine: Engine) -> None:
    """Deletes every row of the models' tables, children first, and on PostgreSQL restarts the id
    sequences: what TRUNCATE ... RESTART IDENTITY does, at a sixth of its cost on tables this small
    (a truncate gives every table new files)."""
    with engine.begin() as connection:
        for table in reversed(SQLModel.metadata.sorted_tables):
            connection.execute(table.delete())
        if engine.dialect.name == "postgresql":
            restart = "SELECT setval(oid::regclass, 1, false) FROM pg_class WHERE relkind = 'S'"
            connection.execute(text(restart))


@pytest.fixture
def hostile_bot() -> bytes:
    """A bobail-shaped model that calls an operator of a custom domain (native code in some runtime)."""
    board = helper.make_tensor_value_info("board", TensorProto.FLOAT, ["batch", 43, 5, 5])
    policy = helper.make_tensor_value_info("policy", TensorProto.FLOAT, ["batch", 200])
    node = helper.make_node("Exploit", ["board"], ["policy"], domain="evil.ops")
    graph = helper.make_graph([node], "hostile", [board], [policy])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("evil.ops", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


TINY_BOT_OPSET = 17


def _tiny_network(game_name: str, metadata: Mapping[str, str], seed: int) -> bytes:
    """A linear layer per action head (policy logits, or Q-values with `arena.head=q`) and a value
    over the flattened inputs of `game_name` (dynamic batch)."""
    spec = get_game(game_name).spec
    rng = np.random.default_rng(seed)
    nodes, weights, inputs = [], [], []
    for name, shape in spec.inputs.items():
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *shape]))
        nodes.append(helper.make_node("Flatten", [name], [f"{name}_flat"], axis=1))
    nodes.append(helper.make_node("Concat", [f"{name}_flat" for name in spec.inputs], ["features"], axis=1))
    width = sum(int(np.prod(shape)) for shape in spec.inputs.values())
    kind = metadata.get("arena.head", "policy")
    heads = {head_output_name(spec, head, kind): size for head, size in spec.heads.items()}
    for output, size in (*heads.items(), ("raw_value", 1)):
        weight = (rng.standard_normal((width, size)) * 0.05).astype(np.float32)
        weights += [
            numpy_helper.from_array(weight, f"{output}_w"),
            numpy_helper.from_array(np.zeros(size, np.float32), f"{output}_b"),
        ]
        nodes.append(helper.make_node("Gemm", ["features", f"{output}_w", f"{output}_b"], [output]))
    nodes.append(helper.make_node("Tanh", ["raw_value"], ["value"]))
    shapes = {**{name: ["batch", size] for name, size in heads.items()}, "value": ["batch", 1]}
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, dims) for name, dims in shapes.items()]
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", TINY_BOT_OPSET)], ir_version=8)
    helper.set_model_props(model, dict(metadata))
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.fixture(scope="session")
def onnx_bot() -> Callable[..., bytes]:
    """`onnx_bot(game, seed=, metadata=)`: a tiny valid bot; metadata keys are manifest fields."""

    def build(game: str = "bobail", *, seed: int = 0, metadata: Mapping[str, str] | None = None) -> bytes:
        return _tiny_network(game, {f"arena.{key}": value for key, value in (metadata or {}).items()}, seed)

    return build
