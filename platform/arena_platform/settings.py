"""The one settings object: every knob comes from an `ARENA_*` environment variable.

Defaults are the embedded set-up of `make demo` (SQLite, a blob folder, an in-process worker on
Celery's in-memory broker). `ARENA_ENV=production` refuses to start on those defaults, so a
production deployment cannot silently run on a laptop's storage.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from arena_bots.manifest import MAX_MODEL_BYTES

EMBEDDED_BROKER = "memory://"
UPLOAD_FORM_BYTES = 64 << 10  # an upload's form fields and multipart framing, beside its model file


class SettingsError(ValueError):
    """A setting that is malformed or unsafe; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    env: str = "development"  # "development" or "production"
    data_dir: Path = Path("var")  # where the embedded defaults keep their files
    database_url: str = ""  # default: SQLite in data_dir
    broker_url: str = EMBEDDED_BROKER  # "memory://" runs the worker inside the API process
    blob_url: str = ""  # a folder or an fsspec URL; default: data_dir/blobs
    host: str = "127.0.0.1"
    port: int = 8000
    # upload bodies above this get 413 while streaming: the largest model file and its form fields
    max_upload_bytes: int = MAX_MODEL_BYTES + UPLOAD_FORM_BYTES
    max_json_bytes: int = 64 * 1024  # the body cap of every other route (a real one is a few KiB)
    # Client addresses that are proxies: only their X-Forwarded-For/-Proto are believed (IPs or
    # networks, comma-separated; "*" trusts everyone). Empty: the peer's address is the client's.
    trusted_proxies: str = ""
    keep_alive_seconds: int = 5  # an idle kept-alive connection is closed after this long
    header_timeout_seconds: int = 10  # a request's head (line and headers) must arrive within this
    uploads_per_hour: int = 20  # per user, counting the model's refusals too (not the platform's)
    tokens_per_user: int = 20  # active (unrevoked) API tokens one user may hold
    tokens_per_hour: int = 20  # API tokens issued to one user per hour (revoked ones stay stored)
    predicts_per_minute: int = 30  # per client address, for predict requests without a token
    predicts_per_minute_per_token: int = 120  # per token owner (any address), for requests with one
    predict_max_simulations: int = 400  # the largest search budget predict runs (see PredictRequest)
    accounts_per_hour: int = 5  # self-serve accounts created per client address
    human_games_per_hour: int = 60  # games against a bot started per client address (no account needed)
    human_moves_per_minute: int = 30  # moves (each answered by a search) per client address
    games_per_pairing: int = 2  # seat-swapped games from one opening
    # Challenges (store.challenges): pairs of one bot against another, asked for by a user.
    challenge_max_pairs: int = 50  # seat-swapped pairs one challenge may ask for
    challenges_open_per_user: int = 3  # a user's challenges with pairings still to play
    challenges_per_day: int = 20  # challenges one user may start in 24 hours
    ladder_simulations: int = 100  # evaluations per move on the ladders uploads join (as the zoo's bars)
    lease_seconds: int = 600  # a claimed pairing goes back to the queue if its worker is silent this long
    heartbeat_seconds: int = 30
    # A worker writes its games in progress (for viewers) at most this often; 0: before every round.
    live_seconds: float = 0.5
    max_attempts: int = 3  # a pairing that failed this often is marked failed, not retried
    task_time_limit_seconds: int = 1800  # Celery hard limit; the broker's visibility timeout is 2x this
    worker_concurrency: int = 1
    leaderboard_cache_seconds: float = 1.0  # how old a served leaderboard may be; 0: no cache
    # A new version's SPRT against its previous one (arena_platform.sprt), in normalized Elo (nElo),
    # fishtest's model. Fishtest tests Stockfish patches at <0, 2> nElo (STC); our versions differ
    # by tens to hundreds of Elo and a pair of CPU-searched games costs seconds, so a 2-nElo test
    # (~90k pairs) would never end. <0, 25> resolves in about 570 pairs at equal strength, 410 at
    # +30 Elo and 150 at +60 (no-draw games: nElo ~ logistic Elo), with 5% errors either way.
    sprt_elo0: float = 0.0  # H0: the new version is this much better (nElo): "not better"
    sprt_elo1: float = 25.0  # H1: the new version is this much better (nElo): "better"
    sprt_alpha: float = 0.05  # chance of accepting H1 when H0 holds
    sprt_beta: float = 0.05  # chance of accepting H0 when H1 holds
    # Training sessions (arena_platform.store.training), run by workers on the `training` queue.
    training_sessions_per_user: int = 1  # queued or running at once per user
    training_max_episodes: int = 100_000  # self-play games of one session
    training_max_seconds: int = 7 * 24 * 3600  # training time of one session
    training_max_blocks: int = 10  # residual blocks (an MLP's hidden layers)
    training_max_filters: int = 256  # convolution filters (an MLP's units per layer)
    training_threads: int = 1  # PyTorch threads per training task
    # A training task trains this long (at most half the task time limit), then puts its session
    # back in the queue: other sessions, and on the embedded worker the matches, get their turn.
    training_slice_seconds: int = 300

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'arena.db'}"

    @property
    def resolved_blob_url(self) -> str:
        return self.blob_url or str(self.data_dir / "blobs")

    @property
    def embedded_worker(self) -> bool:
        return self.broker_url == EMBEDDED_BROKER

    def check(self) -> Settings:
        """Fail fast on values that cannot work or are unsafe in production; returns self."""
        if self.env not in ("development", "production"):
            raise SettingsError(f"ARENA_ENV must be 'development' or 'production', got {self.env!r}")
        if self.env == "production":
            unsafe = [
                name
                for name, bad in (
                    ("ARENA_DATABASE_URL", self.resolved_database_url.startswith("sqlite")),
                    ("ARENA_BROKER_URL", self.embedded_worker),
                    ("ARENA_BLOB_URL", not self.blob_url),
                )
                if bad
            ]
            if unsafe:
                raise SettingsError(f"production needs explicit, non-embedded {', '.join(unsafe)}")
        positive = (
            "max_upload_bytes",
            "max_json_bytes",
            "keep_alive_seconds",
            "header_timeout_seconds",
            "uploads_per_hour",
            "tokens_per_user",
            "tokens_per_hour",
            "predicts_per_minute",
            "predicts_per_minute_per_token",
            "predict_max_simulations",
            "accounts_per_hour",
            "human_games_per_hour",
            "human_moves_per_minute",
            "challenge_max_pairs",
            "challenges_open_per_user",
            "challenges_per_day",
            "lease_seconds",
            "max_attempts",
            "port",
            "ladder_simulations",
            "training_sessions_per_user",
            "training_max_episodes",
            "training_max_seconds",
            "training_max_blocks",
            "training_max_filters",
            "training_threads",
            "training_slice_seconds",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise SettingsError(f"ARENA_{name.upper()} must be positive, got {getattr(self, name)}")
        for name in ("leaderboard_cache_seconds", "live_seconds"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise SettingsError(f"ARENA_{name.upper()} must be at least 0, got {value}")
        self._check_sprt()
        if self.heartbeat_seconds * 3 > self.lease_seconds:
            raise SettingsError("ARENA_HEARTBEAT_SECONDS must be at most a third of ARENA_LEASE_SECONDS")
        return self

    def _check_sprt(self) -> None:
        """Finite hypotheses with elo0 < elo1, error rates strictly between 0 and 1/2."""
        for name in ("sprt_elo0", "sprt_elo1"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise SettingsError(f"ARENA_{name.upper()} must be a finite number, got {value}")
        if self.sprt_elo0 >= self.sprt_elo1:
            raise SettingsError(
                f"ARENA_SPRT_ELO0 must be below ARENA_SPRT_ELO1, got {self.sprt_elo0} and {self.sprt_elo1}"
            )
        for name in ("sprt_alpha", "sprt_beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                raise SettingsError(f"ARENA_{name.upper()} must be between 0 and 0.5, got {value}")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from `ARENA_<FIELD>` variables of `environ` (default os.environ), checked."""
    environ = os.environ if environ is None else environ
    values = {}
    for spec in fields(Settings):
        raw = environ.get(f"ARENA_{spec.name.upper()}")
        if raw is None:
            continue
        kind = type(spec.default)
        try:
            values[spec.name] = kind(raw)
        except ValueError:
            raise SettingsError(f"ARENA_{spec.name.upper()} must be {kind.__name__}, got {raw!r}") from None
    return Settings(**values).check()
