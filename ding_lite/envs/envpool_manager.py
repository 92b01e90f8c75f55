"""The 'envpool' env manager: envpool's batched C++ Atari envs (threads, no Python per env) as a gymnasium VectorEnv
in SAME_STEP autoreset mode, with the preprocessing of ``env.atari``.

envpool resets in NEXT_STEP fashion: the step that ends an episode returns its true final observation, and the
env's *next* step is its reset (the action ignored, reward 0). ``EnvpoolVectorEnv`` makes that SAME_STEP: after a
step in which some envs finished, it steps just those envs once more at once (envpool steps a subset of its envs by
id), which is envpool's own reset of them, and returns the reset observations in their places, with the true final
ones in ``info['final_obs']`` as gymnasium's vector envs do. Using envpool's own reset, not an explicit
``reset(env_id)``, matters for episodic life: envpool continues the game after a lost life only in its own reset
(an explicit reset always starts a new game). Nothing is lost: every transition the collector stores has its true
next observation, and no reset step reaches it.

How it differs from the gymnasium path (``envs/atari.py``) with the same ``env.atari`` (docs/atari.md lists them):
after a lost life (episodic life) envpool plays 1 to ``noop_max`` no-op frames and keeps the frame stack, the
gymnasium path plays one no-op step and restarts the stack; the 27,000-step cap (108,000 frames at ``frame_skip``
4) counts agent steps after the noop reset, the ALE's counts frames including it; ``noop_max=0`` is one no-op frame
(envpool cannot do none); OpenCV's resize instead of numpy's (within one grey level); when a game ends inside a frame
skip, envpool's last frame can be the one of the step before.
"""
import importlib.util
import os
from typing import Any, Dict, List, Optional, Union

import gymnasium as gym
import numpy as np
from easydict import EasyDict
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ding_lite.utils import ENV_MANAGER_REGISTRY, Configurable, ConfigError, UserError
from ding_lite.utils.seed import contiguous_seed

from .atari import MAX_FRAMES_PER_GAME, is_ale_env, register_ale

ENVPOOL_INSTALL = 'pip install -e ".[envpool]"'
# env.kwargs of an ALE id that envpool takes too (as config keys of the same name); any other is refused.
ENVPOOL_KWARGS = ("mode", "difficulty")


def envpool_available() -> bool:
    return importlib.util.find_spec("envpool") is not None


def check_envpool_env(env_cfg: EasyDict, path: str = "env") -> None:
    """ConfigError unless ``env_cfg`` is an env the 'envpool' manager can make: an ale-py id with the preprocessing
    on; UserError when envpool is not installed."""
    if env_cfg.type != "gym" or not isinstance(env_cfg.env_id, str):
        raise ConfigError(f"{path}.manager.type='envpool' makes Atari envs only: set {path}.env_id to an ale-py id "
                          f"such as 'ALE/Pong-v5' (env type 'gym'), or use env manager 'base' or 'subprocess'")
    register_ale(env_cfg.env_id)
    if not is_ale_env(env_cfg.env_id):
        raise ConfigError(f"{path}.manager.type='envpool' makes Atari envs only, not {path}.env_id="
                          f"'{env_cfg.env_id}': use env manager 'base' or 'subprocess' for it")
    if not env_cfg.atari.preprocess:
        raise ConfigError(f"{path}.atari.preprocess=False: envpool always applies the Atari preprocessing; use env "
                          f"manager 'base' or 'subprocess' for raw ALE frames")
    other = sorted(set(env_cfg.kwargs) - set(ENVPOOL_KWARGS))
    if other:
        raise ConfigError(f"{path}.kwargs {other}: envpool does not take these ALE arguments (it takes "
                          f"{list(ENVPOOL_KWARGS)}); remove them or use env manager 'base' or 'subprocess'")
    if not envpool_available():
        raise UserError(f"{path}.manager.type='envpool' needs the envpool package: {ENVPOOL_INSTALL} (envpool "
                        f"ships wheels for Linux x86-64 and some Python versions only; without it use env manager "
                        f"'subprocess')")


def envpool_task_id(env_id: str) -> str:
    """envpool's id of the game of an ale-py id: 'ALE/Pong-v5' and 'PongNoFrameskip-v4' are 'Pong-v5'."""
    game = gym.spec(env_id).kwargs["game"]  # ale-py's ROM name, e.g. 'ms_pacman'
    return "".join(part.capitalize() for part in game.split("_")) + "-v5"


def envpool_kwargs(env_cfg: EasyDict, num_envs: int, train: bool, num_threads: int) -> Dict[str, Any]:
    """envpool.make's config for ``env_cfg`` (its ``env.atari`` and ``max_episode_steps``)."""
    atari = env_cfg.atari
    max_steps = MAX_FRAMES_PER_GAME // atari.frame_skip
    if env_cfg.max_episode_steps is not None:
        max_steps = min(max_steps, env_cfg.max_episode_steps)
    if num_threads <= 0:
        num_threads = min(num_envs, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                          else os.cpu_count() or 1)
    kwargs = dict(num_envs=num_envs, batch_size=num_envs, num_threads=num_threads, stack_num=atari.frame_stack,
                  frame_skip=atari.frame_skip, noop_max=max(1, atari.noop_max), img_height=atari.screen_size,
                  img_width=atari.screen_size, gray_scale=True, use_inter_area_resize=True, use_fire_reset=False,
                  episodic_life=bool(train and atari.episodic_life), reward_clip=bool(train and atari.clip_reward),
                  zero_discount_on_life_loss=False, repeat_action_probability=float(atari.repeat_action_probability),
                  full_action_space=bool(atari.full_action_space), max_episode_steps=int(max_steps))
    kwargs.update({k: env_cfg.kwargs[k] for k in ENVPOOL_KWARGS if k in env_cfg.kwargs})
    return kwargs


class EnvpoolVectorEnv(gym.vector.VectorEnv):
    """envpool's Atari pool as a SAME_STEP gymnasium VectorEnv (see the module docstring).

    envpool fixes its seeds when the pool is made, so ``reset(seed=s)`` makes a new pool seeded ``s`` (env i gets
    ``s + i``, as envpool seeds them; a list of per-env seeds, as the pipelines pass, becomes one such ``s`` by
    ``ding_lite.utils.seed.contiguous_seed``); ``reset()`` resets every env of the current pool. ``info`` carries
    ``lives``, ``elapsed_step`` (agent steps in the current game) and ``game_over`` per env (after the autoreset, for
    a finished env), and on an episode end ``final_obs`` / ``_final_obs`` (the final observations, an object array) and
    ``final_info`` / ``_final_info`` (the info at the end, a dict of arrays) as gymnasium's vector envs give them.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, task_id: str, num_envs: int, pool_kwargs: Dict[str, Any]) -> None:
        try:
            import envpool
        except ImportError:
            raise UserError(f"env.manager.type='envpool' needs the envpool package: {ENVPOOL_INSTALL}") from None
        self._envpool = envpool
        self.task_id = task_id
        self.num_envs = num_envs
        self.pool_kwargs = dict(pool_kwargs)
        spec = envpool.make_spec(task_id, **self.pool_kwargs)
        self.single_observation_space = spec.gymnasium_observation_space
        self.single_action_space = spec.gymnasium_action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._pool = None
        self._all_ids = np.arange(num_envs, dtype=np.int32)

    def _make_pool(self, seed: Optional[int]) -> None:
        if self._pool is not None:
            self._pool.close()
        kwargs = dict(self.pool_kwargs)
        if seed is not None:
            kwargs["seed"] = int(seed)
        self._pool = self._envpool.make(self.task_id, env_type="gymnasium", **kwargs)

    @staticmethod
    def _info(info: Dict[str, Any]) -> Dict[str, Any]:
        return {"lives": np.asarray(info["lives"]), "elapsed_step": np.asarray(info["elapsed_step"]),
                "game_over": np.asarray(info["terminated"]).astype(bool)}

    def _in_order(self, arrays, info):
        """envpool's results put in env order (sync mode returns them so; checked, as that is not documented)."""
        ids = np.asarray(info["env_id"])
        if np.array_equal(ids, self._all_ids):
            return arrays, info
        order = np.argsort(ids)
        return [a[order] for a in arrays], {k: (v[order] if isinstance(v, np.ndarray) and len(v) == len(ids) else v)
                                            for k, v in info.items()}

    def reset(self, *, seed: Union[None, int, List[int]] = None, options: Optional[Dict[str, Any]] = None):
        if options:
            raise ValueError(f"EnvpoolVectorEnv.reset takes no options, got {options}")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} envs")
            seed = contiguous_seed(list(seed))
        if seed is not None or self._pool is None:
            self._make_pool(seed)
        obs, info = self._pool.reset()
        (obs,), info = self._in_order([obs], info)
        return obs, self._info(info)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self._pool.step(np.asarray(actions, dtype=np.int32))
        (obs, reward, terminated, truncated), info = self._in_order([obs, reward, terminated, truncated], info)
        terminated, truncated = terminated & ~truncated, truncated  # (envpool's are so already)
        out_info = self._info(info)
        done = terminated | truncated
        if done.any():
            ids = np.flatnonzero(done).astype(np.int32)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in ids:
                final_obs[i] = obs[i].copy()
            final_info = {k: v.copy() for k, v in out_info.items()}  # as gymnasium's: arrays, with '_key' masks
            final_info.update({f"_{k}": done.copy() for k in out_info})
            # envpool's own reset of the finished envs: one more step of just those (their action is ignored).
            r_obs, _, _, _, r_info = self._pool.step(np.zeros(len(ids), dtype=np.int32), ids)
            where = np.asarray(r_info["env_id"])
            obs = np.array(obs, copy=True)
            obs[where] = r_obs
            for key, value in self._info(r_info).items():
                out_info[key][where] = value
            out_info.update(final_obs=final_obs, _final_obs=done.copy(), final_info=final_info,
                            _final_info=done.copy())
        return obs, reward, terminated, truncated, out_info

    def close_extras(self, **kwargs: Any) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


@ENV_MANAGER_REGISTRY.register("envpool")
class EnvpoolEnvManager(Configurable):
    """envpool's batched Atari envs (pip install -e ".[envpool]"), for ale-py ids with ``env.atari.preprocess``."""

    config = dict(
        # (int) Only with env.manager.type='envpool': envpool's worker threads; 0: one per env, at most as many as
        # the CPU cores this process may use.
        num_threads=0,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        if cfg.num_threads < 0:
            raise ConfigError(f"{path}.num_threads={cfg.num_threads}: must be at least 0 (0: one per env)")

    @classmethod
    def make(cls, env_cfg: EasyDict, num_envs: int, role: str = "collector") -> gym.vector.VectorEnv:
        check_envpool_env(env_cfg)
        kwargs = envpool_kwargs(env_cfg, num_envs, role == "collector", env_cfg.manager.num_threads)
        return EnvpoolVectorEnv(envpool_task_id(env_cfg.env_id), num_envs, kwargs)
