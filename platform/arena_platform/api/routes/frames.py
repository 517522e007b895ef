"""/games/{id}/frames: a game re-played through its engine, position by position, for the replay viewer.

The viewer's renderers draw `view(state)` and never need the game's rules. Frame k is the
position after k steps (frame 0 the start, the last one the final position) with the joint action
played from it and, per acting seat, the search insight behind that action.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from arena_games.api import Game, GameError
from arena_games.registry import get_game
from arena_games.replay import Replay, Step, replay_states
from arena_platform.api.deps import GameId, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError, documented, not_found
from arena_platform.blobs import BlobNotFound
from arena_platform.store import reads
from arena_platform.store.reads import BotRef

router = APIRouter(prefix="/games", tags=["games"])


class Frame(BaseModel):
    """One position of a game and what was played from it.

    `view` is the game's `view(state)`, except that its `moves` (legal action -> board terms) keep
    only the actions this frame's step names: the one played and the insights' top moves. A key of
    `moves` is the action's indices, one per head, joined by commas (one head: the index, "37").
    """

    ply: int  # steps played before this position
    view: dict[str, Any]
    actors: list[int]  # the seats to move here, in the order of `actions` and `insights`
    actions: list[list[int]] | None  # the joint action played from here; None at the final position
    insights: list[dict[str, Any] | None] | None  # per actor: {"value", "top": [...], ...} or None


class PersonRef(BaseModel):
    """A person at the board (games against people: no account needed)."""

    name: str = "a person"  # as the page headers say: no account, no name
    person: bool = True


Seat = BotRef | PersonRef


class GameFrames(BaseModel):
    id: int
    game: str
    title: str
    seats: list[Seat]  # who played, by seat
    opening_length: int  # the first steps were imposed by the opening, not chosen by the bots
    returns: list[float]  # by seat
    end_reason: str
    forfeit: dict[str, Any] | None  # {"player", "cause", "action"}: the move that lost, never played
    frames: list[Frame]  # len(steps) + 1


@router.get(
    "/{game_id}/frames",
    summary="A game's positions, re-played for the viewer",
    responses=documented(404, 409),
)
def game_frames(game_id: GameId, session: SessionDep, services: ServicesDep) -> GameFrames:
    summary = reads.get_game(session, game_id=game_id)
    if summary is None:
        raise not_found(f"game {game_id}")
    try:
        stored = services.blobs.get(summary.replay_sha256)
    except BlobNotFound:
        raise ApiError(
            404, "replay_missing", f"the replay of game {game_id} is not in the blob store"
        ) from None
    try:
        return replay_frames(stored.decode(), game_id=summary.id, seats=[summary.first, summary.second])
    except GameError as error:  # a malformed replay, an unknown game or version, an illegal step
        raise ApiError(409, "replay_unplayable", f"game {game_id} cannot be re-played: {error}") from None


def replay_frames(replay_json: str, *, game_id: int, seats: Sequence[Seat]) -> GameFrames:
    """A replay file's text (`Replay.to_json`) re-played for the viewer, as game `game_id` between
    `seats` (the bots by seat). Raises GameError for a malformed replay, an unknown game or version,
    or an illegal step. `arena view` serves local replay files through this too."""
    return frames_of(Replay.from_json(replay_json), game_id=game_id, seats=seats)


def frames_of(replay: Replay, *, game_id: int, seats: Sequence[Seat]) -> GameFrames:
    """`replay` re-played for the viewer (see replay_frames); GameError as there."""
    game = get_game(replay.game)
    states = replay_states(game, replay)
    steps: Sequence[Step | None] = [*replay.steps, None]
    return GameFrames(
        id=game_id,
        game=game.name,
        title=game.spec.title,
        seats=list(seats),
        opening_length=replay.opening_length,
        returns=list(replay.returns),
        end_reason=replay.end_reason,
        forfeit=replay.to_dict()["result"]["forfeit"],
        frames=[
            step_frame(game, ply, state, step)
            for ply, (state, step) in enumerate(zip(states, steps, strict=True))
        ],
    )


def _action_key(action: Iterable[int]) -> str:
    """The key of `action` in a view's `moves`."""
    return ",".join(str(index) for index in action)


def step_frame(game: Game, ply: int, state: Any, step: Step | None) -> Frame:
    """The frame of `state`, reached after `ply` steps, with `step` played from it (None: the end)."""
    view = game.view(state)
    actors = list(game.to_move(state))
    if step is None:
        view["moves"] = {}
        return Frame(ply=ply, view=view, actors=actors, actions=None, insights=None)
    named = {_action_key(action) for action in step.actions}
    for insight in step.insights:
        named |= {_action_key(move["action"]) for move in (insight or {}).get("top", ())}
    view["moves"] = {key: at for key, at in view.get("moves", {}).items() if key in named}
    insights = list(step.insights) or [None] * len(step.actions)
    return Frame(
        ply=ply,
        view=view,
        actors=actors,
        actions=[list(action) for action in step.actions],
        insights=insights,
    )
