"""``ding_lite.load(path).predict(obs)``: tiny real runs, loaded without envs, acting in the env's own units
(issue 29, item 1)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ding_lite
from ding_lite.config import compile_config, read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.deploy.agent import Agent, build_acting_policy
from ding_lite.entry.build import build
from ding_lite.envs import EnvSpec
from ding_lite.envs.obs_space import obs_to_tensor
from ding_lite.utils import UserError
from ding_lite.run import load_checkpoint
from ding_lite.worker import Evaluator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_EVAL = {"env.evaluator_env_num": 1, "env.n_evaluator_episode": 1, "torch_threads": 1}
# Two envs x 16 steps per collection: a 256-step run makes 8 updates and evaluates.
PPO_SMALL = {"env.collector_env_num": 2, "policy.unroll_len": 16, "policy.collect.n_sample": 2,
             "policy.learn.batch_size": 2, "policy.other.replay_buffer.replay_buffer_size": 2,
             "policy.eval.evaluator.eval_freq": 2}


def dizoo(name):
    return read_config_file(os.path.join(REPO, "dizoo_configs", name))


def train(tmp, config, name, max_env_step, overrides=None):
    exp = str(tmp / name)
    serial_pipeline(config, seed=0, max_env_step=max_env_step, quiet=True, exp_name=exp,
                    overrides={**SMALL_EVAL, **(overrides or {})})
    return exp + "_seed0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runs")
    sac = {"policy.random_collect_size": 64, "policy.learn.batch_size": 32}
    goal = ({"env": {"collector_env_num": 2, "kwargs": {"nesting": "nested"}},
             "policy": {"unroll_len": 4, "collect": {"n_sample": 2},
                        "learn": {"batch_size": 2, "update_per_collect": 1}}},
            {"env": {"type": "goal_grid"}, "policy": {"type": "impala"}})
    return {
        "cartpole": train(tmp, dizoo("cartpole_impala.py"), "cartpole", 300, {"env.collector_env_num": 2}),
        "pendulum": train(tmp, dizoo("pendulum_sac.py"), "pendulum", 150, sac),
        "normalized": train(tmp, dizoo("pendulum_sac.py"), "norm", 150, {**sac, "env.normalize_obs": True}),
        "goal_grid": train(tmp, goal, "goal", 100),
        "ppo_cartpole": train(tmp, dizoo("cartpole_ppo.py"), "ppo_cp", 256, PPO_SMALL),
        "ppo_pendulum": train(tmp, dizoo("pendulum_ppo.py"), "ppo_pd", 256, {**PPO_SMALL, "env.normalize_obs": True}),
    }


def greedy_eval_action(agent, batch):
    """The eval mode's action for a batch (tensor tree), as the policy gives it (before the env mapping)."""
    with torch.no_grad():
        return agent.policy.eval_mode.forward(batch)["action"]


def test_run_dir_loads_best_and_acts_like_the_greedy_policy(runs):
    agent = ding_lite.load(runs["cartpole"])
    assert agent.checkpoint_name == "ckpt_best" and not agent.env_built
    assert agent.config.policy.type == "impala" and agent.device == torch.device("cpu")
    obs = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    batch = agent.predict(obs)
    assert batch.shape == (50,) and batch.dtype == np.int64
    np.testing.assert_array_equal(batch, greedy_eval_action(agent, torch.from_numpy(obs)).numpy())
    single = agent.predict(obs[3])
    assert np.ndim(single) == 0 and np.asarray(single).dtype == np.int64 and single == batch[3]
    assert set(np.unique(agent.predict(obs, deterministic=False))) <= {0, 1}


def test_a_non_finite_observation_is_refused_naming_where(runs):
    """The argmax of NaN logits is action 0: predict used to return it silently."""
    agent = ding_lite.load(runs["cartpole"])
    with pytest.raises(UserError, match=r"obs holds nan at index \(2,\).*pass finite observations"):
        agent.predict(np.array([0.0, 0.1, np.nan, 0.0], np.float32))
    batch = np.zeros((3, 4), np.float32)
    batch[1, 3] = np.inf
    with pytest.raises(UserError, match=r"holds inf at index \(1, 3\)"):
        agent.predict(batch)


def test_checkpoint_file_and_last_fallback(runs, tmp_path):
    ckpt = os.path.join(runs["cartpole"], "ckpt", "ckpt_last.pth.tar")
    agent = ding_lite.load(ckpt)
    assert agent.checkpoint_name == "ckpt_last"
    meta = load_checkpoint(ckpt)["meta"]["env"]  # the pipelines record the action space
    assert meta["action_space_type"] == "discrete" and meta["action_shape"] == 2


def test_bad_paths_are_user_errors_naming_them(tmp_path):
    with pytest.raises(UserError, match="nowhere.*run directory"):
        ding_lite.load(str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match=f"{tmp_path}.*ckpt_best"):
        ding_lite.load(str(tmp_path))
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(UserError, match="x.txt.*checkpoint"):
        ding_lite.load(str(tmp_path / "x.txt"))


def test_sac_actions_are_in_env_units(runs):
    agent = ding_lite.load(runs["pendulum"])
    obs = np.random.default_rng(1).normal(scale=5, size=(100, 3)).astype(np.float32)
    action = agent.predict(obs)
    assert action.shape == (100, 1) and action.dtype == np.float32
    assert (np.abs(action) <= 2).all()
    with torch.no_grad():
        mu = agent.policy.model.compute_actor(torch.from_numpy(obs))["mu"].numpy()
    np.testing.assert_allclose(action, np.clip(2 * np.tanh(mu), -2, 2), rtol=1e-6, atol=1e-6)
    assert agent.predict(obs[0]).shape == (1,)
    sampled = agent.predict(obs, deterministic=False)
    assert (np.abs(sampled) <= 2).all() and not np.allclose(sampled, action)


def test_impala_continuous_mean_is_clipped_to_the_bounds():
    cfg = compile_config(({"env": {"env_id": "Pendulum-v1"}}, {"policy": {"type": "impala"}}))
    cfg.policy.action_space = "continuous"
    cfg.policy.model.update(obs_shape=3, action_shape=1, action_space="continuous")
    policy = build_acting_policy(cfg.policy)
    with torch.no_grad():
        for param in policy.model.parameters():  # a mean far outside the bounds
            param.mul_(4)
    spec = EnvSpec(obs_shape=3, action_space_type="continuous", action_shape=1,
                   action_low=np.array([-2.0], np.float32), action_high=np.array([2.0], np.float32))
    agent = Agent.from_policy(policy, spec, cfg)
    obs = np.random.default_rng(2).normal(scale=100, size=(200, 3)).astype(np.float32)
    mu = greedy_eval_action(agent, torch.from_numpy(obs)).numpy()
    assert (np.abs(mu) > 2).any()  # the unclipped mean leaves the bounds
    np.testing.assert_array_equal(agent.predict(obs), np.clip(mu, -2, 2))


def test_nested_dict_observations_single_and_batch(runs):
    agent = ding_lite.load(runs["goal_grid"])
    from ding_lite.envs.toy.goal_grid import GoalGridEnv
    env = GoalGridEnv(nesting="nested")
    observations = [env.reset(seed=s)[0] for s in range(6)]
    batch = {"goal": np.array([o["goal"] for o in observations]),
             "agent": {k: np.stack([o["agent"][k] for o in observations]) for k in ("position", "walls")}}
    actions = agent.predict(batch)
    assert actions.shape == (6,) and actions.dtype == np.int64
    np.testing.assert_array_equal(actions, greedy_eval_action(agent, obs_to_tensor(batch)).numpy())
    assert [agent.predict(o) for o in observations] == list(actions)
    env.step(int(agent.predict(observations[0])))
    with pytest.raises(UserError, match="goal"):
        agent.predict({"agent": observations[0]["agent"]})


def test_normalized_run_predicts_as_the_evaluator_acts(runs):
    agent = ding_lite.load(runs["normalized"])
    assert agent.policy.model.obs_normalizer is not None
    cfg = compile_config(read_config_file(os.path.join(runs["normalized"], "total_config.py")))
    parts = build(cfg, 0, collect=False, enable_field=("eval",))
    state = load_checkpoint(agent.checkpoint)
    parts.policy.model.load_state_dict(state["policy"]["model"])
    evaluator = Evaluator(parts.evaluator_env, parts.policy.eval_mode, 1, 1)
    try:
        obs = np.random.default_rng(3).normal(scale=3, size=(40, 3)).astype(np.float32)
        with torch.no_grad():
            expected = evaluator._env_action(evaluator.policy.forward(obs_to_tensor(obs))["action"])
            raw = agent.policy.model.compute_actor(torch.from_numpy(obs))["mu"].numpy()  # without normalisation
    finally:
        evaluator.close()
    np.testing.assert_array_equal(agent.predict(obs), expected)
    assert not np.allclose(expected, np.clip(2 * np.tanh(raw), -2, 2), atol=1e-4)


def test_importing_ding_lite_stays_light():
    code = "import sys, ding_lite; ding_lite.__version__; assert 'torch' not in sys.modules; print(ding_lite.load)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "function load" in out.stdout


def test_old_checkpoint_without_action_space_builds_one_env(runs, tmp_path):
    import shutil
    run = shutil.copytree(runs["pendulum"], tmp_path / "old_seed0")
    ckpt = str(run / "ckpt" / "ckpt_last.pth.tar")
    state = torch.load(ckpt, weights_only=True)
    del state["meta"]["env"]
    torch.save(state, ckpt)
    with pytest.warns(UserWarning, match="building one env"):
        agent = ding_lite.load(ckpt)
    assert agent.env_built and float(agent.spec.action_high[0]) == 2.0
    assert (np.abs(agent.predict(np.full((5, 3), 9.0, np.float32))) <= 2).all()


def test_ppo_runs_predict_as_their_eval_mode(runs):
    """A trained PPO run: the greedy action (argmax, or the Gaussian mean clipped to the bounds) on raw
    observations, through the run's observation normaliser where it has one."""
    agent = ding_lite.load(runs["ppo_cartpole"])
    assert agent.config.policy.type == "ppo"
    obs = np.random.default_rng(4).normal(size=(50, 4)).astype(np.float32)
    actions = agent.predict(obs)
    assert actions.shape == (50,) and actions.dtype == np.int64
    np.testing.assert_array_equal(actions, greedy_eval_action(agent, torch.from_numpy(obs)).numpy())

    agent = ding_lite.load(runs["ppo_pendulum"])
    assert agent.policy.model.obs_normalizer is not None
    obs = np.random.default_rng(5).normal(scale=3, size=(100, 3)).astype(np.float32)
    actions = agent.predict(obs)
    assert actions.shape == (100, 1) and actions.dtype == np.float32 and (np.abs(actions) <= 2).all()
    mu = greedy_eval_action(agent, torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(actions, np.clip(mu, -2, 2), rtol=1e-6, atol=1e-6)
