"""The Celery app, configured from Settings (ARCHITECTURE §5, §8).

Delivery is at least once, and the database makes it count once:
- `task_acks_late` with `task_reject_on_worker_lost`: a message is acknowledged after its task ran,
  and one whose pool child was killed goes back to the queue (without the latter it was silently
  lost, §8). `worker_prefetch_multiplier=1`: a worker holds no more than it runs.
- Redis redelivers an unacknowledged message after its visibility timeout, so that timeout is twice
  the hard time limit: a task still running is never started a second time beside itself (§8).
- The hard time limit kills a task; the soft one, earlier, lets the runner give its claims back.
- JSON only: the broker carries ids, never pickles.
The sweep is not sent through the broker on a schedule: `arena_workers.sweeper` runs it every
heartbeat in a process of its own (`arena beat`, or beside `arena worker --beat`). It also refits
the ladders whose ratings miss games, so it doubles as the periodic refit.

Each process builds its `WorkerContext` (database engine, blob store, model hosts) on first use,
so a prefork pool's children never share connections with their parent; the embedded worker hands
in its own. Model hosts close when the worker process shuts down.
"""

from __future__ import annotations

import base64
import json
import os
import weakref
from typing import Any

from celery import Celery, signals
from kombu.transport import memory as memory_transport
from kombu.transport import redis as redis_transport

from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine
from arena_platform.queue import DEFAULT_QUEUE, PLAY_PAIRINGS, TASK_ROUTES
from arena_platform.settings import Settings
from arena_workers.context import PLAY_PAIRING, WorkerContext
from arena_workers.tasks import register_tasks

SOFT_LIMIT_SHARE = 0.9  # the soft time limit, as a share of the hard one
# Seconds between the in-memory broker's polls (kombu's default, 1 s, let the embedded worker's
# consumer take one message a second while its pool was busy: each play message brings a refit and
# a scheduling message, so the play messages waited behind a growing queue with the workers idle).
MEMORY_POLLING_S = 0.05

_APPS: weakref.WeakSet[ArenaCelery] = weakref.WeakSet()  # to close their contexts at shutdown


class ArenaCelery(Celery):
    """A Celery app that carries its Settings and this process's WorkerContext."""

    def __init__(self, settings: Settings, context: WorkerContext | None = None) -> None:
        super().__init__("arena", broker=settings.broker_url, set_as_current=False)
        self.settings = settings
        self._context = context
        _APPS.add(self)

    @property
    def context(self) -> WorkerContext:
        """The context of this process's tasks, built on first use from the settings."""
        if self._context is None:
            self._context = WorkerContext(
                settings=self.settings,
                engine=make_engine(self.settings.resolved_database_url),
                blobs=BlobStore(self.settings.resolved_blob_url),
                enqueue=self.enqueue,
                waiting_pairings=self.waiting_pairings,
            )
        return self._context

    def enqueue(self, task_name: str, *args: Any) -> None:
        """Sends the task called `task_name` with id arguments (the `arena_platform.queue.Enqueue` shape)."""
        self.send_task(task_name, args=args)

    def waiting_pairings(self) -> set[int] | None:
        """The ids of the pairings that a message waiting in the play queue names (not those a worker
        took: a message a worker holds is being played, or came back to the queue, or is lost with
        its connection until the broker's visibility timeout); None where the broker cannot tell."""
        with self.connection_for_read() as connection:
            messages = _waiting_messages(connection.default_channel, DEFAULT_QUEUE)
        if messages is None:
            return None
        return {pairing_id for message in messages for pairing_id in _pairing_ids(message)}

    def close_context(self) -> None:
        if self._context is not None:
            self._context.close()


def _waiting_messages(channel: Any, queue: str) -> list[dict[str, Any]] | None:
    """The raw messages (kombu's envelopes) waiting in `queue` on Redis or the in-memory broker,
    read without taking them; None for other brokers."""
    if isinstance(channel, redis_transport.Channel):
        keys = [channel._q_for_pri(queue, priority) for priority in channel.priority_steps]
        return [json.loads(raw) for key in keys for raw in channel.client.lrange(key, 0, -1)]
    if isinstance(channel, memory_transport.Channel):
        return list(channel._queue_for(queue).queue)
    return None


def _pairing_ids(message: dict[str, Any]) -> list[int]:
    """The pairing ids that a play_pairing(s) task message carries (Celery's protocol 2: the body
    is [args, kwargs, embed])."""
    if message.get("headers", {}).get("task") not in (PLAY_PAIRING, PLAY_PAIRINGS):
        return []
    body = message["body"]
    if message.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    (ids, *_), _kwargs, _embed = json.loads(body)
    return ids if isinstance(ids, list) else [ids]


def create_celery_app(settings: Settings, *, context: WorkerContext | None = None) -> ArenaCelery:
    """The app on `settings.broker_url` with every Arena task; `context` replaces the per-process one."""
    app = ArenaCelery(settings, context)
    app.conf.update(celery_config(settings))
    register_tasks(app, lambda task_app: task_app.context)
    return app


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery's settings for Arena (see the module's docstring); times in seconds."""
    hard_limit = settings.task_time_limit_seconds
    return {
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": hard_limit,
        "task_soft_time_limit": max(1, int(hard_limit * SOFT_LIMIT_SHARE)),
        "broker_transport_options": {"visibility_timeout": 2 * hard_limit}
        | ({"polling_interval": MEMORY_POLLING_S} if settings.embedded_worker else {}),
        "broker_connection_retry_on_startup": True,
        "worker_cancel_long_running_tasks_on_connection_loss": True,  # their messages come back
        "worker_redirect_stdouts": False,
        "worker_send_task_events": True,  # for Flower
        "task_send_sent_event": True,
        "task_routes": TASK_ROUTES,  # training sessions go to the `training` queue
    }


def worker_argv(
    settings: Settings, *, loglevel: str = "INFO", queues: tuple[str, ...] = (DEFAULT_QUEUE,)
) -> list[str]:
    """The `celery worker` command line for `app.worker_main`: a prefork pool of
    `settings.worker_concurrency` processes consuming `queues`, a node name unique per process
    (several workers may share a host)."""
    pool = ["--pool=prefork", f"--concurrency={settings.worker_concurrency}"]
    name = f"--hostname=arena-{os.getpid()}@%h"
    return ["worker", f"--loglevel={loglevel}", name, f"--queues={','.join(queues)}", *pool]


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _close_contexts(**_: Any) -> None:
    """Closes the model hosts of this process when its worker (or pool child) shuts down."""
    for app in list(_APPS):
        app.close_context()
