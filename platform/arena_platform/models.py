"""The SQL tables: the database is the truth (ARCHITECTURE §5).

One model per entity. Big things (model files, replays) live in the blob store and are referred
to here by their SHA-256. Times are timezone-aware UTC. A ladder is one game version with one
compute budget and its own seed; it runs as one continuous tournament.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel


def utc_now() -> datetime:
    return datetime.now(UTC)


def _time(**kwargs: Any) -> Any:
    """A timezone-aware timestamp column."""
    return Field(sa_column=Column(DateTime(timezone=True), **kwargs))


def _created() -> Any:
    return Field(default_factory=utc_now, sa_column=Column(DateTime(timezone=True), nullable=False))


class User(SQLModel, table=True):
    """A name is unique regardless of case: `Alice` cannot join beside `alice`."""

    __table_args__ = (Index("ux_user_lower_name", text("lower(name)"), unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, max_length=64)
    organiser: bool = False  # may create competitions (`arena user create --organiser`)
    created_at: datetime = _created()


class ApiToken(SQLModel, table=True):
    """A bearer token; only its SHA-256 is stored, so a leaked database leaks no token."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    name: str | None = Field(default=None, max_length=64)  # the holder's label, e.g. "laptop"
    token_sha256: str = Field(unique=True, index=True, max_length=64)
    created_at: datetime = _created()
    last_used_at: datetime | None = _time(nullable=True)  # to the minute (store.users.note_token_use)
    revoked_at: datetime | None = _time(nullable=True)


class UploadAttempt(SQLModel, table=True):
    """One upload a user sent, accepted or not: the upload rate limit counts these rows, so a
    rejected model or a malformed form costs the sender as much as an accepted bot."""

    __table_args__ = (Index("ix_uploadattempt_user_id_created_at", "user_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id")  # indexed first in (user_id, created_at)
    created_at: datetime = _created()


# Where a ladder is open to every upload: a competition's ladders are outside the unique triple.
OPEN_LADDER = text("competition_id IS NULL")


class Ladder(SQLModel, table=True):
    """An open ladder (`competition_id` None) is THE ladder of its game version at its budget: one
    per triple, which uploads, training and the demo find (store.ladders). A competition's ladder
    rates its entrants apart from it, with the same scheduling, workers and rating fit."""

    __table_args__ = (
        Index(
            "ux_ladder_open_game_version_simulations",
            "game",
            "game_version",
            "simulations",
            unique=True,
            sqlite_where=OPEN_LADDER,
            postgresql_where=OPEN_LADDER,
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True, max_length=64)  # e.g. "bobail-v1-200"
    game: str = Field(max_length=32)
    game_version: int
    simulations: int  # the compute budget: network evaluations per move for every search bot
    seed: int  # the tournament seed; each pairing's seed derives from it and the pairing id
    competition_id: int | None = Field(default=None, foreign_key="competition.id", unique=True, index=True)
    created_at: datetime = _created()


class Competition(SQLModel, table=True):
    """A time-boxed contest on one game version (store.competitions): entries from `opens_at` to
    `deadline`, rated on the competition's own ladder (the Ladder whose `competition_id` is this
    one), then a final. Its phase is read from the clock (upcoming, open, closed); nothing here
    changes after creation.

    The final is either `final_pairs` seat-swapped pairs per pair of entrants, or a time budget of
    `final_seconds` with a stopping rule `final_stop`: "budget" (play until the time is spent) or
    "settled" (stop sooner once every adjacent pair of the ranking is ordered with probability
    `final_confidence` or more). `leagues` (or None: no leagues) is [{"name", "boss"}] from the
    lowest league up, a boss being a house bot's name (store.leagues). `hidden_ranking`: its
    ladder's ratings are shown to nobody (store.competitions.ranking_hidden), the final's result
    being the first ranking published."""

    id: int | None = Field(default=None, primary_key=True)
    organiser_id: int = Field(foreign_key="user.id", index=True)
    title: str = Field(max_length=120)
    description: str = Field(default="", max_length=4000)
    opens_at: datetime = _time(nullable=False)
    deadline: datetime = _time(nullable=False)  # entries that START before it are decided on their merits
    max_active_bots: int  # a user's active bot names on its ladder (a new version is no new bot)
    uploads_per_day: int  # a user's entries (uploads and copies) started in any 24 hours
    final_pairs: int | None = None
    final_seconds: int | None = None
    final_stop: str | None = Field(default=None, max_length=16)  # budget | settled
    final_confidence: float | None = None
    leagues: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    hidden_ranking: bool = False  # its ladder's ratings are shown to nobody (see above)
    created_at: datetime = _created()


class LeaguePromotion(SQLModel, table=True):
    """A competition's bot promoted from its league to the next (store.leagues): the version
    promoted, `from_league` and `to_league` as indices into `Competition.leagues` (0 the lowest),
    and the evidence: {"probability": P(bot > boss) from the ladder's fit, "rating" and
    "boss_rating" in Elo, "games": its placement games}. A bot's league is derived from these rows."""

    __tablename__ = "league_promotion"

    id: int | None = Field(default=None, primary_key=True)
    competition_id: int = Field(foreign_key="competition.id", index=True)
    bot_id: int = Field(foreign_key="bot.id", index=True)
    from_league: int
    to_league: int
    at: datetime = _time(nullable=False)
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class CompetitionFinal(SQLModel, table=True):
    """A competition's final, once started (store.finals): its entrants frozen then (bot ids,
    sorted) and its seed, which fix its schedule (finals.schedule); `finished_at` once no more
    rounds are due. Its pairings are its ladder's with a `final_number`; its ranking is recomputed
    from their games, never stored."""

    __tablename__ = "competition_final"

    competition_id: int = Field(foreign_key="competition.id", primary_key=True)
    seed: int
    entrants: list[int] = Field(sa_column=Column(JSON, nullable=False))
    started_at: datetime = _time(nullable=False)
    finished_at: datetime | None = _time(nullable=True)


class Entry(SQLModel, table=True):
    """One entry a user started into a competition: an upload or a copy of one of their bots.

    Recorded when its request arrives, before any validation: `started_at` decides the deadline
    and the opening, and counts against the competition's uploads per day (a refused model too;
    a failure of the platform's is uncounted). `bot_id` is the bot it entered, once accepted."""

    __tablename__ = "competition_entry"
    __table_args__ = (
        Index(
            "ix_competition_entry_competition_id_user_id_started_at",
            "competition_id",
            "user_id",
            "started_at",
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    competition_id: int = Field(foreign_key="competition.id")  # indexed first in the triple
    user_id: int = Field(foreign_key="user.id", index=True)
    kind: str = Field(max_length=16)  # upload | copy
    started_at: datetime = _time(nullable=False)
    bot_id: int | None = Field(default=None, foreign_key="bot.id", index=True)


class Bot(SQLModel, table=True):
    """One version of a bot on one ladder. House bots have no owner and no model. A name is unique
    per ladder regardless of case: one version number per lower(name) (store.bots keeps every
    version of a name spelled alike)."""

    __table_args__ = (
        UniqueConstraint("ladder_id", "name", "version"),
        Index(
            "ux_bot_ladder_id_lower_name_version", "ladder_id", text("lower(name)"), "version", unique=True
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    ladder_id: int = Field(foreign_key="ladder.id", index=True)
    owner_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    name: str = Field(max_length=64)
    version: int = 1
    kind: str = Field(max_length=16)  # "house" or "network"
    player: str = Field(max_length=16)  # random | uct | mcts | greedy | sample
    model_sha256: str | None = Field(default=None, max_length=64)
    manifest: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="active", max_length=16, index=True)  # active | retired
    checkpoint: bool = False  # a training session's checkpoint (TrainingCheckpoint says which), no upload
    created_at: datetime = _created()


class Pairing(SQLModel, table=True):
    """Two bots, `games_per_pairing` games from one opening with seats swapped (fishtest's pairs).

    Life cycle: queued -> running (claimed with a lease by one worker, renewed by heartbeats)
    -> done, or back to queued when its worker gives it back, dies or goes silent, or failed once
    `max_attempts` failures were its own (store.pairings).
    """

    # the leaderboard's progress counts a ladder's pairings by state, its pace those finished lately
    __table_args__ = (
        Index("ix_pairing_ladder_id_status", "ladder_id", "status"),
        Index("ix_pairing_ladder_id_finished_at", "ladder_id", "finished_at"),
        Index("ux_pairing_ladder_id_final_number", "ladder_id", "final_number", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    ladder_id: int = Field(foreign_key="ladder.id")  # indexed first in (ladder_id, status)
    bot_a_id: int = Field(foreign_key="bot.id", index=True)  # moves first in the first game
    bot_b_id: int = Field(foreign_key="bot.id", index=True)
    seed: int
    status: str = Field(default="queued", max_length=16, index=True)
    attempts: int = 0  # failures that may be its own (store.pairings says which)
    isolated: bool = False  # its worker died while it played with others: it is played alone since
    urgent: bool = False  # a newcomer's, a running SPRT's: played ahead of the round (store.scheduling)
    # a challenge's pairing (store.challenges), outside the ladder's schedule; None: the ladder's own
    challenge_id: int | None = Field(default=None, foreign_key="challenge.id", index=True)
    # a competition final's pairing (store.finals): its number in the final's schedule, from 0, and
    # its round (finals.schedule); None: not the final's. Unique per ladder: no number booked twice
    final_number: int | None = None
    final_round: int | None = None
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _time(nullable=True, index=True)
    created_at: datetime = _created()
    finished_at: datetime | None = _time(nullable=True)
    error: str | None = Field(default=None, max_length=2000)
    # the worker's wall seconds on the batch that played it, per pairing of the batch; set when it is
    # recorded (None before, and for pairings recorded before this was measured): sizes tasks
    play_seconds: float | None = None


class Challenge(SQLModel, table=True):
    """A user's request for `pairs` seat-swapped pairs between their bot and another active bot of
    the same ladder (store.challenges), played by the workers at the ladder's budget as pairings
    that carry its id. Unrated unless `rated`: an unrated challenge's games enter neither the
    ladder's rating fit nor its schedule. Its progress and results are read from its pairings and
    games; nothing here changes after creation."""

    __table_args__ = (Index("ix_challenge_user_id_created_at", "user_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id")  # who asked; indexed first in (user_id, created_at)
    ladder_id: int = Field(foreign_key="ladder.id")
    bot_id: int = Field(foreign_key="bot.id", index=True)  # the challenger's bot: bot_a of every pairing
    opponent_id: int = Field(foreign_key="bot.id", index=True)
    pairs: int  # pairings booked, each one seat-swapped pair of games from one opening
    rated: bool = False
    created_at: datetime = _created()


class GameRecord(SQLModel, table=True):
    """One finished game. The unique (pairing, index) guard makes recording idempotent."""

    __tablename__ = "game"
    __table_args__ = (UniqueConstraint("pairing_id", "index"),)

    id: int | None = Field(default=None, primary_key=True)
    pairing_id: int = Field(foreign_key="pairing.id", index=True)
    ladder_id: int = Field(foreign_key="ladder.id", index=True)
    index: int  # 0: bot_a has the first seat; 1: the seats are swapped
    first_bot_id: int = Field(foreign_key="bot.id", index=True)
    second_bot_id: int = Field(foreign_key="bot.id", index=True)
    score: float  # for the first seat: 1 win, 0.5 draw, 0 loss
    end_reason: str = Field(max_length=500)
    forfeit_seat: int | None = None
    steps: int
    replay_sha256: str = Field(max_length=64)
    created_at: datetime = _created()


class LiveGame(SQLModel, table=True):
    """A game of a pairing being played on a worker, as far as it went (issue 25.4): what a viewer
    of a game in progress reads (store.live). Its steps are LiveStep rows.

    Written by the claim `owner` (its lease owner) while it plays, at most every `live_seconds`;
    shown only while `owner` holds the pairing's lease, so a dead or given-back claim shows
    nothing once its lease is gone. Deleted with the pairing's recording, and by the sweeper once
    its claim no longer holds the pairing. `header` is the game's replay JSON (`Replay.to_dict`)
    without `steps`; `result` its `result` once the game is over, None while it is played.
    """

    __tablename__ = "live_game"
    __table_args__ = (UniqueConstraint("pairing_id", "index", "owner"),)

    id: int | None = Field(default=None, primary_key=True)
    pairing_id: int = Field(foreign_key="pairing.id")  # indexed first in the unique triple
    index: int  # the game's index in its pairing, as GameRecord.index
    owner: str = Field(max_length=128)  # the claim that plays it (Pairing.lease_owner)
    ladder_id: int = Field(foreign_key="ladder.id", index=True)
    first_bot_id: int = Field(foreign_key="bot.id")
    second_bot_id: int = Field(foreign_key="bot.id")
    header: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    steps: int = 0  # LiveStep rows written: plies 0 to steps - 1
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    started_at: datetime = _created()
    updated_at: datetime = _created()


class LiveStep(SQLModel, table=True):
    """One step of a LiveGame: its `ply`-th joint action with its insights (a replay's step JSON)."""

    __tablename__ = "live_step"

    live_game_id: int = Field(foreign_key="live_game.id", primary_key=True)
    ply: int = Field(primary_key=True)
    step: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))


class PairCount(SQLModel, table=True):
    """A ladder's game outcomes per unordered pair of bots: the rating fit's whole input.

    Kept in step with GameRecord: a pairing's games are added here in the transaction that records
    them (store.results.record_pairing), so a refit reads one row per pair, never one per game.
    """

    ladder_id: int = Field(foreign_key="ladder.id", primary_key=True)
    low_bot_id: int = Field(foreign_key="bot.id", primary_key=True)  # the smaller bot id of the pair
    high_bot_id: int = Field(foreign_key="bot.id", primary_key=True)
    low_wins: int = 0
    draws: int = 0
    high_wins: int = 0


class Rating(SQLModel, table=True):
    """The current rating table of a ladder, refitted as results arrive."""

    ladder_id: int = Field(foreign_key="ladder.id", primary_key=True)
    bot_id: int = Field(foreign_key="bot.id", primary_key=True)
    rating: float  # Elo scale; 0 is the weighted mean of the house bots the games place (ratings.py)
    low: float  # 95% interval
    high: float
    games: int
    wins: int
    draws: int
    losses: int
    provisional: bool
    updated_at: datetime = _created()


class RatingHistory(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    ladder_id: int = Field(foreign_key="ladder.id", index=True)
    bot_id: int = Field(foreign_key="bot.id", index=True)
    rating: float
    low: float
    high: float
    games: int
    recorded_at: datetime = _created()


class LeaderboardRow(SQLModel, table=True):
    """One bot of a ladder as its leaderboard shows it, ready to serve: an uncached leaderboard read
    is one scan of the ladder's rows (store.reads.leaderboard), with no join and no aggregate.

    Kept by the database itself, in the transaction of every write it follows (the triggers of
    migration 0004): a new bot adds its row (unrated); a change of a bot (a retirement) changes
    it; a Rating row written (a refit) sets the rating columns, one deleted resets them to unrated.
    So every writer keeps it right, bulk SQL included. A row per bot, retired ones too (`status`).
    """

    ladder_id: int = Field(foreign_key="ladder.id", primary_key=True)
    bot_id: int = Field(foreign_key="bot.id", primary_key=True)
    name: str = Field(max_length=64)
    version: int
    author: str | None = Field(default=None, max_length=64)  # the owner's name; None for house bots
    house: bool
    player: str = Field(max_length=16)
    status: str = Field(max_length=16)  # the bot's: active | retired
    checkpoint: bool = False  # the bot's: a training checkpoint (the leaderboard can hide them)
    rating: float | None = None  # Elo; None while unrated (no Rating row), and so are low and high
    low: float | None = None
    high: float | None = None
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    provisional: bool = True


class LadderProgress(SQLModel, table=True):
    """How many of a ladder's pairings are done, kept by the database as pairings change status
    (the triggers of migration 0004; a row per ladder, made with the ladder).

    Done pairings grow without bound (500,000 at a million games), so counting them per read cost
    more than the rest of the leaderboard; the other states hold a few pairings each and are
    counted live from the pairing table's (ladder_id, status) index.
    """

    ladder_id: int = Field(foreign_key="ladder.id", primary_key=True)
    done: int = 0


class SprtTest(SQLModel, table=True):
    """A new version's pentanomial SPRT against the previous version of its name (arena_platform.sprt).

    Made with the new version (store.bots.create_network_bot); the old version keeps playing until
    the test ends. The counts are pairs by the new version's points (0, 0.5, 1, 1.5, 2), added in the
    transaction that records each pairing between the two (store.results.record_pairing). The
    hypotheses and error rates are the settings' at creation, frozen here. Status: "running", then
    a frozen verdict "H1" (better) or "H0" (not better), or "stopped" when either version was
    retired before a verdict (by its owner, or by a newer upload).
    """

    id: int | None = Field(default=None, primary_key=True)
    ladder_id: int = Field(foreign_key="ladder.id", index=True)
    new_bot_id: int = Field(foreign_key="bot.id", unique=True)  # one test per new version
    old_bot_id: int = Field(foreign_key="bot.id", index=True)
    pairs_0: int = 0  # pairs where the new version scored 0 points
    pairs_05: int = 0  # 0.5
    pairs_1: int = 0  # 1
    pairs_15: int = 0  # 1.5
    pairs_2: int = 0  # 2
    llr: float = 0.0  # nats
    lower: float  # nats: H0 at or below
    upper: float  # nats: H1 at or above
    elo0: float  # in the model's unit (nElo for "normalized")
    elo1: float
    alpha: float
    beta: float
    model: str = Field(max_length=16)  # normalized | logistic
    status: str = Field(default="running", max_length=16, index=True)  # running | H1 | H0 | stopped
    started_at: datetime = _created()
    finished_at: datetime | None = _time(nullable=True)


class HumanGame(SQLModel, table=True):
    """A game between a person in a browser and a bot: stored and replayable, never rated.

    No account is needed: whoever started the game holds its key (only the key's SHA-256 is stored),
    and only the key's holder may move or resign. The game is its replay so far (`Replay.to_dict`:
    the seed, every step from `init(seed)` with the bot's search insights, and the result once
    over), so the position is re-played from here and a finished game is a replay like the
    ladder's (arena_platform.human_play). `ply` counts the steps and guards each write: a move is
    saved only if `ply` is still the one it was computed from.
    """

    __table_args__ = (Index("ix_humangame_bot_id_created_at", "bot_id", "created_at"),)

    id: int | None = Field(default=None, primary_key=True)
    bot_id: int = Field(foreign_key="bot.id")  # indexed first in (bot_id, created_at)
    ladder_id: int = Field(foreign_key="ladder.id")
    human_seat: int
    simulations: int  # the bot's search budget per move: its ladder's
    key_sha256: str = Field(max_length=64)
    ply: int = 0
    status: str = Field(default="playing", max_length=16)  # playing | over
    human_score: float | None = None  # once over: 1 the person won, 0.5 a draw, 0 the bot won
    replay: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = _created()
    updated_at: datetime = _created()


class TrainingSession(SQLModel, table=True):
    """A user's training run on the platform (arena_platform.store.training), played by a training
    worker (arena_workers.training) and resumable from its last generation.

    Life cycle: queued -> running (claimed with a lease, renewed by heartbeats) -> finished (its
    episodes or its time are used up), or paused (by its owner) -> queued again on resume, or
    cancelled (by its owner), or failed (an error, or `max_attempts` workers died on it); a running
    session whose lease lapsed goes back to queued (the sweeper). `settings` holds what it was asked
    (TrainingRequest's fields); `progress` its counters and loss curve (store.training.Progress).
    `state_sha256` is the blob of its resume point (network, optimiser, replay window, counters)
    after its last finished generation; None before the first.
    """

    id: int | None = Field(default=None, primary_key=True)
    owner_id: int = Field(foreign_key="user.id", index=True)
    game: str = Field(max_length=32)
    kit: str = Field(max_length=16)  # alphazero
    bot_name: str = Field(max_length=64)  # its checkpoints are versions of this bot
    base_bot_id: int | None = Field(default=None, foreign_key="bot.id")  # a checkpoint fine-tuned
    settings: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="queued", max_length=16, index=True)
    state_sha256: str | None = Field(default=None, max_length=64)
    attempts: int = 0  # claims since the last generation was saved
    lease_owner: str | None = Field(default=None, max_length=128)
    lease_expires_at: datetime | None = _time(nullable=True)  # queued: when to send it again
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = _created()
    finished_at: datetime | None = _time(nullable=True)


class TrainingCheckpoint(SQLModel, table=True):
    """A session's network after `generation`, entered into the ladder as `bot_id` (None when its
    validation refused it: `error` says why). Unique per (session, generation): a generation that a
    resumed session plays again never enters twice."""

    __table_args__ = (UniqueConstraint("session_id", "generation"),)

    id: int | None = Field(default=None, primary_key=True)
    session_id: int = Field(foreign_key="trainingsession.id")  # indexed first in the unique pair
    generation: int
    step: int  # gradient steps so far
    games: int  # self-play games so far
    bot_id: int | None = Field(default=None, foreign_key="bot.id", index=True)
    network_sha256: str = Field(max_length=64)  # the torch weights (what a fine-tune starts from)
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = _created()


class WorkerBeat(SQLModel, table=True):
    """A worker process alive on `queues`, beating every heartbeat: the API refuses training
    sessions (503) while no worker consuming the training queue has beaten within a lease. Every
    process that plays or trains beats too, under its lease-owner prefix and with no queues: the
    sweeper takes a silent one's pairings and sessions back (arena_workers.liveness)."""

    name: str = Field(primary_key=True, max_length=128)  # the worker's node name
    queues: str = Field(max_length=200)  # comma-separated
    last_seen: datetime = _created()
