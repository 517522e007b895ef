"""A competition with its entrants, made in the store (no API, no clock): the final's tests start
from it; and the clock that the competitions' tests through the API inject."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlmodel import Session

from arena_bots.manifest import Manifest
from arena_platform.models import Competition
from arena_platform.store import bots, competitions, users
from arena_platform.store.competitions import CompetitionTerms, FinalTerms


class Clock:
    """The time competitions are read by (the API's and the worker's `clock`): whatever the test sets."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def entered_competition(
    db: Session,
    *,
    opens: datetime,
    deadline: datetime,
    final: FinalTerms,
    models: Sequence[str],
    player: str,
    simulations: int = 2,
    hidden_ranking: bool = False,
) -> tuple[Competition, list[int]]:
    """A bobail competition made a day before `opens`, into which one user per model (a blob's
    SHA-256, played by `player`) entered a network bot; (it, the bots' ids). Commits."""
    organiser, _ = users.create_user(db, name="olga", organiser=True)
    terms = CompetitionTerms(
        game="bobail",
        title="cup",
        opens_at=opens,
        deadline=deadline,
        simulations=simulations,
        final=final,
        hidden_ranking=hidden_ranking,
    )
    competition = competitions.create_competition(
        db, organiser=organiser, terms=terms, default_simulations=simulations, now=opens - timedelta(days=1)
    )
    _, ladder = competitions.competition_ladder(db, competition_id=competition.id)
    entered = []
    for number, model in enumerate(models):
        owner, _ = users.create_user(db, name=f"user{number}")
        manifest = Manifest(game="bobail", game_version=1, name=f"bot{number}", player=player)
        bot = bots.create_network_bot(
            db, ladder_id=ladder.id, owner_id=owner.id, manifest=manifest, report={}, model_sha256=model
        )
        entered.append(bot.id)
    db.commit()
    return competition, entered
