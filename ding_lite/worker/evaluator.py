"""Evaluator: runs the policy's eval mode for a fixed quota of episodes per env and reports return statistics."""
import os
from typing import Dict, Optional

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.envs.finite_check import FiniteCheck, env_name
from ding_lite.envs.obs_space import obs_to_tensor
from ding_lite.policy.action_mask import EmptyActionMask
from ding_lite.policy.base_policy import EvalMode
from ding_lite.utils import Configurable, ConfigError, UserError

from .collector import check_same_step, env_action_adapter
from .eval_video import EvalVideo

# An evaluation episode longer than this (or than twice the env's time limit, when that is longer) has no end: the
# env never terminates and has no time limit, so the evaluation would never finish. Far above any real episode
# (Atari's cap is 27,000 agent steps; MuJoCo's and classic control's time limits are at most a few thousand).
EPISODE_STEP_CAP = 100_000


def episode_step_cap(env: gym.vector.VectorEnv) -> int:
    """The evaluation episode length that stops an evaluation: ``EPISODE_STEP_CAP``, or twice the longest time
    limit known for the env (``env.max_episode_steps``, or its gymnasium spec's) when that is longer."""
    limits = [getattr(env, "max_episode_steps", None)]
    try:
        envs = getattr(env, "envs", None)
        spec = envs[0].spec if envs else None
        limits.append(getattr(spec, "max_episode_steps", None))
    except Exception:  # noqa: BLE001  (only a hint for the cap)
        pass
    return max([EPISODE_STEP_CAP] + [2 * int(x) for x in limits if isinstance(x, int) and x > 0])


class Evaluator(Configurable):
    """Scores the policy every ``eval_freq`` train iterations (config section ``policy.eval.evaluator``).

    Each of the ``evaluator_env_num`` envs runs exactly ``n_evaluator_episode / evaluator_env_num`` episodes, so
    envs with short episodes cannot contribute more episodes than others and bias the mean.

    With a ``video`` (``ding_lite/worker/eval_video.py``) every ``video_every``-th evaluation (the first, the
    ``video_every + 1``-th, ...) also records one episode of a separate rendering env, after the scored episodes.
    """

    config = dict(
        # (int) Evaluate every this many learner train iterations (also once before training starts).
        eval_freq=1000,
        # (int) Record a video of one evaluation episode every this many evaluations (the first, the
        # video_every+1-th, ...), from a separate env made with render_mode='rgb_array'; 0: never. Needs
        # pip install "ding_lite[video]". See docs/videos.md.
        video_every=0,
        # (str) Where the videos go (eval_envstep<N>_return<R>.mp4, or .gif without ffmpeg); None: <run_dir>/videos.
        video_dir=None,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        if cfg.eval_freq < 1:
            raise ConfigError(f"{path}.eval_freq={cfg.eval_freq}: must be at least 1 (train iterations)")
        every = cfg.video_every
        if isinstance(every, bool) or not isinstance(every, int) or every < 0:
            raise ConfigError(f"{path}.video_every={every!r}: must be a whole number >= 0 (evaluations between "
                              f"videos; 0: no videos)")
        if cfg.video_dir is not None and (not isinstance(cfg.video_dir, str) or not cfg.video_dir):
            raise ConfigError(f"{path}.video_dir={cfg.video_dir!r}: must be a directory path, or None for "
                              f"<run_dir>/videos")

    def __init__(self, env: gym.vector.VectorEnv, policy: EvalMode, n_episode: int, eval_freq: int,
                 video: Optional[EvalVideo] = None, video_every: int = 0) -> None:
        check_same_step(env)
        self.env = env
        self.policy = policy
        self.quota = n_episode // env.num_envs
        self.eval_freq = eval_freq
        self.last_eval_iter = None
        self._env_action = env_action_adapter(env, policy.action_bound)
        self._finite = FiniteCheck(env, "evaluator")
        self.video = video if video_every > 0 else None
        self.video_every = video_every
        self.evals = 0  # evaluations so far: which ones record a video
        self.last_video: Optional[str] = None  # the path of the latest video

    @classmethod
    def video_for(cls, cfg: EasyDict, seed: int, run_dir: str) -> Optional[EvalVideo]:
        """The recorder of ``policy.eval.evaluator.video_every`` (None when 0), writing to ``video_dir`` or
        ``<run_dir>/videos``."""
        section = cfg.policy.eval.evaluator
        if not section.video_every:
            return None
        return EvalVideo(cfg.env, seed, section.video_dir or os.path.join(run_dir, "videos"))

    def should_eval(self, train_iter: int) -> bool:
        return self.last_eval_iter is None or train_iter - self.last_eval_iter >= self.eval_freq

    def eval(self, train_iter: int, env_step: Optional[int] = None) -> Dict[str, float]:
        """Run the quota of episodes from fresh resets; return mean/std/min/max return and the episode count.
        When a video is due, one more episode is recorded afterwards (named with ``env_step``; ``last_video``)."""
        self.last_eval_iter = train_iter
        num_envs = self.env.num_envs
        obs, _ = self.env.reset()
        envstep = 0
        self._finite.reset_obs(obs, envstep, train_iter)
        running = np.zeros(num_envs)
        length, cap = np.zeros(num_envs, dtype=np.int64), episode_step_cap(self.env)
        done_count = np.zeros(num_envs, dtype=np.int64)
        returns = []
        self.policy.reset(None)
        while (done_count < self.quota).any():
            try:
                action = self._env_action(self.policy.forward(obs_to_tensor(obs))["action"])
            except EmptyActionMask as e:  # name the env and the step
                raise e.where(env_name(self.env), "evaluator", envstep) from None
            obs, reward, terminated, truncated, info = self.env.step(action)
            envstep += num_envs
            done = terminated | truncated
            self._finite.step(obs, reward, done, info, envstep, train_iter)
            running += reward
            length += 1
            length[done] = 0
            if length.max() >= cap:
                self._no_end(int(length.argmax()), cap)
            if done.any():  # per-env state (a recurrent core) starts afresh in the envs whose episode ended
                self.policy.reset(np.flatnonzero(done).tolist())
            for i in np.flatnonzero(done):
                if done_count[i] < self.quota:
                    returns.append(running[i])
                    done_count[i] += 1
                running[i] = 0.0
        returns = np.asarray(returns)
        if self.video is not None and self.evals % self.video_every == 0:
            self.last_video = self.video.record(self.policy, env_step, train_iter)
        self.evals += 1
        return {
            "return_mean": float(returns.mean()),
            "return_std": float(returns.std()),
            "return_min": float(returns.min()),
            "return_max": float(returns.max()),
            "episodes": int(len(returns)),
        }

    def _no_end(self, index: int, steps: int) -> None:
        name = getattr(self.env, "env_name", None) or type(self.env).__name__
        raise UserError(f"env '{name}' (evaluator env {index}) has run {steps:,} steps in one evaluation episode "
                        f"without terminating or being truncated: the env has no time limit, so the evaluation would "
                        f"never end; set env.max_episode_steps (e.g. 1000) so that episodes end")

    def close(self) -> None:
        self.env.close()
        if self.video is not None:
            self.video.close()
