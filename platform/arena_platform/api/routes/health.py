"""/health: is the API up and can it reach its database."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from arena_platform.api.deps import SessionDep
from arena_platform.api.errors import ApiError, documented

router = APIRouter(tags=["meta"])


class Health(BaseModel):
    status: str  # "ok"


@router.get("/health", summary="Liveness and database reachability", responses=documented(503))
def health(session: SessionDep) -> Health:
    try:
        session.connection().exec_driver_sql("SELECT 1")
    except SQLAlchemyError:
        raise ApiError(503, "database_unavailable", "the API cannot reach its database") from None
    return Health(status="ok")
