"""The match runner: the play loop that a play message's task runs (`play_task`, `play_pairings`;
ARCHITECTURE §4, §5).

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

The parts of that way each have a module: the claims and leases `arena_workers.leases`, the model
hosts `arena_workers.model_cache`, the refits, rounds and resends `arena_workers.ladders`, the sweep
`arena_workers.sweeper`, and what the tasks share `arena_workers.context`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from arena_bots.loading import house_player, network_player
from arena_bots.manifest import Manifest
from arena_bots.match import MatchResult, MatchSetup, PlatformFault, Player, play_many
from arena_bots.pairs import first_seat_score, paired_setups
from arena_games.api import Game
from arena_games.registry import get_game
from arena_platform.db import session
from arena_platform.models import Bot, Ladder, Pairing
from arena_platform.queue import SCHEDULE_LADDER
from arena_platform.settings import Settings
from arena_platform.store.pairings import get_pairing, most_urgent, urgent_ladders
from arena_platform.store.results import PlayedGame, record_pairing
from arena_workers.context import REFIT, WorkerContext, is_platform_fault
from arena_workers.ladders import schedule_ladder, send_pairings
from arena_workers.leases import LeaseKeeper, claim, new_owner, release
from arena_workers.live import LiveWriter
from arena_workers.model_cache import ServedModel

log = logging.getLogger(__name__)


class RunnerError(Exception):
    """A pairing that cannot be played for a reason that is not the bots' fault (a deployment problem)."""


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
                release(context, claimed, owner, fault, charge=False)
            except BaseException as error:  # a bug of ours, a soft time limit, the process exiting
                release(context, claimed, owner, error, charge=not is_platform_fault(error))
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
    return [pairing_id for pairing_id in pairing_ids if claim(context, pairing_id, owner, alone=alone)]


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
            live = LiveWriter(context.engine, owner, interval=context.settings.live_seconds)
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
