"""The leaderboard's short-lived response cache: expiry, one refresh at a time, disabled at 0."""

from __future__ import annotations

import threading
import time

import pytest

from arena_platform.api.cache import ResponseCache
from arena_platform.settings import Settings, SettingsError, load_settings


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counting(values: list[bytes]):
    calls = []

    def compute() -> bytes:
        calls.append(None)
        return values[len(calls) - 1]

    return compute, calls


def test_entries_are_served_until_their_ttl_expires():
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    compute, calls = counting([b"one", b"two", b"three"])
    assert cache.get(7, compute) == b"one"
    clock.now += 0.99
    assert cache.get(7, compute) == b"one"
    assert cache.get(8, compute) == b"two"  # per key
    clock.now += 0.02
    assert cache.get(7, compute) == b"three"
    assert len(calls) == 3


def test_invalidate_forgets_a_key():
    cache = ResponseCache(60.0)
    compute, _ = counting([b"old", b"new"])
    assert cache.get(1, compute) == b"old"
    cache.invalidate(1)
    cache.invalidate(2)  # unknown: nothing to do
    assert cache.get(1, compute) == b"new"


def test_errors_are_not_cached():
    cache = ResponseCache(60.0)

    def missing() -> bytes:
        raise LookupError("no such ladder")

    with pytest.raises(LookupError):
        cache.get(1, missing)
    assert cache.get(1, lambda: b"found") == b"found"


def test_zero_disables_the_cache():
    cache = ResponseCache(0)
    compute, _ = counting([b"a", b"b"])
    assert (cache.get(1, compute), cache.get(1, compute)) == (b"a", b"b")


def test_one_thread_refreshes_while_the_others_serve_the_stale_bytes():
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    assert cache.get(1, lambda: b"stale") == b"stale"
    clock.now += 5.0  # stale: served while one thread refreshes
    entered, release = threading.Event(), threading.Event()
    refreshes = []

    def slow() -> bytes:
        refreshes.append(None)
        entered.set()
        assert release.wait(10)
        return b"fresh"

    answers: list[bytes] = []
    refresher = threading.Thread(target=lambda: answers.append(cache.get(1, slow)))
    refresher.start()
    assert entered.wait(10)
    others = [cache.get(1, slow) for _ in range(50)]  # would deadlock if they waited for the refresh
    release.set()
    refresher.join(10)
    assert others == [b"stale"] * 50
    assert answers == [b"fresh"]
    assert len(refreshes) == 1
    assert cache.get(1, slow) == b"fresh"


def test_concurrent_first_requests_compute_once():
    cache = ResponseCache(60.0)
    calls = []

    def compute() -> bytes:
        calls.append(None)
        time.sleep(0.05)
        return b"board"

    threads = [threading.Thread(target=cache.get, args=(1, compute)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_the_ttl_must_be_at_least_zero(seconds):
    with pytest.raises(SettingsError, match="ARENA_LEADERBOARD_CACHE_SECONDS"):
        Settings(leaderboard_cache_seconds=seconds).check()
    with pytest.raises(ValueError, match="at least 0"):
        ResponseCache(-1.0)


def test_the_ttl_setting_is_read_from_the_environment():
    assert Settings().leaderboard_cache_seconds == 1.0
    assert load_settings({"ARENA_LEADERBOARD_CACHE_SECONDS": "0"}).leaderboard_cache_seconds == 0.0
    assert load_settings({"ARENA_LEADERBOARD_CACHE_SECONDS": "2.5"}).leaderboard_cache_seconds == 2.5
