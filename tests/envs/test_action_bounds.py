"""An unbounded or NaN Box action space is refused when the env's spaces are first known, before any training
(issue 44, item 3): SAC maps [-1, 1] onto the bounds (infinite ones give NaN actions), so it needs finite bounds;
IMPALA and ACER clip Gaussian samples and take infinite bounds, never NaN ones."""
import os
import sys

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs import ActionAdapter, EnvSpec
from ding_lite.envs.bound_actions import BoundActions
from ding_lite.utils import ConfigError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # bounds_helpers, named by env.wrappers

REPO = os.path.dirname(os.path.dirname(HERE))
PENDULUM_SAC = os.path.join(REPO, "dizoo_configs", "pendulum_sac.py")
PENDULUM_ACER = os.path.join(REPO, "dizoo_configs", "pendulum_acer.py")
SMALL = ["--set", "env.evaluator_env_num=1", "--set", "env.n_evaluator_episode=1"]
BOUND = "{'type': 'ding_lite.envs.bound_actions:BoundActions', 'kwargs': {'low': -2.0, 'high': 2.0}}"


def spec(low, high):
    """A 1-D continuous spec with these bounds (built directly: gymnasium's Box refuses a NaN bound)."""
    return EnvSpec(obs_shape=3, action_space_type="continuous", action_shape=1,
                   action_low=np.array([low], np.float32), action_high=np.array([high], np.float32))


def test_sac_on_an_unbounded_action_space_is_refused_before_training(in_tmp, cli):
    result = cli("-m", "serial", "-c", PENDULUM_SAC, "-q", "--env-step", "50", *SMALL,
                 "--set", "env.wrappers=['bounds_helpers:Unbounded']")
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("ding_lite: error: env 'Pendulum-v1' has the action space Box(low=[-inf], high=[inf])")
    assert "ding_lite.envs.bound_actions:BoundActions" in line and "ClipAction" in line
    assert not os.path.exists("pendulum_sac_seed0")  # refused before the run directory: nothing trained


def test_the_fix_the_message_gives_runs(in_tmp, cli):
    result = cli("-m", "serial", "-c", PENDULUM_SAC, "-q", "--env-step", "50", *SMALL,
                 "--set", f"env.wrappers=['bounds_helpers:Unbounded', {BOUND}]")
    assert result.exit_code == 0, result.output


def test_a_nan_bound_is_refused_for_a_policy_that_clips(in_tmp, cli):
    result = cli("-m", "serial", "-c", PENDULUM_ACER, "-q", "--env-step", "50", *SMALL,
                 "--set", "env.wrappers=['bounds_helpers:NaNBounds']")
    assert result.exit_code == 2, result.output
    assert "has the action space Box(low=[nan], high=[2.0]), which has a NaN bound" in result.output


def test_sac_on_bounds_too_wide_for_their_dtype_is_refused_before_training(in_tmp, cli):
    """Box(+-3.4e38) in float32 passes a finiteness check, but (high - low) / 2 overflows: every action would be
    infinite. Refused with the fix, before a run directory exists."""
    result = cli("-m", "serial", "-c", PENDULUM_SAC, "-q", "--env-step", "50", *SMALL,
                 "--set", "env.wrappers=['bounds_helpers:HugeBounds']")
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert "is too wide for float32: its half-range (high - low) / 2 or its centre (high + low) / 2 overflows" in line
    assert "ding_lite.envs.bound_actions:BoundActions" in line
    assert not os.path.exists("pendulum_sac_seed0")
    big = float(np.finfo(np.float32).max)
    with pytest.raises(ConfigError, match="too wide for float32"):
        ActionAdapter(spec(-big, big), "rescale")
    ActionAdapter(spec(-big, big), "clip")  # clipping to them overflows nothing
    ActionAdapter(spec(-big / 4, big / 4), "rescale")  # wide but representable


def test_check_env_reports_bounds_too_wide_for_their_dtype():
    from ding_lite.envs.check import action_bound_findings
    big = np.finfo(np.float32).max
    space = gym.spaces.Box(-big, big, (1,), np.float32)
    (finding,) = action_bound_findings(space, "rescale")
    assert finding.level == "error" and "too wide for float32" in finding.message
    assert action_bound_findings(space, "clip") == []


def test_the_adapter_refuses_what_it_cannot_map_and_clips_unbounded_samples():
    with pytest.raises(ConfigError, match=r"Box\(low=\[-inf\], high=\[inf\]\).*infinite bounds give NaN"):
        ActionAdapter(spec(-np.inf, np.inf), "rescale")
    with pytest.raises(ConfigError, match="NaN bound"):
        ActionAdapter(spec(np.nan, 1.0), "clip")
    import torch
    clip = ActionAdapter(spec(-np.inf, np.inf), "clip")  # IMPALA/ACER: the Gaussian sample itself
    assert clip(torch.tensor([[7.5]])).tolist() == [[7.5]]
    assert ActionAdapter(spec(-2.0, 2.0), "rescale")(torch.tensor([[0.5]])).tolist() == [[1.0]]


def test_bound_actions_declares_and_clips():
    env = BoundActions(gym.wrappers.ClipAction(gym.make("Pendulum-v1")), low=-1.5, high=1.5)
    assert env.action_space.low.tolist() == [-1.5] and env.action_space.high.tolist() == [1.5]
    assert env.action(np.array([9.0], np.float32)).tolist() == [1.5]
    for low, high in ((-np.inf, 1.0), (1.0, 1.0)):
        with pytest.raises(ValueError, match="finite bounds with low < high"):
            BoundActions(gym.make("Pendulum-v1"), low=low, high=high)
