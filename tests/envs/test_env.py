"""Env creation: gymnasium id checks, vector env managers (SAME_STEP autoreset), registered envs, EnvSpec."""
import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict
from gymnasium.vector import AutoresetMode

import ding_lite.envs.env_manager as env_manager_module
from ding_lite.envs import EnvConfig, EnvSpec, GymEnv, check_env_id, env_factory, make_vector_env
from ding_lite.utils import ENV_REGISTRY, ConfigError, UserError


def gym_cfg(env_id="CartPole-v1", manager="base", **kw):
    cfg = GymEnv.default_config()
    cfg.update(env_id=env_id, type="gym", manager=dict(type=manager, context="spawn"), **kw)
    return cfg


class ShortEnv(gym.Env):
    """Ends (terminated) after ``length`` steps; obs = [t, scale]."""

    def __init__(self, length=2, scale=1.0):
        self.length, self.scale = length, scale
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.t, self.scale], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t, self.scale], np.float32), 1.0, self.t >= self.length, False, {}


ENV_NAME = "test_envs_short_env"
if ENV_NAME not in ENV_REGISTRY:
    ENV_REGISTRY.register(ENV_NAME, ShortEnv)


# ------------------------------------------------------------------------------------------------- env ids
@pytest.mark.parametrize("wrong, right", [("CartPole-v2", "CartPole-v1"), ("cartpole-v1", "CartPole-v1"),
                                          ("CartPol-v1", "CartPole-v1"), ("Pendulm-v1", "Pendulum-v1")])
def test_unknown_gym_id_suggests_the_closest(wrong, right):
    with pytest.raises(ConfigError) as err:
        check_env_id(wrong)
    msg = str(err.value)
    assert f"env.env_id='{wrong}'" in msg and f"did you mean {right}?" in msg
    # the same check runs in the env section's validation, with the section's path
    with pytest.raises(ConfigError, match=f"my.env.env_id='{wrong}'.*did you mean {right}"):
        GymEnv.check_config(gym_cfg(wrong), "my.env")
    assert isinstance(err.value, UserError)  # printed as a clear message by the CLI, no traceback


def test_env_id_must_be_a_string_and_known_ids_pass():
    for bad in (None, "", 3):
        with pytest.raises(ConfigError, match="env.env_id must name a gymnasium env id"):
            check_env_id(bad)
    check_env_id("CartPole-v1")
    check_env_id("Pendulum-v1")
    with pytest.raises(ConfigError, match="not a multiple"):
        GymEnv.check_config(gym_cfg(evaluator_env_num=3, n_evaluator_episode=5), "env")


def test_bad_kwargs_are_a_user_error():
    with pytest.raises(UserError, match="env.kwargs"):
        env_factory(gym_cfg(kwargs=dict(no_such_argument=1)))()


# -------------------------------------------------------------------------------------------- vector envs
def test_make_vector_env_is_same_step_and_seeded():
    venv = make_vector_env(gym_cfg(), 3, seed=7)
    assert isinstance(venv, gym.vector.SyncVectorEnv)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.num_envs == 3 and venv.last_obs.shape == (3, 4)
    again = make_vector_env(gym_cfg(), 3, seed=7)
    np.testing.assert_array_equal(venv.last_obs, again.last_obs)  # env i is reset with seed + i
    single = gym.make("CartPole-v1")
    np.testing.assert_array_equal(venv.last_obs[1], single.reset(seed=8)[0])
    assert not np.array_equal(venv.last_obs[0], venv.last_obs[1])
    for v in (venv, again):
        v.close()


def test_same_step_autoreset_delivers_final_obs_and_no_reset_step():
    cfg = EnvConfig.default_config()
    cfg.update(type=ENV_NAME, kwargs=dict(length=2, scale=3.0), manager=dict(type="base"))
    venv = make_vector_env(cfg, 2, seed=0)
    np.testing.assert_array_equal(venv.last_obs, [[0, 3], [0, 3]])  # kwargs reached the constructor
    obs, rew, term, trunc, info = venv.step(np.zeros(2, dtype=np.int64))
    np.testing.assert_array_equal(obs, [[1, 3], [1, 3]])
    assert not term.any() and "final_obs" not in info
    obs, rew, term, trunc, info = venv.step(np.zeros(2, dtype=np.int64))
    assert term.all() and not trunc.any() and (rew == 1).all()
    np.testing.assert_array_equal(obs, [[0, 3], [0, 3]])  # already the next episode's first obs ...
    assert info["_final_obs"].all()
    np.testing.assert_array_equal(np.stack(info["final_obs"]), [[2, 3], [2, 3]])  # ... the final one in info
    obs, rew, term, trunc, info = venv.step(np.zeros(2, dtype=np.int64))
    assert (rew == 1).all() and not term.any()  # a real step (NEXT_STEP mode would give a zero-reward reset here)
    np.testing.assert_array_equal(obs, [[1, 3], [1, 3]])
    venv.close()


def test_max_episode_steps_truncates_registered_and_gym_envs():
    cfg = EnvConfig.default_config()
    cfg.update(type=ENV_NAME, kwargs=dict(length=100), max_episode_steps=3, manager=dict(type="base"))
    venv = make_vector_env(cfg, 1, seed=0)
    flags = [venv.step(np.zeros(1, dtype=np.int64))[2:4] for _ in range(3)]
    assert [(bool(t[0]), bool(u[0])) for t, u in flags] == [(False, False), (False, False), (False, True)]
    venv.close()
    venv = make_vector_env(gym_cfg(max_episode_steps=2), 1, seed=0)
    out = [venv.step(np.array([i % 2]))[3][0] for i in range(2)]
    assert out == [False, True]
    venv.close()


def test_subprocess_manager_asks_for_same_step(monkeypatch):
    """The subprocess manager builds an AsyncVectorEnv (``SubprocessVectorEnv``) in SAME_STEP mode with the
    configured start method (checked without spawning processes)."""
    made = {}

    class FakeAsync:
        def __init__(self, fns, **kwargs):
            made.update(kwargs, n=len(fns))

    monkeypatch.setattr(env_manager_module, "SubprocessVectorEnv", FakeAsync)
    env_manager_module.SubprocessEnvManager.make(gym_cfg(manager="subprocess"), 4)
    worker = made.pop("worker")  # gymnasium's worker, except that an env failing to build reports its error (issue 27)
    assert worker.func is env_manager_module.env_worker and worker.keywords["role"] == "collector"
    assert made == {"autoreset_mode": AutoresetMode.SAME_STEP, "context": "spawn", "n": 4}


def test_unknown_manager_lists_the_registered_ones():
    with pytest.raises(UserError, match="did you mean base"):
        make_vector_env(gym_cfg(manager="bas"), 1)


# ------------------------------------------------------------------------------------------------- EnvSpec
def test_env_spec_discrete():
    spec = EnvSpec.from_spaces(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))
    assert (spec.obs_shape, spec.action_space_type, spec.action_shape, spec.nvec) == (4, "discrete", 3, None)
    assert spec.action_low is None and spec.action_high is None


def test_env_spec_box():
    low, high = np.array([-2.0, 0.0]), np.array([2.0, 1.0])
    spec = EnvSpec.from_spaces(gym.spaces.Box(-1, 1, (2, 3)), gym.spaces.Box(low, high, dtype=np.float64))
    assert spec.obs_shape == [2, 3] and spec.obs_space == dict(space="box", shape=[2, 3], dtype="float32")
    assert (spec.action_space_type, spec.action_shape, spec.nvec) == ("continuous", 2, None)
    assert spec.action_low.dtype == spec.action_high.dtype == np.float32
    np.testing.assert_array_equal(spec.action_low, low)
    np.testing.assert_array_equal(spec.action_high, high)
    pend = gym.make("Pendulum-v1")
    spec = EnvSpec.from_spaces(pend.observation_space, pend.action_space)
    assert (spec.obs_shape, spec.action_shape) == (3, 1)
    np.testing.assert_array_equal(spec.action_high, [2.0])


def test_env_spec_multi_discrete():
    spec = EnvSpec.from_spaces(gym.spaces.Box(-1, 1, (5,)), gym.spaces.MultiDiscrete([3, 2, 4]))
    assert (spec.action_space_type, spec.action_shape, spec.nvec) == ("multi_discrete", 3, (3, 2, 4))
    assert all(type(n) is int for n in spec.nvec)


def test_env_spec_rejects_other_spaces():
    with pytest.raises(TypeError, match=r"obs\['mission'\] is Text"):
        EnvSpec.from_spaces(gym.spaces.Dict(mission=gym.spaces.Text(5), x=gym.spaces.Discrete(4)),
                            gym.spaces.Discrete(2))
    with pytest.raises(TypeError, match="Discrete, MultiDiscrete, Box or Tuple"):
        EnvSpec.from_spaces(gym.spaces.Box(-1, 1, (2,)), gym.spaces.MultiBinary(3))


def test_env_config_defaults():
    cfg = EnvConfig.default_config()
    assert isinstance(cfg, EasyDict) and cfg.kwargs == {} and cfg.max_episode_steps is None
    assert "kwargs" in EnvConfig.free_form
