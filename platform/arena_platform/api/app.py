"""The FastAPI app factory. No global state: everything hangs off `app.state.services`."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime

from fastapi import APIRouter, FastAPI
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from arena_platform.api.body_limit import BodySizeLimit
from arena_platform.api.cache import ResponseCache
from arena_platform.api.deps import Services
from arena_platform.api.docs import api_description, install_docs
from arena_platform.api.errors import documented, install_error_handlers
from arena_platform.api.hosts import HostCache
from arena_platform.api.limits import ComputePool, RateLimits, shared_counter
from arena_platform.api.pages import install_pages, not_found_page
from arena_platform.api.routes import (
    accounts,
    bots,
    challenges,
    competitions,
    finals,
    frames,
    games,
    health,
    human_games,
    ladders,
    live,
    me,
    predict,
    training,
)
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine
from arena_platform.models import utc_now
from arena_platform.queue import Enqueue, celery_enqueue
from arena_platform.settings import Settings

API_PREFIX = "/api/v1"
# The routes whose body is a file (method, path pattern): uploads and uploads into a competition.
UPLOAD_ROUTES = (("POST", f"{API_PREFIX}/bots"), ("POST", rf"{API_PREFIX}/competitions/[^/]+/entries"))
PREDICT_HOSTS = 4  # model hosts (child processes) kept alive for predict; at least COMPUTE_SLOTS
# Validations and predictions computed at once, together; more wait their turn. One: searches are
# Python threads sharing the GIL with the event loop. 32 clients looping on predict (bobail UCT, 400
# simulations, 2 busy cores): one slot served 18 predictions in 10 s with the leaderboard's p50 at
# ~55 ms, two slots 21-22 with its p50 at 135-170 ms (idle: 9 ms; before the pool: 6.8 s).
COMPUTE_SLOTS = 1
PREDICTS_WAITING = 8  # predictions waiting for a slot; more are refused (503 busy)


def create_app(
    settings: Settings,
    *,
    engine: Engine | None = None,
    blobs: BlobStore | None = None,
    enqueue: Enqueue | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> FastAPI:
    """The API on `settings`; `engine`, `blobs` and `enqueue` replace the ones the settings name,
    and `clock` the time competitions are read by (a test's fixed clock).

    The database must be migrated already (`arena_platform.db.migrate`).
    """
    blobs = blobs or BlobStore(settings.resolved_blob_url)
    counter = shared_counter(settings)
    services = Services(
        settings=settings,
        engine=engine or make_engine(settings.resolved_database_url),
        blobs=blobs,
        enqueue=enqueue or celery_enqueue(settings.broker_url),
        hosts=HostCache(blobs.get, capacity=PREDICT_HOSTS),
        compute=ComputePool(slots=COMPUTE_SLOTS, max_waiting=PREDICTS_WAITING),
        rates=RateLimits.of(settings, counter),
        leaderboards=ResponseCache(settings.leaderboard_cache_seconds),
        clock=clock,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # What exists at startup (modules, classes, the app: ~150k objects) lives as long as the
        # server. Kept out of the cyclic collector's sight, a full collection under load takes
        # ~5 ms instead of ~110 ms, a pause of every request in flight every ~10 s. Both calls only
        # move the collector's lists; the shutdown gives the objects back to it.
        gc.freeze()
        yield
        gc.unfreeze()
        await run_in_threadpool(services.hosts.close)
        if counter is not None:  # its connections belong to this event loop
            await counter.aclose()
        if engine is None:  # made here, so closed here
            services.engine.dispose()

    app = FastAPI(
        title="Arena",
        summary="Upload game-playing neural networks; watch them play, rated on a leaderboard.",
        description=api_description(),
        version="1",
        docs_url=None,  # install_docs serves it from local files
        redoc_url=None,
        openapi_url=f"{API_PREFIX}/openapi.json",
        lifespan=lifespan,
    )
    app.state.services = services
    install_error_handlers(app, not_found_page=not_found_page)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_json_bytes,
        larger=dict.fromkeys(UPLOAD_ROUTES, settings.max_upload_bytes),
    )
    api = APIRouter(prefix=API_PREFIX, responses=documented(413, 422, 500))
    for module in (
        accounts,
        me,
        bots,
        challenges,
        competitions,
        finals,
        games,
        frames,
        human_games,
        ladders,
        live,
        predict,
        training,
        health,
    ):
        api.include_router(module.router)
    app.include_router(api)
    install_docs(app)  # /docs
    install_pages(app)  # the web pages and /static
    return app
