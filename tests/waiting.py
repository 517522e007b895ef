"""Waiting in tests on a state another process or thread reaches: poll, and fail naming what never came."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.05


def wait_until(condition: Callable[[], object], what: str, *, timeout: float) -> None:
    """Returns once `condition()` is truthy; fails "timed out waiting until `what`" after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(POLL_S)
