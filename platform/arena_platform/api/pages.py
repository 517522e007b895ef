"""The server-rendered pages (ARCHITECTURE §6): Jinja2 templates and static ES modules from `frontend/`.

Each page is a thin route over the same store functions as the API. The template renders the frame
of the page (navigation, headings, forms, facts) with autoescaping on; the data the page's module
draws (tables, plots, the replay player) is embedded as JSON (`page_data`, the API's own models)
and drawn with DOM text nodes, never as markup. Live parts (the leaderboard's polling, the replay's
frames) fetch the public API. Unknown or malformed ids get the 404 page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import jinja2
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from sqlmodel import Session

import arena_platform
from arena_bots.manifest import PLAYER_KINDS
from arena_games.registry import GAMES
from arena_platform.api.bot_moves import offered_to_people
from arena_platform.api.deps import MAX_ID, Services, ServicesDep, SessionDep
from arena_platform.api.errors import ApiError
from arena_platform.api.routes import challenges as challenge_routes
from arena_platform.api.routes import human_games as human_game_routes
from arena_platform.api.routes import ladders as ladder_routes
from arena_platform.api.routes import live as live_routes
from arena_platform.models import Competition, Ladder
from arena_platform.store import (
    bots,
    challenges,
    competitions,
    finals,
    human_games,
    ladders,
    leagues,
    live,
    reads,
    training,
)
from arena_platform.store.ladders import ranking_hidden

FRONTEND = Path(arena_platform.__file__).resolve().parents[2] / "frontend"
GAMES_PER_PAGE = 50
RECENT_GAMES = 20  # on a bot's page
BOTS_IN_FILTER = 500  # bots offered by the games page's bot filter
LEADERBOARD_POLL_MS = 3000  # how often an open leaderboard asks the API for news
TRAINING_POLL_MS = 3000  # how often an open training session page asks the API for news
LEAGUES_POLL_MS = 3000  # how often an open competition's leagues page asks the API for promotions
LIVE_POLL_MS = 1000  # how often a game in progress asks the API for its new moves
COMPETITION_POLL_MS = 3000  # how often an open competition's page asks the API for its ranking
COMPETITIONS_LISTED = 200  # the newest, on the competitions page
# Pages run only their own modules and reach only this server: injected markup would stay inert.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)
Found = TypeVar("Found")


class FrontendMissing(RuntimeError):
    """The `frontend/` folder (templates and static files) is not beside the source tree."""


def install_pages(app: FastAPI) -> None:
    """Adds the pages and mounts `/static`; FrontendMissing when `frontend/` is not found."""
    install_frontend(app)
    app.include_router(router)


def install_frontend(app: FastAPI, *, site_nav: bool = True) -> None:
    """Loads the templates (for `render`) and mounts `/static`; FrontendMissing when `frontend/` is
    not found. `arena view` serves its local replays with these too, with `site_nav` False: the
    header then links none of the server's pages (Leaderboard, Games, Upload, API), which it lacks."""
    for part in ("templates", "static"):
        if not (FRONTEND / part).is_dir():
            raise FrontendMissing(
                f"the web pages need {FRONTEND / part}: run Arena from its source tree "
                "(an editable install), where frontend/ sits beside platform/"
            )
    app.state.templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(FRONTEND / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    app.state.templates.globals.update(site_nav=site_nav, game_title=game_title, ladder_title=ladder_title)
    app.mount("/static", StaticFiles(directory=FRONTEND / "static"), name="static")


def game_title(game: str) -> str:
    """The game's own title ("Coders Strike Back" for csb); the name itself for a game not served."""
    return GAMES[game].spec.title if game in GAMES else game


def ladder_title(ladder: Ladder, ladders: list[Ladder]) -> str:
    """What a ladder tab reads: its game's title, with the ladder's name where `ladders` holds
    another ladder of the same game (another version or budget)."""
    title = game_title(ladder.game)
    if sum(other.game == ladder.game for other in ladders) > 1:
        return f"{title} ({ladder.name})"
    return title


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep, services: ServicesDep) -> HTMLResponse:
    """The leaderboard of the first ladder (or an invitation to upload when there is none)."""
    first = next(iter(ladders.list_ladders(session)), None)
    return _leaderboard_page(request, session, services, first)


@router.get("/ladders/{ladder_id}", response_class=HTMLResponse)
def ladder_page(ladder_id: str, request: Request, session: SessionDep, services: ServicesDep) -> HTMLResponse:
    ladder = _lookup(ladder_id, lambda key: ladders.get_ladder(session, ladder_id=key))
    if ladder is None:
        return _not_found(request, f"ladder {ladder_id}")
    return _leaderboard_page(request, session, services, ladder)


@router.get("/bots/{bot_id}", response_class=HTMLResponse)
def bot_page(bot_id: str, request: Request, session: SessionDep, services: ServicesDep) -> HTMLResponse:
    bot = _lookup(bot_id, lambda key: bots.describe_bot(session, bot_id=key))
    if bot is None:
        return _not_found(request, f"bot {bot_id}")
    data = {
        "bot": bot,
        "history": [] if bot.rating_hidden else reads.rating_history(session, bot_id=bot.id),
        "opponents": reads.results_by_opponent(session, bot_id=bot.id),
        "games": reads.list_games(session, bot_id=bot.id, limit=RECENT_GAMES),
        "human_games": human_game_routes.human_game_summaries(session, bot_id=bot.id, limit=RECENT_GAMES),
    }
    newest = bots.newest_version(session, ladder_id=bot.ladder_id, name=bot.name)
    ladder = ladders.get_ladder(session, ladder_id=bot.ladder_id)
    assert ladder is not None  # a foreign key
    spec = GAMES[ladder.game].spec
    checkpoint = training.checkpoint_of_bot(session, bot_id=bot.id)
    return render(
        request,
        "bot.html",
        bot=bot,
        ladder=ladder,
        # people play active bots of current game versions, on boards that offer one action a turn
        # (a renderer's `pick`), as the API lets them (bot_moves.human_playable_bot)
        playable=bot.status == "active"
        and ladder.game_version == spec.version
        and offered_to_people(GAMES[ladder.game]),
        played=bool(data["games"]),  # a new bot can have games before its first rating
        # challenged as `store.challenges` allows: an active bot of its game's current version
        challengeable=bot.status == "active" and ladder.game_version == spec.version,
        challenge_max_pairs=services.settings.challenge_max_pairs,
        successor=newest if newest is not None and newest.version > bot.version else None,
        training_session=None if checkpoint is None else checkpoint.session_id,
        page_data=data,
    )


@router.get("/challenges/{challenge_id}", response_class=HTMLResponse)
def challenge_page(challenge_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    """A challenge: its progress, W/D/L, Elo difference and games (each to its replay), refreshed
    from the API while it is open."""
    found = _lookup(challenge_id, lambda key: challenges.get_challenge(session, challenge_id=key))
    if found is None:
        return _not_found(request, f"challenge {challenge_id}")
    detail = challenge_routes.challenge_detail(session, found)
    return render(request, "challenge.html", challenge=detail, page_data={"challenge": detail})


@router.get("/competitions", response_class=HTMLResponse)
def competitions_page(request: Request, session: SessionDep, services: ServicesDep) -> HTMLResponse:
    """The competitions: the open ones, then the upcoming, then the closed (in_listing_order)."""
    newest = competitions.list_competitions(
        session, now=services.clock(), limit=COMPETITIONS_LISTED, offset=0
    )
    return render(request, "competitions.html", competitions=competitions.in_listing_order(newest))


@router.get("/competitions/{competition_id}", response_class=HTMLResponse)
def competition_page(
    competition_id: str, request: Request, session: SessionDep, services: ServicesDep
) -> HTMLResponse:
    """A competition: its terms, its timeline with a countdown to the next moment, its entrants, its
    ranking (its ladder's leaderboard, refreshed while it is open) unless that is hidden, and its
    final: the terms before it starts, then its results (progress and ranking, refreshed from the
    results API until it is finished)."""
    now = services.clock()
    found = _lookup(
        competition_id, lambda key: competitions.get_competition(session, competition_id=key, now=now)
    )
    if found is None:
        return _not_found(request, f"competition {competition_id}")
    row, _ = competitions.competition_ladder(session, competition_id=found.id)
    started = found.phase in (competitions.FINAL, competitions.FINISHED)
    data = {
        "competition": found,
        "now": now,  # the server's clock: the countdown runs on it, whatever the browser's says
        "entrants": competitions.list_entrants(session, competition_id=found.id),
        "leaderboard": None if found.ranking_hidden else _leaderboard_json(services, found.ladder_id),
        "leaderboard_url": f"/api/v1/ladders/{found.ladder_id}/leaderboard",
        "results": finals.results(session, competition=row, now=now) if started else None,
        "results_url": f"/api/v1/competitions/{found.id}/results",
        "poll_ms": COMPETITION_POLL_MS,
    }
    return render(request, "competition.html", competition=found, page_data=data)


@router.get("/competitions/{competition_id}/leagues", response_class=HTMLResponse)
def leagues_page(
    competition_id: str, request: Request, session: SessionDep, services: ServicesDep
) -> HTMLResponse:
    """Every league of a competition, the highest first, with its boss and members, and the
    promotions newest first; refreshed from the API until the deadline (store.leagues)."""
    now = services.clock()
    competition = _lookup(
        competition_id, lambda key: competitions.get_competition(session, competition_id=key, now=now)
    )
    if competition is None:
        return _not_found(request, f"competition {competition_id}")
    row, ladder = competitions.competition_ladder(session, competition_id=competition.id)
    view = leagues.leagues_view(session, competition=row, ladder=ladder)
    if view is None:
        return _not_found(request, f"leagues of competition {competition.id}")
    data = {
        "competition": competition,
        "leagues": view,
        "url": f"/api/v1/competitions/{competition.id}/leagues",
        "poll_ms": LEAGUES_POLL_MS,
    }
    return render(request, "leagues.html", competition=competition, page_data=data)


@router.get("/training/{session_id}", response_class=HTMLResponse)
def training_page(session_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    """A training session: progress, loss curve, and its checkpoints' ladder ratings against
    training step, refreshed from the API while it trains."""
    detail = _lookup(session_id, lambda key: training.describe_session(session, session_id=key))
    if detail is None:
        return _not_found(request, f"training session {session_id}")
    data = {
        "session": detail,
        "url": f"/api/v1/training-sessions/{detail.id}",
        "poll_ms": TRAINING_POLL_MS,
    }
    return render(request, "training.html", training=detail, page_data=data)


@router.get("/games", response_class=HTMLResponse)
def games_page(
    request: Request, session: SessionDep, ladder: str = "", bot: str = "", offset: str = ""
) -> HTMLResponse:
    """Finished games, newest first; `ladder` and `bot` filter (ids; anything else is ignored)."""
    ladder_id, bot_id, skip = _number(ladder), _number(bot), _number(offset) or 0
    games = reads.list_games(session, ladder_id=ladder_id, bot_id=bot_id, limit=GAMES_PER_PAGE, offset=skip)
    choices = bots.list_bots(session, ladder_id=ladder_id, limit=BOTS_IN_FILTER)
    all_ladders = ladders.list_ladders(session)
    return render(
        request,
        "games.html",
        ladders=all_ladders,
        bots=choices,
        ladder_id=ladder_id,
        bot_id=bot_id,
        offset=skip,
        more=len(games) == GAMES_PER_PAGE,
        per_page=GAMES_PER_PAGE,
        page_data={
            "games": games,
            "bot_id": bot_id,
            "ladders": {ladder.id: ladder.name for ladder in all_ladders},  # for the ladder column
        },
    )


@router.get("/games/{game_id}", response_class=HTMLResponse)
def replay_page(game_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    game = _lookup(game_id, lambda key: reads.get_game(session, game_id=key))
    if game is None:
        return _not_found(request, f"game {game_id}")
    ladder = ladders.get_ladder(session, ladder_id=game.ladder_id)
    data = {"game": game, "frames_url": f"/api/v1/games/{game.id}/frames"}
    return render(request, "replay.html", game=game, ladder=ladder, page_data=data)


@router.get("/live/{pairing_id}/{index}", response_class=HTMLResponse)
def live_page(pairing_id: str, index: str, request: Request, session: SessionDep) -> Response:
    """A game a worker is playing now, in the replay viewer, which follows it move by move; once
    its pairing is recorded, a redirect to the recorded game."""
    key, number = _number(pairing_id), _number(index, lowest=0)
    what = f"game {index} of pairing {pairing_id} in progress"
    if key is None or number is None:
        return _not_found(request, what)
    try:
        answer = live_routes.live_or_recorded(session, pairing_id=key, index=number, since=0)
    except ApiError:  # not played now (404), or its steps do not re-play (409)
        return _not_found(request, what)
    if answer.game_id is not None:
        return RedirectResponse(f"/games/{answer.game_id}", status_code=303)
    ladder = ladders.get_ladder(session, ladder_id=answer.ladder_id)
    data = {"live": answer, "live_url": f"/api/v1/live/{key}/{number}", "poll_ms": LIVE_POLL_MS}
    return render(
        request, "live.html", live=answer, ladder=ladder, game={"steps": answer.ply}, page_data=data
    )


@router.get("/play/{game_id}", response_class=HTMLResponse)
def play_page(game_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    """A game against a bot, live: the person who started it moves, anyone else watches."""
    game = _human_game(session, game_id)
    if game is None:
        return _not_found(request, f"game {game_id} against a person")
    return render(request, "play.html", game=game, page_data={"game": game})


@router.get("/play/{game_id}/replay", response_class=HTMLResponse)
def human_replay_page(game_id: str, request: Request, session: SessionDep) -> HTMLResponse:
    """A game against a person in the replay viewer."""
    game = _human_game(session, game_id)
    if game is None:
        return _not_found(request, f"game {game_id} against a person")
    summary = {"end_reason": game.end_reason, "forfeit_seat": game.forfeit_seat}  # as player.js reads it
    data = {"game": summary, "frames_url": f"/api/v1/human-games/{game.id}/frames"}
    return render(request, "human_replay.html", human=game, game={"steps": game.ply}, page_data=data)


def _human_game(session: Session, game_id: str) -> human_game_routes.HumanGameView | None:
    row = _lookup(game_id, lambda key: human_games.get_game(session, game_id=key))
    return None if row is None else human_game_routes.human_game_view(session, row)


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request) -> HTMLResponse:
    games = sorted((game.spec.name, game.spec.title) for game in GAMES.values())
    return render(request, "upload.html", games=games, player_kinds=PLAYER_KINDS)


@router.get("/me/bots", response_class=HTMLResponse)
def my_bots_page(request: Request) -> HTMLResponse:
    """The signed-in user's bots: the page reads GET /api/v1/me/bots with the token this browser
    keeps (pages have no session), and asks for one when it has none."""
    return render(request, "my_bots.html")


def _leaderboard_page(
    request: Request, session: Session, services: Services, ladder: Ladder | None
) -> HTMLResponse:
    if ladder is None:
        return render(request, "leaderboard.html", ladder=None, ladders=[], page_data=None)
    others = ladders.list_ladders(session)
    competition = None if ladder.competition_id is None else session.get(Competition, ladder.competition_id)
    if ranking_hidden(session, ladder=ladder):
        hidden = {"competition": competition, "page_data": None}  # no ratings, no polling
        return render(request, "leaderboard.html", ladder=ladder, ladders=others, **hidden)
    data = {  # the leaderboard exactly as the page's polling fetches it, from the API's cache
        "leaderboard": _leaderboard_json(services, ladder.id),
        "url": f"/api/v1/ladders/{ladder.id}/leaderboard",
        "live": live.ladder_games(session, ladder_id=ladder.id),  # its games in progress, polled too
        "live_url": f"/api/v1/ladders/{ladder.id}/live",
        "poll_ms": LEADERBOARD_POLL_MS,
    }
    return render(
        request, "leaderboard.html", ladder=ladder, ladders=others, competition=competition, page_data=data
    )


def _leaderboard_json(services: Services, ladder_id: int) -> Any:
    """The ladder's leaderboard exactly as the API answers it (and a page's polling fetches it),
    from the API's cache; only for a ladder whose ranking is shown."""
    return json.loads(ladder_routes.cached_leaderboard(services, ladder_id).plain)


def render(request: Request, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page `template` with `context`; `page_data` goes to the page's module as JSON."""
    environment: jinja2.Environment = request.app.state.templates
    context["page_data"] = jsonable_encoder(context.get("page_data"))  # models as the API answers them
    html = environment.get_template(template).render(path=request.url.path, **context)
    return HTMLResponse(
        html, status_code=status_code, headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY}
    )


def _not_found(request: Request, what: str) -> HTMLResponse:
    return render(request, "404.html", status_code=404, what=what)


def not_found_page(request: Request) -> HTMLResponse:
    """The 404 page for a path no route answers (the API's own paths get JSON errors)."""
    return _not_found(request, "page")


def _number(text: str, *, lowest: int = 1) -> int | None:
    """The id (or count, or index from `lowest` 0) written in `text`: a whole number from `lowest`
    to MAX_ID; None for anything else."""
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_ID))):
        return None
    return int(text) if lowest <= int(text) <= MAX_ID else None


def _lookup(text: str, find: Callable[[int], Found | None]) -> Found | None:
    """`find(id)` for the id written in `text`; None when `text` is no id."""
    key = _number(text)
    return None if key is None else find(key)
