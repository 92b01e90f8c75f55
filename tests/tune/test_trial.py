"""A trial's pieces without running one: the metrics read from eval.csv columns, the command line of a run, the
table of trials; a study whose trials keep failing stops with their error."""
import sys

import numpy as np
import pytest

from entry_helpers import CARTPOLE

from ding_lite.tune.results import format_table
from ding_lite.tune.trial import metric_value, trial_command
from ding_lite.utils import UserError


def test_metrics():
    evals = {"env_step": np.array([0.0, 100.0, 300.0]), "return_mean": np.array([10.0, 30.0, 20.0])}
    assert metric_value(evals, "final") == 20.0
    assert metric_value(evals, "best") == 30.0
    assert metric_value(evals, "auc") == pytest.approx((100 * 20 + 200 * 25) / 300)
    one = {"env_step": np.array([0.0]), "return_mean": np.array([7.0])}
    assert metric_value(one, "auc") == 7.0
    with pytest.raises(UserError, match="choose one of final, best, auc"):
        metric_value(evals, "median")


def test_the_command_of_a_run():
    cmd = trial_command("study/base_config.py", "study/trial_0002", 1, 5000,
                        {"policy.learn.learning_rate": 0.001, "policy.model.core": "lstm"}, ["env.collector_env_num=2"])
    assert cmd[1:4] == ["-m", "ding_lite.tune.child", "-m"]
    sets = [cmd[i + 1] for i, word in enumerate(cmd) if word == "--set"]
    assert sets == ["torch_threads=1", "env.collector_env_num=2", "policy.learn.learning_rate=0.001",
                    "policy.model.core='lstm'"]
    assert cmd[cmd.index("--env-step") + 1] == "5000" and cmd[cmd.index("-s") + 1] == "1"
    mine = trial_command("b.py", "t", 0, None, {}, ["torch_threads=2"])
    assert "torch_threads=1" not in mine and "--env-step" not in mine


def test_the_table():
    rows = [{"number": 0, "state": "complete", "value": 412.5, "policy.learn.learning_rate": 0.0021, "env_step": 2048,
             "wall_time_s": 13.2, "run_dirs": "s/trial_0000_seed0"},
            {"number": 1, "state": "pruned", "value": "", "policy.learn.learning_rate": 0.5, "env_step": 1024,
             "wall_time_s": 7.0, "run_dirs": "s/trial_0001_seed0"}]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["number", "state", "value", "learning_rate", "env_step", "wall_time_s"]
    assert lines[1].split() == ["0", "complete", "412.5", "0.0021", "2048", "13.2"]
    assert lines[2].split() == ["1", "pruned", "-", "0.5", "1024", "7"]


@pytest.mark.slow
def test_trials_that_keep_failing_stop_the_study_with_their_error(in_tmp, monkeypatch):
    pytest.importorskip("optuna")
    from ding_lite.config import read_config_file
    from ding_lite.tune import parse_params, study
    failing = [sys.executable, "-c", "print('ding_lite: error: env.env_id: boom'); raise SystemExit(2)"]
    monkeypatch.setattr(study, "trial_command", lambda *args: failing)  # a run that fails at once, without torch
    lines = []
    opts = study.TuneOptions(study_dir="failing", trials=10, jobs=1, env_step=100)
    with pytest.raises(UserError, match=r"3 trials failed in a row, the last with: ding_lite: error: env.env_id: boom"):
        study.run_study(read_config_file(CARTPOLE), parse_params(["policy.learn.learning_rate=uniform(0.1, 0.2)"]),
                        opts, say=lines.append)
    assert sum("fail" in line and "env.env_id: boom" in line for line in lines) == 3, lines
    with open("failing/trials.csv") as f:
        assert [row.split(",")[1] for row in f.read().splitlines()[1:]] == ["fail"] * 3


def test_the_pruners():
    optuna = pytest.importorskip("optuna")
    from ding_lite.tune.study import make_pruner
    median = make_pruner("median", 3, 1000)
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert (median._n_startup_trials, median._n_warmup_steps) == (3, 1000)
    assert isinstance(make_pruner("halving", 3), optuna.pruners.SuccessiveHalvingPruner)
    assert isinstance(make_pruner("none", 3), optuna.pruners.NopPruner)
