"""How the API hands work to the workers: Celery messages sent by task name (ARCHITECTURE §1, §5).

The API does not import the workers' code; it knows the task names and the broker, nothing else.
`Enqueue` is the seam: `create_app` takes any callable of that shape, so tests record what was
enqueued instead of sending it. The embedded default's broker is `memory://`: kombu's in-memory
transport is shared by every Celery app of one process, so the in-process worker receives what
this client sends.
"""

from __future__ import annotations

from typing import Any, Protocol

from celery import Celery

SCHEDULE_LADDER = "arena.schedule_ladder"  # args: ladder ids; books each ladder's next pairings
PLAY_PAIRINGS = "arena.play_pairings"  # args: [pairing id, ...]; played as one batch (or urgent ones instead)
TRAIN_SESSION = "arena.train_session"  # args: training session id; trains it for a while

# Training runs on its own queue, so that match workers never need PyTorch: `arena worker` consumes
# the default queue, `arena worker --queues training` the training sessions.
DEFAULT_QUEUE = "celery"
TRAINING_QUEUE = "training"
TASK_ROUTES = {TRAIN_SESSION: {"queue": TRAINING_QUEUE}}


class Enqueue(Protocol):
    """Send the task called `task_name` with positional `args` (JSON-safe); blocks while publishing."""

    def __call__(self, task_name: str, *args: Any) -> None: ...


def celery_client(broker_url: str) -> Celery:
    """A send-only Celery app on `broker_url`: JSON messages, a few publish retries, then an error."""
    app = Celery("arena-api", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        broker_connection_timeout=4.0,  # seconds per connection attempt
        task_publish_retry_policy={"max_retries": 3, "interval_start": 0, "interval_step": 0.5},
        task_routes=TASK_ROUTES,
    )
    return app


def celery_enqueue(broker_url: str) -> Enqueue:
    """An `Enqueue` that publishes through a Celery client app on `broker_url`."""
    app = celery_client(broker_url)

    def enqueue(task_name: str, *args: Any) -> None:
        app.send_task(task_name, args=args)

    return enqueue
