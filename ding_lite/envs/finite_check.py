"""Finiteness checks of what a vector env hands the workers: observations and rewards.

A NaN or infinite observation or reward does not fail by itself: it flows into the losses, and a run ends with every
weight NaN and no word of why. The collector and the evaluator therefore check every vector step and stop at the
first bad value, naming the env, the env index and the step. The check is one vectorised ``np.isfinite(...).all()``
per array; which env and which element went bad is only worked out on failure.
"""
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np

from ding_lite.utils import NonFiniteError

from .obs_space import numpy_leaves

FIX = "the env returned NaN/inf; fix the env or wrap it to clip/sanitise its observations and rewards"


def all_finite(values: np.ndarray) -> bool:
    """True when no element is NaN or +-inf; integer and bool arrays (uint8 pixels, say) always are."""
    return values.dtype.kind not in "fc" or bool(np.isfinite(values).all())


def env_name(env: gym.vector.VectorEnv) -> str:
    """The gymnasium id of the vector env's envs (their spec), else the ``env_name`` that ``make_vector_env``
    attached (the config's env id or ENV_REGISTRY type), else the class name of the first env."""
    try:  # only called to word an error: a failure to find the name must not hide that error
        envs = getattr(env, "envs", None)
        spec = envs[0].spec if envs else env.get_attr("spec")[0]
        if spec is not None:
            return spec.id
    except Exception:  # noqa: BLE001  (an AsyncVectorEnv whose workers are gone, a custom vector env ...)
        pass
    name = getattr(env, "env_name", None)
    if name:
        return str(name)
    envs = getattr(env, "envs", None)
    return type(envs[0].unwrapped).__name__ if envs else type(env).__name__


class FiniteCheck:
    """Checks the observations and rewards of one vector env (``role``: 'collector' or 'evaluator', for messages).

    ``envstep`` in every call is the count of env steps after the checked step (one vector step of N envs counts N);
    the evaluator also gives the ``train_iter`` its evaluation belongs to.
    """

    def __init__(self, env: gym.vector.VectorEnv, role: str) -> None:
        self.env = env
        self.role = role

    def reset_obs(self, obs: Any, envstep: int, train_iter: Optional[int] = None) -> None:
        """The observations of a reset of every env (an array, or a dict/tuple nesting of arrays)."""
        self._check_obs("reset obs", obs, envstep, train_iter)

    def _check_obs(self, what: str, obs: Any, envstep: int, train_iter: Optional[int],
                   done: Optional[np.ndarray] = None, index: Optional[int] = None) -> None:
        """Every leaf of a batch of observations (leading dim = env; one env's when ``index`` is given)."""
        if type(obs) is np.ndarray:  # one Box: no walk over leaves
            if not all_finite(obs):
                self._fail(what, obs if index is None else obs[None], envstep, train_iter, done, index)
            return
        for path, leaf in numpy_leaves(obs):
            if not all_finite(leaf):
                name = what + path[len("obs"):]
                self._fail(name, leaf if index is None else leaf[None], envstep, train_iter, done, index)

    def step(self, next_obs: np.ndarray, reward: np.ndarray, done: np.ndarray, info: Dict[str, Any], envstep: int,
             train_iter: Optional[int] = None) -> None:
        """What one ``env.step`` returned (SAME_STEP autoreset): the next observations (for a finished env, the next
        episode's first), the rewards, and the true final observations of the finished envs."""
        self._check_obs("obs", next_obs, envstep, train_iter, done)
        if not all_finite(reward):
            self._fail("reward", reward, envstep, train_iter)
        if done.any():
            for i in np.flatnonzero(info["_final_obs"]):
                final = info["final_obs"][i]
                self._check_obs("final obs", final if isinstance(final, (dict, tuple)) else np.asarray(final),
                                envstep, train_iter, index=i)

    def _fail(self, what: str, values: np.ndarray, envstep: int, train_iter: Optional[int],
              done: Optional[np.ndarray] = None, index: Optional[int] = None) -> None:
        """Raise the ``NonFiniteError`` for the first bad env of ``values`` (leading dim = env, unless ``index`` names
        the one env that ``values`` holds)."""
        bad = ~np.isfinite(values.reshape(len(values), -1))
        rows = np.flatnonzero(bad.any(axis=1))
        row = int(rows[0])
        i = row if index is None else int(index)
        column = int(np.flatnonzero(bad[row])[0])
        value = values[row].reshape(-1)[column]
        detail = f"{what} is {value}" if values[row].size == 1 else f"{what} element {column} is {value}"
        if done is not None and done[i]:
            detail += " (the first obs of a new episode, after an autoreset)"
        others = f", and {len(rows) - 1} more envs" if len(rows) > 1 else ""
        when = f"{self.role} env step {envstep}"
        if train_iter is not None:
            when += f" of the evaluation at train_iter {train_iter}"
        raise NonFiniteError(f"non-finite {what} from env '{env_name(self.env)}' (env index {i} of "
                             f"{self.env.num_envs}{others}) at {when}: {detail}; {FIX}")
