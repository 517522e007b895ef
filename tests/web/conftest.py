"""Fixtures of the browser tests: a seeded SQLite site served by uvicorn, and Chromium via Playwright.

The site is seeded once per test process (each module serves a copy) the way the workers fill it:
real games played by `arena_bots.match.play` (UCT with 8 simulations against random, so the replays
carry search insights; on Spring 2021, tiny networks playing greedy and sample with a value recorded
as a search would; on Smash the Code, a tiny network playing greedy against the chain house bot; on
Coders Strike Back, a tiny greedy Q-network against the racer), replays in the blob store, games
recorded with the pairing's done mark through `record_pairing`, ratings with known order and
intervals, pairings in every state.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, sync_playwright
from sqlalchemy import Engine
from sqlmodel import Session, select

from arena_bots.manifest import Manifest
from arena_bots.match import Decision, Player, Request, play
from arena_bots.players import ChainPlayer, GreedyPlayer, RacerPlayer, RandomPlayer, SamplePlayer, UctPlayer
from arena_bots.runtime import InProcessSession
from arena_games.api import Game
from arena_games.registry import get_game
from arena_platform.api import create_app
from arena_platform.blobs import BlobStore
from arena_platform.db import make_engine, migrate, session
from arena_platform.models import Bot, Ladder, Pairing, Rating, RatingHistory, utc_now
from arena_platform.settings import Settings
from arena_platform.store import bots, users
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.results import PlayedGame, pairing_games, record_pairing

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
XSS_NAME = "<img src=x onerror=alert(1)>"  # a bot name that must show as text
SCRIPT_NAME = "</script><script>alert(2)</script>"  # one that would end the page's embedded JSON
SIMULATIONS = 8
TIMEOUT_FAULT = "the model took longer than the 5 s safety limit"
PENTE_SEED = 11  # a seed whose UCT-against-random game is short (123 steps): the module stays fast
SPRING_SEED = 3
CSB_SEED = 1  # with the tiny network of seed 2: 100 turns, collisions, boosts of both players
SMASH_SEED = 40  # 27 turns: the chain bot sets off chains of up to 6 steps and buries its opponent


@dataclass
class Site:
    """The seeded site: its URL, database and the ids the tests look for."""

    url: str
    engine: Engine
    token: str  # alice's API token
    bobail_ladder: int
    pente_ladder: int
    spring_ladder: int
    smash_ladder: int
    csb_ladder: int
    ranking: list[
        tuple[int, str, float, float, float]
    ]  # bobail (bot id, name, rating, low, high), best first
    unrated: int  # a bobail bot without games
    xss_name: str
    script_name: str  # a pente bot's
    script_bot: int
    alpha: int  # alice's bobail bot, rated first
    xss_bot: int  # the bot named XSS_NAME
    games: dict[str, int]  # "bobail", "pente", "spring2021", "smash", "csb", "illegal", "fault" -> id
    final_boards: dict[str, str]  # "bobail", "pente" -> the engine's view(final state)["board"]
    steps: dict[str, int]  # "bobail", "pente", "spring2021", "smash", "csb" -> steps of the game


class _IllegalMover:
    """A bot that answers an action the masks forbid (the runner forfeits it: an illegal move)."""

    name = "illegal"

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return [Decision(action=(10_000,)) for _ in requests]


class _TimedOut:
    """A bot whose model faults on every move (a forfeit with the fault as its cause)."""

    name = "timed-out"

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        return [Decision(action=None, fault=TIMEOUT_FAULT) for _ in requests]


class _Estimating:
    """A network player whose insight also carries a value in [-1, 1], as a search's would (the
    simultaneous search is not there yet): the tanh of the player's score lead over 20 points."""

    def __init__(self, player: Player) -> None:
        self.name = player.name
        self.player = player

    def decide(self, game: Game, requests: Sequence[Request]) -> list[Decision]:
        decisions = self.player.decide(game, requests)
        return [
            dataclasses.replace(decision, insight={**(decision.insight or {}), "value": _lead(game, request)})
            for decision, request in zip(decisions, requests, strict=True)
        ]


def _lead(game: Game, request: Request) -> float:
    """Through `game.to_dict`: the state is the match engine's, on either core."""
    score = game.to_dict(request.state)["score"]
    return math.tanh((score[request.player] - score[1 - request.player]) / 20)


@pytest.fixture(scope="session")
def seeded_site(
    tmp_path_factory: pytest.TempPathFactory, onnx_bot: Callable[..., bytes]
) -> tuple[Path, Site]:
    """The site seeded once per test process: its folder (the SQLite database and the blobs, which
    every module's `site` copies: seeding plays real games, seconds of CPU) and its ids."""
    folder = tmp_path_factory.mktemp("seeded-site")
    engine = make_engine(f"sqlite:///{folder / 'arena.db'}")
    migrate(engine)
    seeded = _seed(engine, BlobStore(str(folder / "blobs")), onnx_bot)
    engine.dispose()
    return folder, seeded


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory,
    serving: Callable[[FastAPI], AbstractContextManager[str]],
    seeded_site: tuple[Path, Site],
) -> Iterator[Site]:
    """A copy of the seeded site, served by uvicorn on a free local port for the whole module."""
    seeded_folder, seeded = seeded_site
    folder = tmp_path_factory.mktemp("site")
    shutil.copytree(seeded_folder, folder, dirs_exist_ok=True)
    engine = make_engine(f"sqlite:///{folder / 'arena.db'}")
    blobs = BlobStore(str(folder / "blobs"))
    settings = Settings(data_dir=folder, human_moves_per_minute=10_000)  # tests click faster than people
    app = create_app(settings, engine=engine, blobs=blobs, enqueue=lambda *_: None)
    with serving(app) as url:
        yield dataclasses.replace(seeded, url=url, engine=engine)
    engine.dispose()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless. Without it the browser tests skip, saying why, unless the
    environment variable CI is set: there Chromium is installed (the Makefile) and must run."""
    if not CHROMIUM.exists() and not os.environ.get("CI"):
        pytest.skip(f"the browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A page with what it raised: JavaScript errors and dialogs (both must stay empty)."""

    page: Page
    errors: list[str]
    dialogs: list[str]


@pytest.fixture
def watched(browser: Browser) -> Iterator[Watched]:
    """A fresh desktop-sized page; the test fails if a script on it threw or the console logged an
    error (a blocked resource, a policy violation, a failed request). Expected 4xx answers are
    logged by Chromium too: tests that cause them read `errors` and clear it."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield Watched(page, errors, dialogs)
    context.close()
    assert not errors, f"the page logged errors: {errors}"


@pytest.fixture
def page(watched: Watched) -> Page:
    return watched.page


@pytest.fixture
def rerate(site: Site) -> Iterator[Callable[[int, float], None]]:
    """`rerate(bot_id, rating)`: rewrites a bobail rating row as a refit would (interval ±80);
    every row changed is put back after the test."""
    saved: dict[int, tuple[float, float, float]] = {}

    def write(bot_id: int, rating: float, low: float, high: float) -> None:
        with session(site.engine) as db:
            row = db.get(Rating, (site.bobail_ladder, bot_id))
            saved.setdefault(bot_id, (row.rating, row.low, row.high))
            row.rating, row.low, row.high = rating, low, high
            db.add(row)
            db.commit()

    yield lambda bot_id, rating: write(bot_id, rating, rating - 80, rating + 80)
    for bot_id, values in saved.items():
        write(bot_id, *values)


@pytest.fixture
def finish_pairings(site: Site) -> Iterator[Callable[[int], None]]:
    """`finish_pairings(n)`: marks n queued bobail pairings done, as workers recording them would;
    they are queued again after the test."""
    finished: list[int] = []

    def finish(count: int) -> None:
        with session(site.engine) as db:
            queued = db.exec(
                select(Pairing).where(Pairing.ladder_id == site.bobail_ladder, Pairing.status == "queued")
            ).all()
            for pairing in queued[:count]:
                finished.append(pairing.id)
                pairing.status, pairing.finished_at = "done", utc_now()
                db.add(pairing)
            db.commit()

    yield finish
    with session(site.engine) as db:
        for pairing_id in finished:
            pairing = db.get(Pairing, pairing_id)
            pairing.status, pairing.finished_at = "queued", None
            db.add(pairing)
        db.commit()


@pytest.fixture
def unrate(site: Site) -> Iterator[Callable[[int], None]]:
    """`unrate(bot_id)`: removes a bobail bot's rating and history, as before its first refit
    (its games stay); the rows are put back after the test."""
    removed: list[Rating | RatingHistory] = []

    def remove(bot_id: int) -> None:
        with session(site.engine) as db:
            for model in (Rating, RatingHistory):
                for row in db.exec(select(model).where(model.bot_id == bot_id)).all():
                    removed.append(model(**row.model_dump()))
                    db.delete(row)
            db.commit()

    yield remove
    with session(site.engine) as db:
        db.add_all(removed)
        db.commit()


@pytest.fixture
def screenshot() -> Callable[[Page, str], Path]:
    """`screenshot(page, name)`: saves the whole page under artifacts/screenshots/NAME.png."""

    def save(page: Page, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


def _seed(engine: Engine, blobs: BlobStore, onnx_bot: Callable[..., bytes]) -> Site:
    with session(engine) as db:
        bobail = ensure_ladder(db, game="bobail", simulations=SIMULATIONS)
        pente = ensure_ladder(db, game="pente", simulations=SIMULATIONS)
        spring = ensure_ladder(db, game="spring2021", simulations=SIMULATIONS)
        smash = ensure_ladder(db, game="smash", simulations=SIMULATIONS)
        csb = ensure_ladder(db, game="csb", simulations=SIMULATIONS)
        alice, token = users.create_user(db, name="alice")
        mallory, _ = users.create_user(db, name="mallory")
        alpha = _network_bot(db, blobs, bobail, alice.id, "alpha", "mcts")
        xss = _network_bot(db, blobs, bobail, mallory.id, XSS_NAME, "greedy")
        rookie = _network_bot(db, blobs, bobail, alice.id, "rookie", "sample")
        stones = _network_bot(db, blobs, pente, alice.id, "stone-cold", "mcts")
        script = _network_bot(db, blobs, pente, mallory.id, SCRIPT_NAME, "greedy")
        sprout = _network_bot(db, blobs, spring, alice.id, "sprout", "greedy")
        seedling = _network_bot(db, blobs, spring, mallory.id, "seedling", "sample")
        twinkle = _network_bot(db, blobs, smash, alice.id, "twinkle", "greedy")
        pilot = _network_bot(db, blobs, csb, alice.id, "pod-dqn", "greedy", head="q")
        house = {(bot.ladder_id, bot.name): bot.id for bot in db.exec(select(Bot).where(Bot.kind == "house"))}
        random_bobail, uct_bobail = house[bobail.id, "random"], house[bobail.id, "uct"]
        db.commit()

        def uct(name: str) -> Player:
            return UctPlayer(simulations=SIMULATIONS, name=name)

        # The bobail game has its searching bot in the second seat, the pente one in the first.
        played = {
            "bobail": _record(
                db, blobs, bobail, {random_bobail: RandomPlayer("random"), alpha: uct("alpha")}, 2
            ),
            "pente": _record(
                db,
                blobs,
                pente,
                {stones: uct("stone-cold"), house[pente.id, "random"]: RandomPlayer()},
                PENTE_SEED,
            ),
            "spring2021": _record(
                db,
                blobs,
                spring,
                {
                    sprout: _Estimating(
                        GreedyPlayer(InProcessSession(onnx_bot("spring2021", seed=1)), name="sprout")
                    ),
                    seedling: _Estimating(
                        SamplePlayer(InProcessSession(onnx_bot("spring2021", seed=2)), name="seedling")
                    ),
                },
                SPRING_SEED,
            ),
            "smash": _record(
                db,
                blobs,
                smash,
                {
                    twinkle: GreedyPlayer(InProcessSession(onnx_bot("smash", seed=1)), name="twinkle"),
                    house[smash.id, "chain"]: ChainPlayer(),
                },
                SMASH_SEED,
            ),
            "csb": _record(
                db,
                blobs,
                csb,
                {
                    pilot: GreedyPlayer(
                        InProcessSession(onnx_bot("csb", seed=2, metadata={"head": "q"})),
                        head_kind="q",
                        name="pod-dqn",
                    ),
                    house[csb.id, "racer"]: RacerPlayer(),
                },
                CSB_SEED,
            ),
            "illegal": _record(db, blobs, bobail, {xss: _IllegalMover(), alpha: RandomPlayer("alpha")}, 3),
            "fault": _record(db, blobs, bobail, {uct_bobail: RandomPlayer("uct"), xss: _TimedOut()}, 4),
        }
        for status, count in (("queued", 6), ("running", 2), ("failed", 1)):
            for _ in range(count):
                db.add(Pairing(ladder_id=bobail.id, bot_a_id=alpha, bot_b_id=xss, seed=9, status=status))
        ranking = [
            (alpha, "alpha", 250.0, 170.0, 330.0),
            (xss, XSS_NAME, 120.0, 10.0, 230.0),
            (uct_bobail, "uct", 40.0, -20.0, 100.0),
            (random_bobail, "random", -40.0, -100.0, 20.0),
        ]
        for bot_id, _, rating, low, high in ranking:
            record = {"games": 6, "wins": 3, "draws": 1, "losses": 2, "provisional": bot_id == xss}
            db.add(Rating(ladder_id=bobail.id, bot_id=bot_id, rating=rating, low=low, high=high, **record))
        for games, rating in ((2, 60.0), (4, 180.0), (6, 250.0)):
            interval = {"low": rating - 90, "high": rating + 90}
            db.add(RatingHistory(ladder_id=bobail.id, bot_id=alpha, rating=rating, games=games, **interval))
        db.commit()
    return Site(
        url="",
        engine=engine,
        token=token,
        bobail_ladder=bobail.id,
        pente_ladder=pente.id,
        spring_ladder=spring.id,
        smash_ladder=smash.id,
        csb_ladder=csb.id,
        ranking=ranking,
        unrated=rookie,
        xss_name=XSS_NAME,
        script_name=SCRIPT_NAME,
        script_bot=script,
        alpha=alpha,
        xss_bot=xss,
        games={name: recorded.game_id for name, recorded in played.items()},
        final_boards={name: played[name].final_board for name in ("bobail", "pente")},
        steps={name: played[name].steps for name in ("bobail", "pente", "spring2021", "smash", "csb")},
    )


def _network_bot(
    db: Session, blobs: BlobStore, ladder: Ladder, owner_id: int, name: str, player: str, head: str = "policy"
) -> int:
    """An uploaded bot as the API records it (the model bytes are a stand-in: no game runs them)."""
    manifest = Manifest(
        game=ladder.game, game_version=ladder.game_version, name=name, player=player, head=head
    )
    report = {"ok": True, "code": "", "message": "", "checks": ["structure", "operators", "smoke game"]}
    bot = bots.create_network_bot(
        db,
        ladder_id=ladder.id,
        owner_id=owner_id,
        manifest=manifest,
        report=report,
        model_sha256=blobs.put(f"model of {name}".encode()),
    )
    return bot.id


@dataclass(frozen=True)
class _Recorded:
    game_id: int
    final_board: str  # the engine's view(final state)["board"]; "" for a game without one (Spring 2021)
    steps: int


def _record(db: Session, blobs: BlobStore, ladder: Ladder, seats: dict[int, Player], seed: int) -> _Recorded:
    """Plays one game from the opening of `seed` between `seats` (bot id -> its player, first seat
    first) and records it as the runner does: replay in the blob store, game and done mark at once."""
    game = get_game(ladder.game)
    (first_bot, second_bot), players = list(seats), list(seats.values())
    pairing = Pairing(
        ladder_id=ladder.id, bot_a_id=first_bot, bot_b_id=second_bot, seed=seed, status="running"
    )
    db.add(pairing)
    db.flush()
    result = play(game, players, seed, opening=game.opening(seed, None))
    first, second = result.returns
    played = PlayedGame(
        index=0,
        first_bot_id=first_bot,
        second_bot_id=second_bot,
        score=1.0 if first > second else 0.0 if first < second else 0.5,
        end_reason=result.end_reason,
        forfeit_seat=None if result.forfeit is None else result.forfeit.player,
        steps=len(result.replay.steps),
        replay_sha256=blobs.put(result.replay.to_json().encode()),
    )
    assert record_pairing(db, pairing=pairing, games=[played])
    (recorded,) = pairing_games(db, pairing_id=pairing.id)
    return _Recorded(recorded.id, game.view(result.final_state).get("board", ""), played.steps)
