"""``ding_lite check-env ENV``: the report and the exit status (0: ok or warnings only, 2: errors) for a gymnasium id,
a config file and 'module:Name' classes, through the CLI's entry point in-process (click's CliRunner). The checks
themselves: tests/envs/test_check_env.py."""
import os
import sys
from typing import Any, Optional, Tuple

import gymnasium as gym
import numpy as np

from entry_helpers import CARTPOLE, Cli

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # this module as 'test_cli_check_env:Name', whatever pytest's import mode


class Endless(gym.Env):
    """Never ends (a warning only)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, dict]:
        return np.zeros(2, np.float32), 0.0, False, False, {}


class OldApi(Endless):
    """The old gym API: a 4-tuple step, float64 observations (two errors)."""

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[Any, dict]:
        return np.zeros(2), {}

    def step(self, action: Any) -> Tuple[Any, float, bool, dict]:  # type: ignore[override]
        return np.zeros(2), 0.0, False, {}


def test_exit_status_0_for_an_ok_env_and_a_config_file():
    cli = Cli()
    result = cli("check-env", "CartPole-v1", "--steps", "100")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("check-env CartPole-v1: CartPole-v1; 100 random steps, seed 0")
    assert "[step time] median" in result.output and result.output.strip().endswith("result: ok")
    result = cli("check-env", CARTPOLE, "--steps", "50", "-s", "3", "--set", "env.max_episode_steps=20")
    assert result.exit_code == 0, result.output
    assert "seed 3" in result.output and "time limit 20" in result.output


def test_exit_status_0_with_warnings_only():
    result = Cli()("check-env", "test_cli_check_env:Endless", "--steps", "30")
    assert result.exit_code == 0, result.output
    assert "warning [episode end] no episode ended in 30 steps" in result.output
    assert "fix: set env.max_episode_steps" in result.output
    assert "result: 0 error(s), 1 warning(s)" in result.output


def test_exit_status_2_with_errors_and_user_errors():
    cli = Cli()
    result = cli("check-env", "test_cli_check_env:OldApi", "--steps", "30")
    assert result.exit_code == 2, result.output
    assert "error   [obs] obs after reset has dtype float64" in result.output
    assert "error   [signature] step returned 4 values" in result.output
    assert "result: 2 error(s)" in result.output
    result = cli("check-env", CARTPOLE, "--steps", "20", "--set", "policy.action_space=continuous")
    assert result.exit_code == 2, result.output  # what the run would refuse: the policy's action space vs the env's
    assert "error   [config] policy.action_space='continuous' but env 'CartPole-v1' has a discrete" in result.output
    result = cli("check-env", "CartPol-v1")
    assert result.exit_code == 2 and "did you mean" in result.output and "CartPole-v1" in result.output
    result = cli("check-env", "no_such_module_xyz:Env")
    assert result.exit_code == 2 and "cannot import module 'no_such_module_xyz'" in result.output
    result = cli("check-env", "missing_config.py")
    assert result.exit_code == 2 and "'missing_config.py' not found" in result.output
    result = cli("-c", CARTPOLE, "check-env", "CartPole-v1")
    assert result.exit_code == 2 and "takes its ENV argument, not -c" in result.output

