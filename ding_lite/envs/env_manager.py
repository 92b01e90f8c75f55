"""Vector env managers: gymnasium's own Sync/Async vector envs in SAME_STEP autoreset mode (and envpool's batched
Atari envs, ``envpool_manager.py``).

SAME_STEP mode resets a finished env inside the step that ended it and hands the true final observation in
``info['final_obs']``, so no reset step ever reaches the collector as a transition.

A manager is ``make(env_cfg, num_envs, role)``; ``role`` ('collector' or 'evaluator') says whether the envs train
(Atari's episodic life and reward clipping apply to collector envs only). A user manager whose ``make`` takes no
``role`` is called without it.
"""
import functools
import inspect
import warnings
from typing import Sequence, Union

import gymnasium as gym
from easydict import EasyDict
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from ding_lite.utils import ENV_MANAGER_REGISTRY, Configurable
from ding_lite.utils.env_worker import env_worker
from ding_lite.utils.start_method import DEFAULT as START_METHOD, preload_fork_server

from .gym_env import ROLES, env_factory
from .output_guard import guard_outputs
from .subprocess_vector_env import SubprocessVectorEnv
from .watchdog import WatchedInThisProcess, watch, watched_call


@ENV_MANAGER_REGISTRY.register("base")
class SyncEnvManager(Configurable):
    """All envs stepped in this process, one after another (fast for cheap envs such as CartPole)."""

    config = dict()

    @classmethod
    def make(cls, env_cfg: EasyDict, num_envs: int, role: str = "collector") -> gym.vector.VectorEnv:
        return SyncVectorEnv([env_factory(env_cfg, role)] * num_envs, autoreset_mode=AutoresetMode.SAME_STEP)


@ENV_MANAGER_REGISTRY.register("subprocess")
class SubprocessEnvManager(Configurable):
    """Each env in its own process (spawned), for envs whose step costs more than the inter-process round trip.

    An env that cannot be built in its process raises ``EnvBuildError`` here with its own exception (type, message,
    where it was raised), not a broken pipe (``ding_lite/utils/env_worker.py``). Env processes ignore Ctrl-C and
    a stop signal that kills them is the run's interrupt, not an error (``subprocess_vector_env.py``)."""

    config = dict(
        # (str) multiprocessing start method for the env processes: 'forkserver' (where it exists) starts each from a
        # server that imported torch once (ding_lite/utils/start_method.py); 'spawn' from a fresh interpreter.
        context=START_METHOD,
    )

    @classmethod
    def make(cls, env_cfg: EasyDict, num_envs: int, role: str = "collector") -> gym.vector.VectorEnv:
        worker = functools.partial(env_worker, env_name=env_cfg.env_id or env_cfg.type, role=role)
        with warnings.catch_warnings():  # gymnasium's report of a worker's error (as warnings) would repeat the
            # EnvBuildError's message with the whole traceback, on many lines, before it
            warnings.filterwarnings("ignore", message=r".*ERROR: ", module=r"gymnasium\.vector\.async_vector_env")
            preload_fork_server(env_cfg.manager.context)  # gymnasium starts the processes itself
            fns = [env_factory(env_cfg, role)] * num_envs
            # gymnasium makes one env here first, for the spaces: watched as any construction in this process (the
            # env processes' own constructions come before their first reset, which is watched)
            fns[0] = WatchedInThisProcess(fns[0], env_cfg.step_timeout_s, env_cfg.env_id or env_cfg.type, role)
            return SubprocessVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP, context=env_cfg.manager.context,
                                       worker=worker)


def make_vector_env(env_cfg: EasyDict, num_envs: int, seed: Union[None, int, Sequence[int]] = None,
                    role: str = "collector") -> gym.vector.VectorEnv:
    """A vector env of ``num_envs`` copies of the env in ``env_cfg``, built by ``env_cfg.manager.type``.

    ``role`` is 'collector' (training envs) or 'evaluator' (envs that report true returns: no Atari episodic life, no
    reward clipping). It is reset once here with ``seed``, so callers can read ``.last_obs``: a list gives env i
    ``seed[i]`` (the pipelines pass ``ding_lite.utils.seed.env_seeds``, distinct across every vector env of a run);
    an int gives env i ``seed + i``, as gymnasium does. ``.env_name`` (the env id, or the ENV_REGISTRY type) names
    the env in messages when its envs have no gymnasium spec; ``.role`` is the role; ``.max_episode_steps`` is
    ``env.max_episode_steps``. Its ``step`` and ``reset`` stop with ``EnvHangError`` after ``env.step_timeout_s``
    (``ding_lite/envs/watchdog.py``); an output its spaces do not allow is one line (``output_guard.py``).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    manager = ENV_MANAGER_REGISTRY.get(env_cfg.manager.type)
    name = env_cfg.env_id or env_cfg.type
    # An env constructor that never returns, in this process ('subprocess' watches its own: starting its processes
    # takes seconds that are not the env's)
    timeout = None if isinstance(manager, type) and issubclass(manager, SubprocessEnvManager) else env_cfg.step_timeout_s
    with watched_call(timeout, name, "__init__", role):
        if "role" in inspect.signature(manager.make).parameters:
            venv = manager.make(env_cfg, num_envs, role=role)
        else:
            venv = manager.make(env_cfg, num_envs)
    venv.env_name = name
    venv.role = role
    venv.max_episode_steps = env_cfg.max_episode_steps
    watch(venv, env_cfg.step_timeout_s, venv.env_name, role)
    guard_outputs(venv, venv.env_name, role)
    venv.last_obs, _ = venv.reset(seed=list(seed) if isinstance(seed, Sequence) else seed)
    return venv
