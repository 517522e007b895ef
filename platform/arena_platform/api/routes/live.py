"""Games in progress: the games the workers are playing now, followed move by move (issue 25.4).

A worker writes each game of its batch as it goes (store.live, at most every `live_seconds`); a
viewer lists a ladder's games in progress and polls one with `since` (the first frame it has not
got in its final form) for the frames played since. Once the pairing is recorded the game answers
`recorded` with the id of the recorded game, whose replay has the same steps.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel
from sqlmodel import Session

from arena_games.api import GameError
from arena_games.registry import get_game
from arena_games.replay import Replay, Step, replay_states
from arena_platform.api.deps import MAX_ID, LadderId, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.api.routes.frames import Frame, step_frame
from arena_platform.store import ladders, live
from arena_platform.store.live import HeldGame, LiveGameSummary
from arena_platform.store.reads import BotRef, UtcDatetime

router = APIRouter(tags=["games in progress"])

PairingId = Annotated[int, Path(ge=1, le=MAX_ID, description="the pairing's id")]
GameIndex = Annotated[int, Path(ge=0, le=MAX_ID, description="the game's index in its pairing (0, 1, ...)")]
Since = Annotated[
    int,
    Query(ge=0, le=MAX_ID, description="answer the frames from this ply on (the ply of the last frame held)"),
]
LiveStatus = Literal["playing", "over", "recorded"]


class LiveFrames(BaseModel):
    """A game in progress from frame `since` on. The frame at `ply` is the position to play now
    (no action yet) while it is played, the final position once it is over. Frames are as the
    replay viewer's (`GET /games/{id}/frames`); a client replaces its frames from `since` on with
    these (the frame at `since` gets its action once it is played)."""

    pairing_id: int
    index: int
    status: LiveStatus  # playing | over (to be recorded with its batch) | recorded (see game_id)
    game_id: int | None  # the recorded game, once status is recorded
    run: int | None  # this play of the game; another number: it started again (the pairing was given back)
    ladder_id: int | None
    game: str | None
    title: str | None
    seats: list[BotRef]  # who plays, by seat
    opening_length: int  # the first steps were imposed by the opening
    ply: int  # steps played so far
    returns: list[float]  # by seat; 0 while played
    end_reason: str  # "" while played
    forfeit: dict[str, Any] | None  # {"player", "cause", "action"}: the move that lost, never played
    since: int
    frames: list[Frame]  # the frames from `since` to `ply`; [] when since > ply or once recorded
    updated_at: UtcDatetime | None  # the worker's latest write


@router.get(
    "/ladders/{ladder_id}/live",
    summary="A ladder's games in progress",
    responses=documented(404),
)
def ladder_live_games(ladder_id: LadderId, session: SessionDep) -> list[LiveGameSummary]:
    """The games workers are playing now on the ladder, oldest first: open one with
    `GET /live/{pairing_id}/{index}`."""
    if ladders.get_ladder(session, ladder_id=ladder_id) is None:
        raise not_found(f"ladder {ladder_id}")
    return live.ladder_games(session, ladder_id=ladder_id)


@router.get(
    "/live/{pairing_id}/{index}",
    summary="A game in progress, frame by frame",
    responses=documented(404, 409),
)
def live_frames(pairing_id: PairingId, index: GameIndex, session: SessionDep, since: Since = 0) -> LiveFrames:
    """The frames of game `index` of the pairing from `since` on, while a worker plays it; once its
    pairing is recorded, `recorded` with the game's id. 404 `not_in_progress` when no worker plays
    it (queued, given back, or unknown); 409 `replay_unplayable` if its steps do not re-play."""
    return live_or_recorded(session, pairing_id=pairing_id, index=index, since=since)


def live_or_recorded(session: Session, *, pairing_id: int, index: int, since: int) -> LiveFrames:
    """The answer of `GET /live/{pairing_id}/{index}` (see live_frames); the page reads it too."""
    held = live.held_game(session, pairing_id=pairing_id, index=index)
    if held is not None:
        return _frames(held, since)
    game_id = live.recorded_game_id(session, pairing_id=pairing_id, index=index)
    if game_id is None:
        raise ApiError(
            404,
            "not_in_progress",
            f"game {index} of pairing {pairing_id} is not being played now (queued, given back, or unknown)",
        )
    return LiveFrames(
        pairing_id=pairing_id,
        index=index,
        status="recorded",
        game_id=game_id,
        run=None,
        ladder_id=None,
        game=None,
        title=None,
        seats=[],
        opening_length=0,
        ply=0,
        returns=[],
        end_reason="",
        forfeit=None,
        since=since,
        frames=[],
        updated_at=None,
    )


def _frames(held: HeldGame, since: int) -> LiveFrames:
    """The held game's frames from `since` on, re-played through its engine from the start."""
    row = held.row
    playing = {"returns": [0.0] * len(held.seats), "end_reason": "", "forfeit": None}
    try:
        replay = Replay.from_dict({**row.header, "steps": held.steps, "result": row.result or playing})
        game = get_game(replay.game)
        states = replay_states(game, replay)
    except GameError as error:
        raise ApiError(
            409,
            "replay_unplayable",
            f"game {row.index} of pairing {row.pairing_id} cannot be re-played: {error}",
        ) from None
    plies = range(since, len(states))
    return LiveFrames(
        pairing_id=row.pairing_id,
        index=row.index,
        status="playing" if row.result is None else "over",
        game_id=None,
        run=row.id,
        ladder_id=row.ladder_id,
        game=game.name,
        title=game.spec.title,
        seats=held.seats,
        opening_length=replay.opening_length,
        ply=len(replay.steps),
        returns=list(replay.returns),
        end_reason=replay.end_reason,
        forfeit=None if row.result is None else row.result["forfeit"],
        since=since,
        frames=[step_frame(game, ply, states[ply], _step(replay, ply)) for ply in plies],
        updated_at=row.updated_at,
    )


def _step(replay: Replay, ply: int) -> Step | None:
    """The step played from position `ply`; None at the position to play (or the final one)."""
    return replay.steps[ply] if ply < len(replay.steps) else None
