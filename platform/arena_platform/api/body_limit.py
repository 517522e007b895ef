"""An ASGI middleware that caps the size of every request body while it streams in.

The cap is per route, so that no route parses more than it needs: `max_bytes` for every request
(JSON bodies: a few KiB hold any real one), `larger` for the routes named there (the upload form).
A JSON body is parsed whole before any check of the route runs, so its cap bounds the parse, the
validation and the error list of a hostile body.

- A declared `Content-Length` over the cap is answered 413 at once: the app never runs and not a
  byte of the body is read.
- Otherwise (chunked bodies, or a client sending more than it declared) the bytes are counted as
  the app receives them. The chunk that crosses the cap is never handed over: the app's `receive`
  raises instead, whatever the app answers after that is dropped, and the client gets the 413. So
  no route ever sees a body over the cap (a form parser may have seen the chunks before it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_platform.api.errors import error_response


class BodyTooLarge(Exception):
    """Raised into the app by `receive` when the body crosses the cap."""


class BodySizeLimit:
    """`larger` maps (method, path pattern: a regular expression the whole path matches) to the cap
    of those routes; every other request gets `max_bytes`."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, larger: Mapping[tuple[str, str], int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.larger = [(method, re.compile(path), cap) for (method, path), cap in (larger or {}).items()]

    def _cap(self, method: str, path: str) -> int:
        caps = (cap for known, pattern, cap in self.larger if known == method and pattern.fullmatch(path))
        return next(caps, self.max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self._cap(scope["method"], scope["path"])
        declared = _declared_length(scope)
        if declared is not None and declared > max_bytes:
            await _refuse(max_bytes, scope, receive, send)
            return
        received = 0
        overflowed = started = False

        async def counted_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    overflowed = True
                    raise BodyTooLarge(f"the request body passed {max_bytes} bytes")
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if overflowed and not started:
                return  # the app's answer to a body it never fully got; the 413 replaces it
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not overflowed:
                raise
        if overflowed and not started:
            await _refuse(max_bytes, scope, receive, send)


async def _refuse(max_bytes: int, scope: Scope, receive: Receive, send: Send) -> None:
    response = error_response(
        413,
        "payload_too_large",
        f"the request body is larger than this route's limit of {max_bytes:,} bytes",
    )
    response.headers["Connection"] = "close"  # the rest of the body is never read
    await response(scope, receive, send)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
