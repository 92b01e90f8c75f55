"""Nested observations learn, end to end through the serial pipeline (collector, buffer, multi-input encoder):

* GoalGrid (``ding_lite/envs/toy/goal_grid.py``, 5x5, a Dict of Discrete goal, Box position, MultiBinary walls): IMPALA and
  ACER reach an evaluation mean of 0.95 (``SOLVED_RETURN``, 20 episodes) within 60k env steps. The same IMPALA agent
  with the ``goal`` key filtered out (``env.wrappers``) stays below 0.5 at 60k: the goal is only in its own key.
* MiniGrid-Empty-5x5-v0 (a third-party env, ``minigrid`` from the test extra), its ``mission`` Text key dropped with
  ``FilterObservation`` (the automatic Dict path: uint8 7x7x3 image + Discrete direction) and through minigrid's
  ``ImgObsWrapper`` (one uint8 Box): IMPALA reaches 0.9 (the best return from its start is about 0.95).

Measured on the 2-core VM (2026-11-25, torch_threads 1, the cores shared with another job), env steps to the
threshold and wall time per seed:
GoalGrid IMPALA seeds 0-3: 28.9k, 34.9k, 40.6k, 40.4k (8-24 s); ACER seeds 0-2: 23.3k, 23.4k, 28.9k (4-6 s).
GoalGrid IMPALA without the goal key, seed 0: 0.25 at best in 60k.
MiniGrid Dict path seeds 0-3: 11.8k, 17.7k, 11.8k, 11.8k; ImgObsWrapper: 17.5k, 17.7k, 17.7k, 23.2k (5-15 s).
"""
import csv
import json

import pytest

from ding_lite.entry import serial_pipeline
from ding_lite.envs.toy.goal_grid import SOLVED_RETURN

BUDGET = 60_000
DROP_MISSION = dict(type="gymnasium.wrappers:FilterObservation", kwargs=dict(filter_keys=["image", "direction"]))


def _config(policy_type, env, stop_value, env_type):
    if policy_type == "impala":
        rates = dict(learning_rate=0.001)
    else:
        rates = dict(learning_rate_actor=0.001, learning_rate_critic=0.001)
    main = dict(
        exp_name=f"nested_{policy_type}",
        torch_threads=1,  # pinned: the thread count changes float rounding, and the budget was measured so
        env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=20, stop_value=stop_value, **env),
        policy=dict(
            unroll_len=16,
            learn=dict(entropy_weight=0.01, discount_factor=0.95, batch_size=32, update_per_collect=2, **rates),
            collect=dict(n_sample=8),
            eval=dict(evaluator=dict(eval_freq=50)),
            other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=4)),
        ),
    )
    return main, dict(env=dict(type=env_type), policy=dict(type=policy_type))


def _run(config, seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    policy = serial_pipeline(config, seed=seed, max_env_step=BUDGET, quiet=True)
    run_dir = tmp_path / f"{config[0]['exp_name']}_seed{seed}"
    with open(run_dir / "result.json") as f:
        result = json.load(f)
    with open(run_dir / "eval.csv", newline="") as f:
        curve = [(int(row["env_step"]), round(float(row["return_mean"]), 2)) for row in csv.DictReader(f)]
    return policy, result, f"result {result}; eval curve (env_step, return_mean): {curve}"


@pytest.mark.slow
# ACER is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): IMPALA carries the Dict path in CI.
@pytest.mark.parametrize("policy_type", ["impala", pytest.param("acer", marks=pytest.mark.long)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_goal_grid_dict_observation_learns(policy_type, seed, tmp_path, monkeypatch):
    policy, result, message = _run(_config(policy_type, {}, SOLVED_RETURN, "goal_grid"), seed, tmp_path, monkeypatch)
    assert policy.cfg.model.obs_space["space"] == "dict" and policy.cfg.model.encoder_type == "auto"
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= SOLVED_RETURN, message


@pytest.mark.slow
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): the control of the test
# above.
@pytest.mark.long
def test_goal_grid_without_the_goal_key_does_not_learn(tmp_path, monkeypatch):
    blind = dict(wrappers=[dict(type="gymnasium.wrappers:FilterObservation",
                                kwargs=dict(filter_keys=["position", "walls"]))])
    policy, result, message = _run(_config("impala", blind, SOLVED_RETURN, "goal_grid"), 0, tmp_path, monkeypatch)
    assert set(policy.cfg.model.obs_space["spaces"]) == {"position", "walls"}
    assert result["stop_reason"] == "max_env_step" and result["best_return"] < 0.5, message


@pytest.mark.slow
# ImgObsWrapper is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): the Dict path carries
# MiniGrid in CI.
@pytest.mark.parametrize("path", ["dict", pytest.param("img_obs_wrapper", marks=pytest.mark.long)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minigrid_empty_learns(path, seed, tmp_path, monkeypatch):
    wrappers = [DROP_MISSION] if path == "dict" else ["minigrid.wrappers:ImgObsWrapper"]
    env = dict(env_id="minigrid:MiniGrid-Empty-5x5-v0", wrappers=wrappers)
    policy, result, message = _run(_config("impala", env, 0.9, "gym"), seed, tmp_path, monkeypatch)
    space = policy.cfg.model.obs_space
    if path == "dict":
        assert set(space["spaces"]) == {"image", "direction"}
    else:
        assert space == dict(space="box", shape=[7, 7, 3], dtype="uint8")
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= 0.9, message
