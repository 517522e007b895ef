"""The actor-critic kit's demonstrations: the lookahead bot's recorded games, their encoding, and
a run that records them once, pretrains on them and keeps them in its minibatches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from arena_bots.players import LookaheadPlayer  # noqa: E402
from arena_bots.training.actor_critic import ActorCriticSettings, train_actor_critic  # noqa: E402
from arena_bots.training.demonstrations import Demonstrations, play, record  # noqa: E402
from arena_games.smash import GAME  # noqa: E402
from arena_games.smash import playouts as engine  # noqa: E402
from arena_games.smash.encoding import encode_many  # noqa: E402

TINY = ActorCriticSettings(
    blocks=1,
    filters=8,
    against_chain=1,
    self_play=1,
    segment_steps=2,
    iterations=1,
    checkpoint_every=100,
    eval_pairs=1,
)


@pytest.fixture(scope="module")
def two_games() -> Demonstrations:
    return play([11, 12])  # game 0 against the chain bot (the lookahead bot in seat 0), game 1 self-play


def test_every_lookahead_move_is_recorded_legal_with_the_games_result(two_games):
    demonstrations = two_games
    rows = np.arange(len(demonstrations))
    wells = demonstrations.cells[rows, demonstrations.seat]
    assert engine.legal(wells)[rows, demonstrations.action].all()
    assert set(np.unique(demonstrations.outcome)) <= {0.0, 0.5, 1.0}
    first = demonstrations.cells.reshape(len(rows), -1)
    starts = np.flatnonzero((first == engine.EMPTY).all(axis=1))  # the empty wells of turn 0
    assert len(starts) == 3  # one seat in the game against the chain bot, both in self-play
    assert demonstrations.seat[starts[0]] == 0


def test_a_recorded_position_is_the_lookahead_bots_own_choice(two_games):
    demonstrations, row = two_games, 5
    seat = demonstrations.seat[row]
    pair, following = demonstrations.pairs[row]
    values = LookaheadPlayer().values_many(demonstrations.cells[row, seat][None], pair[None], following[None])
    assert demonstrations.action[row] == np.argmax(values[0])


def test_inputs_are_the_encoding_of_the_movers_view_with_its_legal_mask(two_games):
    demonstrations, rows = two_games, np.array([0, 7, 20])
    inputs, legal = demonstrations.inputs(rows)
    expected = encode_many(
        demonstrations.cells[rows],
        demonstrations.pairs[rows],
        demonstrations.unsent[rows],
        demonstrations.seat[rows],
    )
    assert inputs.keys() == GAME.spec.inputs.keys()
    assert all(np.array_equal(inputs[name], expected[name]) for name in inputs)
    (placements,) = GAME.spec.heads.values()
    assert legal.shape == (3, placements)
    assert legal.any(axis=1).all()


def test_recording_in_processes_gives_the_parts_in_order_and_round_trips_through_arrays(two_games):
    recorded = record(4, seed=11, processes=2, games_per_part=2)  # parts [11, 12] and [13, 14]
    again = Demonstrations.from_arrays(recorded.to_arrays())
    for name, array in two_games.to_arrays().items():
        assert np.array_equal(getattr(again, name)[: len(two_games)], array), name
    assert len(recorded) > len(two_games)


def test_a_run_records_once_pretrains_then_keeps_demonstrations_in_its_minibatches(tmp_path):
    settings = dataclasses.replace(TINY, demonstration_games=2, pretrain_passes=2)
    lines: list[str] = []
    progress = train_actor_critic(tmp_path, max_segments=1, settings=settings, log=lines.append)
    assert progress["pretrain_passes"] == 2
    assert [c["segment"] for c in progress["checkpoints"]] == [0, 1]  # the pretrained net, then the end
    assert any(line.startswith("demonstrations: 2 games") for line in lines)
    assert "demonstrations" in progress["recent"]  # the segment's minibatches held some
    saved = (tmp_path / "demonstrations.npz").stat().st_mtime_ns
    lines.clear()
    resumed = train_actor_critic(tmp_path, max_segments=2, log=lines.append)
    assert resumed["pretrain_passes"] == 2
    assert resumed["segment"] == 2
    assert not any("demonstrations:" in line or "pretraining" in line for line in lines)
    assert (tmp_path / "demonstrations.npz").stat().st_mtime_ns == saved


def test_settings_without_demonstrations_train_as_before(tmp_path):
    settings = TINY
    progress = train_actor_critic(tmp_path, max_segments=1, settings=settings, log=lambda line: None)
    assert progress["pretrain_passes"] == 0
    assert "demonstrations" not in progress["recent"]
    assert not (tmp_path / "demonstrations.npz").exists()
