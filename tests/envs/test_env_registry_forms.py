"""Each ENV_REGISTRY entry form (``ding_lite/envs/env_entries.py``) makes its env through both managers, and a
malformed entry fails at once with a UserError that names the entry and the forms ding_lite takes."""
import os
import pickle
import sys

import pytest

from ding_lite.config import compile_config
from ding_lite.envs import env_factory, make_vector_env
from ding_lite.utils import UserError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import custom_env_helpers  # noqa: E402, F401  (registers the test_forms_* entries)

FORMS = "ding_lite takes one of: a class with a static or class method make"


def env_section(env_type, manager="base", **env):
    return compile_config(dict(env=dict(manager=dict(type=manager), **env)),
                          dict(env=dict(type=env_type), policy=dict(type="impala"))).env


def episode_length(make):
    env = make()
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)
        steps, done = steps + 1, terminated or truncated
    return steps


@pytest.mark.parametrize("env_type, env, length", [
    ("test_forms_corridor", {}, 3),               # a gymnasium.Env subclass, built with **env.kwargs
    ("test_forms_env_with_static_make", {}, 2),   # a gymnasium.Env subclass with a static make: the make is used
    ("test_forms_factory", dict(kwargs=dict(length=6)), 6),  # a class with factory(cfg)
    # a GymEnv subclass with its own make: that make, not GymEnv's inherited factory (CartPole falls after ~9 steps)
    ("test_forms_gym_with_own_make", dict(env_id="CartPole-v1"), 4),
])
def test_each_form_makes_its_env_and_pickles(env_type, env, length):
    make = env_factory(env_section(env_type, **env))
    assert episode_length(make) == length
    assert episode_length(pickle.loads(pickle.dumps(make))) == length  # what the 'subprocess' manager sends


def test_an_env_class_gets_kwargs_and_the_time_limit_in_env_processes():
    cfg = env_section("test_forms_corridor", manager="subprocess", kwargs=dict(length=9), max_episode_steps=5)
    assert episode_length(env_factory(cfg)) == 5
    venv = make_vector_env(cfg, 2, seed=0)
    try:
        assert venv.single_observation_space.shape == (1,)
    finally:
        venv.close()
    with pytest.raises(UserError, match=r"env.kwargs=\{'lenght': 9\} do not fit env type 'test_forms_corridor'"):
        env_factory(env_section("test_forms_corridor", kwargs=dict(lenght=9)))


def test_make_returning_its_own_class_says_what_is_expected():
    cfg = env_section("test_forms_make_returns_itself")
    with pytest.raises(UserError, match=r"env type 'test_forms_make_returns_itself': custom_env_helpers\."
                                        r"MakeReturnsItself.make\(cfg\) returned a custom_env_helpers\."
                                        r"MakeReturnsItself, not a gymnasium.Env; " + FORMS):
        make_vector_env(cfg, 1, seed=0)


@pytest.mark.parametrize("env_type, message", [
    ("test_forms_instance_make", r"InstanceMake.make\(self, ...\) is an instance method, but ding_lite calls "
                                 r"make\(cfg\) on the class: make it a @staticmethod"),
    ("test_forms_no_method", r"NoMethod is neither a gymnasium.Env subclass nor has a make or factory method; "
                             + FORMS),
    ("test_forms_factory_of_nothing", r"FactoryOfNothing.factory\(cfg\) returned a int, not a zero-argument "
                                      r"function"),
])
def test_a_malformed_entry_fails_before_any_env_is_made(env_type, message):
    with pytest.raises(UserError, match=rf"env type '{env_type}': .*{message}"):
        env_factory(env_section(env_type))


def test_a_factory_whose_function_makes_no_env_is_named():
    make = env_factory(env_section("test_forms_factory_making_no_env"))
    with pytest.raises(UserError, match=r"the function custom_env_helpers.FactoryMakingNoEnv.factory\(cfg\) made "
                                        r"returned a builtins.dict, not a gymnasium.Env"):
        make()


def test_an_env_class_that_refuses_its_kwargs_is_one_user_error():
    """A gymnasium.Env subclass raising ValueError/TypeError on its arguments is the config's mistake: one line
    naming the env type, env.kwargs and the env's own message, not a traceback."""
    make = env_factory(env_section("goal_grid", kwargs=dict(size=1)))
    with pytest.raises(UserError, match=r"env type 'goal_grid' refused env.kwargs=\{'size': 1\}: ValueError: "
                                        r"GoalGrid: size >= 2"):
        make()
