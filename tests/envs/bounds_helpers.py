"""Wrappers for the action-bounds and checkpoint-env tests (imported by module path from ``env.wrappers``)."""
import gymnasium as gym
import numpy as np


class Unbounded(gym.ActionWrapper):
    """Declares Box(-inf, inf) over a 1-D Box env (as gymnasium's ClipAction does); actions pass unchanged."""

    def __init__(self, env):
        super().__init__(env)
        self.action_space = gym.spaces.Box(-np.inf, np.inf, env.action_space.shape, np.float32)

    def action(self, action):
        return action


class NaNBounds(Unbounded):
    """Declares a NaN lower bound (gymnasium's Box refuses one at construction; a space changed afterwards has it)."""

    def __init__(self, env):
        super().__init__(env)
        self.action_space = gym.spaces.Box(-2.0, 2.0, env.action_space.shape, np.float32)
        self.action_space.low[:] = np.nan


class HugeBounds(Unbounded):
    """Declares Box(-3.4e38, 3.4e38) in float32: finite, but (high - low) / 2 overflows."""

    def __init__(self, env):
        super().__init__(env)
        big = np.finfo(np.float32).max
        self.action_space = gym.spaces.Box(-big, big, env.action_space.shape, np.float32)


def count_makes(env, path):
    """Appends a line to ``path`` for every env made (how many envs a pipeline built), returns ``env``."""
    with open(path, "a") as f:
        f.write("made\n")
    return env
