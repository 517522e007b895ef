"""The API's documentation: Swagger UI at /docs from local files, and the bot contract in OpenAPI.

Swagger UI's files come from the `swagger-ui-bundle-v2` package and are served under /docs/assets,
so /docs works with no access to the internet (no CDN). The OpenAPI description carries the bot
contract: how an ONNX file must look, written from the contract's own constants, and each game's
tensors, from the game registry and the games' encoding modules (so it cannot go stale).
"""

from __future__ import annotations

import importlib
import inspect

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from arena_bots.manifest import HEAD_KINDS, METADATA_PREFIX, PLAYER_KINDS, VALUE_KINDS, VALUE_OUTPUT, Manifest
from arena_games.api import Game
from arena_games.registry import GAMES

DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"


def install_docs(app: FastAPI) -> None:
    """Adds /docs (Swagger UI on `app.openapi_url`) and its assets; `app` has `docs_url=None`."""
    assert app.openapi_url is not None
    page = get_swagger_ui_html(
        openapi_url=app.openapi_url,
        title=f"{app.title} API",
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
    )

    async def docs() -> HTMLResponse:
        return page

    app.add_api_route(DOCS_PATH, docs, methods=["GET"], include_in_schema=False)
    app.mount(ASSETS_PATH, StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")


def api_description() -> str:
    """The OpenAPI description (Markdown): what Arena is, how to call it, and the bot contract."""
    fields = ", ".join(f"`{METADATA_PREFIX}{name}`" for name in Manifest.__dataclass_fields__)
    games = "\n\n".join(_game_section(game) for game in GAMES.values())
    return f"""\
Upload game-playing neural networks as ONNX files; Arena validates them as untrusted data, plays
them against each other in seeded, compute-budgeted matches and rates them on a leaderboard.

**Calling it.** Reads are open. Writes need an API token (`Authorization: Bearer <token>`):
create an account with `POST /api/v1/users`, which shows its first token once. Every error has the
body `{{"detail": <a sentence>, "code": <snake_case>}}`; a `429` or `503` says in `Retry-After` when
to try again. Uploads are limited per user per hour (rejected ones count); `predict` per client
address, or per token owner with a token.

**Training on the platform.** `POST /api/v1/training-sessions` queues a training session for the
training workers (503 `no_training_workers` while none runs); every few generations its network
enters the game's ladder as the next version of the session's bot, marked as a checkpoint, and is
rated like every bot. `GET /api/v1/training-sessions/{{id}}` follows its progress, loss curve and
checkpoints' ratings; its owner pauses, resumes or cancels it.

## A bot

One ONNX file and a manifest. The manifest can travel in the file's `metadata_props` as
{fields}; the upload form's fields override those. `player` is one of
{_listed(PLAYER_KINDS)}: `mcts` searches (PUCT, the network's priors and values, the ladder's
simulations per move), `greedy` plays the best action, `sample` draws from softmax(logits /
temperature).

- **Inputs**: exactly the game's input tensors below, float32, with a dynamic batch dimension first.
- **Outputs**: per action head, logits (`head` = `policy`) or action values (`head` = `q`), shaped
  (batch, head size) and named after the head kind ({_listed(HEAD_KINDS)}) in a one-head game,
  `<kind>_<head>` otherwise. Search needs `{VALUE_OUTPUT}`, shaped (batch,) or (batch, 1), for the
  player to move, read as the manifest's `value` says: {_listed(VALUE_KINDS)} (tanh: in [-1, 1];
  sigmoid: P(win)).
- Arena masks illegal actions itself; the model never sees a legal mask.
- Validation, before anything is stored: size and graph limits, an operator allow-list, no
  external data, the shapes above, finite outputs on real positions, a speed measurement (in the
  model host's CPU time, so a busy server changes no verdict) and a smoke game. A refusal is a
  `422` whose `code` and `detail` say what to fix.

## The games

{games}
"""


def _game_section(game: Game) -> str:
    """A game's spec as a table, then its encoding module's own description of the inputs."""
    spec = game.spec
    rows = [
        *(f"| input | `{name}` | {' x '.join(map(str, shape))} |" for name, shape in spec.inputs.items()),
        *(f"| action head | `{name}` | {size} actions |" for name, size in spec.heads.items()),
    ]
    encoding = importlib.import_module(f"arena_games.{spec.name}.encoding")  # fixed file names
    return (
        f"### {spec.title} (`{spec.name}`, version {spec.version})\n\n"
        f"{spec.num_players} players, at most {spec.max_length} steps.\n\n"
        "| kind | name | shape or size |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"```text\n{inspect.cleandoc(encoding.__doc__ or '')}\n```"
    )


def _listed(words: tuple[str, ...]) -> str:
    return ", ".join(f"`{word}`" for word in words)
