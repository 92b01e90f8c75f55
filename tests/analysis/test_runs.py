"""load_runs / group_runs on real run directories, and every way a path can be wrong."""
import os
import shutil

import numpy as np
import pytest

from ding_lite.analysis.runs import EVAL_COLUMNS, group_runs, load_runs, parse_run_name
from ding_lite.utils import UserError

from analysis_helpers import EXPERIMENTS, KILLED, csv_columns, result_json

HEADER = ",".join(EVAL_COLUMNS)


def test_load_a_directory_of_runs(runs_dir):
    runs = load_runs([runs_dir])
    expected = sorted((exp, s) for exp, (seeds, _) in EXPERIMENTS.items() for s in seeds)
    assert [(r.exp_name, r.seed) for r in runs] == expected
    for run in runs:
        assert run.path == os.path.join(runs_dir, f"{run.exp_name}_seed{run.seed}")
        columns = csv_columns(run.path)
        assert set(run.evals) == set(EVAL_COLUMNS)
        for c in EVAL_COLUMNS:
            assert run.evals[c].dtype == np.float64
            assert run.evals[c].tolist() == columns[c], c  # written in env_step order already
        assert len(run.evals["env_step"]) >= 3
        assert run.result == result_json(run.path)
        assert (run.result is None) == (os.path.basename(run.path) == KILLED)


def test_load_single_runs_and_dedupe(runs_dir):
    one = os.path.join(runs_dir, "cartpole_impala_seed1")
    runs = load_runs([one])
    assert [(r.exp_name, r.seed, r.path) for r in runs] == [("cartpole_impala", 1, one)]
    both = load_runs([runs_dir, one, one + os.sep])  # the parent already holds it
    assert len(both) == 5 and sum(r.seed == 1 and r.exp_name == "cartpole_impala" for r in both) == 1


def test_rows_are_sorted_by_env_step(tmp_path):
    run = tmp_path / "x_seed3"
    run.mkdir()
    (run / "eval.csv").write_text(f"{HEADER}\n20,200,2.0,5,0,5,5,1\n0,0,0.1,1,0,1,1,1\n10,100,1.0,3,0,3,3,1\n")
    (record,) = load_runs([str(run)])
    assert record.evals["env_step"].tolist() == [0.0, 100.0, 200.0]
    assert record.evals["return_mean"].tolist() == [1.0, 3.0, 5.0]
    assert record.evals["train_iter"].tolist() == [0.0, 10.0, 20.0]
    assert record.result is None


@pytest.mark.parametrize("name, parsed", [
    ("cartpole_impala_seed0", ("cartpole_impala", 0)), ("a_seed_seed12", ("a_seed", 12)),
    ("my_run", ("my_run", None)), ("run_seedx", ("run_seedx", None)), ("_seed3", ("_seed3", None)),
])
def test_parse_run_name(name, parsed):
    assert parse_run_name(name) == parsed


def test_runs_are_sorted_by_exp_name_then_seed(tmp_path):
    for name in ("b_seed10", "b_seed2", "a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "eval.csv").write_text(f"{HEADER}\n0,0,0.1,1,0,1,1,1\n")
    assert [(r.exp_name, r.seed) for r in load_runs([str(tmp_path)])] == [("a", None), ("b", 2), ("b", 10),
                                                                          ("b", None)]


def one_line_error(paths, *fragments):
    with pytest.raises(UserError) as info:
        load_runs(paths)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def test_bad_paths(tmp_path):
    one_line_error([str(tmp_path / "nope")], str(tmp_path / "nope"), "no such directory")
    (tmp_path / "file.txt").write_text("x")
    one_line_error([str(tmp_path / "file.txt")], "file.txt", "not a directory")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "unrelated").mkdir()
    one_line_error([str(tmp_path / "empty")], str(tmp_path / "empty"), "neither a run directory")


@pytest.mark.parametrize("text, fragment", [
    (None, "missing"),
    ("", "empty file"),
    (HEADER + "\n", "no evaluation rows"),
    ("train_iter,env_step\n0,0\n", "lacks column(s) wall_time"),
    (HEADER + "\n0,0,0.1,abc,0,1,1,1\n", "column return_mean: 'abc' is not a number"),
    (HEADER + "\n0,0,0.1,1,0,1,1,1\n0,5,0.2,1\n", "data row 2 has 4 fields"),
])
def test_bad_eval_csv(tmp_path, text, fragment):
    run = tmp_path / "broken_seed0"
    run.mkdir()
    (run / "total_config.py").write_text("main_config = dict()\n")  # a run that never wrote eval.csv
    if text is not None:
        (run / "eval.csv").write_text(text)
    path = str(run / "eval.csv")
    one_line_error([str(run)], path, fragment)
    one_line_error([str(tmp_path)], path, fragment)  # also when found one level down


def test_bad_result_json(tmp_path, runs_dir):
    run = tmp_path / "cartpole_impala_seed0"
    shutil.copytree(os.path.join(runs_dir, "cartpole_impala_seed0"), run)
    (run / "result.json").write_text("{not json")
    one_line_error([str(run)], str(run / "result.json"), "cannot read")


def test_group_runs(runs_dir):
    runs = load_runs([runs_dir])
    groups = group_runs(runs)
    assert list(groups) == ["cartpole_fastlr", "cartpole_impala"]
    assert [r.seed for r in groups["cartpole_impala"]] == [0, 1, 2]
    assert group_runs(runs, by="exp_name") == groups
    by_path = group_runs(runs, by="path")
    assert list(by_path) == [r.path for r in runs] and all(len(g) == 1 for g in by_path.values())
    with pytest.raises(UserError, match="cannot group runs by 'seed': choose one of exp_name, path"):
        group_runs(runs, by="seed")


def test_group_runs_refuses_a_seed_counted_twice(tmp_path, runs_dir):
    copy = tmp_path / "other_machine"
    shutil.copytree(os.path.join(runs_dir, "cartpole_impala_seed0"), copy / "cartpole_impala_seed0")
    runs = load_runs([runs_dir, str(copy)])
    with pytest.raises(UserError, match="'cartpole_impala' has seed 0 twice"):
        group_runs(runs)
    assert len(group_runs(runs, by="path")) == 6


def test_the_folder_is_one_xdist_group(request):
    """Its files share runs_dir (conftest.py: real runs, about 10 s): one pytest-xdist group builds it once
    (tests/conftest.py's SHARED_FIXTURE_DIRS)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("checks a run with pytest-xdist's --dist loadgroup, as .ci/run's")
    assert request.node.nodeid.endswith("@analysis"), request.node.nodeid
