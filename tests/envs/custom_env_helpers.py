"""Wrappers and ENV_REGISTRY entries for tests/envs/test_wrappers.py and test_env_registry_forms.py.

A module of its own, importable by name ('custom_env_helpers', tests/envs is on sys.path), so the env processes of the
'subprocess' manager can import the wrappers by path and unpickle the entries.
"""
import functools
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.envs import GymEnv
from ding_lite.utils import ENV_REGISTRY


class ScaleReward(gym.RewardWrapper):
    """Rewards times ``scale``."""

    def __init__(self, env: gym.Env, scale: float = 2.0) -> None:
        super().__init__(env)
        self.scale = scale

    def reward(self, reward: float) -> float:
        return reward * self.scale


class AppendOne(gym.ObservationWrapper):
    """A Box observation with a constant 1.0 appended: shape (n,) -> (n + 1,)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        self.observation_space = gym.spaces.Box(np.append(box.low, 1.0).astype(np.float32),
                                                np.append(box.high, 1.0).astype(np.float32), dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.append(observation, 1.0).astype(np.float32)


def not_a_wrapper(env: gym.Env) -> None:
    """Returns nothing: what a wrapper must not do."""
    return None


class Corridor(gym.Env):
    """obs [t / length]; reward 1 a step; terminates after ``length`` steps."""

    def __init__(self, length: int = 3) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: Any = None, options: Any = None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t / self.length], np.float32), 1.0, self.t >= self.length, False, {}


class EnvWithStaticMake(Corridor):
    """A gymnasium.Env subclass with a static ``make(cfg)``: the make is used (length 2), not ``Corridor()``."""

    @staticmethod
    def make(cfg: EasyDict) -> gym.Env:
        return Corridor(length=2)


class MakeReturnsItself:
    """``make(cfg)`` returns an instance of the entry class: not a gymnasium.Env."""

    @classmethod
    def make(cls, cfg: EasyDict) -> Any:
        return cls()


class InstanceMake:
    """``make`` without @staticmethod or @classmethod, taking ``self``."""

    def make(self, cfg: EasyDict) -> gym.Env:
        return Corridor()


class NoMethod:
    """Neither a gymnasium.Env nor a make / factory."""


class FactoryOfCorridor:
    """``factory(cfg)`` returning a picklable maker of a Corridor of ``env.kwargs.length``."""

    @classmethod
    def factory(cls, cfg: EasyDict):
        return functools.partial(Corridor, cfg.kwargs.get("length", 3))


class FactoryOfNothing:
    """``factory(cfg)`` returning a number, not a function."""

    @classmethod
    def factory(cls, cfg: EasyDict) -> int:
        return 3


class FactoryMakingNoEnv:
    """``factory(cfg)`` whose function makes a dict, not an env."""

    @classmethod
    def factory(cls, cfg: EasyDict):
        return dict


class GymWithOwnMake(GymEnv):
    """A GymEnv subclass (its env section and checks: env.env_id is required) with a static ``make(cfg)`` of its own:
    that make is used, capping episodes at 4 steps (GymEnv's inherited factory would make ``env.env_id`` as it is)."""

    @staticmethod
    def make(cfg: EasyDict) -> gym.Env:
        return gym.make(cfg.env_id, max_episode_steps=4)


ENTRIES = {
    "test_forms_corridor": Corridor,
    "test_forms_env_with_static_make": EnvWithStaticMake,
    "test_forms_make_returns_itself": MakeReturnsItself,
    "test_forms_instance_make": InstanceMake,
    "test_forms_no_method": NoMethod,
    "test_forms_factory": FactoryOfCorridor,
    "test_forms_factory_of_nothing": FactoryOfNothing,
    "test_forms_factory_making_no_env": FactoryMakingNoEnv,
    "test_forms_gym_with_own_make": GymWithOwnMake,
}
for _name, _entry in ENTRIES.items():
    if _name not in ENV_REGISTRY:
        ENV_REGISTRY.register(_name, _entry)
