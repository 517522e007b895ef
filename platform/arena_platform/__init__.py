"""Arena's service: the FastAPI app, the SQL store, ratings, scheduling and the `arena` CLI."""
