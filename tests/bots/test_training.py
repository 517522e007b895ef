"""The AlphaZero training kit: symmetries through the engines, the replay window, a short run."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from arena_bots.core import PLAYOUT_KERNELS
from arena_bots.evaluators import NetworkEvaluator
from arena_bots.export import export_bot
from arena_bots.loading import house_player
from arena_bots.manifest import Manifest
from arena_bots.runtime import InProcessSession
from arena_bots.training.augment import symmetries_for
from arena_bots.training.buffer import ReplayBuffer
from arena_bots.training.networks import MlpNet, build_network, parameter_count
from arena_bots.training.run import (
    RESUMABLE,
    TEACHER_FILE,
    Run,
    RunSettings,
    SettingsError,
    settings_for,
    train_alphazero,
)
from arena_bots.training.selfplay import Positions, SelfPlaySettings, play_generation, play_teacher_generation
from arena_bots.training.trainer import TrainSettings
from arena_bots.validation import validate
from arena_games.api import Game
from arena_games.bobail.rules import SIZE as BOBAIL_SIZE
from arena_games.registry import get_game
from arena_games.spring2021.gardener import gardener_action
from arena_platform.ratings import fit_ratings

BOBAIL, PENTE, SPRING = get_game("bobail"), get_game("pente"), get_game("spring2021")


def random_states(game: Game, seed: int, plies: int) -> list:
    """The positions of one random game, up to `plies` steps (the start included, the end not)."""
    rng = np.random.default_rng(seed)
    state, states = game.init(seed, None), []
    while not game.is_over(state) and len(states) < plies:
        states.append(state)
        (player,) = game.to_move(state)
        state = game.step(state, [game.random_action(state, player, rng)])
    return states


def mirrored_bobail(state):
    """The same Bobail game with every board mirrored left-right, rebuilt through the engine."""
    data = BOBAIL.to_dict(state)
    starts = range(0, BOBAIL_SIZE * BOBAIL_SIZE, BOBAIL_SIZE)  # a board text is 5 rows of 5 cells
    data["history"] = ["".join(text[i : i + BOBAIL_SIZE][::-1] for i in starts) for text in data["history"]]
    return BOBAIL.from_dict(data)


def transformed_pente(state, index: int):
    """Pente position under symmetry `index`, rebuilt (and checked) through the engine."""
    symmetries = symmetries_for(PENTE.spec)
    grid = np.arange(361).reshape(19, 19)
    where = np.empty(361, dtype=np.int64)
    where[symmetries.transform_planes(grid, index).ravel()] = np.arange(361)  # old point -> new point
    data = PENTE.to_dict(state)
    cells = np.array([list(row) for row in data["board"]])
    data["board"] = ["".join(row) for row in symmetries.transform_planes(cells, index)]
    if data["last_move"] is not None:
        data["last_move"] = int(where[data["last_move"]])
    return PENTE.from_dict(data), where


def augmented(game: Game, state, index: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The encoding and legal mask of `state` for its mover, transformed by symmetry `index`."""
    (player,) = game.to_move(state)
    inputs = {name: array[None] for name, array in game.encode(state, player).items()}
    mask = game.legal_masks(state, player)[0][None].astype(np.float32)
    new_inputs, new_mask = symmetries_for(game.spec).apply(inputs, mask, np.array([index]))
    return {name: array[0] for name, array in new_inputs.items()}, new_mask[0]


def transformed_action(game: Game, action: int, index: int) -> int:
    """Where the one-hot policy of `action` lands under symmetry `index`."""
    board = next(iter(game.spec.inputs))
    one_hot = np.zeros((1, next(iter(game.spec.heads.values()))), dtype=np.float32)
    one_hot[0, action] = 1.0
    inputs = {board: np.zeros((1, *game.spec.inputs[board]), dtype=np.float32)}
    _, moved = symmetries_for(game.spec).apply(inputs, one_hot, np.array([index]))
    return int(np.argmax(moved[0]))


def assert_same_position(game: Game, inputs, mask, other) -> None:
    (player,) = game.to_move(other)
    for name, array in game.encode(other, player).items():
        np.testing.assert_array_equal(inputs[name], array)
    np.testing.assert_array_equal(mask, game.legal_masks(other, player)[0])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bobail_mirror_augmentation_equals_encoding_the_mirrored_game(seed):
    for state in random_states(BOBAIL, seed, 30):
        mirror = mirrored_bobail(state)
        inputs, mask = augmented(BOBAIL, state, 1)
        assert_same_position(BOBAIL, inputs, mask, mirror)
        # each legal move maps to its mirror image: both steps lead to mirrored games
        for action in np.flatnonzero(BOBAIL.legal_masks(state, state.player)[0]).tolist():
            after = BOBAIL.step(mirror, [(transformed_action(BOBAIL, action, 1),)])
            assert BOBAIL.to_dict(after) == BOBAIL.to_dict(mirrored_bobail(BOBAIL.step(state, [(action,)])))


@pytest.mark.parametrize("index", range(8))
def test_pente_symmetries_equal_encoding_the_transformed_position(index):
    # plies 0 and 2 carry the opening bans (centre, tournament rule) in plane 5
    for state in random_states(PENTE, index, 40)[::3]:
        other, where = transformed_pente(state, index)
        inputs, mask = augmented(PENTE, state, index)
        assert_same_position(PENTE, inputs, mask, other)
        point = int(np.flatnonzero(PENTE.legal_masks(state, state.ply % 2)[0])[-1])
        assert transformed_action(PENTE, point, index) == where[point]


def test_pente_symmetries_move_captures_along():
    # a capture in the corner region still captures after any transformation
    state = random_states(PENTE, 11, 120)[-1]
    for index in range(8):
        other, where = transformed_pente(state, index)
        point = int(np.flatnonzero(PENTE.legal_masks(state, state.ply % 2)[0])[0])
        after = PENTE.step(state, [(point,)])
        after_other = PENTE.step(other, [(int(where[point]),)])
        assert after.captures == after_other.captures
        assert transformed_pente(after, index)[0].board == after_other.board


def positions(values: list[float]) -> Positions:
    """Bobail-shaped positions whose value (and one input cell) is the given number."""
    count = len(values)
    board = np.zeros((count, *BOBAIL.spec.inputs["board"]), dtype=np.float32)
    board[:, 0, 0, 0] = values
    return Positions(
        {"board": board}, np.full((count, 200), 1 / 200, np.float32), np.array(values, np.float32)
    )


def test_buffer_keeps_the_newest_positions_and_round_trips(tmp_path):
    buffer = ReplayBuffer(5, BOBAIL.spec.inputs, 200)
    buffer.add(positions([0, 1, 2]))
    assert len(buffer) == 3
    buffer.add(positions([3, 4, 5, 6]))
    assert (len(buffer), buffer.added) == (5, 7)
    assert sorted(buffer.value.tolist()) == [2, 3, 4, 5, 6]
    buffer.add(positions([10, 11, 12, 13, 14, 15, 16]))  # larger than the window: its newest part
    assert sorted(buffer.value.tolist()) == [12, 13, 14, 15, 16]
    sample = buffer.sample(64, np.random.default_rng(0))
    assert set(sample.value.tolist()) <= {12, 13, 14, 15, 16}
    np.testing.assert_array_equal(sample.inputs["board"][:, 0, 0, 0], sample.value)  # rows stay whole
    buffer.save(str(tmp_path / "buffer.npz"))
    restored = ReplayBuffer(5, BOBAIL.spec.inputs, 200)
    restored.load(str(tmp_path / "buffer.npz"))
    assert restored.added == buffer.added
    np.testing.assert_array_equal(restored.value, buffer.value)
    restored.add(positions([20]))
    buffer.add(positions([20]))
    np.testing.assert_array_equal(restored.value, buffer.value)  # the ring goes on where it was


def test_a_flat_input_game_gets_seed_001s_mlp():
    network = build_network(SPRING.spec, 2, 96)
    assert isinstance(network, MlpNet)
    assert parameter_count(network) == (534 * 96 + 96) + (96 * 96 + 96) + (96 * 38 + 38) + (96 + 1)
    policy, value = network(torch.zeros(3, 534))
    assert (policy.shape, value.shape) == ((3, 38), (3,))


def test_simultaneous_self_play_learns_from_both_players_searches():
    settings = SelfPlaySettings(games=2, parallel=2, simulations=4, game_config={"MAX_ROUNDS": 2})
    model = export_bot(
        build_network(SPRING.spec, 1, 8),
        SPRING,
        Manifest(game="spring2021", game_version=1, name="tiny", player="mcts"),
    )
    positions, stats = play_generation(SPRING, model, settings, seed=0)
    assert stats.games == 2
    assert len(positions) > stats.mean_length * stats.games  # two searches in most frames
    assert positions.inputs["obs"].shape == (len(positions), 534)
    assert np.allclose(positions.policy.sum(axis=1), 1.0)


def counted_calls(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Wraps `module.name` to note each call; the list of notes."""
    calls, function = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(1) or function(*args))
    return calls


@pytest.mark.parametrize(
    ("game", "config"),
    [(BOBAIL, {"max_turns": 12}), (PENTE, {"ply_cap": 8}), (SPRING, {"MAX_ROUNDS": 2})],
    ids=["bobail", "pente", "spring2021"],
)
def test_self_play_plays_the_same_games_on_both_cores(game, config, monkeypatch):
    """The compiled PUCT (root noise included; Spring's two seats per frame) gives self-play the
    reference's very searches, so the same seed gives the same positions and targets on both cores
    (ARENA_CORE)."""
    from arena_bots import compiled_puct

    settings = SelfPlaySettings(games=3, parallel=2, simulations=12, temperature_moves=3, game_config=config)
    torch.manual_seed(3)
    model = export_bot(
        build_network(game.spec, 1, 8),
        game,
        Manifest(game=game.name, game_version=game.spec.version, name="tiny", player="mcts"),
    )
    searched = counted_calls(monkeypatch, compiled_puct, "search")
    encoded = counted_calls(monkeypatch, importlib.import_module(PLAYOUT_KERNELS[game.name]), "encode_many")
    reference, reference_stats = play_generation(game, model, settings, seed=4, core="reference")
    assert not searched
    assert not encoded
    compiled, compiled_stats = play_generation(game, model, settings, seed=4, core="compiled")
    assert searched
    assert encoded
    assert compiled_stats == reference_stats
    for name in game.spec.inputs:
        np.testing.assert_array_equal(compiled.inputs[name], reference.inputs[name])
    np.testing.assert_array_equal(compiled.policy, reference.policy)
    np.testing.assert_array_equal(compiled.value, reference.value)


ZOO = Path(__file__).resolve().parents[2] / "bots" / "zoo"
ZOO_MEASURE = ZOO / "measure.py"
TINY = RunSettings(
    blocks=1,
    filters=8,
    selfplay=SelfPlaySettings(games=4, parallel=4, simulations=8, temperature_moves=4),
    train=TrainSettings(batch_size=32),
    buffer_capacity=2_000,
    checkpoint_every=1,
    eval_pairs=1,
    eval_simulations=8,
)


def test_two_runs_from_one_seed_train_the_same_weights(tmp_path):
    selfplay = dataclasses.replace(
        TINY.selfplay, games=2, parallel=2, simulations=2, game_config={"max_turns": 8}
    )
    settings = dataclasses.replace(TINY, seed=5, selfplay=selfplay)
    runs = [Run.open(tmp_path / name, BOBAIL, settings, fit_ratings) for name in ("a", "b")]
    for run in runs:
        run.train_generation()
    first, second = (run.network.state_dict() for run in runs)
    assert all(torch.equal(first[name], second[name]) for name in first)


@pytest.mark.parametrize(
    ("game", "config"),
    [(BOBAIL, {"max_turns": 30}), (PENTE, {"ply_cap": 30}), (SPRING, {"MAX_ROUNDS": 3})],
    ids=["bobail", "pente", "spring2021"],
)
def test_short_run_resumes_and_exports_valid_bots(tmp_path, game, config):
    settings = RunSettings(
        **{**TINY.__dict__, "selfplay": SelfPlaySettings(**{**TINY.selfplay.__dict__, "game_config": config})}
    )
    first = train_alphazero(
        game.name, tmp_path, max_steps=1, settings=settings, fit_ratings=fit_ratings, progress=False
    )
    assert first["generation"] == 1
    assert first["games"] == 4
    second = train_alphazero(
        game.name, tmp_path, max_steps=first["step"] + 1, fit_ratings=fit_ratings, progress=False
    )
    assert second["generation"] == 2
    assert second["games"] == 8
    names = [checkpoint["name"] for checkpoint in second["checkpoints"]]
    assert len(names) == 2
    ratings = json.loads((tmp_path / "ratings.json").read_text())
    assert set(names) <= set(ratings["ratings"])
    assert (tmp_path / "curve.png").stat().st_size > 0
    report = validate((tmp_path / "checkpoints" / f"{names[-1]}.onnx").read_bytes(), game)
    assert report.ok, report.message


def test_a_teacher_generation_records_the_house_bots_choices_and_results():
    settings = SelfPlaySettings(games=2, parallel=2, opening_fraction=0.0, game_config={"MAX_ROUNDS": 3})
    gardener = house_player("gardener", simulations=1, game="spring2021")
    positions, stats = play_teacher_generation(SPRING, gardener, settings, seed=0, explore=0.0)
    assert stats.games == 2
    assert len(positions) == stats.positions
    assert np.array_equal(positions.policy.sum(axis=1), np.ones(len(positions)))  # one-hot targets
    assert set(np.unique(positions.value)) <= {-1.0, 0.0, 1.0}
    start = SPRING.init(int(np.random.default_rng((0, 0)).integers(2**31)), settings.game_config)
    assert np.array_equal(positions.inputs["obs"][0], SPRING.encode(start, 0)["obs"])  # game 0, seat 0 first
    assert np.argmax(positions.policy[0]) == gardener_action(start, 0)
    explored, _ = play_teacher_generation(SPRING, gardener, settings, seed=0, explore=1.0)
    assert not np.array_equal(
        explored.inputs["obs"][: len(positions)], positions.inputs["obs"][: len(explored)]
    )


def test_a_dagger_generation_plays_the_learners_moves_and_learns_the_teachers_choices():
    settings = SelfPlaySettings(games=1, parallel=1, opening_fraction=0.0, game_config={"MAX_ROUNDS": 3})
    gardener = house_player("gardener", simulations=1, game="spring2021")
    torch.manual_seed(3)
    learner = export_bot(
        build_network(SPRING.spec, 1, 8),
        SPRING,
        Manifest(game="spring2021", game_version=1, name="l", player="greedy"),
    )
    positions, _ = play_teacher_generation(
        SPRING, gardener, settings, seed=0, explore=0.0, learner=learner, learner_share=1.0
    )
    evaluator = NetworkEvaluator(InProcessSession(learner, threads=1), SPRING)
    state = SPRING.init(int(np.random.default_rng((0, 0)).integers(2**31)), settings.game_config)
    row = 0
    while not SPRING.is_over(state):  # replays the game by the learner's moves: the same positions
        movers = SPRING.to_move(state)
        priors = evaluator.evaluate(SPRING, [state] * len(movers), list(movers)).priors
        for player in movers:
            assert np.array_equal(positions.inputs["obs"][row], SPRING.encode(state, player)["obs"])
            assert np.argmax(positions.policy[row]) == gardener_action(state, player)  # the teacher's label
            row += 1
        state = SPRING.step(state, [(int(np.argmax(p)),) for p in priors])
    assert row == len(positions)
    plain, _ = play_teacher_generation(SPRING, gardener, settings, seed=0, explore=0.0)
    unused, _ = play_teacher_generation(
        SPRING, gardener, settings, seed=0, explore=0.0, learner=learner, learner_share=0.0
    )
    assert np.array_equal(plain.inputs["obs"], unused.inputs["obs"])


def test_a_generation_against_the_teacher_learns_its_choices_and_the_networks_searches():
    settings = SelfPlaySettings(games=2, parallel=2, simulations=4, game_config={"MAX_ROUNDS": 2})
    gardener = house_player("gardener", simulations=1, game="spring2021")
    model = export_bot(
        build_network(SPRING.spec, 1, 8),
        SPRING,
        Manifest(game="spring2021", game_version=1, name="n", player="mcts"),
    )
    positions, stats = play_generation(SPRING, model, settings, seed=0, teacher=gardener)
    assert stats.games == 2
    assert stats.learner_wins is not None
    assert stats.learner_wins <= 2 - stats.draws
    start = SPRING.init(int(np.random.default_rng((0, 0)).integers(2**31)), settings.game_config)
    # game 0: the teacher in seat 0 (its choice, one-hot), the network's search in seat 1
    assert np.array_equal(positions.policy[0], np.eye(38, dtype=np.float32)[gardener_action(start, 0)])
    assert np.array_equal(positions.inputs["obs"][1], SPRING.encode(start, 1)["obs"])
    assert np.isclose(positions.policy[1].sum(), 1.0)
    _, alone_stats = play_generation(SPRING, model, settings, seed=0)
    assert alone_stats.learner_wins is None


def test_a_resume_point_without_its_replay_window_resumes_with_an_empty_one(tmp_path):
    settings = dataclasses.replace(
        TINY, selfplay=dataclasses.replace(TINY.selfplay, game_config={"MAX_ROUNDS": 2}, opening_fraction=0.0)
    )
    first = train_alphazero(
        "spring2021", tmp_path, max_steps=1, settings=settings, fit_ratings=fit_ratings, progress=False
    )
    (tmp_path / "buffer.npz").unlink()
    run = Run.open(tmp_path, SPRING, None, fit_ratings)
    assert (run.progress.generation, len(run.buffer)) == (first["generation"], 0)
    second = train_alphazero(
        "spring2021", tmp_path, max_steps=first["step"] + 1, fit_ratings=fit_ratings, progress=False
    )
    assert second["generation"] == first["generation"] + 1


@pytest.mark.parametrize("against_the_teacher", [False, True])
def test_a_run_starts_with_its_teachers_generations_then_plays_itself_or_the_teacher(
    tmp_path, against_the_teacher
):
    settings = dataclasses.replace(
        TINY,
        selfplay=dataclasses.replace(TINY.selfplay, game_config={"MAX_ROUNDS": 3}, opening_fraction=0.0),
        teacher="gardener",
        teacher_generations=1,
        teacher_dagger=0.5,
        teacher_opponent=against_the_teacher,
    )
    first = train_alphazero(
        "spring2021", tmp_path, max_steps=1, settings=settings, fit_ratings=fit_ratings, progress=False
    )
    second = train_alphazero(
        "spring2021", tmp_path, max_steps=first["step"] + 1, fit_ratings=fit_ratings, progress=False
    )
    assert (first["generation"], second["generation"]) == (1, 2)
    saved = json.loads((tmp_path / "config.json").read_text())["settings"]
    assert (saved["teacher"], saved["teacher_generations"], saved["teacher_dagger"]) == ("gardener", 1, 0.5)
    assert saved["teacher_opponent"] == against_the_teacher


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"teacher": "chain"}, "the house bot chain plays smash only, not spring2021"),
        ({"teacher_generations": 4}, "teacher generations need a teacher"),
        ({"teacher_opponent": True}, "teacher generations need a teacher"),
        ({"teacher": "gardener", "teacher_generations": -1}, "must be 0 or more"),
        ({"teacher": "gardener", "teacher_explore": 1.5}, "a share in [0, 1]"),
        ({"teacher": "gardener", "teacher_dagger": -0.5}, "the learner's share of the teacher's games"),
    ],
)
def test_settings_refuse_a_teacher_that_cannot_teach(given, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        settings_for("spring2021", **given)


def test_the_cli_names_a_bad_teacher(tmp_path, capsys):
    from arena_platform import cli

    command = ["train", "alphazero", "--game", "bobail", "--out", str(tmp_path / "run"), "--max-steps", "1"]
    assert cli.main([*command, "--teacher", "gardener", "--teacher-generations", "2"]) != 0
    assert "the house bot gardener plays spring2021 only, not bobail" in capsys.readouterr().err
    spring = [
        "train",
        "alphazero",
        "--game",
        "spring2021",
        "--out",
        str(tmp_path / "run"),
        "--max-steps",
        "1",
    ]
    assert cli.main([*spring, "--teacher", "gardener", "--teacher-dagger", "1.5"]) != 0
    assert "the learner's share of the teacher's games is in [0, 1], got 1.5" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_resumed_run_plays_a_bot_file_teacher_from_its_own_copy(tmp_path):
    """A run resumed with `teacher` = a bot file (here the zoo's early Bobail bot) validates it, keeps
    its sanitized copy in the run folder and plays it from there, so the file given need not last."""
    bot = tmp_path / "opponent.onnx"
    bot.write_bytes((ZOO / "bobail" / "az-bobail-early.onnx").read_bytes())
    run_folder = tmp_path / "run"
    Run.open(run_folder, BOBAIL, TINY, fit_ratings).train_generation()  # self-play
    changes = {"teacher": str(bot), "teacher_opponent": True}
    line = Run.open(run_folder, BOBAIL, None, fit_ratings, changes).train_generation()
    assert re.search(f"network won [0-9]+ of {TINY.selfplay.games} against {re.escape(str(bot))}$", line)
    assert json.loads((run_folder / "config.json").read_text())["changes"] == [
        {"generation": 2, "settings": changes}
    ]
    assert validate((run_folder / TEACHER_FILE).read_bytes(), BOBAIL).ok
    new_run = dataclasses.replace(TINY, teacher=str(bot), teacher_opponent=True)  # settings, not changes
    assert Run.open(tmp_path / "new", BOBAIL, new_run, fit_ratings).teacher_player().name == "az-bobail-early"
    bot.unlink()
    assert "against" in Run.open(run_folder, BOBAIL, None, fit_ratings).train_generation()
    (run_folder / TEACHER_FILE).unlink()
    lost = f"has no copy of its teacher ({TEACHER_FILE}): give --teacher {bot} again"
    with pytest.raises(SettingsError, match=re.escape(lost)):
        Run.open(run_folder, BOBAIL, None, fit_ratings)


def test_the_cli_names_a_bot_file_that_cannot_teach(tmp_path, capsys):
    from arena_platform import cli

    command = ["train", "alphazero", "--game", "bobail", "--out", str(tmp_path / "run"), "--max-steps", "1"]
    missing = tmp_path / "missing.onnx"
    assert cli.main([*command, "--teacher", str(missing), "--teacher-opponent"]) != 0
    assert f"cannot read the teacher {missing}: No such file or directory" in capsys.readouterr().err
    pente_bot = ZOO / "pente" / "az-pente-early.onnx"
    assert cli.main([*command, "--teacher", str(pente_bot), "--teacher-opponent"]) != 0
    refused = f"the teacher {pente_bot} was refused as an upload would be [wrong_game]"
    assert refused in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_resumed_run_takes_resumable_changes_and_records_them(tmp_path):
    Run.open(tmp_path, BOBAIL, TINY, fit_ratings).save_state()  # its optimiser saved with lr 1e-3
    changes = {
        "simulations": 16,
        "temperature_moves": 0,
        "opening_fraction": 1.0,
        "learning_rate": 3e-4,
        "blocks": TINY.blocks,
    }
    run = Run.open(tmp_path, BOBAIL, None, fit_ratings, changes)
    selfplay = run.settings.selfplay
    assert (selfplay.simulations, selfplay.temperature_moves, selfplay.opening_fraction) == (16, 0, 1.0)
    assert run.optimizer.param_groups[0]["lr"] == 3e-4
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["settings"]["selfplay"]["simulations"] == 16
    changed = {"learning_rate": 3e-4, "opening_fraction": 1.0, "simulations": 16, "temperature_moves": 0}
    assert config["changes"] == [{"generation": 1, "settings": changed}]
    with pytest.raises(SettingsError, match=re.escape("a resumed run keeps capacity=2000, filters=8: start")):
        Run.open(tmp_path, BOBAIL, None, fit_ratings, {"filters": 16, "capacity": 10, "games": 2})
    assert json.loads((tmp_path / "config.json").read_text()) == config  # nothing of a refused change kept


def test_the_cli_marks_the_options_a_resumed_run_takes(tmp_path, capsys):
    from arena_platform import cli
    from arena_platform.cli.train import SHAPE_OPTIONS

    for option, meaning in SHAPE_OPTIONS.items():
        assert meaning.endswith("(resumable)") == (option.replace("-", "_") in RESUMABLE), option
    Run.open(tmp_path, BOBAIL, TINY, fit_ratings)
    command = ["train", "alphazero", "--game", "bobail", "--out", str(tmp_path), "--max-steps", "1"]
    assert cli.main([*command, "--blocks", "4"]) != 0
    assert "a resumed run keeps blocks=1: start a new run (another --out)" in capsys.readouterr().err
    assert cli.main([*command, "--temperature-moves", "-1"]) != 0
    assert "temperature moves must be 0 or more, got -1" in capsys.readouterr().err
    assert cli.main([*command, "--opening-fraction", "1.5"]) != 0
    assert "the share of games from seeded openings is in [0, 1], got 1.5" in capsys.readouterr().err
    taught = tmp_path / "taught"  # a resumed run's teacher options apply over its saved teacher
    Run.open(
        taught, SPRING, dataclasses.replace(TINY, teacher="gardener", teacher_generations=1), fit_ratings
    )
    opened = ["train", "alphazero", "--game", "spring2021", "--out", str(taught), "--max-steps", "0"]
    assert cli.main([*opened, "--teacher-generations", "3", "--teacher-opponent"]) == 0
    saved = json.loads((taught / "config.json").read_text())["settings"]
    assert (saved["teacher"], saved["teacher_generations"], saved["teacher_opponent"]) == (
        "gardener",
        3,
        True,
    )


def test_a_resume_point_without_onnx_files_trains_on_and_publishes_the_stages_asked_for(
    tmp_path, monkeypatch
):
    """A resume point committed with its checkpoints' torch states only (as bots/zoo/*/resume):
    the next checkpoint's evaluation exports the previous one again; without either file, it plays
    UCT alone. Then `publish --stages final`, of the last checkpoint or one named by `--final`."""
    spec = importlib.util.spec_from_file_location("zoo_measure", ZOO_MEASURE)
    measure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(measure)
    monkeypatch.setattr(measure, "ZOO", tmp_path / "zoo")
    (tmp_path / "zoo").mkdir()
    run = tmp_path / "run"
    settings = dataclasses.replace(
        TINY, selfplay=dataclasses.replace(TINY.selfplay, game_config={"max_turns": 10})
    )
    first = train_alphazero(
        "bobail", run, max_steps=1, settings=settings, fit_ratings=fit_ratings, progress=False
    )
    (onnx,) = (run / "checkpoints").glob("*.onnx")
    onnx.unlink()
    second = train_alphazero(
        "bobail", run, max_steps=first["step"] + 1, fit_ratings=fit_ratings, progress=False
    )
    assert validate(onnx.read_bytes(), BOBAIL).ok
    for kept in (run / "checkpoints").glob(f"{second['checkpoints'][-1]['name']}.*"):
        kept.unlink()
    train_alphazero("bobail", run, max_steps=second["step"] + 1, fit_ratings=fit_ratings, progress=False)
    measure.publish("bobail", run, simulations=4, stages=("final",))
    published = sorted(path.name for path in (tmp_path / "zoo" / "bobail").iterdir())
    assert published == ["az-bobail-final.json", "az-bobail-final.onnx", "curve.png"]
    record = json.loads((tmp_path / "zoo" / "bobail" / "az-bobail-final.json").read_text())
    assert record["checkpoint"]["generation"] == 3
    assert record["training"]["changes"] == []
    measure.publish("bobail", run, simulations=4, stages=("final",), final=first["checkpoints"][0]["name"])
    record = json.loads((tmp_path / "zoo" / "bobail" / "az-bobail-final.json").read_text())
    assert record["checkpoint"]["generation"] == 1
    with pytest.raises(SystemExit, match="has no checkpoint bobail-step999999"):
        measure.publish("bobail", run, simulations=4, final="bobail-step999999")


def test_the_zoo_bars_can_seat_a_house_bot_in_the_league():
    from arena_bots.training.evaluate import measure_bars

    manifest = Manifest(game="pente", game_version=1, name="tiny", player="mcts")
    bots = {name: export_bot(build_network(PENTE.spec, 1, 8), PENTE, manifest) for name in ("early", "final")}
    bars = measure_bars(
        PENTE,
        bots,
        fit_ratings,
        simulations=2,
        uct_pairs=1,
        duel_pairs=1,
        league_pairs=1,
        c_puct=1.5,
        house="threats",
        house_pairs=2,
    )
    assert sum(bars["versus_threats"]["final"]) == 4
    assert sum(bars["versus_threats"]["early"]) == 2
    assert bars["versus_threats"]["final"][0] <= 1  # a 2-simulation tiny net against the threats bot
    assert {"early", "final", "uct", "threats"} <= set(bars["ratings"])
