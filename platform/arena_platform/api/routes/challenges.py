"""/challenges: N seat-swapped pairs between your bot and another active bot of its ladder, played
by the workers at the ladder's budget (store.challenges has the rules), and their results."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field
from sqlmodel import Session

from arena_platform.api.deps import MAX_ID, CurrentUser, ServicesDep, SessionDep
from arena_platform.api.errors import documented, not_found, refused
from arena_platform.queue import PLAY_PAIRINGS
from arena_platform.store import challenges
from arena_platform.store.pairings import task_size
from arena_platform.store.reads import ChallengeSummary, GameSummary
from arena_platform.store.refusals import Refused
from arena_platform.store.scheduling import task_messages

_log = logging.getLogger(__name__)

router = APIRouter(prefix="/challenges", tags=["challenges"])

ChallengeId = Annotated[int, Path(ge=1, le=MAX_ID, description="a challenge's id")]


class ChallengeRequest(BaseModel):
    bot_id: int = Field(ge=1, le=MAX_ID, description="your bot, which challenges")
    opponent_id: int = Field(ge=1, le=MAX_ID, description="any other active bot of its ladder")
    pairs: int = Field(
        default=4, ge=-MAX_ID, le=MAX_ID, description="seat-swapped pairs of games, 1 to the server's most"
    )
    rated: bool = Field(default=False, description="whether its games enter the ladder's ratings")


class ChallengeDetail(ChallengeSummary):
    game_list: list[GameSummary]  # its games so far, by pairing then seat order; each replays at /games/{id}


@router.post(
    "",
    status_code=201,
    summary="Challenge a bot: N seat-swapped pairs against one of yours",
    responses=documented(401, 403, 404, 409, 429),
)
def create_challenge(
    request: ChallengeRequest, user: CurrentUser, session: SessionDep, services: ServicesDep
) -> ChallengeDetail:
    """Books `pairs` pairs (two games from one opening, seats swapped) between your active bot and
    any other active bot of the same ladder (same game, version and budget), played by the workers
    at the ladder's budget. Unrated unless `rated`: an unrated challenge's games never enter the
    ladder's ratings. Refusals: 403 `not_owner` (the first bot is not yours), 404 (no such bot),
    409 `bot_retired`, `game_version_retired` or `competition_ladder` (a rated challenge on a
    competition's ladder), 422 `same_bot`, `wrong_game`, `wrong_version`,
    `wrong_ladder` or `pairs_out_of_range`, 429 `too_many_open_challenges` (wait for one to
    finish) or `rate_limited` (challenges per day; with Retry-After)."""
    settings = services.settings
    try:
        challenge, pairings = challenges.create_challenge(
            session,
            user_id=user.id,
            bot_id=request.bot_id,
            opponent_id=request.opponent_id,
            pairs=request.pairs,
            rated=request.rated,
            limits=challenges.Limits.from_settings(settings),
            redelivery_seconds=settings.lease_seconds,
        )
    except Refused as refusal:
        session.rollback()
        raise refused(refusal) from None
    session.commit()
    try:
        size = task_size(session, ladder_id=challenge.ladder_id)  # a slow ladder's: one pairing a task
        for message in task_messages(pairings, size):
            services.enqueue(PLAY_PAIRINGS, message)
    except Exception:  # booked already: the next sweep sends what did not go out
        _log.exception("could not send the pairings of challenge %d", challenge.id)
    return _detail(session, challenge.id)


@router.get("/{challenge_id}", summary="A challenge's progress, results and games", responses=documented(404))
def get_challenge(challenge_id: ChallengeId, session: SessionDep) -> ChallengeDetail:
    """Its pairings by state, the challenger's W/D/L, the pairs by its points, the Elo difference
    (the challenger's advantage) with its 95% interval, and every game played so far."""
    return _detail(session, challenge_id)


def _detail(session: Session, challenge_id: int) -> ChallengeDetail:
    summary = challenges.get_challenge(session, challenge_id=challenge_id)
    if summary is None:
        raise not_found(f"challenge {challenge_id}")
    return challenge_detail(session, summary)


def challenge_detail(session: Session, summary: ChallengeSummary) -> ChallengeDetail:
    """The challenge with its games (the API's answer and the challenge page's data)."""
    games = challenges.challenge_games(session, challenge_id=summary.id)
    return ChallengeDetail(**summary.model_dump(), game_list=games)
