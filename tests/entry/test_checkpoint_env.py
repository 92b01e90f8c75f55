"""A checkpoint's recorded env (``meta['env']``) against the config's env, and ``-m eval``'s edges (issue 44, items 6
and 7): other action bounds are refused where the env is known (``-m eval``, ``--resume``), a record that does not
fit its run's config on ``ding_lite.load``; a malformed record or a checkpoint without counters is one line; the fit
checks come before the evaluator envs are built; ``--episodes`` below ``env.evaluator_env_num`` runs on fewer envs."""
import os
import shutil
import sys

import numpy as np
import pytest
import torch

import ding_lite
from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.utils import UserError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "envs"))  # bounds_helpers, named by env.wrappers

PENDULUM_SAC = os.path.join(REPO, "dizoo_configs", "pendulum_sac.py")
SMALL = {"env.evaluator_env_num": 1, "env.n_evaluator_episode": 1}
NARROW = "env.wrappers=[{'type': 'ding_lite.envs.bound_actions:BoundActions', 'kwargs': {'low': -1.0, 'high': 1.0}}]"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny Pendulum SAC run (Box(-2, 2) actions); tests copy it before changing anything."""
    exp = str(tmp_path_factory.mktemp("runs") / "pend")
    with pytest.warns(UserWarning):  # the budget ends before the first update: fine, a checkpoint is all we need
        serial_pipeline(read_config_file(PENDULUM_SAC), seed=0, max_env_step=100, quiet=True, exp_name=exp,
                        overrides=SMALL)
    return exp + "_seed0"


@pytest.fixture
def own_run(run, tmp_path):
    copy = str(tmp_path / "pend_seed0")
    shutil.copytree(run, copy)
    return copy


def rewrite(ckpt, change):
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    change(state)
    torch.save(state, ckpt)


def eval_args(ckpt, *extra):
    return ("-m", "eval", "-c", PENDULUM_SAC, "-q", "--load-path", ckpt,
            *sum((["--set", f"{k}={v}"] for k, v in SMALL.items()), []), *extra)


def last_line(result):
    return result.output.strip().splitlines()[-1]


def test_eval_refuses_a_checkpoint_of_other_action_bounds(own_run, cli):
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    result = cli(*eval_args(ckpt, "--set", NARROW))
    assert result.exit_code == 2, result.output
    line = last_line(result)
    assert line.startswith(f"ding_lite: error: cannot evaluate checkpoint '{ckpt}': it was trained on an env with "
                           f"another action space than this config's env 'Pendulum-v1'")
    assert "action_low: checkpoint [-2.0], env [-1.0]; action_high: checkpoint [2.0], env [1.0]" in line
    assert cli(*eval_args(ckpt)).exit_code == 0  # the env it was trained on


def test_resume_refuses_other_action_bounds(own_run):
    exp = own_run[:-len("_seed0")]
    with pytest.raises(UserError, match=r"cannot resume from checkpoint .*another action space than this config's "
                                        r"env 'Pendulum-v1' \(action_low: checkpoint \[-2.0\], env \[-1.0\]"):
        serial_pipeline(read_config_file(PENDULUM_SAC), seed=0, max_env_step=200, quiet=True, exp_name=exp,
                        resume=True, overrides=[*(f"{k}={v}" for k, v in SMALL.items()), NARROW])


@pytest.mark.parametrize("record, problem", [
    ("Box(-2, 2)", "it is a str, not a dict"),
    (dict(action_space_type="continuous"), "action_shape=None is not a whole number >= 1"),
    (dict(action_space_type="box", action_shape=1), "action_space_type='box' is none of"),
    (dict(action_space_type="continuous", action_shape=1, action_low=[-2.0]),
     "action_high=None is not a list of 1 numbers"),
])
def test_a_malformed_env_record_is_one_line(own_run, cli, record, problem):
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    rewrite(ckpt, lambda state: state["meta"].__setitem__("env", record))
    with pytest.raises(UserError, match=f"checkpoint '{ckpt}' has a malformed meta\\['env'\\]") as err:
        ding_lite.load(ckpt)
    assert problem in str(err.value)
    result = cli(*eval_args(ckpt))
    assert result.exit_code == 2 and "has a malformed meta['env']" in last_line(result), result.output


def test_load_refuses_a_record_that_does_not_fit_the_run(own_run):
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    rewrite(ckpt, lambda state: state["meta"]["env"].update(action_shape=2, action_low=[-1.0, -1.0],
                                                            action_high=[1.0, 1.0]))
    with pytest.raises(UserError, match=r"cannot load checkpoint .*its recorded env \(meta\['env'\]\) does not fit "
                                        r"its run's config \(action shape: checkpoint 2, config "):
        ding_lite.load(ckpt)


def test_eval_of_a_checkpoint_without_counters_is_one_line(own_run, cli):
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    rewrite(ckpt, lambda state: state.pop("counters"))
    result = cli(*eval_args(ckpt))
    assert result.exit_code == 2, result.output
    assert last_line(result).startswith(f"ding_lite: error: checkpoint '{ckpt}' has no usable counters (train_iter, "
                                        f"env_step missing or not numbers)")


def test_eval_checks_the_checkpoint_before_building_its_envs(own_run, cli, tmp_path):
    """A checkpoint of another model is refused after one probe env, not after the 5 evaluator envs."""
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    made = tmp_path / "made.txt"
    wrap = f"env.wrappers=[{{'type': 'bounds_helpers:count_makes', 'kwargs': {{'path': '{made}'}}}}]"
    result = cli("-m", "eval", "-c", PENDULUM_SAC, "-q", "--load-path", ckpt, "--set", wrap,
                 "--set", "policy.model.actor_head_hidden_size=32")
    assert result.exit_code == 2 and "saved with another model" in result.output, result.output
    assert made.read_text().count("made") == 1  # the probe only (env.evaluator_env_num=5 envs were never built)


def test_a_checkpoint_older_than_a_model_key_is_compared_as_the_key_default_builds(own_run, cli):
    """``policy.model.init`` came after checkpoints that do not record it: they were built orthogonal, its default,
    so they load, evaluate and resume as before; under ``init='torch'`` one is refused, naming the key."""
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    obs = np.linspace(-1.0, 1.0, 3, dtype=np.float32)
    before = ding_lite.load(ckpt).predict(obs)
    rewrite(ckpt, lambda state: state["meta"]["model"].pop("init"))
    np.testing.assert_array_equal(ding_lite.load(ckpt).predict(obs), before)
    assert cli(*eval_args(ckpt)).exit_code == 0
    result = cli(*eval_args(ckpt, "--set", "policy.model.init=torch"))
    assert result.exit_code == 2, result.output
    assert "(policy.model.init: checkpoint not set, config 'torch')" in result.output, result.output
    serial_pipeline(read_config_file(PENDULUM_SAC), seed=0, max_env_step=200, quiet=True, resume=True,
                    exp_name=own_run[:-len("_seed0")], overrides=[f"{k}={v}" for k, v in SMALL.items()])
    assert torch.load(ckpt, weights_only=True)["counters"]["env_step"] >= 200  # resumed and went on


def test_fewer_episodes_than_evaluator_envs_run_on_fewer_envs(own_run, cli, tmp_path):
    """``--episodes 1 --video DIR`` with env.evaluator_env_num=5 (the config's): 1 env, 1 episode, a video."""
    ckpt = os.path.join(own_run, "ckpt", "ckpt_last.pth.tar")
    made = tmp_path / "made.txt"
    wrap = f"env.wrappers=[{{'type': 'bounds_helpers:count_makes', 'kwargs': {{'path': '{made}'}}}}]"
    result = cli("-m", "eval", "-c", PENDULUM_SAC, "--load-path", ckpt, "--episodes", "1", "--set", wrap,
                 "--video", str(tmp_path / "videos"))
    assert result.exit_code == 0, result.output
    assert "over 1 episodes; checkpoint at train_iter 0, env_step 100" in result.output
    assert made.read_text().count("made") == 3  # the probe, 1 evaluator env, the video's env
    assert len(os.listdir(tmp_path / "videos")) == 1
    result = cli("-m", "eval", "-c", PENDULUM_SAC, "-q", "--load-path", ckpt, "--episodes", "7")
    assert result.exit_code == 2 and "--episodes 7 must be a multiple of env.evaluator_env_num=5" in result.output
