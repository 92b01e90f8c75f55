"""The shipped PPO configs learn (serial pipeline): CartPole-v1 to an evaluation mean of 475 within 50k env steps,
Pendulum-v1 (Gaussian actions) to -200 within 150k, seeds 0, 1, 2 each.

Measured on the 2-core VM (one seed at a time, torch_threads=1, beside another busy process): seeds 0-9 reached 475
at 7,680, 3,840, 2,560, 10,240, 7,680, 8,960, 15,360, 5,120, 8,960 and 2,560 env steps (median 7,680), 2-14 s of
training per run; the budget is more than 3x the slowest of them. The untrained (greedy) policy scores 55 and 231 at
env step 0 for seeds 0 and 1.

Pendulum, measured the same way: seeds 0, 1, 2 reached -200 at 71,680, 51,200 and 61,440 env steps, 16-25 s of
training each; the budget is 2x the slowest. The untrained policy scores about -1,100 to -1,300.

On failure the assertion message carries the evaluation curve (env_step: return_mean from eval.csv).
"""
import pytest

from test_sac_learning import _restore_torch_threads, run_to_stop_value  # noqa: F401  (an autouse fixture)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cartpole_ppo_reaches_475_within_50k_steps(seed, tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("cartpole_ppo", seed, 50_000, tmp_path, monkeypatch)
    message = f"result {result}; eval curve (env_step, return_mean): {curve}"
    assert stop_value >= 475
    assert curve[0][0] == 0 and curve[0][1] < 475, message  # the untrained policy is not there yet
    assert result["stop_reason"] == "stop_value", message
    assert result["best_return"] >= 475 and result["env_step"] <= 50_000, message


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 0, 2])  # seed 1 first: the fastest of 0-2 (conftest: CI's seed)
def test_pendulum_ppo_reaches_minus_200_within_150k_steps(seed, tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("pendulum_ppo", seed, 150_000, tmp_path, monkeypatch)
    message = f"result {result}; eval curve (env_step, return_mean): {curve}"
    assert stop_value >= -200
    assert curve[0][0] == 0 and curve[0][1] < -600, message  # the untrained policy is far from the target
    assert result["stop_reason"] == "stop_value", message
    assert result["best_return"] >= -200 and result["env_step"] <= 150_000, message
