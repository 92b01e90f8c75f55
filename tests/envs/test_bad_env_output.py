"""An env whose step or reset returns what its spaces do not allow stops the run with one line naming the env, the
call and the fix, not numpy's "Output array is the wrong shape" traceback (issue 72, item 7)."""
import os
import sys

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs.output_guard import EnvOutputError, guard_outputs

from bad_output_helpers import ArrayReward, WrongShapeObs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # bad_output_helpers, named by env.wrappers
CARTPOLE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "dizoo_configs", "cartpole_impala.py")
SMALL = ["--set", "env.collector_env_num=2", "--set", "env.evaluator_env_num=1", "--set", "env.n_evaluator_episode=1"]


@pytest.mark.parametrize("wrapper,meaning", [
    ("WrongShapeObs", "an observation whose shape differs from its observation_space"),
    ("ArrayReward", "a reward, terminated or truncated that is not a scalar"),
    ("WrongShapeReset", "an observation whose shape differs from its observation_space"),
])
def test_a_bad_output_is_one_line_naming_the_env(wrapper, meaning, cli, in_tmp):
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "600", *SMALL,
              "--set", f"env.wrappers=['bad_output_helpers:{wrapper}']")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    line = res.output.strip().splitlines()[-1]
    assert line.startswith("ding_lite: error: ") and "env 'CartPole-v1' returned " + meaning in line, line
    assert "ding_lite check-env" in line


def test_other_errors_pass_through_unchanged():
    class Broken(gym.Wrapper):
        def step(self, action):
            raise ValueError("the env's own bug")

    venv = gym.vector.SyncVectorEnv([lambda: Broken(gym.make("CartPole-v1"))],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    guard_outputs(venv, "CartPole-v1", "collector")
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="the env's own bug"):
        venv.step(np.array([0]))


@pytest.mark.parametrize("wrapper", [WrongShapeObs, ArrayReward])
def test_the_guard_translates_the_vector_envs_error(wrapper):
    venv = gym.vector.SyncVectorEnv([lambda: wrapper(gym.make("CartPole-v1"))] * 2,
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    guard_outputs(venv, "CartPole-v1", "evaluator")
    venv.reset(seed=0)
    with pytest.raises(EnvOutputError, match=r"evaluator env 'CartPole-v1' returned .* from step\(\)"):
        venv.step(np.array([0, 1]))
