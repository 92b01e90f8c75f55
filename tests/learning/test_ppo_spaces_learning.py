"""PPO beyond a flat Box and one Discrete action, through the serial pipeline: MultiDiscrete actions, nested Dict
observations (GoalGrid) and ``env.normalize_obs`` (the statistics used when acting and when learning).

Measured on the 2-core VM (torch_threads=1, seeds 0 and 1): MatchHeads from 1.3 (random) to its stop value of 7.5 (of
8) at 256 env steps with lr 0.003; GoalGrid ('nested') to 0.95 at 15,360 and 12,800 env steps (5-7 s); CartPole-v1
with normalize_obs to 475 at 11,520 and 15,360 env steps (7-9 s; 7,680 both when the statistics were merged at
arrival, two seeds only: not a measured difference).
"""
import csv
import json
import os

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.envs.toy.goal_grid import SOLVED_RETURN
from ding_lite.policy import PPOPolicy
from ding_lite.utils import ENV_REGISTRY

from test_ppo_learning import _restore_torch_threads  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.slow  # learning tests: each trains to a return


class MatchHeadsEnv(gym.Env):
    """MultiDiscrete([3, 2]): the observation is a one-hot state s in {0, 1, 2}, new every step; reward 1 when the
    action is (s, s % 2), so both heads must read the state. 8 steps per episode (truncated): a uniformly random
    policy scores 8/6 = 1.3."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([3, 2])

    def _obs(self):
        self.state = int(self.np_random.integers(3))
        return np.eye(3, dtype=np.float32)[self.state]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        reward = float(int(action[0]) == self.state and int(action[1]) == self.state % 2)
        return self._obs(), reward, False, self.t >= 8, {}


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if "test_ppo_match_heads" not in ENV_REGISTRY:
    ENV_REGISTRY.register("test_ppo_match_heads", MatchHeadsEnv)


def run(config, seed, budget, tmp_path, monkeypatch, overrides=None):
    monkeypatch.chdir(tmp_path)
    serial_pipeline(config, seed=seed, max_env_step=budget, quiet=True,
                    overrides={"torch_threads": 1, **(overrides or {})})
    run_dir = tmp_path / f"{config[0]['exp_name']}_seed{seed}"
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    with open(run_dir / "eval.csv", newline="") as f:
        curve = [(int(row["env_step"]), round(float(row["return_mean"]), 2)) for row in csv.DictReader(f)]
    return result, curve, f"result {result}; eval curve (env_step, return_mean): {curve}"


def ppo_config(name, env, env_type, stop_value, n_env, unroll_len, **learn):
    main = dict(exp_name=name,
                env=dict(collector_env_num=n_env, evaluator_env_num=2, n_evaluator_episode=20, stop_value=stop_value,
                         **env),
                policy=dict(unroll_len=unroll_len, learn=dict(batch_size=n_env, **learn), collect=dict(n_sample=n_env),
                            eval=dict(evaluator=dict(eval_freq=2)),
                            other=dict(replay_buffer=dict(replay_buffer_size=n_env))))
    return main, dict(env=dict(type=env_type), policy=dict(type="ppo"))


def test_multi_discrete_actions_learn(tmp_path, monkeypatch):
    config = ppo_config("match_heads", {}, "test_ppo_match_heads", 7.5, 4, 16, epochs=4, minibatch_size=32,
                        learning_rate=0.003)
    config[0]["policy"]["model"] = dict(encoder_hidden_size_list=[32])
    result, curve, message = run(config, 0, 5_000, tmp_path, monkeypatch)
    assert curve[0][1] < 4, message  # the untrained policy is near random
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= 7.5, message


def test_nested_dict_observations_learn(tmp_path, monkeypatch):
    """GoalGrid's goal is only in its own key: a policy that reaches 0.95 reads it through the multi-input encoder."""
    config = ppo_config("goal_grid", dict(kwargs=dict(nesting="nested")), "goal_grid", SOLVED_RETURN, 8, 32,
                        epochs=4, minibatch_size=64, learning_rate=0.001, entropy_weight=0.01, discount_factor=0.95)
    config[0]["policy"]["eval"]["evaluator"]["eval_freq"] = 10
    result, curve, message = run(config, 0, 40_000, tmp_path, monkeypatch)
    assert curve[0][1] < 0.9, message
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= SOLVED_RETURN, message


def test_normalized_observations_at_collection_and_learning(tmp_path, monkeypatch):
    """With env.normalize_obs the learner normalises as the collecting policy did: a collection joins the statistics
    after the update that learns from it, so the first minibatch of every update is on-policy (approx KL 0; merged
    at arrival instead it measured up to 0.008 here). Every collected step is counted once, and CartPole reaches
    475."""
    first_kl, counts = [], []
    update, forward_learn = PPOPolicy._update, PPOPolicy._forward_learn

    def recording_learn(self, data):
        self._first_minibatch = True
        counts.append(int(self._obs_norm.count.item()))
        return forward_learn(self, data)

    def recording_update(self, minibatch):
        out = update(self, minibatch)
        if self._first_minibatch:
            first_kl.append(out["approx_kl"].item())
            self._first_minibatch = False
        return out

    monkeypatch.setattr(PPOPolicy, "_forward_learn", recording_learn)
    monkeypatch.setattr(PPOPolicy, "_update", recording_update)
    config = read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py"))
    result, _, message = run(config, 0, 50_000, tmp_path, monkeypatch, {"env.normalize_obs": True})
    assert result["stop_reason"] == "stop_value", message
    assert counts == [256 * i for i in range(len(counts))]  # the statistics of the collections learned from before
    assert max(abs(kl) for kl in first_kl) < 1e-6, first_kl
    ckpt = torch.load(tmp_path / "cartpole_ppo_seed0" / "ckpt" / "ckpt_last.pth.tar", weights_only=True)
    assert ckpt["policy"]["model"]["obs_normalizer.count"].item() == result["env_step"]
