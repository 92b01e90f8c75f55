"""The shipped DQN config learns (serial pipeline): CartPole-v1 to an evaluation mean of 475 within 50k env steps.

Measured (2026-12-07, the 2-core Intel Xeon VM beside two training runs): seeds 0, 1, 2 reached 500 at 36,840, 13,800
and 8,680 env steps; the budget is rl-baselines3-zoo's for this config (n_timesteps 5e4), 1.4x the slowest. Seed 2
first: CI runs the first seed listed (tests/conftest.py), and it is the quickest.
"""
import pytest

from test_sac_learning import _restore_torch_threads, run_to_stop_value  # noqa: F401  (an autouse fixture)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 0, 1])
def test_cartpole_dqn_reaches_475_within_50k_steps(seed, tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("cartpole_dqn", seed, 50_000, tmp_path, monkeypatch)
    message = f"result {result}; eval curve (env_step, return_mean): {curve}"
    assert stop_value >= 475
    # the first evaluation follows the 1,000 random warm-up steps, before any update: not there yet
    assert curve[0][0] <= 1000 and curve[0][1] < 475, message
    assert result["stop_reason"] == "stop_value", message
    assert result["best_return"] >= 475 and result["env_step"] <= 50_000, message
