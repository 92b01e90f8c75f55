"""``BoundActions``: an ``env.wrappers`` item that gives an env's Box action space the finite bounds it really takes.

An env (or a wrapper such as ``gymnasium.wrappers.ClipAction``) may declare ``Box(-inf, inf)``; SAC maps its actions
in [-1, 1] onto the bounds, so it needs finite ones. ``dict(type='ding_lite.envs.bound_actions:BoundActions',
kwargs=dict(low=-2.0, high=2.0))`` declares ``Box(low, high)`` (a number, or one per action dimension) and clips
every action to it before the env sees it. This module imports no torch.
"""
from typing import Sequence, Union

import gymnasium as gym
import numpy as np

Bound = Union[float, Sequence[float]]


class BoundActions(gym.ActionWrapper):
    """Declare the Box action space ``[low, high]`` (finite, low < high) and clip actions to it."""

    def __init__(self, env: gym.Env, low: Bound, high: Bound) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"BoundActions needs a Box action space, got {space}")
        low_a = np.broadcast_to(np.asarray(low, dtype=space.dtype), space.shape)
        high_a = np.broadcast_to(np.asarray(high, dtype=space.dtype), space.shape)
        if not (np.isfinite(low_a).all() and np.isfinite(high_a).all() and (low_a < high_a).all()):
            raise ValueError(f"low={low!r}, high={high!r}: give finite bounds with low < high")
        self.action_space = gym.spaces.Box(low_a, high_a, dtype=space.dtype)

    def action(self, action: np.ndarray) -> np.ndarray:
        return np.clip(action, self.action_space.low, self.action_space.high)
