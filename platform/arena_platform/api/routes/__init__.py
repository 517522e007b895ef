"""The API's routers, one module per resource, all mounted under /api/v1."""
