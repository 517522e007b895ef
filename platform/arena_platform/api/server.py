"""How `arena serve` runs the app under uvicorn: whose forwarding headers it believes, and how long
a connection may hold the server without sending a request.

uvicorn closes a kept-alive connection after `timeout_keep_alive` idle seconds, but sets no limit
on the time a request's head (request line and headers) takes to arrive, and has no option for
one: a client that sends a header line now and then holds its connection for ever, and a few
thousand such clients exhaust the server's sockets. `HeadDeadline` adds that limit to uvicorn's
own HTTP protocol.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from arena_platform.settings import Settings


class HeadDeadline:
    """A mixin for uvicorn's HTTP protocols (h11, httptools): a connection is closed when a request's
    head is not complete `head_timeout` seconds after the connection opened, or after the first
    byte of its next request arrived. Uses the protocol's `loop`, `transport` and `cycle` (the
    current request, None before the first)."""

    head_timeout: float = 10.0
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._head_deadline: asyncio.TimerHandle | None = None
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm_head_deadline()
        super().data_received(data)  # type: ignore[misc]
        if not self._between_requests():
            self._disarm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_head_deadline(self) -> None:
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self.head_timeout, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self._between_requests():
            self.transport.close()


def http_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's own HTTP protocol (httptools when installed, else h11) with a HeadDeadline."""
    return type("ArenaHttpProtocol", (HeadDeadline, AutoHTTPProtocol), {"head_timeout": head_timeout})


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """The server `arena serve` runs `app` in, on the settings' address; `options` are more
    `uvicorn.Config` arguments (tests pass their own). X-Forwarded-For and -Proto are believed
    only from `settings.trusted_proxies`: uvicorn's default trusts 127.0.0.1, so any client on the
    server's host, or behind a local proxy that passes the header on, could choose its address."""
    trusted = settings.trusted_proxies.strip()
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted or None,
        timeout_keep_alive=settings.keep_alive_seconds,
        http=http_protocol(settings.header_timeout_seconds),
        **{"log_level": "warning", **options},
    )
