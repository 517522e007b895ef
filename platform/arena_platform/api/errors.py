"""Every error the API answers has the body `{"detail": <a sentence>, "code": <snake_case>}`.

Some carry more fields (`errors` for a malformed request, `report` for a rejected model). A
request can only produce a 500 through a bug in Arena: those are logged with their traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.responses import Response

from arena_platform.store.refusals import Refused

API_PATHS = "/api/"  # paths under this answer JSON errors, always; see install_error_handlers
# A malformed request's 422 names its first few problems, each shortened: a hostile body with
# thousands of wrong keys must not buy an answer thousands of times larger than itself.
MAX_PROBLEMS = 10
MAX_PROBLEM_CHARS = 200  # per name in a problem's `loc`, and for its `msg`

_log = logging.getLogger(__name__)

# The code of an error raised without one (by Starlette's router, FastAPI's security helpers...).
_CODES_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    503: "unavailable",
}


class ErrorBody(BaseModel):
    """The body of every error response (documented in OpenAPI for each route)."""

    detail: str
    code: str


class Problem(BaseModel):
    """One wrong part of a malformed request: where (path of names and indices) and what."""

    loc: list[str]
    msg: str


class InvalidRequest(ErrorBody):
    """A 422: a malformed request (code `invalid_request`) names its first wrong parts (at most
    10) in `errors`, and `detail` says how many there are; a well-formed request the route refuses
    has only `detail` and `code`."""

    errors: list[Problem] | None = None


class ApiError(HTTPException):
    """An error for the client: HTTP status, machine code, a sentence, and optional extra fields."""

    def __init__(
        self,
        status_code: int,
        code: str,
        detail: str,
        *,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(status_code=status_code, detail=detail, headers=dict(headers or {}) or None)
        self.code = code
        self.extra = dict(extra or {})


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error statuses, all with the error body (422's with `errors`)."""
    return {status: {"model": InvalidRequest if status == 422 else ErrorBody} for status in statuses}


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} does not exist")


def refused(refusal: Refused) -> ApiError:
    """The API's answer to a store's refusal, with Retry-After where time lifts it."""
    wait = refusal.retry_after
    headers = None if wait is None else {"Retry-After": str(wait)}
    return ApiError(refusal.status, refusal.code, str(refusal), headers=headers)


def error_response(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"detail": detail, "code": code, **extra}, status_code=status)


def install_error_handlers(
    app: FastAPI, *, not_found_page: Callable[[Request], Response] | None = None
) -> None:
    """Error bodies as above. `not_found_page(request)`, when given, answers a 404 outside the API
    (a person's browser at an unknown page); under API_PATHS a 404 stays JSON."""

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 404 and not_found_page and not request.url.path.startswith(API_PATHS):
            return not_found_page(request)
        code = getattr(error, "code", None) or _CODES_BY_STATUS.get(error.status_code, "error")
        response = error_response(error.status_code, code, str(error.detail), **getattr(error, "extra", {}))
        response.headers.update(error.headers or {})
        if error.status_code == 405:  # Starlette names the methods of the first route of the path only
            response.headers["Allow"] = ", ".join(allowed_methods(request.app, request.url.path))
        return response

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(Exception, _bug)


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `path` answers, sorted (the `Allow` of a 405). The routes of
    included routers too: FastAPI keeps them nested, and its contexts give their full paths."""
    methods: set[str] = set()
    for route in iter_route_contexts(app.router.routes):
        pattern = getattr(route, "path_regex", None)
        if pattern is not None and route.methods and pattern.match(path):
            methods |= route.methods
    return sorted(methods)


async def _invalid_request(request: Request, error: Exception) -> JSONResponse:
    """422 naming the first MAX_PROBLEMS wrong fields; the offending input is not echoed (it may
    not be JSON, or be huge), and names and messages are cut to MAX_PROBLEM_CHARS."""
    assert isinstance(error, RequestValidationError)
    found = error.errors()
    problems = [
        {
            "loc": [_shortened(str(part)) for part in problem.get("loc", ())],
            "msg": _shortened(problem.get("msg")),
        }
        for problem in found[:MAX_PROBLEMS]
    ]
    first = problems[0] if problems else {"loc": [], "msg": "the request is malformed"}
    detail = f"{'.'.join(first['loc']) or 'request'}: {first['msg']}"
    if len(found) > 1:
        detail += f" (and {len(found) - 1:,} more problems)"
    return error_response(422, "invalid_request", detail, errors=problems)


def _shortened(text: object) -> str:
    text = str(text or "")
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


async def _bug(request: Request, error: Exception) -> JSONResponse:
    _log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=error)
    return error_response(500, "internal_error", "Arena failed to answer this request; the error is logged")
