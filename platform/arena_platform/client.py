"""A small client of Arena's REST API, for Python scripts and the `arena` CLI.

Every method returns the decoded JSON body. Any failure, an error answer or an unreachable server,
raises `ArenaClientError(status, code, detail)`: `status` is 0 when no answer came.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import httpx

from arena_platform.settings import SettingsError, load_settings

API_PREFIX = "/api/v1"
TIMEOUT = httpx.Timeout(30.0, read=300.0)  # seconds; an upload is answered after its validation


class ArenaClientError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{detail} ({code}, HTTP {status})" if status else f"{detail} ({code})")
        self.status = status
        self.code = code
        self.detail = detail


def default_url() -> str:
    """Where `arena serve` listens with this environment's settings: http://ARENA_HOST:ARENA_PORT.
    Raises ArenaClientError (status 0, code "bad_settings") when a setting is malformed."""
    try:
        settings = load_settings()
    except SettingsError as error:
        raise ArenaClientError(0, "bad_settings", str(error)) from None
    host = f"[{settings.host}]" if ":" in settings.host else settings.host  # an IPv6 address
    return f"http://{host}:{settings.port}"


class ArenaClient:
    """`ArenaClient(base_url, token)`, `base_url` defaulting to `default_url()`; `http` replaces the
    underlying httpx.Client (tests pass a FastAPI TestClient). Use it as a context manager, or call
    `close`."""

    def __init__(
        self, base_url: str | None = None, token: str | None = None, *, http: httpx.Client | None = None
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if http is None:
            http = httpx.Client(base_url=(base_url or default_url()).rstrip("/"), timeout=TIMEOUT)
        self._http = http
        self._http.headers.update(headers)

    def __enter__(self) -> ArenaClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def upload(self, path: str | PathLike[str], game: str, name: str | None = None, **overrides: Any) -> Any:
        """Upload the ONNX file at `path` for `game`; `overrides` are manifest fields (player,
        simulations, c_puct, temperature, value, head). Returns the new bot."""
        return self._call("POST", "/bots", **_upload_form(path, {"game": game, "name": name, **overrides}))

    def tokens(self) -> Any:
        """The caller's active API tokens: id, name, created_at, last_used_at (never the token)."""
        return self._call("GET", "/tokens")

    def retire(self, bot_id: int) -> Any:
        return self._call("DELETE", f"/bots/{bot_id}")

    def bots(self, **filters: Any) -> Any:
        """Bots, newest first; filters: ladder, owner, status, limit, offset."""
        return self._call("GET", "/bots", params=filters)

    def bot(self, bot_id: int) -> Any:
        return self._call("GET", f"/bots/{bot_id}")

    def ladders(self) -> Any:
        return self._call("GET", "/ladders")

    def leaderboard(self, ladder_id: int) -> Any:
        return self._call("GET", f"/ladders/{ladder_id}/leaderboard")

    def games(self, **filters: Any) -> Any:
        """Games, newest first; filters: ladder, bot, result, reason, limit, offset."""
        return self._call("GET", "/games", params=filters)

    def game(self, game_id: int) -> Any:
        """The game with its replay."""
        return self._call("GET", f"/games/{game_id}")

    def predict(
        self,
        bot_id: int,
        *,
        actions: Sequence[Sequence[Sequence[int]]] | None = None,
        state: dict[str, Any] | None = None,
        seed: int = 0,
        config: dict[str, Any] | None = None,
        player: int | None = None,
    ) -> Any:
        """The move the bot would play after `actions` from the seeded start (or in `state`)."""
        body = {
            "bot_id": bot_id,
            "actions": actions,
            "state": state,
            "seed": seed,
            "config": config,
            "player": player,
        }
        return self._call(
            "POST", "/predict", json={key: value for key, value in body.items() if value is not None}
        )

    def start_training(self, game: str, episodes: int, time_limit_seconds: int, **options: Any) -> Any:
        """Start a training session; `options` are the other fields of POST /training-sessions
        (kit, blocks, filters, seed, base_bot_id, bot_name, simulations, games_per_generation,
        checkpoint_every; None leaves one out). Returns the queued session."""
        body = {"game": game, "episodes": episodes, "time_limit_seconds": time_limit_seconds, **options}
        return self._call(
            "POST",
            "/training-sessions",
            json={key: value for key, value in body.items() if value is not None},
        )

    def training_sessions(self, **paging: Any) -> Any:
        """Your training sessions, newest first; paging: limit, offset."""
        return self._call("GET", "/training-sessions", params=paging)

    def training_session(self, session_id: int) -> Any:
        """A session with its progress and checkpoints."""
        return self._call("GET", f"/training-sessions/{session_id}")

    def control_training(self, session_id: int, action: str) -> Any:
        """`action` is pause, resume or cancel; returns the session."""
        return self._call("POST", f"/training-sessions/{session_id}/{action}")

    def challenge_bot(self, bot_id: int, opponent_id: int, *, pairs: int = 4, rated: bool = False) -> Any:
        """Challenge `opponent_id` with your bot `bot_id`: `pairs` seat-swapped pairs. Returns the
        challenge."""
        body = {"bot_id": bot_id, "opponent_id": opponent_id, "pairs": pairs, "rated": rated}
        return self._call("POST", "/challenges", json=body)

    def challenge(self, challenge_id: int) -> Any:
        """A challenge with its progress, results and games."""
        return self._call("GET", f"/challenges/{challenge_id}")

    def create_competition(self, **terms: Any) -> Any:
        """A new competition (the caller must be an organiser); `terms` as POST /competitions takes them."""
        return self._call("POST", "/competitions", json=terms)

    def competitions(self, **paging: Any) -> Any:
        return self._call("GET", "/competitions", params=paging)

    def competition(self, competition_id: int) -> Any:
        return self._call("GET", f"/competitions/{competition_id}")

    def competition_leagues(self, competition_id: int) -> Any:
        """Its leagues: each boss, members and promotions (GET /competitions/{id}/leagues)."""
        return self._call("GET", f"/competitions/{competition_id}/leagues")

    def competition_results(self, competition_id: int) -> Any:
        """Its phase, its final's progress and ranking (GET /competitions/{id}/results)."""
        return self._call("GET", f"/competitions/{competition_id}/results")

    def competition_file(self, competition_id: int, name: str) -> bytes:
        """One of its final's files as bytes: results.csv, results.json or final.zip."""
        return self._call("GET", f"/competitions/{competition_id}/{name}", raw=True)

    def enter_competition(
        self, competition_id: int, *, path: str | PathLike[str] | None = None, bot_id: int | None = None,
        **overrides: Any,
    ) -> Any:  # fmt: skip
        """Enter the ONNX file at `path` (with manifest `overrides`), or your bot `bot_id` copied
        in. Returns the entered bot."""
        where = f"/competitions/{competition_id}/entries"
        if bot_id is not None:
            return self._call("POST", where, json={"bot_id": bot_id})
        assert path is not None, "an entry is a file or a bot"
        return self._call("POST", where, **_upload_form(path, overrides))

    def _call(self, method: str, path: str, *, raw: bool = False, **request: Any) -> Any:
        """The answer's JSON body (its bytes with `raw`); ArenaClientError for an error answer."""
        try:
            response = self._http.request(method, API_PREFIX + path, **request)
        except httpx.HTTPError as error:
            raise ArenaClientError(
                0, "unreachable", f"no answer from {self._http.base_url}: {error}"
            ) from None
        if raw and response.is_success:
            return response.content
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success:
            return body
        if not isinstance(body, dict):
            body = {}
        detail = str(body.get("detail") or response.reason_phrase or "the request failed")
        raise ArenaClientError(response.status_code, str(body.get("code") or "http_error"), detail)


def _upload_form(path: str | PathLike[str], fields: dict[str, Any]) -> dict[str, Any]:
    """The request arguments of an upload form: the file at `path` as `model`, and `fields` (those
    not None)."""
    path = Path(path)
    try:
        model_bytes = path.read_bytes()
    except OSError as error:
        raise ArenaClientError(0, "unreadable_file", f"cannot read {path}: {error.strerror}") from None
    data = {key: str(value) for key, value in fields.items() if value is not None}
    return {"data": data, "files": {"model": (path.name, model_bytes, "application/octet-stream")}}
