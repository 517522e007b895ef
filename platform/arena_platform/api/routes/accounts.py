"""/users and /tokens: self-serve accounts and their API tokens.

Anyone may create an account (a few per client address per hour); its first token is shown in
the answer, once: Arena keeps only its hash. A token holder can issue more tokens (up to
`Settings.tokens_per_user` active at once), list them (never their secrets) and revoke any of
their own, the one in use included; a revoked token gets 401 from then on.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from arena_platform.api.deps import MAX_ID, CurrentToken, CurrentUser, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.api.limits import client_address
from arena_platform.store import users
from arena_platform.store.reads import UtcDatetime

router = APIRouter(tags=["accounts"])

TokenId = Annotated[int, Path(ge=1, le=MAX_ID, description="a token's id")]
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"


class NewUser(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(max_length=users.MAX_NAME_CHARS, description="1 to 64 printable characters")


class IssuedToken(BaseModel):
    """A token in plain text: shown this once, never again (send it as `Authorization: Bearer`)."""

    token_id: int  # to revoke it: DELETE /api/v1/tokens/{token_id}
    token: str


class NewAccount(IssuedToken):
    user_id: int
    name: str


class NewToken(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=PRINTABLE, description="a label, e.g. laptop"
    )


class TokenView(BaseModel):
    """An active token as its holder sees it in a listing: never the token itself."""

    token_id: int
    name: str | None
    created_at: UtcDatetime
    last_used_at: UtcDatetime | None  # to the minute; None: never used


async def count_account(http: Request, services: ServicesDep) -> None:
    """429 once the client address has created its accounts of the hour (before the body is read)."""
    await services.rates.accounts_by_address.check(
        client_address(http), what="new accounts per hour from one address"
    )


@router.post(
    "/users",
    status_code=201,
    summary="Create an account and its first API token",
    responses=documented(409, 422, 429),
    dependencies=[Depends(count_account)],
)
async def create_user(body: NewUser, session: SessionDep) -> NewAccount:
    """Rate-limited per client address; the token in the answer is shown only this once."""
    return await run_in_threadpool(_create_user, session, body.name)


async def count_token(user: CurrentUser, services: ServicesDep) -> None:
    """429 once the user was issued `tokens_per_hour` tokens within the hour: a revoked token's row
    stays, so issuing and revoking in a loop must not grow the table without bound."""
    await services.rates.tokens_by_owner.check(user.id, what="API tokens issued per hour per user")


@router.post(
    "/tokens",
    status_code=201,
    summary="Issue another API token",
    responses=documented(401, 409, 429),
    dependencies=[Depends(count_token)],
)
def issue_token(
    user: CurrentUser, session: SessionDep, services: ServicesDep, body: NewToken | None = None
) -> IssuedToken:
    """409 `too_many_tokens` when you hold `tokens_per_user` active tokens already; 429 when you
    were issued `tokens_per_hour` within the hour."""
    try:
        token = users.issue_token(
            session,
            user_id=user.id,
            name=body.name if body else None,
            max_active=services.settings.tokens_per_user,
        )
    except users.TooManyTokens as error:
        session.rollback()
        raise ApiError(409, "too_many_tokens", str(error)) from None
    return _issued(session, token)


@router.get("/tokens", summary="Your active API tokens, oldest first", responses=documented(401))
def list_tokens(user: CurrentUser, session: SessionDep) -> list[TokenView]:
    """Each token's id, name and times; the tokens themselves are never shown again."""
    return [
        TokenView(token_id=row.id, name=row.name, created_at=row.created_at, last_used_at=row.last_used_at)
        for row in users.list_tokens(session, user_id=user.id)
    ]


@router.delete(
    "/tokens/current",
    status_code=204,
    summary="Revoke the API token of this request",
    responses=documented(401),
)
def revoke_current_token(token: CurrentToken, session: SessionDep) -> Response:
    assert token.id is not None  # a stored row
    users.revoke_token_by_id(session, user_id=token.user_id, token_id=token.id)
    session.commit()
    return Response(status_code=204)


@router.delete(
    "/tokens/{token_id}",
    status_code=204,
    summary="Revoke one of your API tokens",
    responses=documented(401, 404),
)
def revoke_token(token_id: TokenId, user: CurrentUser, session: SessionDep) -> Response:
    """404 when the token is unknown, revoked already, or someone else's."""
    if not users.revoke_token_by_id(session, user_id=user.id, token_id=token_id):
        raise not_found(f"an active token {token_id} of yours")
    session.commit()
    return Response(status_code=204)


def _create_user(session: Session, name: str) -> NewAccount:
    try:
        user, token = users.create_user(session, name=name)
        issued = _issued(session, token)
    except users.InvalidName as error:
        raise ApiError(422, "invalid_name", str(error)) from None
    except users.NameTaken as error:
        raise ApiError(409, "name_taken", f"{error}: choose another name") from None
    except IntegrityError:  # another request took the name between the check and the insert
        session.rollback()
        raise ApiError(409, "name_taken", f"the user name {name!r} is taken: choose another name") from None
    assert user.id is not None
    return NewAccount(user_id=user.id, name=user.name, **issued.model_dump())


def _issued(session: Session, token: str) -> IssuedToken:
    """The new token with its id, committed."""
    row = users.active_token(session, token=token)
    assert row is not None  # issued just now
    session.commit()
    return IssuedToken(token_id=row.id, token=token)
