"""``-m parallel`` end to end on tiny CartPole runs: the run directory, the parallel statistics, the stop
conditions, --resume, a crashed collector's restart, and SAC and ACER behind the same pipeline."""
import os

import pytest

from entry_helpers import (CARTPOLE, EVAL_HEADER, RESULT_KEYS, REPO, SMALL_DICT, Cli, all_scalars, assert_user_error,
                           load_ckpt, read_eval_csv, read_result)

from ding_lite.config import read_config_file
from ding_lite.entry import parallel_pipeline

ONE = ["--set", "parallel.collector_num=1"]
PARALLEL_KEYS = {"backend", "collector_num", "env_step_per_s", "train_iter_per_s", "policy_lag", "policy_lag_counts",
                 "dropped_stale", "restarts", "learner_time_s", "collector_time_s", "run_s", "placements", "bottleneck", "segments", "learner_capacity"}


@pytest.fixture(scope="module")
def parallel_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("parallel")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        res = Cli().train(*ONE, "--set", "policy.learn.learner.hook.log_show_after_iter=10", "--set",
                          "env.stop_value=None", env_step=4000, mode="parallel")  # no stop at 475: the budget ends it
    assert res.exit_code == 0, res.output
    return base / "cartpole_impala_seed0"


@pytest.mark.slow
def test_parallel_run_writes_the_serial_run_directory(parallel_run):
    run = parallel_run
    assert sorted(os.listdir(run)) == [".lock", "ckpt", "eval.csv", "log", "result.json", "total_config.py"]
    assert {"ckpt_best.pth.tar", "ckpt_last.pth.tar"} <= set(os.listdir(run / "ckpt"))
    header, rows = read_eval_csv(run)
    assert header == EVAL_HEADER and len(rows) >= 2  # at the start and at the end at least
    result = read_result(run)
    assert set(result) == RESULT_KEYS | {"parallel"}
    assert result["stop_reason"] == "max_env_step" and result["env_step"] >= 4000 and result["train_iter"] > 0
    assert int(rows[-1]["train_iter"]) == result["train_iter"]  # the final evaluation scores the final weights
    stats = result["parallel"]
    assert set(stats) == PARALLEL_KEYS
    assert stats["backend"] == "local" and stats["collector_num"] == 1 and stats["restarts"] == {}
    assert stats["policy_lag"]["max"] >= stats["policy_lag"]["p50"] >= 0
    assert sum(stats["policy_lag_counts"].values()) > 0
    assert {"train_s", "wait_s"} <= set(stats["learner_time_s"]) and "collect_s" in stats["collector_time_s"]
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    assert last["counters"]["train_iter"] == result["train_iter"] and last["counters"]["weight_version"] > 0
    with open(run / "total_config.py") as f:
        assert "collector_num=1" in f.read().replace(" ", "")  # None is resolved to what ran


def test_parallel_progress_in_tensorboard_and_log(parallel_run):
    scalars = all_scalars(parallel_run)
    if not scalars:
        pytest.skip("no TensorBoard event reader available")
    tags = {tag for tag, _, _ in scalars}
    assert {"collector0/env_step_per_s", "parallel/policy_lag_mean", "parallel/policy_lag_max", "speed/env_step_per_s",
            "learner/total_loss", "evaluator_step/return_mean"} <= tags
    with open(parallel_run / "log" / "train.log") as f:
        log = f.read()
    assert "1 collector(s) and an evaluator (local backend)" in log
    assert " | lag " in log and "env steps/s (" in log  # per-collector throughput and the lag in the progress line


@pytest.mark.slow
def test_parallel_stops_at_train_iter_and_resumes(cli, in_tmp):
    res = cli.train(*ONE, "--train-iter", "20", env_step=None, mode="parallel")
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    first = read_result(run)
    assert first["stop_reason"] == "max_train_iter" and first["train_iter"] == 20
    version = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]["weight_version"]
    res = cli.train(*ONE, "--resume", "--train-iter", "40", env_step=None, mode="parallel")
    assert res.exit_code == 0, res.output
    second = read_result(run)
    assert second["train_iter"] == 40 and second["env_step"] > first["env_step"]
    assert load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]["weight_version"] > version
    _, rows = read_eval_csv(run)
    assert [int(r["train_iter"]) for r in rows].count(20) >= 1 and int(rows[-1]["train_iter"]) == 40


@pytest.mark.slow
def test_a_crashing_collector_is_restarted_and_reported(in_tmp):
    config = read_config_file(CARTPOLE)
    marker = in_tmp / "crashed"
    overrides = dict(SMALL_DICT, **{"parallel.collector_num": 1, "env.stop_value": None})
    config = ({**config[0], "env": {**config[0]["env"], "env_id": None,
                                    "kwargs": {"marker": str(marker), "crash_at": 300}}},
              {**config[1], "env": {"type": "crash_once", "import_names": ["crashing_env"]}})
    result = parallel_pipeline(config, 0, max_env_step=4000, overrides=overrides, quiet=True)
    assert marker.exists()  # it did crash
    assert result["stop_reason"] == "max_env_step"
    assert result["parallel"]["restarts"] == {"collector0": 1}
    with open(in_tmp / "cartpole_impala_seed0" / "log" / "train.log") as f:
        log = f.read()
    assert "collector 0 crashed (RuntimeError: the test env crashed on purpose); restarting it (restart 1" in log


@pytest.mark.parametrize("config, extra", [
    ("pendulum_sac.py", ["--set", "policy.random_collect_size=200"]),
    ("cartpole_acer.py", []),
])
@pytest.mark.slow
def test_off_policy_learners_run_in_parallel_mode(cli, in_tmp, config, extra):
    res = cli.train(*ONE, *extra, "--set", "policy.eval.evaluator.eval_freq=50", "--set", "env.stop_value=None",
                    "--exp-name", "p",
                    config=os.path.join(REPO, "dizoo_configs", config), env_step=1200, mode="parallel")
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "p_seed0")
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > 0
    assert result["parallel"]["restarts"] == {}


def test_parallel_config_errors_name_the_key(cli, in_tmp):
    assert_user_error(cli.train("--set", "parallel.collector_num=0", mode="parallel"), "parallel.collector_num=0",
                      "must be an int >= 1")
    assert_user_error(cli.train("--set", "parallel.colector_num=2", mode="parallel"), "parallel.colector_num",
                      "parallel.collector_num")
    assert_user_error(cli.train("--set", "parallel.backend='mpi'", mode="parallel"), "parallel.backend", "'ray'")
    assert_user_error(cli.train("--set", "parallel.segments_per_call=4", mode="parallel"),
                      "parallel.segments_per_call=4", "backend='ray'")
    assert_user_error(cli.train("--set", "parallel.segments_per_call=0", "--backend", "ray", mode="parallel"),
                      "parallel.segments_per_call=0", "must be an int >= 1")
    assert_user_error(cli.train("--backend", "ray"), "--backend is for -m parallel")
    assert not os.listdir(in_tmp)  # nothing was started


def test_parallel_pipeline_python_api_returns_the_result(in_tmp):
    result = parallel_pipeline(read_config_file(CARTPOLE), 3, max_train_iter=5,
                               overrides=dict(SMALL_DICT, **{"parallel.collector_num": 1}), quiet=True)
    assert result["train_iter"] == 5 and result == read_result(in_tmp / "cartpole_impala_seed3")


def test_a_user_sac_model_gets_its_temperature_before_the_weights_are_shared(in_tmp):
    """SAC attaches log_alpha to a model passed to parallel_pipeline before the shared-weights template is taken
    from it, so the collectors and the evaluator, which load the published weights strictly, run without a crash
    (and act with the learner's alpha)."""
    from ding_lite.entry.build import build, compile_input
    from ding_lite.model.qac import QAC

    config = read_config_file(os.path.join(REPO, "dizoo_configs", "mixed_sac.py"))
    overrides = {**SMALL_DICT, "parallel.collector_num": 1, "policy.random_collect_size": 64,
                 "policy.learn.batch_size": 32}
    cfg = compile_input(config, 0, overrides)
    build(cfg, 0, collect=False, enable_field=()).evaluator_env.close()  # fills in the env's shapes
    model = QAC(**{k: v for k, v in cfg.policy.model.items() if k not in ("type", "import_names")})
    assert "log_alpha" not in model.state_dict()
    result = parallel_pipeline(config, 0, model=model, max_train_iter=20, overrides=overrides, quiet=True)
    assert result["stop_reason"] == "max_train_iter" and result["parallel"]["restarts"] == {}, result
    assert "log_alpha" in model.state_dict()
