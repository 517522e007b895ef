"""The REST API (FastAPI) under /api/v1; `create_app` builds it."""

from arena_platform.api.app import create_app

__all__ = ["create_app"]
