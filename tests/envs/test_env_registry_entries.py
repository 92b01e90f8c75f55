"""The kinds of ENV_REGISTRY entry that docs/writing_a_policy.md promises: a class with a static or class method
``make(cfg)`` (optionally taking ``role``) makes the envs, through every manager (its factory pickles)."""
import pickle

import gymnasium as gym
from easydict import EasyDict

from ding_lite.config import compile_config
from ding_lite.envs import env_factory, make_vector_env
from ding_lite.utils import ENV_REGISTRY


class StaticMakeCartPole:
    """An entry with a static ``make(cfg)``: CartPole with Sutton and Barto's reward."""

    @staticmethod
    def make(cfg: EasyDict) -> gym.Env:
        return gym.make("CartPole-v1", sutton_barto_reward=True)


class RoleMakeCartPole:
    """An entry with ``make(cfg, role)`` as a classmethod: evaluator envs are capped at 7 steps."""

    @classmethod
    def make(cls, cfg: EasyDict, role: str = "collector") -> gym.Env:
        return gym.make("CartPole-v1", max_episode_steps=7 if role == "evaluator" else 500)


for name, entry in (("test_static_make_cartpole", StaticMakeCartPole), ("test_role_make_cartpole", RoleMakeCartPole)):
    if name not in ENV_REGISTRY:
        ENV_REGISTRY.register(name, entry)


def env_section(env_type: str) -> EasyDict:
    return compile_config(dict(env=dict(type=env_type)), dict(policy=dict(type="impala"))).env


def test_a_class_with_a_static_make_makes_the_env():
    make = env_factory(env_section("test_static_make_cartpole"))
    env = make()
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step(0)
    assert env.spec.id == "CartPole-v1" and env.spec.kwargs["sutton_barto_reward"]
    assert reward == 0.0 and not terminated  # Sutton and Barto's reward: 0 until the pole falls
    pickle.loads(pickle.dumps(make))  # the 'subprocess' manager sends it to the env processes


def test_make_gets_the_role_when_it_takes_one():
    cfg = env_section("test_role_make_cartpole")
    assert env_factory(cfg, role="evaluator")().spec.max_episode_steps == 7
    assert env_factory(cfg, role="collector")().spec.max_episode_steps == 500
    venv = make_vector_env(cfg, 2, seed=0, role="evaluator")
    assert venv.observation_space.shape == (2, 4)
    venv.close()
