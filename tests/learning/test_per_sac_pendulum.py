"""Prioritised replay on SAC/Pendulum-v1, the measured effect (docs/sac.md#prioritised-replay): after 1000 updates
(1.26k env steps), SAC with policy.priority and IS weights evaluates far better than with uniform replay; later the
curves meet.

Measured on the 2-core VM (2026-11-25, shipped config, stop value off, seeds 0-4): at 1.26k env steps prioritised
-365 / -902 / -427 / -870 / -591, uniform -1399 / -1305 / -1358 / -1494 / -1250. The test takes seeds 0 and 1 and asks
for a gap of 200 on each (measured: 1034 and 403), ~10 s per run.

It checks the documented effect of the whole configuration, not prioritisation alone: with the priorities never
updated (equal priorities, but stratified batches) the gap was smaller but still present on 4 of 5 seeds (mean -914),
and this test still passes then (docs/sac.md gives both ablations). The priorities themselves are tested by formula
in tests/data/test_prioritized.py and tests/policy/test_priority.py.
"""
import csv
import os

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import serial_pipeline

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs")


def first_eval_after_training(tmp_path, seed, priority):
    main_config, create_config = read_config_file(os.path.join(CONFIGS, "pendulum_sac.py"))
    main_config["exp_name"] = f"per_{priority}"
    main_config["env"]["stop_value"] = None
    main_config["torch_threads"] = 1
    main_config["policy"].update(priority=priority, priority_IS_weight=priority)
    main_config["policy"]["eval"] = dict(evaluator=dict(eval_freq=1000))
    serial_pipeline((main_config, create_config), seed=seed, max_env_step=1300, quiet=True)
    with open(tmp_path / f"per_{priority}_seed{seed}" / "eval.csv", newline="") as f:
        rows = [(int(r["train_iter"]), float(r["return_mean"])) for r in csv.DictReader(f)]
    return next(ret for it, ret in rows if it == 1000), rows


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI's Cliffwalk test shows the
# effect; the priorities are tested by formula.
@pytest.mark.long
def test_prioritised_replay_learns_pendulum_faster_early(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    per, per_rows = first_eval_after_training(tmp_path, seed, True)
    uniform, uniform_rows = first_eval_after_training(tmp_path, seed, False)
    assert per > uniform + 200, f"prioritised {per_rows}; uniform {uniform_rows}"
