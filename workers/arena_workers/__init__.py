"""Arena's workers: the Celery app, its task shims and the batched match runner."""
