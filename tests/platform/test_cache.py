"""The leaderboard's short-lived response cache: expiry, one refresh at a time, disabled at 0; the
bodies it keeps (plain, gzip, ETag) and how they answer a request; its use from the event loop."""

from __future__ import annotations

import asyncio
import gzip
import re
import threading
import time

import anyio.to_thread
import pytest

from arena_platform.api.cache import Body, ResponseCache, accepts_gzip, etag_matches
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


def slow_board():
    """A compute that takes 50 ms to return b"board", and the list of its calls."""
    calls = []

    def compute() -> bytes:
        calls.append(None)
        time.sleep(0.05)
        return b"board"

    return compute, calls


def test_entries_are_served_until_their_ttl_expires():
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    compute, calls = counting([b"one", b"two", b"three"])
    assert cache.get(7, compute).plain == b"one"
    clock.now += 0.99
    assert cache.get(7, compute).plain == b"one"
    assert cache.get(8, compute).plain == b"two"  # per key
    clock.now += 0.02
    assert cache.get(7, compute).plain == b"three"
    assert len(calls) == 3


def test_invalidate_forgets_a_key():
    cache = ResponseCache(60.0)
    compute, _ = counting([b"old", b"new"])
    assert cache.get(1, compute).plain == b"old"
    cache.invalidate(1)
    cache.invalidate(2)  # unknown: nothing to do
    assert cache.get(1, compute).plain == b"new"


def test_errors_are_not_cached():
    cache = ResponseCache(60.0)

    def missing() -> bytes:
        raise LookupError("no such ladder")

    with pytest.raises(LookupError):
        cache.get(1, missing)
    assert cache.get(1, lambda: b"found").plain == b"found"


def test_zero_disables_the_cache():
    cache = ResponseCache(0)
    compute, _ = counting([b"a", b"b"])
    assert (cache.get(1, compute).plain, cache.get(1, compute).plain) == (b"a", b"b")


def test_without_a_cache_every_body_is_gzipped_at_the_fastest_level():
    board = b'{"entries": [' + b",".join(b'{"rank": %d}' % rank for rank in range(2000)) + b"]}"
    uncached, cached = ResponseCache(0).get(1, lambda: board), ResponseCache(1.0).get(1, lambda: board)
    assert gzip.decompress(uncached.gzipped) == gzip.decompress(cached.gzipped) == board
    assert (uncached.gzipped[8], cached.gzipped[8]) == (4, 0)  # the header's XFL: 4 is the fastest
    assert uncached.etag == cached.etag  # the tag is the plain bytes'


def test_one_thread_refreshes_while_the_others_serve_the_stale_bytes():
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    assert cache.get(1, lambda: b"stale").plain == b"stale"
    clock.now += 5.0  # stale: served while one thread refreshes
    entered, release = threading.Event(), threading.Event()
    refreshes = []

    def slow() -> bytes:
        refreshes.append(None)
        entered.set()
        assert release.wait(10)
        return b"fresh"

    answers: list[bytes] = []
    refresher = threading.Thread(target=lambda: answers.append(cache.get(1, slow).plain))
    refresher.start()
    assert entered.wait(10)
    others = [cache.get(1, slow).plain for _ in range(50)]  # would deadlock if they waited for the refresh
    release.set()
    refresher.join(10)
    assert others == [b"stale"] * 50
    assert answers == [b"fresh"]
    assert len(refreshes) == 1
    assert cache.get(1, slow).plain == b"fresh"


def test_concurrent_first_requests_compute_once():
    cache = ResponseCache(60.0)
    compute, calls = slow_board()

    threads = [threading.Thread(target=cache.get, args=(1, compute)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1


def test_a_refresh_overtaken_by_an_invalidation_is_not_kept():
    cache = ResponseCache(60.0)
    entered, release = threading.Event(), threading.Event()

    def before_the_write() -> bytes:
        entered.set()
        assert release.wait(10)
        return b"before"

    refresher = threading.Thread(target=cache.get, args=(1, before_the_write))
    refresher.start()
    assert entered.wait(10)
    cache.invalidate(1)  # a write lands while the refresh's query is under way
    release.set()
    refresher.join(10)
    assert cache.get(1, lambda: b"after").plain == b"after"


def test_a_body_is_kept_gzipped_and_tagged_by_its_bytes():
    body = Body.of(b'{"entries": []}' * 100)
    assert gzip.decompress(body.gzipped) == body.plain
    assert len(body.gzipped) < len(body.plain)
    assert re.fullmatch(r'W/"[0-9a-f]{32}"', body.etag)
    assert Body.of(body.plain) == body  # an unchanged leaderboard keeps its tag (and its gzip bytes)
    assert Body.of(b"{}").etag != body.etag


@pytest.mark.parametrize(
    ("header", "gzip_ok"),
    [
        ("gzip", True),
        ("gzip, deflate, br, zstd", True),
        ("br;q=1.0, GZIP;q=0.5", True),
        ("*", True),
        ("deflate, *;q=0.1", True),
        (None, False),
        ("", False),
        ("identity", False),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("*;q=0", False),
        ("gzip;q=0, *", False),  # named with q=0: refused, whatever * says
        ("gzip;q=high", False),  # a malformed weight accepts nothing
    ],
)
def test_accept_encoding_allows_gzip_when_named_or_starred_with_a_positive_weight(header, gzip_ok):
    assert accepts_gzip(header) is gzip_ok


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        ('W/"abc"', True),
        ('"abc"', True),  # weak comparison
        ('"x", W/"abc"', True),
        ("*", True),
        ('"abcd"', False),
        ('W/"ab"', False),
        (None, False),
        ("", False),
    ],
)
def test_if_none_match_names_the_tag(header, matches):
    assert etag_matches(header, 'W/"abc"') is matches


def test_a_body_answers_gzip_plain_or_304_as_the_request_asks():
    body = Body.of(b'{"entries": [1, 2, 3]}')
    plain = body.response({})
    zipped = body.response({"accept-encoding": "gzip, deflate"})
    unchanged = body.response({"accept-encoding": "gzip", "if-none-match": body.etag})
    assert (plain.status_code, plain.body, plain.headers.get("content-encoding")) == (200, body.plain, None)
    assert (zipped.status_code, zipped.body, zipped.headers["content-encoding"]) == (
        200,
        body.gzipped,
        "gzip",
    )
    assert (unchanged.status_code, unchanged.body) == (304, b"")
    for response in (plain, zipped, unchanged):
        assert response.headers["etag"] == body.etag
        assert response.headers["vary"] == "Accept-Encoding"
        assert response.headers["cache-control"] == "no-cache"
    assert plain.headers["content-type"] == "application/json"
    assert int(zipped.headers["content-length"]) == len(body.gzipped)


def test_the_event_loop_answers_fresh_entries_itself_and_refreshes_in_a_worker_thread(monkeypatch):
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    hops: list[None] = []
    run_sync = anyio.to_thread.run_sync

    async def counted_run_sync(*args, **kwargs):
        hops.append(None)
        return await run_sync(*args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted_run_sync)
    computed_in: list[int] = []

    def compute() -> bytes:
        computed_in.append(threading.get_ident())
        return b"board"

    async def scenario() -> list[bytes]:
        first = await cache.get_async(1, compute)  # missing: computed in a worker thread
        hits = [await cache.get_async(1, compute) for _ in range(20)]
        clock.now += 5.0
        refreshed = await cache.get_async(1, compute)
        return [body.plain for body in (first, *hits, refreshed)]

    assert asyncio.run(scenario()) == [b"board"] * 22
    assert len(hops) == len(computed_in) == 2  # the 20 hits stayed in the loop
    assert threading.get_ident() not in computed_in


def test_the_event_loop_serves_stale_bytes_while_one_worker_thread_refreshes():
    clock = Clock()
    cache = ResponseCache(1.0, clock=clock)
    cache.get(1, lambda: b"stale")
    clock.now += 5.0
    entered, release = threading.Event(), threading.Event()
    refreshes: list[None] = []

    def slow() -> bytes:
        refreshes.append(None)
        entered.set()
        assert release.wait(10)
        return b"fresh"

    async def scenario() -> tuple[bytes, list[bytes]]:
        refresh = asyncio.create_task(cache.get_async(1, slow))
        assert await anyio.to_thread.run_sync(entered.wait, 10)
        # answered while the refresh is blocked: neither the loop nor these requests wait for it
        others = await asyncio.gather(*(cache.get_async(1, slow) for _ in range(50)))
        release.set()
        return (await refresh).plain, [body.plain for body in others]

    fresh, others = asyncio.run(scenario())
    assert (fresh, others) == (b"fresh", [b"stale"] * 50)
    assert len(refreshes) == 1
    assert cache.get(1, slow).plain == b"fresh"


def test_concurrent_first_requests_from_the_event_loop_compute_once():
    cache = ResponseCache(60.0)
    compute, calls = slow_board()

    async def scenario() -> list[Body]:
        return await asyncio.gather(*(cache.get_async(1, compute) for _ in range(20)))

    assert {body.plain for body in asyncio.run(scenario())} == {b"board"}
    assert len(calls) == 1


def test_without_a_cache_the_event_loop_computes_every_time_in_a_worker_thread():
    cache = ResponseCache(0)
    compute, calls = counting([b"a", b"b"])

    async def scenario() -> list[bytes]:
        return [(await cache.get_async(1, compute)).plain for _ in range(2)]

    assert asyncio.run(scenario()) == [b"a", b"b"]
    assert len(calls) == 2


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
