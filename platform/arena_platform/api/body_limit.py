"""An ASGI middleware that caps the size of every request body while it streams in.

- A declared `Content-Length` over the cap is answered 413 at once: the app never runs and not a
  byte of the body is read.
- Otherwise (chunked bodies, or a client sending more than it declared) the bytes are counted as
  the app receives them. The chunk that crosses the cap is never handed over: the app's `receive`
  raises instead, whatever the app answers after that is dropped, and the client gets the 413. So
  no route ever sees a body over the cap (a form parser may have seen the chunks before it).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_platform.api.errors import error_response


class BodyTooLarge(Exception):
    """Raised into the app by `receive` when the body crosses the cap."""


class BodySizeLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0
        overflowed = started = False

        async def counted_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    overflowed = True
                    raise BodyTooLarge(f"the request body passed {self.max_bytes} bytes")
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
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "payload_too_large", f"the request body is larger than the limit of {self.max_bytes:,} bytes"
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
