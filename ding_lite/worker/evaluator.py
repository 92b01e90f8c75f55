"""Evaluator: runs the policy's eval mode for a fixed quota of episodes per env and reports return statistics."""
from typing import Dict

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.envs.obs_space import obs_to_tensor
from ding_lite.policy.base_policy import EvalMode
from ding_lite.utils import Configurable, ConfigError

from .collector import check_same_step, env_action_adapter
from .finite_check import FiniteCheck


class Evaluator(Configurable):
    """Scores the policy every ``eval_freq`` train iterations (config section ``policy.eval.evaluator``).

    Each of the ``evaluator_env_num`` envs runs exactly ``n_evaluator_episode / evaluator_env_num`` episodes, so
    envs with short episodes cannot contribute more episodes than others and bias the mean.
    """

    config = dict(
        # (int) Evaluate every this many learner train iterations (also once before training starts).
        eval_freq=1000,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        if cfg.eval_freq < 1:
            raise ConfigError(f"{path}.eval_freq={cfg.eval_freq}: must be at least 1 (train iterations)")

    def __init__(self, env: gym.vector.VectorEnv, policy: EvalMode, n_episode: int, eval_freq: int) -> None:
        check_same_step(env)
        self.env = env
        self.policy = policy
        self.quota = n_episode // env.num_envs
        self.eval_freq = eval_freq
        self.last_eval_iter = None
        self._env_action = env_action_adapter(env, policy.action_bound)
        self._finite = FiniteCheck(env, "evaluator")

    def should_eval(self, train_iter: int) -> bool:
        return self.last_eval_iter is None or train_iter - self.last_eval_iter >= self.eval_freq

    def eval(self, train_iter: int) -> Dict[str, float]:
        """Run the quota of episodes from fresh resets; return mean/std/min/max return and the episode count."""
        self.last_eval_iter = train_iter
        num_envs = self.env.num_envs
        obs, _ = self.env.reset()
        envstep = 0
        self._finite.reset_obs(obs, envstep, train_iter)
        running = np.zeros(num_envs)
        done_count = np.zeros(num_envs, dtype=np.int64)
        returns = []
        self.policy.reset(None)
        while (done_count < self.quota).any():
            action = self._env_action(self.policy.forward(obs_to_tensor(obs))["action"])
            obs, reward, terminated, truncated, info = self.env.step(action)
            envstep += num_envs
            done = terminated | truncated
            self._finite.step(obs, reward, done, info, envstep, train_iter)
            running += reward
            for i in np.flatnonzero(done):
                if done_count[i] < self.quota:
                    returns.append(running[i])
                    done_count[i] += 1
                running[i] = 0.0
        returns = np.asarray(returns)
        return {
            "return_mean": float(returns.mean()),
            "return_std": float(returns.std()),
            "return_min": float(returns.min()),
            "return_max": float(returns.max()),
            "episodes": int(len(returns)),
        }

    def close(self) -> None:
        self.env.close()
