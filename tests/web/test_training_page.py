"""A training session's page in Chromium: progress bars, the loss curve and the checkpoints' ladder
ratings with their intervals against training step, updated live as the session trains; the
checkpoint's bot page links back to it, and the leaderboard marks checkpoints and can hide them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from arena_bots.manifest import Manifest
from arena_platform.db import session
from arena_platform.models import Rating, TrainingCheckpoint
from arena_platform.store import training, users
from arena_platform.store.training import LossPoint, Progress

LIVE_MS = 10_000  # the page polls every 3 s
SETTINGS = {"episodes": 100, "time_limit_seconds": 600, "blocks": 1, "filters": 16, "seed": 0}
SETTINGS |= {"simulations": 4, "games_per_generation": 10, "checkpoint_every": 1}


def _generation(site, session_id: int, generation: int, rating: float) -> int:
    """Saves generation `generation` as a worker would, its checkpoint rated `rating` ± 50; its bot id."""
    progress = Progress(
        generation=generation,
        step=10 * generation,
        games=10 * generation,
        positions=300 * generation,
        elapsed_seconds=30.0 * generation,
        losses=[
            LossPoint(step=10 * g, policy=5.0 - g, value=1.0 - 0.1 * g) for g in range(1, generation + 1)
        ],
    )
    checkpoint = TrainingCheckpoint(
        session_id=session_id, generation=generation, step=10 * generation, games=10 * generation,
        network_sha256="0" * 64,
    )  # fmt: skip
    manifest = Manifest(game="bobail", game_version=1, name="learner", player="mcts")
    with session(site.engine) as db:
        saved, bot_id = training.save_generation(
            db, session_id=session_id, owner="worker", state_sha256="1" * 64, progress=progress,
            checkpoint=checkpoint, manifest=manifest, report={}, model_sha256="2" * 64,
            ladder_id=site.bobail_ladder,
        )  # fmt: skip
        assert saved
        db.add(Rating(ladder_id=site.bobail_ladder, bot_id=bot_id, rating=rating, low=rating - 50,
                      high=rating + 50, games=12, wins=6, draws=0, losses=6, provisional=True))  # fmt: skip
        db.commit()
    return bot_id


def test_the_session_page_follows_the_training_live(page, site, screenshot):
    with session(site.engine) as db:
        owner, _ = users.create_user(db, name="trainer")
        row = training.create_session(
            db, owner_id=owner.id, game="bobail", kit="alphazero", bot_name="learner", settings=SETTINGS
        )
        db.commit()
        claimed = training.claim_session(
            db, session_id=row.id, owner="worker", lease_seconds=600, max_attempts=3
        )
        assert claimed is not None
    first = _generation(site, row.id, 1, rating=-120.0)

    page.goto(f"{site.url}/training/{row.id}")
    expect(page.locator("#status")).to_have_text("running")
    expect(page.locator("#games-text")).to_have_text("10 / 100 games")
    expect(page.locator("#time-text")).to_have_text("30 / 600 s")
    expect(page.locator("#ratings .checkpoint-rating")).to_have_count(1)
    expect(page.locator("#losses .loss-line")).to_have_count(2)
    expect(page.locator("#losses .loss-line.policy title")).to_have_text("policy cross-entropy")
    expect(page.locator("#checkpoints tbody tr")).to_have_count(1)

    _generation(site, row.id, 2, rating=40.0)  # the session trains on: the page follows
    expect(page.locator("#ratings .checkpoint-rating")).to_have_count(2, timeout=LIVE_MS)
    expect(page.locator("#games-text")).to_have_text("20 / 100 games")
    expect(page.locator("#losses .loss-line.policy")).to_have_attribute("data-count", "2")
    expect(page.locator("#checkpoints tbody tr").last).to_contain_text("40")
    expect(page.locator("#checkpoints tbody tr").last).to_contain_text("-10 to 90")
    bars = page.locator("#ratings .error-bar")
    low, high = (float(bars.last.get_attribute(name)) for name in ("y1", "y2"))
    assert low > high  # the interval spans upwards on screen: low at the bottom
    screenshot(page, "training-session")

    page.locator("#checkpoints tbody tr").first.get_by_role("link").click()
    expect(page).to_have_url(f"{site.url}/bots/{first}")
    expect(page.locator("h1 .badge.checkpoint")).to_be_visible()
    page.get_by_role("link", name=f"training session {row.id}").click()
    expect(page).to_have_url(f"{site.url}/training/{row.id}")


@pytest.mark.parametrize(
    ("game", "kit", "point", "names"),
    [
        # a policy-gradient loss may be negative
        ("smash", "actor-critic", LossPoint(step=48, policy=-0.01, value=0.05),
         {"policy": "V-trace policy-gradient loss", "value": "value MSE to the V-trace targets"}),
        ("csb", "dqn", LossPoint(step=3900, policy=None, value=4.2), {"value": "mean |TD error|"}),
    ],
)  # fmt: skip
def test_each_kit_names_its_own_losses(page, site, screenshot, game, kit, point, names):
    settings = {key: SETTINGS[key] for key in SETTINGS if key not in ("simulations", "games_per_generation")}
    with session(site.engine) as db:
        owner, _ = users.create_user(db, name=f"{kit}-author")
        row = training.create_session(
            db, owner_id=owner.id, game=game, kit=kit, bot_name=kit, settings=settings
        )
        db.commit()
        training.claim_session(db, session_id=row.id, owner="worker", lease_seconds=600, max_attempts=3)
        progress = Progress(generation=1, step=point.step, games=2, positions=2048, losses=[point])
        saved, _ = training.save_generation(
            db, session_id=row.id, owner="worker", state_sha256="1" * 64, progress=progress
        )
        assert saved
    page.goto(f"{site.url}/training/{row.id}")
    expect(page.locator(".subtitle")).to_contain_text(f"{kit} on {game}")
    expect(page.locator("#losses .loss-line")).to_have_count(len(names))
    for key, name in names.items():
        expect(page.locator(f"#losses .loss-line.{key} title")).to_have_text(name)
        expect(page.locator(f"#losses .loss-dot.{key}")).to_have_count(1)  # one generation: a dot
    labels = page.locator("#losses .y-tick").all_text_contents()
    assert len(set(labels)) == len(labels) > 1, labels  # ticks from the data, none alike
    assert not any(label.startswith("-0") and float(label) == 0 for label in labels), labels
    screenshot(page, f"training-losses-{kit}")


def test_budgets_a_last_generation_ran_past_are_shown_as_met_within_it(page, site):
    with session(site.engine) as db:
        owner, _ = users.create_user(db, name="overshooter")
        row = training.create_session(
            db, owner_id=owner.id, game="bobail", kit="alphazero", bot_name="over", settings=SETTINGS
        )
        db.commit()
        training.claim_session(db, session_id=row.id, owner="worker", lease_seconds=600, max_attempts=3)
        progress = Progress(generation=3, step=30, games=128, positions=900, elapsed_seconds=612.4)
        saved, _ = training.save_generation(
            db, session_id=row.id, owner="worker", state_sha256="1" * 64, progress=progress
        )
        assert saved
    page.goto(f"{site.url}/training/{row.id}")
    expect(page.locator("#games-text")).to_have_text("128 games (budget 100, met within a generation)")
    expect(page.locator("#time-text")).to_have_text("612 s (budget 600, met within a generation)")


def test_the_leaderboard_marks_checkpoints_and_can_hide_them(page, site):
    page.goto(f"{site.url}/ladders/{site.bobail_ladder}")
    rows = page.locator("#leaderboard tbody tr")
    checkpoints = page.locator("#leaderboard tbody tr:has(.badge.checkpoint)")
    expect(checkpoints).not_to_have_count(0)
    total = rows.count()
    marked = checkpoints.count()
    page.locator("#hide-checkpoints").check()
    expect(rows).to_have_count(total - marked)
    expect(checkpoints).to_have_count(0)
    page.locator("#hide-checkpoints").uncheck()
    expect(rows).to_have_count(total)
