"""The match runner: plain functions that the tasks of `arena_workers.tasks` call (ARCHITECTURE §4, §5).

A pairing's way through a worker: claim it with a conditional update (exactly one claimer wins);
renew its lease from a background thread while playing; play the games of every pairing claimed
together in one `play_many` batch per game (a seat-swapped pair of games per seeded opening); write
the replays to the blob store; record the games and mark the pairing done in one transaction, so a
re-delivered or re-run task never counts a game twice; then enqueue a refit and the next scheduling
round of each ladder that got games (booked at once where the games were urgent: an SPRT's pairs
keep coming until its verdict).

The database is the truth: the broker only carries ids. Every process that claims beats into the
database (`arena_workers.liveness`); one that dies leaves its pairings running, and the sweeper puts
them back in the queue once its heartbeat stops (or their leases lapse). What a failure costs the
pairing is the rule of `arena_platform.store.pairings`: only what can be traced to the pairing
itself counts, and `max_attempts` such failures fail it (scheduling then books the pair again).

Only a bot's own fault loses a game: its model timing out on its own CPU time, failing, giving
non-finite numbers, crashing a fresh host again, or an illegal move. A fault of the platform (a host
closed, killed from outside, not started or starved of CPU, Arena's own code raising, the worker
shutting down, the database going away) stops the batch, and its pairings go back to the queue
without using up an attempt, to be played again from the start.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlmodel import col, select

from arena_bots.host import ModelFault, ModelHost, second_loss_verdict
from arena_bots.loading import house_player, network_player
from arena_bots.manifest import Manifest
from arena_bots.match import MatchResult, MatchSetup, PlatformFault, Player, play_many
from arena_bots.pairs import first_seat_score, paired_setups
from arena_games.api import Game
from arena_games.registry import get_game
from arena_platform.blobs import BlobStore
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing, utc_now
from arena_platform.queue import PLAY_PAIRINGS, SCHEDULE_LADDER, TRAIN_SESSION, Enqueue
from arena_platform.settings import Settings
from arena_platform.store.live import drop_stale
from arena_platform.store.pairings import (
    PAIRINGS_PER_TASK,
    QUEUED,
    Sweep,
    claim_pairing,
    forget_silent_workers,
    get_pairing,
    mark_sent,
    most_urgent,
    release_pairing,
    renew_lease,
    running_owners,
    silent_workers,
    sweep_pairings,
    task_size,
    urgent_ladders,
)
from arena_platform.store.ratings import refit_ladder, stale_ladders
from arena_platform.store.results import PlayedGame, record_pairing
from arena_platform.store.scheduling import book_rounds, stalled_ladders, task_messages
from arena_platform.store.training import (
    drop_ended_states,
    holds_state,
    running_session_owners,
    sweep_sessions,
)
from arena_workers.live import LiveWriter
from arena_workers.liveness import DEATH_BEATS, ProcessBeat, claim_owner, owners_of

log = logging.getLogger(__name__)

# Task names (the broker's vocabulary); arguments are ids only. PLAY_PAIRINGS: arena_platform.queue.
PLAY_PAIRING = "arena.play_pairing"  # (pairing_id)
REFIT = "arena.refit"  # (ladder_id)
SWEEP = "arena.sweep"  # ()

MODEL_CACHE_SIZE = 2 * PAIRINGS_PER_TASK  # model hosts per worker process: a batch's bots all fit


class RunnerError(Exception):
    """A pairing that cannot be played for a reason that is not the bots' fault (a deployment problem)."""


@dataclass
class WorkerContext:
    """What the tasks of one worker process share. `enqueue` sends a task by name with id arguments.

    `waiting_pairings` names the pairings of the messages waiting in the play queue (it answers
    None, or is None, where the broker cannot tell). `play_elsewhere`, where set, plays this
    process's play messages in other processes (the embedded worker's, `arena_workers.processes`);
    `play_task` uses it. `stopping` is set when the worker shuts down:
    the batch being played stops before its next round and gives its pairings back. `beat` is this
    process's heartbeat, started by its first claim (`new_owner`).
    """

    settings: Settings
    engine: Engine
    blobs: BlobStore
    enqueue: Enqueue
    waiting_pairings: Callable[[], set[int] | None] | None = None
    play_elsewhere: Callable[[list[int]], list[PairingOutcome]] | None = None
    models: ModelCache = field(init=False)
    beat: ProcessBeat = field(init=False)
    stopping: threading.Event = field(init=False, default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.models = ModelCache(self.blobs)
        self.beat = ProcessBeat(self.engine, self.settings.heartbeat_seconds)

    def check_running(self) -> None:
        """Raises PlatformFault once the worker is shutting down (called between rounds of play)."""
        if self.stopping.is_set():
            raise PlatformFault("the worker is shutting down")

    def close(self) -> None:
        """Closes the model hosts and stops the heartbeat; the engine and the blob store belong to
        whoever made them."""
        self.models.close()
        self.beat.stop()


class ModelCache:
    """This process's model hosts by the model's SHA-256, started on first use.

    The models of a batch are `pinned` while it plays: a pinned host is never closed by the cache
    (it may hold more than `capacity` hosts while a batch pins them); beyond `capacity`, the least
    recently used unpinned hosts close. A host that faulted is dead, and `discard` forgets it, so the
    next use starts a fresh one. Thread-safe; a host itself serves one caller at a time, and a worker
    process plays one batch at a time.
    """

    def __init__(self, blobs: BlobStore, capacity: int = MODEL_CACHE_SIZE) -> None:
        self.blobs = blobs  # where the models are read from, by SHA-256
        self._capacity = capacity
        self._hosts: OrderedDict[str, ModelHost] = OrderedDict()
        self._pins: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def pinned(self, sha256s: Iterable[str]) -> Iterator[None]:
        """Keeps the hosts of these models open (once started) until the block ends."""
        keys = list(set(sha256s))
        with self._lock:
            self._pins.update(keys)
        try:
            yield
        finally:
            with self._lock:
                self._pins.subtract(keys)
                self._pins = +self._pins  # drops the models no longer pinned
            self._close(self._evicted())

    def get(self, sha256: str) -> ModelHost:
        """The host serving the model stored under `sha256`; raises ModelFault if it cannot start."""
        with self._lock:
            if sha256 in self._hosts:
                self._hosts.move_to_end(sha256)
                return self._hosts[sha256]
        host = ModelHost(self.blobs.get(sha256))
        with self._lock:
            self._hosts[sha256] = host
        self._close(self._evicted())
        return host

    def discard(self, sha256: str, host: ModelHost) -> None:
        """Forgets and closes `host` (dead after a fault) if it still serves `sha256`."""
        with self._lock:
            if self._hosts.get(sha256) is not host:
                return
            del self._hosts[sha256]
        host.close()

    def close(self) -> None:
        with self._lock:
            hosts, self._hosts = list(self._hosts.values()), OrderedDict()
        self._close(hosts)

    def _evicted(self) -> list[ModelHost]:
        """Takes out the least recently used unpinned hosts beyond capacity; the caller closes them."""
        with self._lock:
            idle = [sha256 for sha256 in self._hosts if sha256 not in self._pins]
            excess = len(self._hosts) - self._capacity
            return [self._hosts.pop(sha256) for sha256 in idle[: max(excess, 0)]]

    @staticmethod
    def _close(hosts: Iterable[ModelHost]) -> None:
        for host in hosts:
            host.close()


class ServedModel:
    """The inference backend a network bot plays through in a worker (`run`, as ModelHost's).

    Each call goes to the model's current host in the cache. A fault traced to the model is raised as
    the ModelFault it is (the player turns it into a forfeit). A host that died otherwise is replaced
    and the call tried once more on the same positions: a crash of unknown cause on the fresh host
    too is the model's fault; a kill from outside (see arena_bots.host) on either try, or any other
    fault of the platform on the second, becomes a PlatformFault (the batch is given back and played
    again), so a dead host costs a bot nothing but its provable faults.
    """

    def __init__(self, models: ModelCache, sha256: str) -> None:
        self._models = models
        self._sha256 = sha256

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            return self._run_once(inputs)
        except ModelFault as fault:
            if fault.blame == "model":
                raise
            first = fault
            log.warning("model %s lost its host (%s); trying a fresh one", self._sha256[:12], fault)
        try:
            return self._run_once(inputs)
        except ModelFault as fault:
            if fault.blame == "model":
                raise
            if (verdict := second_loss_verdict(first, fault)) is not None:
                raise verdict from None
            raise PlatformFault(f"the hosts of model {self._sha256[:12]} failed: {first}; {fault}") from fault

    def _run_once(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One call on the current host; a dead host is discarded. Raises ModelFault (of any blame)
        or, for a bug of ours, PlatformFault."""
        host = None
        try:
            host = self._models.get(self._sha256)
            return host.run(inputs)
        except ModelFault:
            if host is not None:
                self._models.discard(self._sha256, host)
            raise
        except Exception as error:  # a ModelHost raises only ModelFault: anything else is a bug of ours
            raise PlatformFault(f"model {self._sha256[:12]}: {type(error).__name__}: {error}") from error


@dataclass(frozen=True)
class PairingOutcome:
    pairing_id: int
    status: str  # recorded | already_recorded | not_claimed | given_back


RECORDED, ALREADY_RECORDED, NOT_CLAIMED, GIVEN_BACK = (
    "recorded",
    "already_recorded",
    "not_claimed",
    "given_back",
)


def play_task(context: WorkerContext, pairing_ids: Iterable[int]) -> list[PairingOutcome]:
    """A play message's body: `play_pairings` in this process, or where `context.play_elsewhere`
    plays it."""
    if context.play_elsewhere is not None:
        return context.play_elsewhere(list(pairing_ids))
    return play_pairings(context, pairing_ids)


def play_pairings(context: WorkerContext, pairing_ids: Iterable[int]) -> list[PairingOutcome]:
    """Claims, plays and records the pairings, all claimed ones in one batch; one outcome per id.

    Urgent pairings come first: when none of `pairing_ids` is and some are queued, the task plays
    those (`store.pairings.most_urgent`) instead, and sends its own pairings again (behind the
    queue's messages); their outcome is then not_claimed. A pairing that is done, failed, or held
    by a live lease elsewhere is not claimed. After a fault of
    the platform (a PlatformFault, the database lost, the process exiting) every pairing not yet
    recorded goes back to the queue at no cost, to be sent again at the next sweep. If playing or
    recording raises anything else (a bug, a soft time limit), every pairing still held goes back
    to the queue charged as `store.pairings` says, and the exception propagates. A give-back that
    cannot be written (the database is away) costs nothing either: the lease lapses while this
    process still beats. Afterwards each ladder that got games gets a refit and a scheduling round
    (`_after_recording`: at once where urgent pairings were recorded).
    """
    ids = list(dict.fromkeys(pairing_ids))
    owner = new_owner(context)
    claimed = _claim_urgent_instead(context, ids, owner) or _claim_all(context, ids, owner)
    recorded: dict[int, int | None] = {}
    if claimed:
        with LeaseKeeper(context.engine, claimed, owner, context.settings) as leases:
            try:
                _play_and_record(context, claimed, owner, leases, recorded)
            except PlatformFault as fault:
                log.warning("pairings %s given back: %s", sorted(set(claimed) - set(recorded)), fault)
                _release(context, claimed, owner, fault, charge=False)
            except BaseException as error:  # a bug of ours, a soft time limit, the process exiting
                _release(context, claimed, owner, error, charge=not is_platform_fault(error))
                raise
        _log_lost_leases(leases.lost, recorded)
    _after_recording(context, {pairing: ladder for pairing, ladder in recorded.items() if ladder is not None})
    return [PairingOutcome(pairing_id, _outcome(pairing_id, claimed, recorded)) for pairing_id in ids]


def _after_recording(context: WorkerContext, recorded: Mapping[int, int]) -> None:
    """Enqueues a refit of each ladder of the `recorded` pairings (pairing id -> ladder id) and its
    next scheduling round; a ladder whose urgent pairings were recorded (a running SPRT's, a
    newcomer's introduction) gets its round booked here at once instead, so that the next urgent
    pairs (the test's, until its verdict; the rest of the round robin) are queued ahead of the round
    in progress now, not once the scheduling message has waited behind the queue's play messages."""
    with session(context.engine) as db:
        pressing = urgent_ladders(db, pairing_ids=list(recorded))
    for ladder_id in sorted(set(recorded.values())):
        context.enqueue(REFIT, ladder_id)
        if ladder_id not in pressing:
            context.enqueue(SCHEDULE_LADDER, ladder_id)
    if pressing:
        schedule_ladder(context, *pressing)


def _claim_urgent_instead(context: WorkerContext, pairing_ids: Sequence[int], owner: str) -> list[int]:
    """Claims the urgent pairings to play in place of `pairing_ids`; once one is won, sends
    `pairing_ids` again (those still queued). None won: []."""
    with session(context.engine) as db:
        urgent = most_urgent(db, instead_of=pairing_ids)
    claimed = _claim_all(context, urgent, owner)
    if claimed:
        send_pairings(context, pairing_ids)
    return claimed


def _claim_all(context: WorkerContext, pairing_ids: Sequence[int], owner: str) -> list[int]:
    """The pairings of one message that `owner` won (a message of one plays an isolated one)."""
    alone = len(pairing_ids) == 1
    return [pairing_id for pairing_id in pairing_ids if _claim(context, pairing_id, owner, alone=alone)]


def _outcome(pairing_id: int, claimed: Sequence[int], recorded: Mapping[int, int | None]) -> str:
    if pairing_id not in claimed:
        return NOT_CLAIMED
    if pairing_id not in recorded:
        return GIVEN_BACK
    return ALREADY_RECORDED if recorded[pairing_id] is None else RECORDED


def _log_lost_leases(lost: Iterable[int], recorded: Mapping[int, int | None]) -> None:
    """Says, of each pairing whose lease this holder lost while playing, what became of it."""
    for pairing_id in sorted(lost):
        if pairing_id not in recorded:
            happened = "this holder recorded nothing"
        elif recorded[pairing_id] is None:
            happened = "another holder had recorded it first (its games count once)"
        else:
            happened = "this holder recorded it all the same (its games count once)"
        log.warning("pairing %s lost its lease while playing: %s", pairing_id, happened)


def is_database_lost(error: BaseException) -> bool:
    """Whether `error` is the database going away (the platform's fault, retried), not a bug."""
    return isinstance(error, OperationalError | InterfaceError) or (
        isinstance(error, DBAPIError) and error.connection_invalidated
    )


def is_platform_fault(error: BaseException) -> bool:
    """Whether `error`, raised while playing, is the platform's doing: the database going away, or
    the process being made to exit (SystemExit, KeyboardInterrupt: a warm shutdown, Celery
    cancelling its tasks when the broker connection is lost), rather than a bug that a pairing may
    trigger."""
    return is_database_lost(error) or not isinstance(error, Exception)


def schedule_ladder(context: WorkerContext, *ladder_ids: int) -> list[int]:
    """Books each ladder's next pairings and sends them (store.scheduling.book_rounds); their ids."""
    return book_rounds(
        context.engine, context.enqueue, ladder_ids, redelivery_seconds=context.settings.lease_seconds
    )


def refit(context: WorkerContext, ladder_id: int) -> bool:
    """Refits the ladder's ratings unless they already cover all its games; True if it refitted."""
    with session(context.engine) as db:
        return refit_ladder(db, ladder_id=ladder_id)


def sweep(context: WorkerContext, *, resend_all_queued: bool = False, detect_deaths: bool = False) -> Sweep:
    """The sweeper: takes back the pairings of dead workers (with `detect_deaths`: those of processes
    silent for `DEATH_BEATS` heartbeats, see `arena_workers.liveness`) and of lapsed leases, fails
    those out of attempts, and sends what has no message out, and what is probably lost (past its
    redelivery deadline while nothing waits in the broker's queue; every queued pairing with
    `resend_all_queued`, after the broker lost its messages), in blocks (`send_pairings`). It
    refits the ladders whose ratings miss games and books a round for the ladders with nothing in
    flight, itself: behind the matches in the queue, those messages waited minutes (a busy ladder
    left the others unrated). So a ladder is refitted at least once a heartbeat. Training sessions
    likewise: a dead or silent worker's session, or one whose message may be lost, is sent again
    (store.training.sweep_sessions); finished and cancelled sessions' resume points are deleted, and
    so are the games in progress of claims that no longer hold their pairing (store.live).

    What a sweep takes back is committed before it is sent; what could not be sent (the broker is
    away) has no message out, and the next sweep sends it."""
    settings = context.settings
    resend_overdue, waiting = _waiting(context)
    with session(context.engine) as db:
        now = utc_now()
        silence = timedelta(seconds=DEATH_BEATS * settings.heartbeat_seconds)
        dead = silent_workers(db, since=now - silence) if detect_deaths else set()
        swept = sweep_pairings(
            db,
            dead_owners=owners_of(running_owners(db), dead),
            max_attempts=settings.max_attempts,
            resend_overdue=resend_overdue,
            waiting=waiting,
            resend_all_queued=resend_all_queued,
        )
        stale, stalled = stale_ladders(db), stalled_ladders(db)
        sessions = sweep_sessions(
            db,
            lease_seconds=settings.lease_seconds,
            resend_all_queued=resend_all_queued,
            dead_owners=owners_of(running_session_owners(db), dead),
        )
        ended_states = drop_ended_states(db)
        drop_stale(db, now=now)
        forget_silent_workers(db, before=now - timedelta(seconds=settings.lease_seconds))
    if swept.requeued or swept.failed or swept.resent:
        log.warning("sweep: requeued %s, failed %s, resent %s", swept.requeued, swept.failed, swept.resent)
    for session_id in sessions:
        context.enqueue(TRAIN_SESSION, session_id)
    for state_sha256 in ended_states:
        discard_state(context, state_sha256)
    send_pairings(context, swept.to_send)
    for ladder_id in stale:
        refit(context, ladder_id)
    schedule_ladder(context, *stalled)
    return swept


def _waiting(context: WorkerContext) -> tuple[bool, set[int]]:
    """Whether to resend the queued pairings past their redelivery deadline, and which of them not
    to resend: those a message waiting in the broker's queue names (behind others, not lost). When
    the broker cannot tell, all are resent; when it cannot be read, none (nothing can be sent)."""
    try:
        waiting = context.waiting_pairings() if context.waiting_pairings else None
    except Exception as error:
        log.warning("the broker's queue cannot be read: %s", error)
        return False, set()
    return True, waiting or set()


def send_pairings(context: WorkerContext, pairing_ids: Sequence[int]) -> None:
    """Sends those of `pairing_ids` still queued again in blocks of their ladder's `task_size` that
    share a bot, as scheduling does; an isolated pairing alone. Each block is marked sent once its
    message went out; if sending raises, the rest stay unsent for the next sweep."""
    queued = col(Pairing.id).in_(list(pairing_ids)), col(Pairing.status) == QUEUED
    blocks: list[list[int]] = []
    with session(context.engine) as db:
        pairings = db.exec(select(Pairing).where(*queued).order_by(Pairing.id)).all()
        for ladder_id in sorted({pairing.ladder_id for pairing in pairings}):
            batchable = [p for p in pairings if p.ladder_id == ladder_id and not p.isolated]
            blocks += task_messages(batchable, task_size(db, ladder_id=ladder_id))
    alone = [[pairing.id] for pairing in pairings if pairing.isolated]
    for message in blocks + alone:
        context.enqueue(PLAY_PAIRINGS, message)
        with session(context.engine) as db:
            mark_sent(db, pairing_ids=message, redelivery_seconds=context.settings.lease_seconds)


def discard_state(context: WorkerContext, state_sha256: str | None) -> None:
    """Deletes a training session's resume point from the blob store unless a session holds it: the
    one a save superseded, the one a save with a lost lease could not record, an ended session's.
    A blob left behind (the worker died before this, or the store refused) costs space, never a
    resume."""
    if state_sha256 is None:
        return
    try:
        with session(context.engine) as db:
            held = holds_state(db, state_sha256=state_sha256)
        if not held:
            context.blobs.delete(state_sha256)
    except Exception as error:  # a blob left behind costs space only
        log.warning("resume point %s not deleted: %s", state_sha256, error)


class LeaseKeeper:
    """Renews `owner`'s leases on `pairing_ids` every heartbeat from a daemon thread, while in a `with`.

    `lost` collects the pairings whose renewal found the lease gone (the sweeper re-queued it, or
    another worker claimed it after it lapsed); those are no longer renewed, nor are the ones passed
    to `finished` (before they are recorded: a renewal that finds one recorded has not lost it).
    A database error skips one beat: the lease outlives three of them.
    """

    def __init__(self, engine: Engine, pairing_ids: Sequence[int], owner: str, settings: Settings) -> None:
        self._engine = engine
        self._pairing_ids = list(pairing_ids)
        self._owner = owner
        self._lease_seconds = settings.lease_seconds
        self._interval = settings.heartbeat_seconds
        self.lost: set[int] = set()
        self._finished: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-keeper-{owner}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def finished(self, pairing_id: int) -> None:
        """Stops renewing the lease of a pairing about to be recorded (and so no longer running)."""
        self._finished.add(pairing_id)

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            for pairing_id in [i for i in self._pairing_ids if i not in self.lost | self._finished]:
                try:
                    with session(self._engine) as db:
                        held = renew_lease(
                            db, pairing_id=pairing_id, owner=self._owner, lease_seconds=self._lease_seconds
                        )
                except SQLAlchemyError as error:
                    log.warning("heartbeat of pairing %s skipped: %s", pairing_id, error)
                    continue
                if not held and pairing_id not in self._finished:  # not recorded by us meanwhile
                    log.warning("pairing %s: lease lost", pairing_id)
                    self.lost.add(pairing_id)


def new_owner(context: WorkerContext) -> str:
    """A lease owner for a claim by this process, whose heartbeat it starts (liveness.ProcessBeat)."""
    context.beat.start()
    return claim_owner(context.beat.name)


def _claim(context: WorkerContext, pairing_id: int, owner: str, *, alone: bool) -> bool:
    settings = context.settings
    with session(context.engine) as db:
        return claim_pairing(
            db,
            pairing_id=pairing_id,
            owner=owner,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
            alone=alone,
        )


def _release(
    context: WorkerContext, pairing_ids: Sequence[int], owner: str, error: BaseException, *, charge: bool
) -> None:
    """Gives back the pairings still held, the failure charged or not (store.pairings.release_pairing);
    the next sweep sends them again."""
    message = f"{type(error).__name__}: {error}"
    with session(context.engine) as db:
        for pairing_id in pairing_ids:
            status = release_pairing(
                db,
                pairing_id=pairing_id,
                owner=owner,
                error=message,
                max_attempts=context.settings.max_attempts,
                charge=charge,
            )
            if status is not None:  # None: recorded before the error, or no longer ours
                log.warning("pairing %s given back (%s) after %s", pairing_id, status, message)


@dataclass
class _Batch:
    """The claimed pairings of one game and the setups of their games, pairing after pairing."""

    game: Game
    pairings: list[Pairing] = field(default_factory=list)
    setups: list[MatchSetup] = field(default_factory=list)


def _play_and_record(
    context: WorkerContext,
    pairing_ids: Sequence[int],
    owner: str,
    leases: LeaseKeeper,
    recorded: dict[int, int | None],
) -> None:
    """Plays the pairings (one play_many per game) and records each into `recorded`: pairing id ->
    its ladder id if this call recorded it, None if it was already recorded; each with its share of
    its play_many's wall seconds (`Pairing.play_seconds`). The batch's models stay pinned in the
    cache while it plays; its games are written as they go for viewers (LiveWriter, under the claim
    `owner`)."""
    batches, bots = _prepare(context, pairing_ids)
    with context.models.pinned(bot.model_sha256 for bot in bots.values() if bot.model_sha256):
        for batch in batches.values():
            live = LiveWriter(context.engine, owner, batch.game, interval=context.settings.live_seconds)
            started = time.perf_counter()
            results = play_many(batch.game, batch.setups, before_round=context.check_running, watch=live)
            seconds = (time.perf_counter() - started) / len(batch.pairings)
            per_pairing = context.settings.games_per_pairing
            for number, pairing in enumerate(batch.pairings):
                games = results[number * per_pairing : (number + 1) * per_pairing]
                leases.finished(pairing.id)
                done = _record(context, pairing, games, seconds)
                recorded[pairing.id] = pairing.ladder_id if done else None


def _prepare(context: WorkerContext, pairing_ids: Sequence[int]) -> tuple[dict[str, _Batch], dict[int, Bot]]:
    """The games to play, grouped by game, and the bots by id.

    A bot's player object is shared by every pairing of the batch, so that its positions are searched
    (and go to its model) together. A pairing still plays the same whichever pairings share its
    batch: searches draw only from their own games' generators (see `RolloutEvaluator`).
    """
    batches: dict[str, _Batch] = {}
    players: dict[int, Player] = {}  # by bot id
    bots: dict[int, Bot] = {}
    with session(context.engine) as db:
        for pairing_id in pairing_ids:
            pairing = get_pairing(db, pairing_id=pairing_id)
            ladder = db.get(Ladder, pairing.ladder_id)
            game = _ladder_game(ladder)
            seated = {}
            for bot_id in (pairing.bot_a_id, pairing.bot_b_id):
                bot = bots.setdefault(bot_id, db.get(Bot, bot_id))
                if bot_id not in players:
                    players[bot_id] = _player(context, bot, ladder)
                seated[bot_id] = players[bot_id]
            batch = batches.setdefault(game.name, _Batch(game))
            batch.pairings.append(pairing)
            batch.setups.extend(_setups(context.settings, game, pairing, seated))
    return batches, bots


def _ladder_game(ladder: Ladder) -> Game:
    game = get_game(ladder.game)
    if game.spec.version != ladder.game_version:
        raise RunnerError(
            f"ladder {ladder.id} plays {ladder.game} v{ladder.game_version}; "
            f"this worker has v{game.spec.version}"
        )
    return game


def _setups(settings: Settings, game: Game, pairing: Pairing, players: dict[int, Player]) -> list[MatchSetup]:
    """The pairing's games (see `paired_setups`); bot_a has the first seat in game 0."""
    return paired_setups(
        game,
        (pairing.bot_a_id, pairing.bot_b_id),
        players,
        seed=pairing.seed,
        count=settings.games_per_pairing,
        meta=lambda index, seats: {
            "ladder_id": pairing.ladder_id,
            "pairing_id": pairing.id,
            "index": index,
            "bot_ids": list(seats),
        },
    )


def _player(context: WorkerContext, bot: Bot, ladder: Ladder) -> Player:
    """How `bot` plays on `ladder`. Search bots use the ladder's budget, except that a house bot's
    manifest may fix its own `simulations` (reference bots of several strengths on one ladder).
    A network bot's model host starts on its first move (see ServedModel for who its faults cost)."""
    if bot.kind == "house":
        simulations = int(bot.manifest.get("simulations", ladder.simulations))
        return house_player(bot.player, simulations=simulations, name=bot.name)
    backend = ServedModel(context.models, bot.model_sha256)
    return network_player(Manifest(**bot.manifest), backend, simulations=ladder.simulations, name=bot.name)


def _record(
    context: WorkerContext, pairing: Pairing, results: Sequence[MatchResult], play_seconds: float
) -> bool:
    """Stores the replays, then records the games and the done mark (with what the pairing cost,
    `play_seconds`) in one transaction."""
    games = []
    for index, result in enumerate(results):
        first, second = result.replay.meta["bot_ids"]
        games.append(
            PlayedGame(
                index=index,
                first_bot_id=first,
                second_bot_id=second,
                score=first_seat_score(result.returns),
                end_reason=result.end_reason,
                forfeit_seat=None if result.forfeit is None else result.forfeit.player,
                steps=len(result.replay.steps),
                replay_sha256=context.blobs.put(result.replay.to_json().encode()),
            )
        )
    with session(context.engine) as db:
        return record_pairing(db, pairing=pairing, games=games, play_seconds=play_seconds)
