"""The shipped SAC configs learn (serial pipeline, real envs): Pendulum-v1 (continuous) reaches -200 within 10k env
steps for seeds 0, 1, 2; CartPole-v1 (discrete SAC, actor softmax) reaches 475 within 100k env steps; the mixed-action
MixedTarget env (Tuple(Discrete(3), Box(2))) reaches its stop value -3.0 within 20k env steps.

On failure the assertion message carries the evaluation curve (env_step: return_mean from eval.csv).
"""
import csv
import json
import os

import pytest
import torch

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs")


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """A run sets torch's thread count from the config (torch_threads=1); give other test files theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def run_to_stop_value(name, seed, budget, tmp_path, monkeypatch):
    """Train dizoo_configs/<name>.py for at most ``budget`` env steps; (result.json, eval curve, stop_value)."""
    monkeypatch.chdir(tmp_path)
    main_config, create_config = read_config_file(os.path.join(CONFIGS, f"{name}.py"))
    serial_pipeline((main_config, create_config), seed=seed, max_env_step=budget, quiet=True)
    run_dir = tmp_path / f"{main_config['exp_name']}_seed{seed}"
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    with open(run_dir / "eval.csv", newline="") as f:
        curve = [(int(row["env_step"]), round(float(row["return_mean"]), 1)) for row in csv.DictReader(f)]
    return result, curve, main_config["env"]["stop_value"]


def check_solved(result, curve, stop_value, budget):
    message = f"result {result}; eval curve (env_step, return_mean): {curve}"
    assert result["stop_reason"] == "stop_value", message
    assert result["best_return"] >= stop_value, message
    assert result["env_step"] <= budget, message


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pendulum_sac_reaches_minus_200_within_10k_steps(seed, tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("pendulum_sac", seed, 10_000, tmp_path, monkeypatch)
    assert stop_value >= -200
    check_solved(result, curve, stop_value, 10_000)


@pytest.mark.slow
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI's discrete SAC learns
# WallGrid and parallel CartPole (tests/learning/test_action_mask_learning.py, test_parallel_sac_learning.py).
@pytest.mark.long
def test_cartpole_discrete_sac_reaches_475_within_100k_steps(tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("cartpole_sac", 0, 100_000, tmp_path, monkeypatch)
    assert stop_value >= 475
    check_solved(result, curve, stop_value, 100_000)


MIXED_BUDGET = 20_000


@pytest.mark.slow
def test_mixed_target_sac_reaches_its_stop_value(tmp_path, monkeypatch):
    result, curve, stop_value = run_to_stop_value("mixed_sac", 0, MIXED_BUDGET, tmp_path, monkeypatch)
    assert stop_value >= -3.0  # the env's SOLVED_RETURN: out of reach without using both parts of the action
    check_solved(result, curve, stop_value, MIXED_BUDGET)
