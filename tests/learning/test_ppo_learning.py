"""The shipped CartPole PPO config learns (serial pipeline): an evaluation mean of 475 within 50k env steps, seeds
0, 1, 2.

Measured on the 2-core VM (one seed at a time, torch_threads=1, beside another busy process): seeds 0-9 reached 475
at 7,680, 3,840, 2,560, 10,240, 7,680, 8,960, 15,360, 5,120, 8,960 and 2,560 env steps (median 7,680), 2-14 s of
training per run; the budget is more than 3x the slowest of them. The untrained (greedy) policy scores 55 and 231 at
env step 0 for seeds 0 and 1.

On failure the assertion message carries the evaluation curve (env_step: return_mean from eval.csv).
"""
import csv
import json
import os

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs")
TARGET = 475
BUDGET = 50_000


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cartpole_ppo_reaches_475_within_50k_steps(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main_config, create_config = read_config_file(os.path.join(CONFIGS, "cartpole_ppo.py"))
    assert create_config["policy"]["type"] == "ppo" and main_config["env"]["env_id"] == "CartPole-v1"
    assert main_config["env"]["stop_value"] >= TARGET
    serial_pipeline((main_config, create_config), seed=seed, max_env_step=BUDGET, quiet=True,
                    overrides={"torch_threads": 1})
    run_dir = tmp_path / f"{main_config['exp_name']}_seed{seed}"
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    with open(run_dir / "eval.csv", newline="") as f:
        curve = [(int(row["env_step"]), round(float(row["return_mean"]), 1)) for row in csv.DictReader(f)]
    message = f"result {result}; eval curve (env_step, return_mean): {curve}"
    assert curve[0][0] == 0 and curve[0][1] < TARGET, message  # the untrained policy is not there yet
    assert result["stop_reason"] == "stop_value", message
    assert result["best_return"] >= TARGET and result["env_step"] <= BUDGET, message
