"""SampleCollector: steps a vector env with the policy's collect mode and returns batches of train samples.

The hot loop is vectorised over envs: one policy forward, one ``env.step`` and one ``_process_transition`` per
vector step; every ``unroll_len`` steps the time-major segment ``(T, N_env, ...)`` goes through
``_get_train_sample`` once. Only finished episodes' bookkeeping touches individual envs.
"""
import inspect
from typing import Any, Dict, List, Optional, Union

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from ding_lite.envs import ActionAdapter, EnvSpec
from ding_lite.envs.finite_check import FiniteCheck, env_name
from ding_lite.envs.obs_space import obs_to_tensor, replace_final_obs
from ding_lite.policy.action_mask import EmptyActionMask
from ding_lite.policy.base_policy import CollectMode
from ding_lite.torch_utils import tree_cat, tree_map, tree_stack
from ding_lite.torch_utils.tree import leading_dim
from ding_lite.utils import Configurable, UserError



def env_action_adapter(env: gym.vector.VectorEnv, bound: str) -> ActionAdapter:
    """What turns the policy's batched actions into ``env.step``'s argument (bounds applied to that copy only)."""
    return ActionAdapter(EnvSpec.from_spaces(env.single_observation_space, env.single_action_space), bound)


def check_same_step(env: gym.vector.VectorEnv) -> None:
    """Workers need SAME_STEP autoreset (``make_vector_env`` builds it); NEXT_STEP would store reset steps."""
    mode = env.metadata.get("autoreset_mode")
    if mode != AutoresetMode.SAME_STEP:
        raise UserError(f"the vector env autoresets in mode {mode}; ding_lite's workers need "
                        f"autoreset_mode=AutoresetMode.SAME_STEP (make_vector_env builds it so)")


class EpisodeTracker:
    """Running return and length of every env's current episode; finished episodes are queued for logging."""

    def __init__(self, num_envs: int) -> None:
        self.returns = np.zeros(num_envs, dtype=np.float64)
        self.lengths = np.zeros(num_envs, dtype=np.int64)
        self.finished: List[Dict[str, float]] = []

    def step(self, reward: np.ndarray, done: np.ndarray) -> None:
        self.returns += reward
        self.lengths += 1
        if done.any():
            for i in np.flatnonzero(done):
                self.finished.append({"return": float(self.returns[i]), "length": int(self.lengths[i])})
            self.returns[done] = 0.0
            self.lengths[done] = 0

    def pop_finished(self) -> List[Dict[str, float]]:
        finished, self.finished = self.finished, []
        return finished


class SampleCollector(Configurable):
    """Collects train samples from ``env`` with ``policy`` (config section ``policy.collect.collector``).

    Segments in progress are kept between calls, so no step is ever dropped or collected twice.
    """

    config = dict()

    def __init__(self, env: gym.vector.VectorEnv, policy: CollectMode) -> None:
        check_same_step(env)
        self.env = env
        self.policy = policy
        self.num_envs = env.num_envs
        self.unroll_len = policy.unroll_len
        self._finite = FiniteCheck(env, "collector")
        self.envstep = 0
        self._finite.reset_obs(env.last_obs, self.envstep)
        self._obs = env.last_obs
        self._segment: List[Dict[str, torch.Tensor]] = []
        self._env_action = env_action_adapter(env, policy.action_bound)
        self.episodes = EpisodeTracker(self.num_envs)
        # A collect forward that takes ``env_step`` (DQN's epsilon schedule) gets the run's env steps so far: this
        # collector's count times ``env_step_scale`` (the parallel pipeline's collectors: their number).
        self._pass_env_step = "env_step" in inspect.signature(policy.forward).parameters
        self.env_step_scale = 1

    def step(self, **policy_kwargs: Any) -> Optional[Dict[str, torch.Tensor]]:
        """One vector-env step; returns a batch of train samples when it completes a segment, else None.

        ``policy_kwargs`` go to the collect forward (e.g. ``random_action=True`` for a warm-up)."""
        obs = obs_to_tensor(self._obs)
        if self._pass_env_step:
            policy_kwargs = {"env_step": self.envstep * self.env_step_scale, **policy_kwargs}
        try:
            output = self.policy.forward(obs, **policy_kwargs)
        except EmptyActionMask as e:  # name the env and the step
            raise e.where(env_name(self.env), "collector", self.envstep) from None
        next_obs, reward, terminated, truncated, info = self.env.step(self._env_action(output["action"]))
        self.envstep += self.num_envs
        done = terminated | truncated
        self._finite.step(next_obs, reward, done, info, self.envstep)
        timestep = {
            "next_obs": obs_to_tensor(replace_final_obs(next_obs, done, info)),
            "reward": torch.from_numpy(reward).float(),
            "terminated": torch.from_numpy(terminated),
            "truncated": torch.from_numpy(truncated),
        }
        output = tree_map(_to_cpu, output)
        self._segment.append(self.policy.process_transition(obs, output, timestep))
        self.episodes.step(reward, done)
        self._obs = next_obs
        samples = None
        if len(self._segment) >= self.unroll_len:
            if self.unroll_len == 1:  # a one-step segment: a view with a time dim is enough
                segment = tree_map(lambda x: x.unsqueeze(0), self._segment[0])
            else:
                segment = tree_stack(self._segment)
            self._segment = []
            samples = self.policy.get_train_sample(segment)
        if done.any():  # per-env state (a recurrent core) starts afresh in the envs whose episode ended
            self.policy.reset(np.flatnonzero(done).tolist())
        return samples

    def collect(self, n_sample: int, **policy_kwargs: Any) -> Dict[str, torch.Tensor]:
        """Step until at least ``n_sample`` train samples are ready; returns them batched (leading dim = sample)."""
        batches, count = [], 0
        while count < n_sample:
            samples = self.step(**policy_kwargs)
            if samples is not None:
                batches.append(samples)
                count += leading_dim(samples)
        return batches[0] if len(batches) == 1 else tree_cat(batches)

    def reset(self, seed: Union[None, int, List[int]] = None) -> None:
        """Start fresh episodes in every env (env i seeded ``seed[i]``, or ``seed + i`` for an int, when given);
        drops the segment in progress."""
        self._obs, _ = self.env.reset(seed=seed)
        self._finite.reset_obs(self._obs, self.envstep)
        self._segment = []
        self.episodes = EpisodeTracker(self.num_envs)
        self.policy.reset(None)

    def close(self) -> None:
        self.env.close()


def _to_cpu(x: Any) -> Any:
    return x.cpu() if isinstance(x, torch.Tensor) else x
