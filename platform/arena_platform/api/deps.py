"""What the routes depend on: the app's services, a database session, the caller, typed ids."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine
from sqlmodel import Session

from arena_platform.api.cache import ResponseCache
from arena_platform.api.errors import ApiError
from arena_platform.api.hosts import HostCache
from arena_platform.api.limits import ComputePool, RateLimits
from arena_platform.blobs import BlobStore
from arena_platform.db import session as open_session
from arena_platform.models import ApiToken, User, utc_now
from arena_platform.queue import Enqueue
from arena_platform.settings import Settings
from arena_platform.store import users

MAX_ID = 2**31 - 1  # ids are 32-bit integers in every database; larger ones are malformed requests


@dataclass(frozen=True)
class Services:
    """Everything a request may need, created once by `create_app` and kept on `app.state`."""

    settings: Settings
    engine: Engine
    blobs: BlobStore
    enqueue: Enqueue
    hosts: HostCache  # model hosts for predict
    compute: ComputePool  # runs validation and predict's search, a few at a time
    rates: RateLimits  # per-client allowances kept in this process
    leaderboards: ResponseCache  # serialized leaderboards per ladder id, a second old at most
    clock: Callable[[], datetime] = utc_now  # the time competitions' openings and deadlines are read by


async def get_services(request: Request) -> Services:
    """Async, so that async routes get it without a hop to the threadpool (it does no I/O)."""
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


def get_session(services: ServicesDep) -> Iterator[Session]:
    """One session per request; routes commit what they write."""
    with open_session(services.engine) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]

_bearer = HTTPBearer(
    auto_error=False, description="an API token, from POST /api/v1/users or `arena user create NAME`"
)


def current_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)], session: SessionDep
) -> ApiToken:
    """The row of the request's bearer token, its use noted (`last_used_at`); 401 without a valid one."""
    token = users.active_token(session, token=_presented(credentials))
    if token is None:
        raise _bad_token()
    if users.note_token_use(session, token=token):
        session.commit()
    return token


def current_user(token: Annotated[ApiToken, Depends(current_token)], session: SessionDep) -> User:
    """The owner of the request's bearer token; 401 without a valid one."""
    user = session.get(User, token.user_id)
    assert user is not None  # a foreign key
    return user


_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _presented(credentials: HTTPAuthorizationCredentials | None) -> str:
    if credentials is None:
        raise ApiError(
            401,
            "unauthorized",
            "this request needs an API token: Authorization: Bearer <token>",
            headers=_CHALLENGE,
        )
    return credentials.credentials


def _bad_token() -> ApiError:
    return ApiError(401, "bad_token", "the API token is unknown or revoked", headers=_CHALLENGE)


def optional_user(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)], session: SessionDep
) -> User | None:
    """The token's owner for routes open to all (None without a token); 401 for a bad token, so a
    caller never silently gets the anonymous treatment by mistyping theirs."""
    return None if credentials is None else current_user(current_token(credentials, session), session)


CurrentUser = Annotated[User, Depends(current_user)]
CurrentToken = Annotated[ApiToken, Depends(current_token)]
OptionalUser = Annotated[User | None, Depends(optional_user)]
BotId = Annotated[int, Path(ge=1, le=MAX_ID, description="a bot's id")]
GameId = Annotated[int, Path(ge=1, le=MAX_ID, description="a game's id")]
LadderId = Annotated[int, Path(ge=1, le=MAX_ID, description="a ladder's id")]
Limit = Annotated[int, Query(ge=1, le=500, description="at most this many items")]
Offset = Annotated[int, Query(ge=0, le=MAX_ID, description="skip this many items")]
NO_NUL = r"^[^\x00]*$"  # PostgreSQL text cannot hold NUL characters: such filters are malformed
