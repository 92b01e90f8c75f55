"""``env.action_mask_from``: action masks an env gives through ``env.action_masks()`` or ``info['action_mask']``,
moved into the observation where the rest of ding_lite reads them.

The pipelines read a mask as the ``env.action_mask_key`` entry of a Dict observation ('obs', the default). An env
written for sb3-contrib's MaskablePPO gives it from a method, ``env.action_masks()`` ('method'); a PettingZoo-style
env in ``info['action_mask']`` ('info'). For those, :class:`MaskFromEnv` wraps each env the run makes (outside the
``env.wrappers``) and adds the mask to every observation after reset and step, under ``env.action_mask_key``: a Dict
observation gains the key, any other becomes ``{'observation': obs, key: mask}``. The observation space gains
``MultiBinary(n)`` (``n``: the Discrete size, or ``sum(nvec)`` for MultiDiscrete, whose per-head masks are
concatenated), so the policy, the buffers, ``predict`` and exports see an ordinary Dict-observation mask.

The final observation of a step that ends the episode (terminated or truncated): no action is taken from it (it only
feeds a truncation's value bootstrap, and the learner drops its mask unchecked), and many envs have no mask there
(the game is over). Its mask is read as any other when the env gives one; when the env gives none (``action_masks()``
raises, or ``info`` lacks the key) it is all zeros. Everywhere else a missing mask, or one of the wrong shape or
dtype, is a UserError naming the env and the fix.
"""
import functools
from typing import Any, Callable, List, Optional, SupportsFloat, Tuple

import gymnasium as gym
import numpy as np

from ding_lite.utils.errors import UserError

from .check_mask import MASK_KEY, mask_heads

MASK_SOURCES = ("obs", "method", "info")
PLAIN_OBS_KEY = "observation"  # the key of a non-Dict observation once the mask is beside it


def action_sizes(action_space: gym.Space) -> Optional[List[int]]:
    """The mask sizes of each head of a Discrete or 1-D MultiDiscrete action space; None for any other space."""
    if isinstance(action_space, gym.spaces.Discrete):
        return [int(action_space.n)]
    if isinstance(action_space, gym.spaces.MultiDiscrete) and np.ndim(action_space.nvec) == 1:
        return [int(n) for n in action_space.nvec]
    return None


class MaskFromEnv(gym.Wrapper):
    """Puts the mask ``source`` ('method': ``env.action_masks()``; 'info': ``info['action_mask']``) into each
    observation under ``key`` (module docstring). ``env_name`` names the env in errors (default: its spec id)."""

    def __init__(self, env: gym.Env, source: str, key: str = MASK_KEY, env_name: Optional[str] = None) -> None:
        super().__init__(env)
        self.env_name = env_name or (env.spec.id if env.spec else type(env.unwrapped).__name__)
        if source not in ("method", "info"):
            raise UserError(f"env '{self.env_name}': MaskFromEnv reads the mask from 'method' or 'info', got "
                            f"{source!r}; env.action_mask_from='obs' needs no wrapper")
        self.source, self.key = source, key
        sizes = action_sizes(env.action_space)
        if sizes is None:
            raise UserError(f"env '{self.env_name}': env.action_mask_from={source!r} but the action space "
                            f"{env.action_space} takes no mask (Discrete and MultiDiscrete do); set "
                            f"env.action_mask_from='obs'")
        self.size = sum(sizes)
        space = env.observation_space
        self.plain = not isinstance(space, gym.spaces.Dict)
        if not self.plain and key in space.spaces:
            raise UserError(f"env '{self.env_name}': its Dict observation already has the key {key!r}, and "
                            f"env.action_mask_from={source!r} would put the mask there; set env.action_mask_from='obs' "
                            f"to read the mask from that key, or env.action_mask_key to another name")
        rest = {PLAIN_OBS_KEY: space} if self.plain else dict(space.spaces)
        self.observation_space = gym.spaces.Dict({**rest, key: gym.spaces.MultiBinary(self.size)})
        self._action_masks: Optional[Callable[[], Any]] = None
        if source == "method":
            try:
                self._action_masks = env.get_wrapper_attr("action_masks")
            except AttributeError:
                pass
            if not callable(self._action_masks):
                raise UserError(f"env '{self.env_name}' has no method action_masks(), which "
                                f"env.action_mask_from='method' calls; add one returning the mask (1 where the action "
                                f"is valid), or set env.action_mask_from to 'info' or 'obs'")

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[dict, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._with_mask(obs, info, False, "after reset"), info

    def step(self, action: Any) -> Tuple[dict, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_mask(obs, info, bool(terminated or truncated), "after a step"), reward, terminated, \
            truncated, info

    def _with_mask(self, obs: Any, info: Any, final: bool, where: str) -> dict:
        mask = self._read(info, final, where)
        return {PLAIN_OBS_KEY: obs, self.key: mask} if self.plain else {**obs, self.key: mask}

    def _read(self, info: Any, final: bool, where: str) -> np.ndarray:
        """The mask (``size``,) int8; all zeros at a final observation without one (module docstring)."""
        if self._action_masks is not None:
            source = "env.action_masks()"
            try:
                mask = self._action_masks()
            except Exception:
                if final:
                    return np.zeros(self.size, dtype=np.int8)
                raise
        else:
            source = f"info[{MASK_KEY!r}]"
            if not isinstance(info, dict) or MASK_KEY not in info:
                if final:
                    return np.zeros(self.size, dtype=np.int8)
                raise UserError(f"env '{self.env_name}' gave no {source} {where} (env.action_mask_from='info'); "
                                f"return the mask in info[{MASK_KEY!r}] from reset and every step, or set "
                                f"env.action_mask_from to 'method' or 'obs'")
            mask = info[MASK_KEY]
        return self._checked(mask, source, where)

    def _checked(self, mask: Any, source: str, where: str) -> np.ndarray:
        heads, problem = mask_heads(mask, self.env.action_space)
        if heads is None:
            raise UserError(f"env '{self.env_name}': the action mask from {source} {where}: {problem}; give one entry "
                            f"per action, 1 where it is valid")
        flat = heads[0] if len(heads) == 1 else np.concatenate(heads)
        if flat.dtype.kind == "b":
            return flat.astype(np.int8)
        if flat.dtype.kind not in "iu" or not ((flat == 0) | (flat == 1)).all():
            raise UserError(f"env '{self.env_name}': the action mask from {source} {where} is {flat.dtype} with "
                            f"values {sorted(set(flat.tolist()))[:5]}, not bools or 0/1; return a bool (or np.int8 "
                            f"0/1) array, 1 where the action is valid")
        return flat.astype(np.int8)


def make_with_mask(make: Callable[[], gym.Env], source: str, key: str, env_name: str) -> gym.Env:
    """One env of ``make`` in :class:`MaskFromEnv` (the target of ``mask_factory``'s partial)."""
    env = make()
    try:
        return MaskFromEnv(env, source, key, env_name)
    except BaseException:
        env.close()
        raise


def mask_factory(make: Callable[[], gym.Env], source: Optional[str], key: Optional[str],
                 env_name: str) -> Callable[[], gym.Env]:
    """``make`` itself for ``env.action_mask_from`` 'obs' (or unset), else a picklable maker of the env in
    :class:`MaskFromEnv` putting the mask under ``key`` (``env.action_mask_key``)."""
    if not source or source == "obs":
        return make
    return functools.partial(make_with_mask, make, source, key or MASK_KEY, env_name)
