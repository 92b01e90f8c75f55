"""The serial pipeline and what it writes: the run directory of DESIGN.md, checkpoints, total_config.py, --resume,
determinism, the Python API, Ctrl-C and the stop conditions. Every run is tiny (~1.5k CartPole steps)."""
import copy
import os
import runpy
import sys
import time
import types

import pytest
import torch

from entry_helpers import (CARTPOLE, EVAL_HEADER, RESULT_KEYS, SMALL_DICT, Cli, assert_trees_equal, event_files,
                           load_ckpt, read_eval_csv, read_result, read_scalars)

from ding_lite.config import read_config_file
from ding_lite.config.save import split_compiled
from ding_lite.utils import get_rng_state

HOOK = "policy.learn.learner.hook"
CKPT_EVERY = 5


# ---- one shared run -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def basic_run(tmp_path_factory):
    """A finished CLI run with periodic checkpoints every 5 iterations; (base directory, run directory, result)."""
    base = tmp_path_factory.mktemp("basic")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        res = Cli().train("--set", f"{HOOK}.save_ckpt_after_iter={CKPT_EVERY}",
                          "--set", f"{HOOK}.log_show_after_iter={CKPT_EVERY}")
    assert res.exit_code == 0, res.output
    return base, base / "cartpole_impala_seed0", res


def test_run_directory_layout(basic_run):
    base, run, _ = basic_run
    assert sorted(os.listdir(run)) == [".lock", "ckpt", "eval.csv", "log", "result.json", "total_config.py"]
    result = read_result(run)
    assert set(result) == RESULT_KEYS
    assert result["stop_reason"] == "max_env_step"
    assert result["env_step"] >= 1500
    assert result["train_iter"] >= 2 * CKPT_EVERY, "budget too small to see periodic checkpoints"
    assert isinstance(result["best_return"], float) and isinstance(result["final_return"], float)
    assert result["best_return"] >= result["final_return"]
    assert result["wall_time"] > 0

    # ckpt/: best, last and one periodic checkpoint per CKPT_EVERY iterations; no temporary files left behind
    periodic = {f"iteration_{i}.pth.tar" for i in range(CKPT_EVERY, result["train_iter"] + 1, CKPT_EVERY)}
    assert set(os.listdir(run / "ckpt")) == {"ckpt_best.pth.tar", "ckpt_last.pth.tar"} | periodic

    # log/: TensorBoard events and the plain-text log
    log = sorted(os.listdir(run / "log"))
    assert "train.log" in log
    assert len(event_files(run)) == 1 and len(event_files(run, "train_iter")) == 1 and len(log) == 3, log
    text = (run / "log" / "train.log").read_text()
    assert "eval @ env_step" in text and "stopped (max_env_step)" in text

    header, rows = read_eval_csv(run)
    assert header == EVAL_HEADER
    assert len(rows) >= 2  # before training and at the end
    assert [int(r["env_step"]) for r in rows] == sorted(int(r["env_step"]) for r in rows)
    assert int(rows[0]["train_iter"]) == 0 and int(rows[-1]["train_iter"]) == result["train_iter"]
    assert int(rows[-1]["env_step"]) == result["env_step"]
    assert float(rows[-1]["return_mean"]) == result["final_return"]
    assert max(float(r["return_mean"]) for r in rows) == result["best_return"]
    assert all(int(r["episodes"]) == 1 for r in rows)


def test_tensorboard_scalars_written(basic_run):
    _, run, _ = basic_run
    scalars = read_scalars(event_files(run)[0])
    if scalars is None:
        pytest.skip("neither tensorboard nor tensorboardX.proto can read events files here")
    tags = {tag for tag, _, _ in scalars}  # the env-step axis
    assert {"evaluator_step/return_mean", "collector/episode_return", "speed/env_step_per_s"} <= tags
    assert not any(tag.startswith(("learner/", "evaluator_iter/")) for tag in tags), tags
    iter_tags = {tag for tag, _, _ in read_scalars(event_files(run, "train_iter")[0])}  # the train-iteration axis
    assert "evaluator_iter/return_mean" in iter_tags
    assert any(tag.startswith("learner/") for tag in iter_tags), iter_tags  # log_show_after_iter=5
    assert not any(tag.startswith(("speed/", "collector/", "evaluator_step/")) for tag in iter_tags)


def _check_plain(value, path="ckpt"):
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, (str, int)), f"{path}: key {key!r}"
            _check_plain(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{path}[{i}]")
    else:
        assert value is None or isinstance(value, (torch.Tensor, bool, int, float, str)), \
            f"{path}: {type(value).__name__}"


def test_checkpoints_are_plain_dicts(basic_run):
    _, run, _ = basic_run
    result = read_result(run)
    names = os.listdir(run / "ckpt")
    assert {"ckpt_best.pth.tar", "ckpt_last.pth.tar"} <= set(names), names
    assert any(name.startswith("iteration_") for name in names), names  # the counter check below is not vacuous
    for name in names:
        state = load_ckpt(run / "ckpt" / name)  # weights_only=True
        assert type(state) is dict
        assert {"policy", "counters", "rng"} <= set(state), name
        assert {"model", "optimizer"} <= set(state["policy"])
        _check_plain(state, name)
        if name.startswith("iteration_"):
            assert state["counters"]["train_iter"] == int(name[len("iteration_"):-len(".pth.tar")])
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    assert last["train_iter"] == result["train_iter"] and last["env_step"] == result["env_step"]
    assert last["best_return"] == result["best_return"]
    best = load_ckpt(run / "ckpt" / "ckpt_best.pth.tar")["counters"]
    assert best["best_return"] == result["best_return"]


def test_total_config_runs_again(basic_run, monkeypatch):
    base, run, _ = basic_run
    monkeypatch.chdir(base)
    res = Cli()("-m", "serial", "-c", run / "total_config.py", "--env-step", 1500, "--exp-name", "again", "-q")
    assert res.exit_code == 0, res.output
    assert read_result(base / "again_seed0")["stop_reason"] == "max_env_step"

    first = read_config_file(str(run / "total_config.py"))
    second = read_config_file(str(base / "again_seed0" / "total_config.py"))
    assert first[0].pop("exp_name") == "cartpole_impala"
    assert second[0].pop("exp_name") == "again"
    assert first == second

    # and total_config.py is a fixed point of compile_config: it holds every key, compiled
    from ding_lite.config import compile_config
    main, create = read_config_file(str(run / "total_config.py"))
    assert split_compiled(compile_config((main, create))) == (main, create)


# ---- --resume -------------------------------------------------------------------------------------------------------
def _wait_next_second(run_dir):
    """tensorboardX names events files by the second; start the next writer in a later second (RunLogger adds a unique suffix too)."""
    stamp = int(os.path.basename(event_files(run_dir)[-1]).split(".")[3])
    while int(time.time()) <= stamp:
        time.sleep(0.05)


@pytest.mark.slow
def test_resume_continues_counters_logs_and_state(cli, in_tmp, monkeypatch):
    res = cli.train(env_step=1500)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    first = read_result(run)
    _, first_rows = read_eval_csv(run)
    last_state = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    _wait_next_second(run)

    # record what the resumed run holds right after restoring ckpt_last
    from ding_lite.entry.run_checkpoints import RunCheckpoints
    restored = {}
    original_restore = RunCheckpoints.restore

    def spy_restore(self, path, state):
        out = original_restore(self, path, state)
        restored["policy"] = copy.deepcopy(self.policy.learn_mode.state_dict())  # live tensors
        restored["rng"] = get_rng_state()
        restored["train_iter"], restored["env_step"] = self.learner.train_iter, self.counters.env_step
        return out

    monkeypatch.setattr(RunCheckpoints, "restore", spy_restore)
    res = cli.train("--resume", env_step=3000)
    assert res.exit_code == 0, res.output

    # the model, optimizer (Adam moments, step) and RNG states are those of ckpt_last; counters continue
    assert_trees_equal(restored["policy"], last_state["policy"], "policy state after resume")
    assert restored["policy"]["optimizer"]["state"], "optimizer state is empty"
    assert_trees_equal(restored["rng"], last_state["rng"], "rng state after resume")
    assert (restored["train_iter"], restored["env_step"]) == (first["train_iter"], first["env_step"])

    second = read_result(run)
    assert second["stop_reason"] == "max_env_step"
    assert second["env_step"] >= 3000 and second["train_iter"] > first["train_iter"]
    assert second["wall_time"] >= first["wall_time"]
    assert second["best_return"] >= first["best_return"]

    header, rows = read_eval_csv(run)
    assert header == EVAL_HEADER
    assert (run / "eval.csv").read_text().count("train_iter,env_step") == 1
    assert rows[:len(first_rows)] == first_rows
    new_rows = rows[len(first_rows):]
    assert new_rows and all(int(r["env_step"]) > first["env_step"] for r in new_rows)
    assert all(int(r["train_iter"]) > first["train_iter"] for r in new_rows)
    assert all(float(r["wall_time"]) >= float(first_rows[-1]["wall_time"]) for r in new_rows)

    # TensorBoard: a second events file whose steps continue from the restored counters
    files, iter_files = event_files(run), event_files(run, "train_iter")
    assert len(files) == 2 and len(iter_files) == 2, (files, iter_files)
    old, new = read_scalars(files[0]), read_scalars(files[1]) + read_scalars(iter_files[1])
    if old is None:
        pytest.skip("neither tensorboard nor tensorboardX.proto can read events files here")
    assert old and read_scalars(iter_files[0]), "the first run's events were lost"
    by_tag = {}
    for tag, step, _ in new:
        by_tag.setdefault(tag, []).append(step)
    assert min(by_tag["collector/episode_return"]) > first["env_step"]
    assert min(by_tag["evaluator_step/return_mean"]) > first["env_step"]
    assert min(by_tag["evaluator_iter/return_mean"]) > first["train_iter"]


def test_resume_restores_state_through_build(in_tmp):
    """ckpt_last's policy state loads into a freshly built policy (ding_lite.entry.build) and round-trips."""
    from ding_lite.entry import serial_pipeline
    from ding_lite.entry.build import build, compile_input
    from ding_lite.utils import set_rng_state

    config = read_config_file(CARTPOLE)
    serial_pipeline(config, 0, max_env_step=1500, overrides=SMALL_DICT, quiet=True)
    state = load_ckpt(in_tmp / "cartpole_impala_seed0" / "ckpt" / "ckpt_last.pth.tar")
    cfg = compile_input(config, 0, SMALL_DICT)
    parts = build(cfg, 0)
    try:
        fresh = parts.policy.learn_mode.state_dict()
        with pytest.raises(AssertionError):
            assert_trees_equal(fresh, state["policy"])  # a fresh policy differs: the comparison means something
        parts.policy.learn_mode.load_state_dict(state["policy"])
        assert_trees_equal(parts.policy.learn_mode.state_dict(), state["policy"], "optimizer/model after load")
        set_rng_state(state["rng"])
        assert_trees_equal(get_rng_state(), state["rng"], "rng")
    finally:
        parts.collector_env.close()
        parts.evaluator_env.close()


def test_resume_within_the_same_second_keeps_old_events(cli, in_tmp, monkeypatch):
    import tensorboardX.event_file_writer as efw
    fixed = time.time()
    monkeypatch.setattr(efw, "time", types.SimpleNamespace(time=lambda: fixed, sleep=time.sleep))
    assert cli.train(env_step=1500).exit_code == 0
    run = in_tmp / "cartpole_impala_seed0"
    assert cli.train("--resume", env_step=3000).exit_code == 0
    files = event_files(run, "train_iter")
    scalars = [s for f in files for s in (read_scalars(f) or [])]
    steps = {step for tag, step, _ in scalars if tag == "evaluator_iter/return_mean"}
    assert 0 in steps, "the first run's evaluation at train_iter 0 is gone from TensorBoard"
    assert len(files) == 2 and len(event_files(run)) == 2


# ---- determinism ----------------------------------------------------------------------------------------------------
def test_same_seed_same_run(cli, in_tmp):
    for name in ("a", "b"):
        assert cli.train("--exp-name", name, "-s", 3).exit_code == 0
    _, rows_a = read_eval_csv(in_tmp / "a_seed3")
    _, rows_b = read_eval_csv(in_tmp / "b_seed3")
    assert len(rows_a) >= 2, rows_a  # two empty curves would compare equal
    keys = ["train_iter", "env_step", "return_mean", "return_std", "return_min", "return_max", "episodes"]
    assert [[r[k] for k in keys] for r in rows_a] == [[r[k] for k in keys] for r in rows_b]
    last_a = load_ckpt(in_tmp / "a_seed3" / "ckpt" / "ckpt_last.pth.tar")
    last_b = load_ckpt(in_tmp / "b_seed3" / "ckpt" / "ckpt_last.pth.tar")
    assert_trees_equal(last_a["policy"]["model"], last_b["policy"]["model"], "final weights")
    assert_trees_equal(last_a["policy"]["optimizer"], last_b["policy"]["optimizer"], "final optimizer")
    result_a, result_b = read_result(in_tmp / "a_seed3"), read_result(in_tmp / "b_seed3")
    for key in ("env_step", "train_iter", "best_return", "final_return"):
        assert result_a[key] == result_b[key], key


# ---- Python API -----------------------------------------------------------------------------------------------------
def test_python_api(in_tmp):
    from ding_lite.config import compile_config as from_config
    from ding_lite.entry import compile_config as from_entry
    from ding_lite.entry import serial_pipeline
    from ding_lite.policy import Policy

    assert from_config is from_entry
    names = runpy.run_path(CARTPOLE)
    policy = serial_pipeline((names["main_config"], names["create_config"]), seed=0, max_env_step=1500,
                             overrides=SMALL_DICT, quiet=True)
    assert isinstance(policy, Policy)
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "max_env_step" and result["env_step"] >= 1500
    # the returned policy holds the trained weights, those of ckpt_last
    assert_trees_equal(policy.learn_mode.state_dict()["model"],
                       load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["policy"]["model"], "returned policy")
    # compile_config from Python: same keys as total_config.py
    cfg = from_entry((names["main_config"], names["create_config"]), overrides=SMALL_DICT, seed=0)
    assert cfg.env.collector_env_num == 2
    assert cfg.policy.learn.learning_rate == names["main_config"]["policy"]["learn"]["learning_rate"]


# ---- Ctrl-C ---------------------------------------------------------------------------------------------------------
def _interrupt_after(monkeypatch, n_calls: int):
    from ding_lite.worker.learner import Learner
    original = Learner.train
    calls = {"n": 0}

    def train(self, batch):
        calls["n"] += 1
        if calls["n"] > n_calls:
            raise KeyboardInterrupt
        return original(self, batch)

    monkeypatch.setattr(Learner, "train", train)


def test_ctrl_c_in_python_api(in_tmp, monkeypatch):
    from ding_lite.entry import serial_pipeline
    _interrupt_after(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=10_000, overrides=SMALL_DICT, quiet=True)
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "interrupted"
    assert result["train_iter"] == 3
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    assert last["counters"]["train_iter"] == 3
    assert not [n for n in os.listdir(run / "ckpt") if n.startswith(".tmp")]

    # and the interrupted run resumes
    monkeypatch.undo()
    monkeypatch.chdir(in_tmp)
    monkeypatch.setattr(sys, "path", list(sys.path))
    serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=1500, overrides=SMALL_DICT, quiet=True, resume=True)
    resumed = read_result(run)
    assert resumed["stop_reason"] == "max_env_step" and resumed["train_iter"] > 3


def test_ctrl_c_in_cli(cli, in_tmp, monkeypatch):
    _interrupt_after(monkeypatch, 2)
    res = cli.train(env_step=10_000)
    assert res.exit_code == 130, res.output
    assert "interrupted" in res.stderr and "Traceback" not in res.output
    run = in_tmp / "cartpole_impala_seed0"
    assert read_result(run)["stop_reason"] == "interrupted"
    assert (run / "ckpt" / "ckpt_last.pth.tar").is_file()


# ---- stop conditions ------------------------------------------------------------------------------------------------
def test_max_train_iter(cli, in_tmp):
    res = cli.train("--train-iter", 7, env_step=None)
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "cartpole_impala_seed0")
    assert result["stop_reason"] == "max_train_iter"
    assert result["train_iter"] == 7
    _, rows = read_eval_csv(in_tmp / "cartpole_impala_seed0")
    assert int(rows[-1]["train_iter"]) == 7  # the final evaluation


STOP_VALUE = 40  # CartPole: above the untrained policy's first evaluation (~10), reached after a few thousand steps
STOP_BUDGET = 20_000


def test_stop_value_stops_at_the_first_evaluation_that_reaches_it(cli, in_tmp):
    res = cli.train("--set", f"env.stop_value={STOP_VALUE}", env_step=STOP_BUDGET)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    _, rows = read_eval_csv(run)
    returns = [float(r["return_mean"]) for r in rows]
    curve = [(int(r["train_iter"]), int(r["env_step"]), float(r["return_mean"])) for r in rows]
    # not vacuous: the untrained policy is below the stop value, so reaching it takes training
    assert int(rows[0]["train_iter"]) == 0 and returns[0] < STOP_VALUE, curve
    assert len(rows) >= 2, curve
    assert result["stop_reason"] == "stop_value", (result, curve)
    # the run stopped at the first evaluation that reached the stop value: every earlier one is below it, and no
    # evaluation, collection or training happened after it (its counters are the result's, not the budget's)
    assert returns[-1] >= STOP_VALUE and all(r < STOP_VALUE for r in returns[:-1]), curve
    assert (int(rows[-1]["train_iter"]), int(rows[-1]["env_step"])) == (result["train_iter"], result["env_step"])
    assert 0 < result["train_iter"] and 0 < result["env_step"] < STOP_BUDGET, result
    assert result["final_return"] == returns[-1] == result["best_return"] == max(returns)
    assert (run / "ckpt" / "ckpt_best.pth.tar").is_file() and (run / "ckpt" / "ckpt_last.pth.tar").is_file()
    best = load_ckpt(run / "ckpt" / "ckpt_best.pth.tar")["counters"]
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    assert best["train_iter"] == last["train_iter"] == result["train_iter"]
    assert "stopped (stop_value)" in (run / "log" / "train.log").read_text()


@pytest.mark.slow
def test_stop_value_never_reached_runs_to_the_budget(cli, in_tmp):
    res = cli.train("--set", "env.stop_value=501", env_step=4000)  # CartPole-v1 returns at most 500
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    _, rows = read_eval_csv(run)
    assert len(rows) >= 3, rows  # several evaluations, none of which stopped the run
    assert result["stop_reason"] == "max_env_step" and result["env_step"] >= 4000, result
    assert int(rows[-1]["env_step"]) == result["env_step"]
