"""docker-compose.yml cannot run here; this keeps it honest: its commands are the CLI's, its
ARENA_* variables are Settings fields that load as a valid production configuration, Redis keeps
its queue on disk, workers scale and exactly one beat runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from arena_platform.cli import main
from arena_platform.settings import Settings, load_settings

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"
SETTINGS_VARIABLES = {f"ARENA_{name.upper()}" for name in Settings.__dataclass_fields__}


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def arena_services(services: dict) -> dict:
    return {name: service for name, service in services.items() if service.get("image") == "arena:latest"}


def test_arena_services_run_cli_subcommands(services, capsys):
    commands = {name: service["command"] for name, service in arena_services(services).items()}
    assert commands == {
        "api": ["arena", "serve"],
        "worker": ["arena", "worker"],
        "beat": ["arena", "beat"],
    }
    for _, subcommand, *arguments in commands.values():
        with pytest.raises(SystemExit) as exit_status:
            main([subcommand, *arguments, "--help"])
        assert exit_status.value.code == 0, f"`arena {subcommand}` is not a CLI subcommand"
    capsys.readouterr()


def test_arena_services_configure_production_through_settings(services):
    for name, service in arena_services(services).items():
        environment = {key: str(value) for key, value in service["environment"].items()}
        assert set(environment) <= SETTINGS_VARIABLES, f"{name}: unknown variables"
        settings = load_settings(environment)  # raises on production values that are unsafe
        assert settings.env == "production"
        assert settings.database_url.startswith("postgresql+psycopg://")
        assert settings.broker_url.startswith("redis://redis:6379/")
        if name != "beat":  # the sweeper needs the database and the broker; the others read and write blobs
            assert f"blobs:{settings.blob_url}" in service["volumes"]


def test_workers_and_flower_share_the_broker_and_redis_persists_it(services):
    broker = arena_services(services)["worker"]["environment"]["ARENA_BROKER_URL"]
    assert f"--broker={broker}" in services["flower"]["command"]
    redis_command = " ".join(services["redis"]["command"])
    assert "--appendonly yes" in redis_command


def test_workers_scale_and_one_beat_runs(services):
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["beat"].get("deploy", {}).get("replicas", 1) == 1
    for name in ("worker", "beat"):
        assert services[name]["depends_on"]["api"]["condition"] == "service_healthy"  # migrated
    assert services["worker"]["environment"]["ARENA_WORKER_CONCURRENCY"] == "1"
