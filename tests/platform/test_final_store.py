"""A competition's final in the store, on SQLite and PostgreSQL, with games recorded by hand (no
worker): when it starts and whom it freezes, its seeds, the ladder's scheduling stopped at the
deadline, the timed final's budget and stopping rule, a failed pairing, a final with one entrant,
and its reads through the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from competitions_setup import entered_competition
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from arena_bots.manifest import Manifest
from arena_platform import cli
from arena_platform.db import session
from arena_platform.finals.schedule import FinalPlan, round_robin
from arena_platform.models import Bot, Competition, CompetitionFinal, Pairing
from arena_platform.store import bots, competitions, finals
from arena_platform.store.competitions import FinalTerms
from arena_platform.store.finals import FINAL_GRACE
from arena_platform.store.pairings import DONE, FAILED
from arena_platform.store.results import PlayedGame, record_pairing
from arena_platform.store.scheduling import schedule_round

OPENS = datetime(2027, 3, 1, 12, tzinfo=UTC)
DEADLINE = OPENS + timedelta(days=2)
STARTS = DEADLINE + FINAL_GRACE  # the final's first moment


def _competition(
    db: Session, entrants: int, *, hidden_ranking: bool = False, **final: object
) -> tuple[Competition, list[int]]:
    """A competition whose `entrants` users each entered a greedy bot (of no real model: nothing
    plays here); (it, their bot ids)."""
    return entered_competition(
        db,
        opens=OPENS,
        deadline=DEADLINE,
        final=FinalTerms(**final),
        models=["0" * 64] * entrants,
        player="greedy",
        hidden_ranking=hidden_ranking,
    )


def _round(db: Session, competition: Competition, now: datetime) -> list[Pairing]:
    _, ladder = competitions.competition_ladder(db, competition_id=competition.id)
    return schedule_round(db, ladder_id=ladder.id, count=32, redelivery_seconds=60, now=now)


def _play(db: Session, pairings: list[Pairing], winner: int | None = None) -> None:
    """Records each pairing's two games: `winner` wins both where it plays, draws otherwise."""
    for pairing in pairings:
        seats = [(pairing.bot_a_id, pairing.bot_b_id), (pairing.bot_b_id, pairing.bot_a_id)]
        games = [
            PlayedGame(
                index=index,
                first_bot_id=first,
                second_bot_id=second,
                score=1.0 if first == winner else 0.0 if second == winner else 0.5,
                end_reason="test",
                forfeit_seat=None,
                steps=1,
                replay_sha256="0" * 64,
            )
            for index, (first, second) in enumerate(seats)
        ]
        record_pairing(db, pairing=db.get(Pairing, pairing.id), games=games, play_seconds=1.0)
        db.commit()


def test_the_final_starts_after_the_grace_with_the_entrants_of_then_and_the_schedules_seeds(engine: Engine):
    with session(engine) as db:
        competition, entrants = _competition(db, 3, pairs=2)
        before = _round(db, competition, DEADLINE - timedelta(seconds=1))
        assert before  # the ladder's own round
        assert all(pairing.final_number is None for pairing in before)
        assert _round(db, competition, DEADLINE) == []  # the ladder stops; the grace runs
        assert db.get(CompetitionFinal, competition.id) is None
        results = finals.results(db, competition=competition, now=DEADLINE)
        assert (results.phase, results.progress.booked, results.ranking) == ("closed", 0, None)

        booked = _round(db, competition, STARTS)
        final = db.get(CompetitionFinal, competition.id)
        assert final.entrants == entrants  # house bots left out
        plan = FinalPlan(entrants=tuple(entrants), pairs_per_pair=2, seed=final.seed)
        expected = [(p.number, p.round, p.bot_a, p.bot_b, p.seed) for p in round_robin(plan)]
        assert [(p.final_number, p.final_round, p.bot_a_id, p.bot_b_id, p.seed) for p in booked] == expected
        assert _round(db, competition, STARTS) == []  # nothing more while the round is in flight

        late = bots.create_network_bot(
            db,
            ladder_id=booked[0].ladder_id,
            owner_id=db.exec(select(Bot.owner_id).where(col(Bot.id) == entrants[0])).one(),
            manifest=Manifest(game="bobail", game_version=1, name="late", player="greedy"),
            report={},
            model_sha256="0" * 64,
        )
        db.commit()
        _play(db, booked, winner=entrants[0])
        following = _round(db, competition, STARTS)
        assert late.id not in {p.bot_a_id for p in following} | {p.bot_b_id for p in following}
        results = finals.results(db, competition=competition, now=STARTS)
        assert (results.phase, results.provisional, results.progress.done) == ("final", True, 6)
        assert results.ranking[0]["entrant_id"] == entrants[0]


def test_a_timed_final_books_rounds_while_its_budget_lasts(engine: Engine):
    with session(engine) as db:
        competition, entrants = _competition(db, 3, seconds=600, stop="budget")
        first = _round(db, competition, STARTS)
        assert [p.final_round for p in first] == [0, 0, 0]
        _play(db, first)
        second = _round(db, competition, STARTS + timedelta(seconds=599))
        assert [(p.final_round, p.final_number) for p in second] == [(1, 3), (1, 4), (1, 5)]
        final = db.get(CompetitionFinal, competition.id)
        plan = FinalPlan(entrants=tuple(entrants), pairs_per_pair=2, seed=final.seed)
        assert [p.seed for p in first + second] == [p.seed for p in round_robin(plan)]
        _play(db, second)
        assert _round(db, competition, STARTS + timedelta(seconds=600)) == []
        assert db.get(CompetitionFinal, competition.id).finished_at is not None
        assert finals.results(db, competition=competition, now=STARTS).phase == "finished"


def test_a_settled_final_stops_before_its_budget_once_its_order_is_sure(engine: Engine):
    with session(engine) as db:
        competition, entrants = _competition(db, 2, seconds=3600, stop="settled", confidence=0.6)
        first = _round(db, competition, STARTS)
        _play(db, first, winner=entrants[1])
        assert _round(db, competition, STARTS + timedelta(seconds=1)) == []  # 2-0: P > 0.6
        assert db.get(CompetitionFinal, competition.id).finished_at is not None


def test_a_failed_pairing_leaves_its_games_out_and_the_final_goes_on(engine: Engine):
    with session(engine) as db:
        competition, _ = _competition(db, 2, pairs=1)
        (only,) = _round(db, competition, STARTS)
        db.exec(update(Pairing).where(col(Pairing.id) == only.id).values(status=FAILED))
        db.commit()
        extra = _round(db, competition, STARTS)  # unrated neighbours are unsettled: an extra round
        assert [(p.final_number, p.final_round) for p in extra] == [(1, 1)]
        progress = finals.results(db, competition=competition, now=STARTS).progress
        assert (progress.booked, progress.failed, progress.in_flight, progress.rounds) == (2, 1, 1, 2)
        db.exec(update(Pairing).where(col(Pairing.id) == extra[0].id).values(status=DONE))
        db.commit()
        assert [p.final_round for p in _round(db, competition, STARTS)] == [2]  # the cap is 2 extra rounds


def test_a_final_of_one_entrant_finishes_at_once(engine: Engine):
    with session(engine) as db:
        competition, entrants = _competition(db, 1, pairs=4)
        assert _round(db, competition, STARTS) == []
        final = db.get(CompetitionFinal, competition.id)
        assert (final.entrants, final.finished_at is not None) == (entrants, True)
        closed, unfinished = finals.unfinished_finals(db, now=STARTS)
        assert (closed, unfinished) == ({competition_ladder_id(db, competition)}, set())


def competition_ladder_id(db: Session, competition: Competition) -> int:
    return competitions.competition_ladder(db, competition_id=competition.id)[1].id


def test_the_results_routes_answer_409_before_the_finals_games_and_404_for_no_competition(
    engine: Engine, client
):
    with session(engine) as db:
        competition, _ = _competition(db, 2, pairs=1)
    for name in ("results.csv", "results.json", "final.zip"):
        response = client.get(f"/api/v1/competitions/{competition.id}/{name}")
        assert (response.status_code, response.json()["code"]) == (409, "no_final_games")
        missing = client.get(f"/api/v1/competitions/999/{name}")
        assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    answer = client.get(f"/api/v1/competitions/{competition.id}/results").json()
    assert (answer["phase"], answer["ranking"], answer["progress"]["booked"]) == ("upcoming", None, 0)


def test_the_cli_shows_a_final_not_yet_played_and_says_why_it_has_no_files(
    engine: Engine, live_server, tmp_path, capsys
):
    with session(engine) as db:
        competition, _ = _competition(db, 2, pairs=1)
    command = ["competition", "results", str(competition.id), "--url", live_server()]
    assert cli.main(command) == 0
    assert capsys.readouterr().out.strip() == f"competition {competition.id}: upcoming"
    assert cli.main([*command, "--csv", str(tmp_path / "ranking.csv")]) == 2
    assert "final has no games yet (no_final_games, HTTP 409)" in capsys.readouterr().err
    assert not (tmp_path / "ranking.csv").exists()


def test_a_hidden_ranking_shows_no_final_ranking_until_the_final_is_finished(engine: Engine, client):
    with session(engine) as db:
        competition, _ = _competition(db, 2, hidden_ranking=True, pairs=1)
        ladder_id = competition_ladder_id(db, competition)
        booked = _round(db, competition, STARTS)
        _play(db, booked)
        assert finals.results(db, competition=competition, now=STARTS).ranking_hidden
    hidden = [f"/api/v1/ladders/{ladder_id}/leaderboard"] + [
        f"/api/v1/competitions/{competition.id}/{name}" for name in ("results.csv", "results.json")
    ]
    for url in hidden:
        answer = client.get(url)
        assert (answer.status_code, answer.json()["code"]) == (403, "ranking_hidden"), url
    answer = client.get(f"/api/v1/competitions/{competition.id}/results").json()
    assert (answer["ranking_hidden"], answer["ranking"], answer["progress"]["done"]) == (True, None, 1)
    assert _view_phases(client, competition.id) == [("final", True)] * 2  # as the results say
    assert client.get(f"/api/v1/competitions/{competition.id}/final.zip").status_code != 403  # games: public

    with session(engine) as db:
        while booked := _round(db, competition, STARTS):  # the extra rounds, to the cap
            _play(db, booked)
        assert finals.results(db, competition=competition, now=STARTS).phase == "finished"
    for url in hidden:
        assert client.get(url).status_code == 200, url
    answer = client.get(f"/api/v1/competitions/{competition.id}/results").json()
    assert answer["ranking_hidden"] is False
    assert len(answer["ranking"]) == 2
    assert _view_phases(client, competition.id) == [("finished", False)] * 2


def _view_phases(client, competition_id: int) -> list[tuple[str, bool]]:
    """(phase, ranking_hidden) of the competition's view, as GET /competitions/{id} and the list say."""
    listed = [view for view in client.get("/api/v1/competitions").json() if view["id"] == competition_id]
    one = client.get(f"/api/v1/competitions/{competition_id}").json()
    return [(view["phase"], view["ranking_hidden"]) for view in [one, *listed]]


def test_the_competitions_page_lists_those_in_their_final_or_finished_with_the_closed(engine: Engine):
    with session(engine) as db:
        competition, _ = _competition(db, 2, pairs=1)
        view = competitions.get_competition(db, competition_id=competition.id, now=STARTS)
    assert view.phase == "closed"  # no final yet
    later = timedelta(days=1)
    views = [
        view.model_copy(update={"id": 1, "phase": "finished", "deadline": DEADLINE - 2 * later}),
        view.model_copy(update={"id": 2, "phase": "open", "deadline": DEADLINE + later}),
        view.model_copy(update={"id": 3, "phase": "final", "deadline": DEADLINE}),
        view.model_copy(update={"id": 4, "phase": "closed", "deadline": DEADLINE - later}),
    ]
    assert [listed.id for listed in competitions.in_listing_order(views)] == [2, 3, 4, 1]


def test_the_cli_shows_the_finals_phase_and_the_hidden_ranking_out(engine: Engine, live_server, capsys):
    with session(engine) as db:
        competition, _ = _competition(db, 2, hidden_ranking=True, pairs=1)
        _play(db, _round(db, competition, STARTS))
    command = ["competition", "show", str(competition.id), "--url", live_server()]
    assert cli.main(command) == 0
    shown = capsys.readouterr().out
    assert "[final]" in shown
    assert "ranking: hidden until the final is finished" in shown
    with session(engine) as db:
        while booked := _round(db, competition, STARTS):
            _play(db, booked)
    assert cli.main(command) == 0
    shown = capsys.readouterr().out
    assert "[finished]" in shown
    assert "ranking: out, the final is finished (hidden until then)" in shown
