"""A competition's leagues, on SQLite and PostgreSQL (no worker: pairings are booked by the
scheduling round and recorded as a worker would): every entrant starts in the lowest league,
rounds pair bots of one league only (its boss among them), a bot is promoted at the refit where
it has its placement games and beats its boss with the stated probability (not before, and not
on an even score), a new version keeps its league, and the API reads the leagues (without a
rating while the competition hides its ranking)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from played import placeholder_bot, placeholder_game
from sqlalchemy import Engine
from sqlmodel import select

from arena_platform import cli
from arena_platform.db import session
from arena_platform.models import Bot, Competition, Ladder, LeaguePromotion, Pairing, Rating
from arena_platform.ratings import stronger_probabilities
from arena_platform.store import competitions, users
from arena_platform.store.competitions import CompetitionTerms, League
from arena_platform.store.ladders import ensure_ladder
from arena_platform.store.leagues import PLACEMENT_GAMES, PROMOTION_LEVEL, ladder_leagues
from arena_platform.store.pairings import create_pairings
from arena_platform.store.ratings import fit_ladder, ladder_pair_counts, refit_ladder
from arena_platform.store.results import record_pairing
from arena_platform.store.scheduling import schedule_round

NOW = datetime(2027, 1, 1, tzinfo=UTC)
LEAGUES = [League(name="wood", boss="random"), League(name="bronze", boss="uct")]


@dataclass(frozen=True)
class Cup:
    competition_id: int
    ladder_id: int
    random: int  # wood's boss
    uct: int  # bronze's boss
    ace: int
    dud: int
    even: int


@pytest.fixture
def cup(engine: Engine) -> Cup:
    """A bobail competition with leagues wood (boss random) and bronze (boss uct), and three
    entrants of alice's: ace, dud and even."""
    with session(engine) as db:
        organiser, _ = users.create_user(db, name="olga", organiser=True)
        users.create_user(db, name="alice")
        terms = CompetitionTerms(
            game="bobail", title="Cup", opens_at=NOW, deadline=NOW + timedelta(days=9000), leagues=LEAGUES
        )
        made = competitions.create_competition(
            db, organiser=organiser, terms=terms, default_simulations=8, now=NOW
        )
        _, ladder = competitions.competition_ladder(db, competition_id=made.id)
        house = dict(db.exec(select(Bot.name, Bot.id).where(Bot.ladder_id == ladder.id)).all())
        entrants = [placeholder_bot(db, ladder.id, "alice", name) for name in ("ace", "dud", "even")]
        db.commit()
        return Cup(made.id, ladder.id, house["random"], house["uct"], *entrants)


def _promotion(cup: Cup, evidence: dict) -> LeaguePromotion:
    """Ace promoted from wood to bronze at NOW, as `promote` would record it."""
    return LeaguePromotion(
        competition_id=cup.competition_id,
        bot_id=cup.ace,
        from_league=0,
        to_league=1,
        at=NOW,
        evidence=evidence,
    )


def _pairs(pairings: list[Pairing]) -> set[frozenset[int]]:
    return {frozenset((pairing.bot_a_id, pairing.bot_b_id)) for pairing in pairings}


def _play(engine: Engine, pairings: list[Pairing], first_seat_score) -> None:
    """Records each pairing as a worker would: both games scored by `first_seat_score(first, second)`."""
    with session(engine) as db:
        for pairing in pairings:
            seats = ((pairing.bot_a_id, pairing.bot_b_id), (pairing.bot_b_id, pairing.bot_a_id))
            games = [
                placeholder_game(index, first, second, first_seat_score(first, second))
                for index, (first, second) in enumerate(seats)
            ]
            assert record_pairing(db, pairing=db.get(Pairing, pairing.id), games=games)


def _round(engine: Engine, ladder_id: int) -> list[Pairing]:
    with session(engine) as db:
        return schedule_round(db, ladder_id=ladder_id, count=32, redelivery_seconds=60)


def _promotions(engine: Engine) -> list[LeaguePromotion]:
    with session(engine) as db:
        return list(db.exec(select(LeaguePromotion).order_by(LeaguePromotion.id)))


def test_entrants_start_in_the_lowest_league_and_rounds_pair_within_it(engine: Engine, cup: Cup):
    with session(engine) as db:
        assert ladder_leagues(db, ladder=db.get(Ladder, cup.ladder_id)) == {
            cup.random: 0,
            cup.uct: 1,
            cup.ace: 0,
            cup.dud: 0,
            cup.even: 0,
        }
    wood = {cup.random, cup.ace, cup.dud, cup.even}
    for _ in range(3):
        booked = _round(engine, cup.ladder_id)
        assert booked
        assert all(pair <= wood for pair in _pairs(booked))  # bronze's boss waits alone
        _play(engine, booked, lambda first, second: 0.5)

    with session(engine) as db:  # ace rises (recorded as promote would)
        db.add(_promotion(cup, {}))
        db.commit()
    booked = _round(engine, cup.ladder_id)
    assert frozenset((cup.ace, cup.uct)) in _pairs(booked)
    assert all(pair <= wood - {cup.ace} or pair == {cup.ace, cup.uct} for pair in _pairs(booked))


def test_an_open_ladder_has_no_leagues(engine: Engine, cup: Cup):
    with session(engine) as db:
        assert ladder_leagues(db, ladder=ensure_ladder(db, game="bobail", simulations=8)) is None


def _beat(winner: int):
    """First-seat scores where `winner` wins every game and the others draw."""
    return lambda first, second: 1.0 if first == winner else 0.0 if second == winner else 0.5


def test_a_bot_is_promoted_once_it_has_its_placement_games_and_beats_its_boss(engine: Engine, cup: Cup):
    """Ace wins every game against wood's boss, one pairing (two games) at a time, refitted after
    each: the probability passes the level before the placement games are played, and the
    promotion comes at the refit where they are, not before. Even draws the boss: never promoted."""
    with session(engine) as db:
        ladder = db.get(Ladder, cup.ladder_id)
        booked = create_pairings(
            db,
            ladder=ladder,
            pairs=[(cup.ace, cup.random)] * (PLACEMENT_GAMES // 2) + [(cup.even, cup.random)] * 15,
            redelivery_seconds=60,
        )
        db.commit()
    ace_pairings = [pairing for pairing in booked if pairing.bot_a_id == cup.ace]
    _play(engine, [pairing for pairing in booked if pairing.bot_a_id == cup.even], _beat(-1))
    for played, pairing in enumerate(ace_pairings, start=1):
        _play(engine, [pairing], _beat(cup.ace))
        with session(engine) as db:
            assert refit_ladder(db, ladder_id=cup.ladder_id)
            table = fit_ladder(db, ladder_id=cup.ladder_id)
            pairs = ladder_pair_counts(db, ladder_id=cup.ladder_id)
        probability = stronger_probabilities(pairs, table, [str(cup.ace)], str(cup.random))[str(cup.ace)]
        promotions = _promotions(engine)
        if 2 * played < PLACEMENT_GAMES:
            assert promotions == [], played
            if played >= 4:
                assert probability >= PROMOTION_LEVEL  # the evidence alone was there already
    assert [(p.bot_id, p.from_league, p.to_league) for p in promotions] == [(cup.ace, 0, 1)]
    evidence = promotions[0].evidence
    assert evidence["games"] == PLACEMENT_GAMES
    assert evidence["probability"] == pytest.approx(probability)
    assert probability >= PROMOTION_LEVEL
    assert evidence["rating"] > evidence["boss_rating"]

    with session(engine) as db:  # a new version keeps its league; its placement starts anew
        leagues = ladder_leagues(db, ladder=db.get(Ladder, cup.ladder_id))
        assert (leagues[cup.ace], leagues[cup.even]) == (1, 0)
        newer = placeholder_bot(db, cup.ladder_id, "alice", "ace")
        db.commit()
        assert ladder_leagues(db, ladder=db.get(Ladder, cup.ladder_id))[newer] == 1
        assert not refit_ladder(db, ladder_id=cup.ladder_id)  # no new games: nothing changes
    assert len(_promotions(engine)) == 1


def test_rounds_refits_and_a_promotion_as_the_workers_run_them(engine: Engine, cup: Cup):
    """Round after round booked by the scheduler, recorded and refitted: ace, who beats everyone,
    rises at a refit once it has its placement games, and from then on plays in bronze only."""
    for _ in range(10):
        booked = _round(engine, cup.ladder_id)
        _play(engine, booked, _beat(cup.ace))
        with session(engine) as db:
            refit_ladder(db, ladder_id=cup.ladder_id)
        if _promotions(engine):
            break
    (promotion,) = _promotions(engine)
    assert (promotion.bot_id, promotion.to_league) == (cup.ace, 1)
    assert promotion.evidence["games"] >= PLACEMENT_GAMES
    for _ in range(2):
        booked = _round(engine, cup.ladder_id)
        assert {pair for pair in _pairs(booked) if cup.ace in pair} == {frozenset((cup.ace, cup.uct))}
        assert all(cup.uct not in pair for pair in _pairs(booked) if cup.ace not in pair)
        _play(engine, booked, _beat(cup.ace))


def test_the_api_reads_the_leagues_and_the_competition_their_sizes(
    engine: Engine, cup: Cup, client: TestClient
):
    with session(engine) as db:
        db.add(_promotion(cup, {"probability": 0.97, "rating": 120.0, "boss_rating": -200.0, "games": 20}))
        db.commit()
    read = client.get(f"/api/v1/competitions/{cup.competition_id}").json()
    assert (read["leagues"], read["league_sizes"]) == ([league.model_dump() for league in LEAGUES], [2, 1])

    view = client.get(f"/api/v1/competitions/{cup.competition_id}/leagues").json()
    assert (view["promotion_level"], view["placement_games"]) == (PROMOTION_LEVEL, PLACEMENT_GAMES)
    wood, bronze = view["leagues"]
    assert (wood["name"], wood["boss"]["name"], wood["boss"]["author"]) == ("wood", "random", None)
    assert [member["name"] for member in wood["members"]] == ["dud", "even"]  # unrated: by id
    assert (wood["members"][0]["author"], wood["members"][0]["rating"]) == ("alice", None)
    assert (bronze["boss"]["name"], [member["name"] for member in bronze["members"]]) == ("uct", ["ace"])
    (promotion,) = wood["promotions"]
    assert (promotion["name"], promotion["from_league"], promotion["to_league"]) == ("ace", "wood", "bronze")
    assert (promotion["probability"], promotion["games"], promotion["at"]) == (
        0.97,
        20,
        "2027-01-01T00:00:00Z",
    )
    assert bronze["promotions"] == []

    assert client.get("/api/v1/competitions/999/leagues").json()["code"] == "not_found"
    with session(engine) as db:
        organiser = users.get_user_by_name(db, name="olga")
        terms = CompetitionTerms(
            game="bobail", title="Plain", opens_at=NOW, deadline=NOW + timedelta(days=9000)
        )
        plain = competitions.create_competition(
            db, organiser=organiser, terms=terms, default_simulations=8, now=NOW
        )
        db.commit()
        plain_id = plain.id
    missing = client.get(f"/api/v1/competitions/{plain_id}/leagues")
    assert (missing.status_code, missing.json()["code"]) == (404, "no_leagues")
    assert client.get(f"/api/v1/competitions/{plain_id}").json()["league_sizes"] is None


def test_a_hidden_ranking_hides_the_leagues_ratings_and_the_promotions_evidence(
    engine: Engine, cup: Cup, client: TestClient
):
    with session(engine) as db:
        db.add(_promotion(cup, {"probability": 0.97, "rating": 120.0, "boss_rating": -200.0, "games": 20}))
        db.get(Competition, cup.competition_id).hidden_ranking = True
        db.add(
            Rating(
                ladder_id=cup.ladder_id,
                bot_id=cup.dud,
                rating=50.0,
                low=0.0,
                high=100.0,
                games=9,
                wins=9,
                draws=0,
                losses=0,
                provisional=False,
            )
        )
        db.commit()
    view = client.get(f"/api/v1/competitions/{cup.competition_id}/leagues").json()
    assert view["ranking_hidden"] is True
    wood, bronze = view["leagues"]
    shown = [bot for league in (wood, bronze) for bot in (league["boss"], *league["members"])]
    assert {(bot["rating"], bot["interval_low"], bot["interval_high"], bot["games"]) for bot in shown} == {
        (None, None, None, 0)
    }
    (promotion,) = wood["promotions"]
    assert (promotion["probability"], promotion["rating"], promotion["boss_rating"]) == (None, None, None)
    assert (promotion["name"], promotion["to_league"], promotion["games"]) == ("ace", "bronze", 20)


def test_the_cli_creates_leagues_and_shows_them(
    engine: Engine, cup: Cup, live_server, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("ARENA_DATABASE_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
    assert cli.main(["user", "create", "ola", "--organiser"]) == 0
    token = capsys.readouterr().out.strip()
    url = live_server()
    now = datetime.now(UTC)
    create = [
        "competition",
        "create",
        "--game",
        "bobail",
        "--title",
        "Leagues",
        "--url",
        url,
        "--token",
        token,
    ]
    create += ["--opens", now.isoformat(), "--deadline", (now + timedelta(days=1)).isoformat()]
    assert cli.main([*create, "--league", "wood"]) == 2
    assert "write NAME=BOSS" in capsys.readouterr().err
    assert cli.main([*create, "--league", "wood=random", "--league", "bronze=random"]) == 2
    assert "a boss of its own" in capsys.readouterr().err
    assert cli.main([*create, "--league", "wood=random", "--league", "bronze=uct"]) == 0
    made = capsys.readouterr().out.split()[1]
    assert cli.main(["competition", "show", made, "--url", url]) == 0
    assert "leagues: wood (members: 0), bronze (members: 0)" in capsys.readouterr().out

    with session(engine) as db:  # the fixture's cup: ace promoted
        db.add(_promotion(cup, {"probability": 0.97, "rating": 120.0, "boss_rating": -200.0, "games": 20}))
        db.commit()
    assert cli.main(["competition", "leagues", str(cup.competition_id), "--url", url]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "bronze: boss uct (unrated), members: 1",
        "    1. ace v1 by alice  unrated",
        "wood: boss random (unrated), members: 2",
        "    1. dud v1 by alice  unrated",
        "    2. even v1 by alice  unrated",
        "  promoted 2027-01-01T00:00:00Z: ace to bronze, P(stronger than random) 0.970 after 20 games",
    ]
