"""IMPALA in parallel mode (one collector process per spare core, as by default; here 1) reaches an evaluation mean
of 475 on CartPole-v1 within 200k env steps, seeds 0, 1, 2, with the shipped config (the one the serial test uses).

Parallel runs are not bit-reproducible, so this is a statement about a distribution: 51 runs of these seeds took
10k-36k env steps, and 60 runs of seeds 0-26 all reached 475 (slowest 111k; see docs/parallel.md)."""
import os

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry import parallel_pipeline

CONFIGS = os.path.join(os.path.dirname(__file__), "..", "..", "dizoo_configs")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parallel_impala_cartpole_reaches_475(seed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = read_config_file(os.path.join(CONFIGS, "cartpole_impala.py"))
    result = parallel_pipeline(config, seed=seed, max_env_step=200_000, quiet=True,
                               overrides={"parallel.collector_num": 1})
    assert result["stop_reason"] == "stop_value", result
    assert result["best_return"] >= 475 and result["env_step"] <= 200_000
    assert result["parallel"]["restarts"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parallel_ppo_cartpole_reaches_475_with_policy_lag_0(seed, tmp_path, monkeypatch):
    """The shipped PPO config's collection of 8 envs as 2 collectors x 4 (synchronous, parallel.sync): 10 of 10 seeds
    (0-9, 2-core VM, torch_threads=1) reached 475 at a median of 9.5k env steps (1.8k-19.7k), 2-15 s each."""
    monkeypatch.chdir(tmp_path)
    config = read_config_file(os.path.join(CONFIGS, "cartpole_ppo.py"))
    result = parallel_pipeline(config, seed=seed, max_env_step=100_000, quiet=True,
                               overrides={"parallel.collector_num": 2, "env.collector_env_num": 4})
    assert result["stop_reason"] == "stop_value", result
    assert result["parallel"]["policy_lag"]["max"] == 0 and result["parallel"]["dropped_stale"] == 0
    assert result["parallel"]["restarts"] == {}
