"""``env.wrappers``: gymnasium wrappers from the config, checked when the config compiles, applied in order on top of
the env as made (gymnasium ids, Atari aside, and every ENV_REGISTRY form), through both managers; module-prefixed
gymnasium ids ('package:id')."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from ding_lite.config import compile_config
from ding_lite.envs import check_env_id, env_factory, make_vector_env
from ding_lite.utils import ConfigError, UserError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # custom_env_helpers, whatever pytest's import mode; spawned env processes inherit sys.path

import custom_env_helpers  # noqa: E402,F401  (registers the test entries)

SCALE = "custom_env_helpers:ScaleReward"
CLIP_HALF = dict(type="gymnasium.wrappers:ClipReward", kwargs=dict(min_reward=-0.5, max_reward=0.5))


def env_section(env=None, create_env=None, manager="base"):
    env = dict(env or {})
    env.setdefault("manager", dict(type=manager))
    return compile_config(dict(env=env), dict(env=create_env or {}, policy=dict(type="impala"))).env


def rewards(venv, steps=2):
    out = []
    for _ in range(steps):
        _, reward, _, _, _ = venv.step(np.zeros(venv.num_envs, dtype=np.int64))
        out.append(reward.tolist())
    return out


# ------------------------------------------------------------------------------------------ the config key
def test_wrapper_items_compile_with_their_free_form_kwargs():
    items = [SCALE, dict(type=SCALE, kwargs=dict(scale=3.0)), CLIP_HALF]
    cfg = env_section(dict(env_id="CartPole-v1", wrappers=items))
    assert cfg.wrappers[0] == SCALE and cfg.wrappers[1].kwargs.scale == 3.0  # the dicts' keys are not refused
    assert env_section(dict(env_id="CartPole-v1")).wrappers == []  # every env type has the key, empty by default


@pytest.mark.parametrize("item, message", [
    (3, r"env.wrappers\[0\]=3: an item is 'module.path:Name' or dict"),
    ("ScaleReward", r"env.wrappers\[0\]: 'ScaleReward' is not an import path 'module.path:Name'"),
    (dict(type=SCALE, args=[1]), r"env.wrappers\[0\]: unknown key\(s\) args"),
    (dict(type=SCALE, kwargs=[1]), r"env.wrappers\[0\].kwargs=\[1\]: must be a dict"),
    ("no_such_module_xyz:Wrap", r"env.wrappers\[0\]='no_such_module_xyz:Wrap': cannot import module "
                                r"'no_such_module_xyz'"),
    ("gymnasium.wrappers:ClipRewrd", r"env.wrappers\[0\]='gymnasium.wrappers:ClipRewrd': 'gymnasium.wrappers' has "
                                     r"no attribute 'ClipRewrd'; did you mean ClipReward\?"),
    ("math:pi", r"env.wrappers\[0\]='math:pi' is a float, not a wrapper"),
    (dict(type=SCALE, kwargs=dict(scael=2.0)), r"env.wrappers\[0\]: kwargs \{'scael': 2.0\} do not fit the wrapper "
                                               r"'custom_env_helpers:ScaleReward\(env"),
])
def test_a_bad_wrapper_item_is_a_config_error_naming_it(item, message):
    with pytest.raises(ConfigError, match=message):
        env_section(dict(env_id="CartPole-v1", wrappers=[item]))


def test_wrappers_must_be_a_list():
    with pytest.raises(ConfigError, match=r"env.wrappers='custom_env_helpers:ScaleReward': expected list"):
        env_section(dict(env_id="CartPole-v1", wrappers=SCALE))


def test_the_envpool_manager_refuses_wrappers():
    with pytest.raises(ConfigError, match="env.wrappers: the 'envpool' manager steps envpool's own batched envs"):
        env_section(dict(env_id="CartPole-v1", wrappers=[SCALE]), manager="envpool")


# ------------------------------------------------------------------------------------------ applied, in order
def test_wrappers_wrap_in_order_on_top_of_the_time_limit():
    clip_then_scale = env_section(dict(env_id="CartPole-v1", max_episode_steps=3,
                                       wrappers=[CLIP_HALF, dict(type=SCALE, kwargs=dict(scale=3.0))]))
    venv = make_vector_env(clip_then_scale, 1, seed=0)
    assert rewards(venv) == [[1.5], [1.5]]  # 1 clipped to 0.5, then times 3
    venv.close()
    scale_then_clip = env_section(dict(env_id="CartPole-v1", wrappers=[dict(type=SCALE, kwargs=dict(scale=3.0)),
                                                                        CLIP_HALF]))
    venv = make_vector_env(scale_then_clip, 1, seed=0)
    assert rewards(venv) == [[0.5], [0.5]]
    venv.close()
    env = env_factory(clip_then_scale)()
    assert isinstance(env, custom_env_helpers.ScaleReward)  # the last item is outermost
    env.reset(seed=0)
    truncated = [env.step(0)[3] for _ in range(3)]
    assert truncated == [False, False, True]  # gymnasium.make's TimeLimit(3) is inside the wrappers


def test_wrapped_spaces_are_what_the_vector_env_sees_through_subprocesses():
    cfg = env_section(dict(env_id="CartPole-v1", wrappers=["custom_env_helpers:AppendOne", SCALE]),
                      manager="subprocess")
    make = env_factory(cfg)
    pickle.loads(pickle.dumps(make))  # what the 'subprocess' manager sends to its env processes
    venv = make_vector_env(cfg, 2, seed=0)
    try:
        assert venv.single_observation_space.shape == (5,)
        assert venv.last_obs.shape == (2, 5) and (venv.last_obs[:, -1] == 1.0).all()
        assert rewards(venv, 1) == [[2.0, 2.0]]
    finally:
        venv.close()


def test_every_registry_form_is_wrapped():
    for env_type in ("test_forms_corridor", "test_forms_env_with_static_make", "test_forms_factory"):
        cfg = env_section(dict(wrappers=["custom_env_helpers:AppendOne", SCALE]), dict(type=env_type))
        env = env_factory(cfg)()
        obs, _ = env.reset(seed=0)
        assert obs.tolist() == [0.0, 1.0], env_type
        assert env.step(0)[1] == 2.0, env_type


def test_a_wrapper_that_refuses_the_env_is_a_user_error_naming_it():
    cfg = env_section(dict(env_id="CartPole-v1", wrappers=[SCALE, dict(type="gymnasium.wrappers:FilterObservation",
                                                                        kwargs=dict(filter_keys=["image"]))]))
    with pytest.raises(UserError, match=r"env.wrappers\[1\]='gymnasium.wrappers:FilterObservation' cannot wrap the "
                                        r"env of 'CartPole-v1'"):
        make_vector_env(cfg, 1, seed=0)
    cfg = env_section(dict(env_id="CartPole-v1", wrappers=["custom_env_helpers:not_a_wrapper"]))
    with pytest.raises(UserError, match=r"env.wrappers\[0\]='custom_env_helpers:not_a_wrapper' returned a NoneType, "
                                        r"not a gymnasium.Env"):
        env_factory(cfg)()


def test_the_wrappers_module_imports_no_torch():
    """ding_lite.envs' package imports torch (EnvSpec, ActionAdapter); wrappers.py itself must not add to it."""
    path = os.path.join(os.path.dirname(sys.modules["ding_lite.envs"].__file__), "wrappers.py")
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('dl_wrappers', sys.argv[1]); "
            "spec.loader.exec_module(importlib.util.module_from_spec(spec)); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------- ids of other packages
def test_a_module_prefixed_id_imports_its_module():
    check_env_id("gymnasium.envs.classic_control:CartPole-v1")
    with pytest.raises(ConfigError, match=r"env.env_id='no_such_module_xyz:CartPole-v1': cannot import module "
                                          r"'no_such_module_xyz'"):
        check_env_id("no_such_module_xyz:CartPole-v1")
    with pytest.raises(ConfigError, match=r"unknown gymnasium env id; did you mean CartPole-v1\?"):
        check_env_id("gymnasium:CartPol-v1")


def test_minigrid_through_import_names_or_the_prefix_with_wrappers():
    img = env_section(dict(env_id="MiniGrid-Empty-5x5-v0", wrappers=["minigrid.wrappers:ImgObsWrapper"]),
                      dict(import_names=["minigrid"]))
    venv = make_vector_env(img, 2, seed=0)
    space = venv.single_observation_space
    assert (space.shape, space.dtype) == ((7, 7, 3), np.uint8) and venv.last_obs.shape == (2, 7, 7, 3)
    venv.close()
    filtered = env_section(dict(env_id="minigrid:MiniGrid-Empty-5x5-v0", wrappers=[dict(
        type="gymnasium.wrappers:FilterObservation", kwargs=dict(filter_keys=["image", "direction"]))]))
    venv = make_vector_env(filtered, 1, seed=0)
    assert sorted(venv.single_observation_space.spaces) == ["direction", "image"]  # 'mission' dropped
    venv.close()


@pytest.mark.parametrize("env_id, imports", [("minigrid:MiniGrid-Empty-5x5-v0", []),
                                              ("MiniGrid-Empty-5x5-v0", ["minigrid"])])
def test_the_ids_package_is_imported_in_the_env_processes(env_id, imports):
    """The 'package:id' form and env.import_names both import the package in each (spawned, fresh) env process."""
    cfg = env_section(dict(env_id=env_id, wrappers=["minigrid.wrappers:ImgObsWrapper"]),
                      dict(import_names=imports), manager="subprocess")
    venv = make_vector_env(cfg, 1, seed=0)
    try:
        assert venv.single_observation_space.shape == (7, 7, 3)
    finally:
        venv.close()


def test_without_wrappers_a_gym_factory_is_gymnasium_make_itself():
    """Env processes of a plain gymnasium id import gymnasium only; with wrappers, ding_lite's make_wrapped."""
    import gymnasium as gym

    from ding_lite.envs.wrappers import make_wrapped
    plain = env_factory(env_section(dict(env_id="CartPole-v1")))
    assert plain.func is gym.make
    wrapped = env_factory(env_section(dict(env_id="CartPole-v1", wrappers=[SCALE])))
    assert wrapped.func is make_wrapped and wrapped.args[0].func is gym.make


def test_di_engine_env_wrapper_points_to_env_atari_and_env_wrappers():
    with pytest.raises(ConfigError, match=r"env.env_wrapper: has no effect: .*'atari_default' is the Atari "
                                          r"preprocessing .* env.wrappers"):
        env_section(dict(env_id="CartPole-v1", env_wrapper="atari_default"))
