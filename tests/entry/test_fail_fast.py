"""Issue 27: a run that cannot work stops before any env is built (one probe env aside), with the real cause.

* ``policy.cuda`` without a CUDA device: serial, parallel and ``-m eval`` stop right after compiling;
* the replay buffer against free memory: the estimate (one train sample made through the policy's hooks, times
  ``replay_buffer_size``) is the buffer's real size; too big is a UserError naming the key, the bytes, the memory and
  the fix, before any env is built; more than half is a warning;
* an env that fails to build in a subprocess env worker reports its own exception, not a broken pipe; the CLI blames
  files only for file errors;
* a warm-up at or above ``--env-step`` is capped to half the budget with a warning; a budget that ends before the
  first update is a warning.
"""
import dataclasses
import errno
import os
import warnings

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import read_config_file
from ding_lite.data import ReplayBuffer
from ding_lite.entry import build as build_module
from ding_lite.entry import parallel as parallel_module
from ding_lite.entry import preflight as preflight_module
from ding_lite.entry.build import build, build_buffer, compile_input, probe_env
from ding_lite.cli.main import os_error_message
from ding_lite.entry.preflight import (BUFFER_SIZE_KEY, available_memory, check_buffer_memory, check_warm_up,
                                       env_steps_before_first_update, train_sample_layout)
from ding_lite.envs import make_vector_env
from ding_lite.utils import UserError
from ding_lite.utils.env_worker import EnvBuildError
from ding_lite.worker import SampleCollector

from child_failing_env import CHILD_ERROR
from entry_helpers import CARTPOLE, REPO, SMALL, SMALL_DICT, assert_user_error, read_result

PONG = os.path.join(REPO, "dizoo_configs", "pong_impala.py")
PENDULUM_SAC = os.path.join(REPO, "dizoo_configs", "pendulum_sac.py")
CARTPOLE_SAC = os.path.join(REPO, "dizoo_configs", "cartpole_sac.py")
ACER = os.path.join(REPO, "dizoo_configs", "cartpole_acer.py")


@pytest.fixture
def no_envs(monkeypatch):
    """Building a vector env (serial) or starting workers (parallel) fails the test: the run had to stop before."""
    def refuse(*args, **kwargs):
        raise AssertionError("an env was built (or workers started) before the check that should have stopped it")

    monkeypatch.setattr(build_module, "make_vector_env", refuse)
    monkeypatch.setattr(parallel_module, "WorkerTransport", refuse)


# ---- policy.cuda without CUDA -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["serial", "parallel", "eval"])
def test_cuda_without_a_device_stops_before_any_env(mode, cli, in_tmp, monkeypatch, no_envs):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    probes = []

    def probe(*args, **kwargs):
        probes.append(args)
        raise AssertionError("the probe env was built before the device check")

    monkeypatch.setattr(build_module, "env_factory", probe)
    extra = ["--load-path", "missing.pth.tar"] if mode == "eval" else ["--env-step", "100"]
    res = cli("-m", mode, "-c", CARTPOLE, "-q", "--set", "policy.cuda=True", *SMALL, *extra)
    assert_user_error(res, "policy.cuda=True but torch sees no CUDA device", "--set policy.cuda=False")
    assert not probes
    assert not os.path.exists("cartpole_impala_seed0")


# ---- the replay buffer's memory ---------------------------------------------------------------------------------
def measured_buffer(cfg, seed: int = 0) -> ReplayBuffer:
    """The pipeline's buffer after one real collection pushed into it (columns allocated)."""
    parts = build(cfg, seed)
    try:
        buffer = build_buffer(cfg, seed)
        buffer.push(SampleCollector(parts.collector_env, parts.policy.collect_mode).collect(1), 0)
        return buffer
    finally:
        parts.collector_env.close()
        parts.evaluator_env.close()


CASES = [  # (config, overrides): full and compact obs storage, unrolls and transitions, discrete and continuous
    (CARTPOLE, {}),
    (ACER, {}),
    (CARTPOLE_SAC, {}),
    (PENDULUM_SAC, {}),
    (PENDULUM_SAC, {"policy.priority": True, "policy.priority_IS_weight": True}),  # the sum tree counts too
    (PENDULUM_SAC, {"policy.nstep": 3}),  # n-step samples carry their discount
    (PONG, {}),  # 'auto' = compact for uint8 frames
    (PONG, {"policy.obs_storage": "full"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("config, overrides", CASES)
def test_the_estimate_is_the_buffers_real_size(config, overrides):
    if config == PONG:
        pytest.importorskip("ale_py")
    cfg = compile_input(read_config_file(config), 0, {**SMALL_DICT, **overrides})
    _, observation_space = probe_env(cfg, 0)
    need = check_buffer_memory(cfg, observation_space, available=(1 << 62, "test"))
    buffer = measured_buffer(cfg)
    assert need == buffer.nbytes
    layout = train_sample_layout(cfg, observation_space)
    assert [(name, shape, dtype) for name, shape, dtype in layout] == [
        (".".join(path), tuple(col.shape[1:]), col.dtype) for path, col in zip(buffer._paths, buffer._cols)]


def test_the_estimate_leaves_torch_random_state_alone():
    cfg = compile_input(read_config_file(CARTPOLE), 0, SMALL_DICT)
    _, observation_space = probe_env(cfg, 0)
    state = torch.get_rng_state()
    train_sample_layout(cfg, observation_space)
    assert torch.equal(state, torch.get_rng_state())


def cartpole_need(size: int):
    cfg = compile_input(read_config_file(CARTPOLE), 0, {**SMALL_DICT, BUFFER_SIZE_KEY: size})
    _, observation_space = probe_env(cfg, 0)
    return cfg, observation_space, check_buffer_memory(cfg, observation_space, available=(1 << 62, "test"))


def test_a_buffer_above_90_percent_of_the_memory_is_refused_with_the_fix():
    cfg, space, need = cartpole_need(100_000)
    with pytest.raises(UserError) as err:
        check_buffer_memory(cfg, space, available=(int(need / 0.95), "MemAvailable (test)"))
    text = str(err.value)
    for fragment in (f"{BUFFER_SIZE_KEY}=100,000", f"needs {preflight_module.format_bytes(need)}",
                     "MemAvailable (test)", "obs (16, 4) float32", f"--set {BUFFER_SIZE_KEY}="):
        assert fragment in text, (fragment, text)
    fits = int(text.split(f"--set {BUFFER_SIZE_KEY}=")[1].split(",")[0])
    assert fits == int(0.5 * int(need / 0.95) // (need / 100_000))  # the size that fits in half
    _, _, need_fits = cartpole_need(fits)
    assert need_fits <= 0.5 * int(need / 0.95)


def test_a_buffer_above_half_the_memory_is_a_warning_below_it_nothing():
    cfg, space, need = cartpole_need(100_000)
    with pytest.warns(UserWarning, match="more than 50%"):
        assert check_buffer_memory(cfg, space, available=(int(need / 0.6), "test")) == need
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_buffer_memory(cfg, space, available=(int(need / 0.4), "test")) == need


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_a_buffer_that_does_not_fit_stops_before_any_env(mode, cli, in_tmp, monkeypatch, no_envs):
    """The user's report: replay_buffer_size=500000 of Atari unrolls. Here CartPole against 10 MB of memory."""
    monkeypatch.setattr(preflight_module, "available_memory", lambda: (10_000_000, "MemAvailable in /proc/meminfo"))
    res = cli("-m", mode, "-c", CARTPOLE, "-q", "--env-step", "100", *SMALL,
              "--set", f"{BUFFER_SIZE_KEY}=500000")
    need = preflight_module.format_bytes(cartpole_need(500_000)[2])
    assert_user_error(res, f"{BUFFER_SIZE_KEY}=500,000", f"the replay buffer needs {need}",
                      "10.0 MB of memory is available", "MemAvailable in /proc/meminfo", "refuses a buffer above 90%")
    assert not os.path.exists("cartpole_impala_seed0")


def test_available_memory_reads_the_system():
    free, source = available_memory()
    with open("/proc/meminfo") as f:
        total = int(next(line for line in f if line.startswith("MemTotal:")).split()[1]) * 1024
    assert 0 < free <= total, (free, total, source)


# ---- an env that fails to build in an env process ---------------------------------------------------------------
CHILD_FAILING = EasyDict(dict(type="fails_in_child", import_names=["child_failing_env"], collector_env_num=2,
                              evaluator_env_num=1, n_evaluator_episode=1, manager=dict(type="subprocess")))


def test_an_env_that_fails_in_its_env_process_raises_its_own_error():
    cfg = compile_input((dict(exp_name="child", env=CHILD_FAILING), dict(policy=dict(type="impala"))), 0)
    with pytest.raises(EnvBuildError) as err:
        make_vector_env(cfg.env, 2, 0)
    text = str(err.value)
    assert f"ImportError: {CHILD_ERROR}" in text and "fails_in_child" in text and "child_failing_env.py" in text
    assert isinstance(err.value, UserError)


def test_the_cli_shows_the_env_processes_error_not_a_broken_pipe(cli, in_tmp, tmp_path):
    config = tmp_path / "child_cfg.py"
    config.write_text(f"main_config = dict(exp_name='child', env={dict(CHILD_FAILING)!r})\n"
                      f"create_config = dict(policy=dict(type='impala'))\n")
    res = cli("-m", "serial", "-c", str(config), "-q", "--env-step", "100")
    line = assert_user_error(res, f"ImportError: {CHILD_ERROR}", "could not be built in its env process",
                             "env.manager.type='base'")
    assert "Connection reset" not in line and "permissions" not in line


def test_only_file_errors_blame_files():
    assert "check the path, its permissions and free space" in os_error_message(
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert "'run/ckpt': " in os_error_message(OSError(errno.EACCES, os.strerror(errno.EACCES), "run/ckpt"))
    reset = os_error_message(ConnectionResetError(errno.ECONNRESET, os.strerror(errno.ECONNRESET)))
    assert "permissions" not in reset and "ended unexpectedly" in reset
    assert "permissions" not in os_error_message(BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE)))


# ---- the warm-up against the budget -----------------------------------------------------------------------------
def sac_cfg(**overrides):
    return compile_input(read_config_file(PENDULUM_SAC), 0, overrides)


def test_a_warm_up_at_or_above_the_budget_is_capped_to_half_with_a_warning():
    cfg = sac_cfg(**{"policy.random_collect_size": 10_000})
    with pytest.warns(UserWarning) as record:
        check_warm_up(cfg, 3000)
    text = " ".join(str(w.message) for w in record)
    assert "policy.random_collect_size=10,000" in text and "--env-step 3,000" in text and "capped to 1,500" in text
    assert cfg.policy.random_collect_size == 1500
    cfg = sac_cfg(**{"policy.random_collect_size": 200})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_warm_up(cfg, 3000)  # a warm-up well inside the budget: nothing
        check_warm_up(cfg, None)  # no budget: nothing
    assert cfg.policy.random_collect_size == 200


def warned(run):
    """``run()``'s result and the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = run()
    return result, " ".join(str(w.message) for w in record)


def test_the_sac_run_of_the_report_trains_and_records_the_cap(cli, in_tmp):
    """SAC with its warm-up above --env-step: the run trains (it used to stop at train_iter 0), says so, and
    total_config.py records the warm-up that ran."""
    res, messages = warned(lambda: cli("-m", "serial", "-c", PENDULUM_SAC, "-q", "--env-step", "600", "--set",
                                       "env.evaluator_env_num=1", "--set", "env.n_evaluator_episode=1", "--set",
                                       "policy.random_collect_size=1000", "--set", "policy.learn.batch_size=64"))
    assert res.exit_code == 0, res.output
    assert "capped to 300 env steps" in messages
    result = read_result("pendulum_sac_seed0")
    assert result["train_iter"] > 0 and result["env_step"] == 600
    assert "random_collect_size=300" in open(os.path.join("pendulum_sac_seed0", "total_config.py")).read()


@pytest.mark.parametrize("budget, trains", [(256, False), (257, True)])
def test_a_budget_that_ends_before_the_first_update_is_a_warning(budget, trains, cli, in_tmp):
    """CartPole IMPALA from 2 envs: unrolls of 16 steps, 16 per collection, batches of 32: the first update comes
    with the collection that starts at env_step 256. The warning's bound is exact for the serial pipeline."""
    cfg = compile_input(read_config_file(CARTPOLE), 0, SMALL_DICT)
    assert env_steps_before_first_update(cfg) == 256
    res, messages = warned(lambda: cli.train("-s", "0", env_step=budget))
    assert res.exit_code == 0, res.output
    assert ("ends before its first update" in messages) is not trains
    assert (read_result("cartpole_impala_seed0")["train_iter"] > 0) is trains


def test_a_parallel_worker_whose_env_cannot_be_built_stops_the_run_with_the_cause(cli, in_tmp, tmp_path):
    """The workers build their envs in their own processes: the failure is the config's, so the run stops with it
    instead of restarting the worker into the same failure parallel.max_restarts times."""
    env = dict(CHILD_FAILING, manager=dict(type="base"))
    config = tmp_path / "child_parallel_cfg.py"
    config.write_text(f"main_config = dict(exp_name='child_parallel', env={env!r})\n"
                      f"create_config = dict(policy=dict(type='impala'))\n")
    res = cli("-m", "parallel", "-c", str(config), "-q", "--env-step", "2000")
    assert_user_error(res, f"ImportError: {CHILD_ERROR}", "could not be built in")
    assert "restart" not in res.output.lower(), res.output


# ---- the env-derived config values: filled once, from the probe env ---------------------------------------------------
@pytest.mark.parametrize("mode", ["serial", "eval"])
def test_a_pipeline_fills_the_env_derived_config_values_once_from_its_probe_env(mode, cli, in_tmp, monkeypatch):
    calls = []
    original = build_module.resolve_env_spaces
    monkeypatch.setattr(build_module, "resolve_env_spaces", lambda cfg, spec: calls.append(spec) or original(cfg, spec))
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "400", *SMALL)
    assert res.exit_code == 0, res.output
    if mode == "eval":
        calls.clear()
        res = cli("-m", "eval", "-c", CARTPOLE, "-q", *SMALL, "--load-path",
                  os.path.join("cartpole_impala_seed0", "ckpt", "ckpt_last.pth.tar"))
        assert res.exit_code == 0, res.output
    assert len(calls) == 1, calls


def test_a_vector_env_whose_spaces_differ_from_the_probe_envs_is_a_config_error_naming_both():
    cfg = compile_input(read_config_file(CARTPOLE), 0, SMALL_DICT)
    spec, _ = probe_env(cfg, 0)
    other = dataclasses.replace(spec, obs_space={"space": "box", "shape": [5], "dtype": "float32"})
    with pytest.raises(UserError, match=r"its vector env's spaces \(\{'space': 'box', 'shape': \[4\].* differ from a "
                                        r"single env's \(\{'space': 'box', 'shape': \[5\]"):
        build(cfg, 0, other)
