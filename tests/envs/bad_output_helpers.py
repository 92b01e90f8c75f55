"""Wrappers whose env returns outputs its spaces do not allow (named by module path from ``env.wrappers``)."""
import gymnasium as gym
import numpy as np


class WrongShapeObs(gym.Wrapper):
    """step() returns a 5-vector where CartPole's observation_space is (4,)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return np.zeros(5, np.float32), reward, terminated, truncated, info


class ArrayReward(gym.Wrapper):
    """step() returns the reward as np.array([r, r]) instead of a scalar (numpy before 2.4 takes a one-element array
    as the element it is written into, with a DeprecationWarning, so a one-element one is not an error on every numpy
    setup.py allows)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, np.array([reward, reward]), terminated, truncated, info


class WrongShapeReset(gym.Wrapper):
    """reset() returns a 3-vector."""

    def reset(self, **kwargs):
        _, info = self.env.reset(**kwargs)
        return np.zeros(3, np.float32), info
