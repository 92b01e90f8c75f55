"""A task that needs memory: CartPole-v1 with the velocities hidden (``ding_lite.envs.toy.masked_cartpole``, positions
only). At the same budget (40k env steps, dizoo_configs/cartpole_impala.py otherwise unchanged, stop at an evaluation
mean of 400), IMPALA with an LSTM core (``policy.model.core='lstm'``, 64 units) reaches at least 400 and the
feed-forward agent stays below 200. Seed 1 for both. PPO with the core solves it too (its test's docstring).

Measured on the 2-core VM with this code (docs/recurrent.md): the LSTM agent's first evaluation of at least 400 came
after 55.8k, 27.1k, -, 41.5k, 41.5k, 20.0k and 34.3k env steps for seeds 0 to 6 (seed 2: none of its periodic
evaluations within 80k, its final one at 80k scored 500), so 6 of 7 seeds within 60k and 4 within this budget of
40k (60k until issue 46 trimmed it: the feed-forward run spends the whole budget); seed 1 is the one tested because
it gets there with a margin of 1.5x (chaotic trajectories differ from machine to machine). The feed-forward
agent's best evaluation: 52.8 over 150k steps (seed 0), 52.4 and 50.4 over 40k (seeds 1, 2), 47.4 over 60k
(seed 1).
"""
import json
import os
import sys

import pytest

from test_sac_learning import _restore_torch_threads  # noqa: F401  (an autouse fixture: torch_threads=1 runs)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BUDGET = 40_000
SEED = 1


def run(core):
    sys.path.insert(0, os.path.join(REPO, "dizoo_configs"))
    import cartpole_impala

    from ding_lite.entry import serial_pipeline

    overrides = {"env.wrappers": ["ding_lite.envs.toy.masked_cartpole:HideVelocity"], "env.stop_value": 400,
                 "policy.model.core": core, "policy.model.core_size": 64}
    name = f"masked_{core or 'ff'}"
    with pytest.warns(UserWarning, match="stop_value=400"):  # below CartPole-v1's 475, on purpose
        serial_pipeline((cartpole_impala.main_config, cartpole_impala.create_config), seed=SEED,
                        max_env_step=BUDGET, overrides=overrides, exp_name=name, quiet=True)
    with open(f"{name}_seed{SEED}/result.json") as f:
        return json.load(f)


@pytest.mark.slow
def test_lstm_impala_solves_cartpole_without_velocities(in_tmp):
    result = run("lstm")
    assert result["best_return"] >= 400, result
    assert result["stop_reason"] == "stop_value" and result["env_step"] <= BUDGET + 2048


PPO_BUDGET = 60_000


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 2])
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI's LSTM IMPALA solves the
# same task; PPO's whole-sequence minibatches are unit-tested.
@pytest.mark.long
def test_lstm_ppo_solves_cartpole_without_velocities(seed, in_tmp):
    """PPO with the LSTM core (dizoo_configs/cartpole_ppo.py plus ``model.core='lstm'``, 64 units, and minibatches
    of 128 steps: 2 of 4 whole unrolls of 32) reaches an evaluation mean of 400 on CartPole without velocities.

    Measured on the 2-core VM (torch_threads=1, beside other work; env steps to the first evaluation of at least
    400): seed 0 8,960 (13 s), seed 2 40,960; seeds 1, 3 and 4 not within 40k (best 373, 248 and 206), seed 1 not
    within 80k (best 386). Seeds 0 and 2 are tested, at a budget of 60k (1.5x seed 2's). Sample efficiency on this
    task is not tuned (cartpole_ppo.py's settings otherwise). The feed-forward PPO is not tested: it cannot see the
    velocities, as the feed-forward IMPALA below."""
    sys.path.insert(0, os.path.join(REPO, "dizoo_configs"))
    import cartpole_ppo

    from ding_lite.entry import serial_pipeline

    overrides = {"env.wrappers": ["ding_lite.envs.toy.masked_cartpole:HideVelocity"], "env.stop_value": 400,
                 "policy.model.core": "lstm", "policy.model.core_size": 64, "policy.learn.minibatch_size": 128,
                 "torch_threads": 1}
    with pytest.warns(UserWarning, match="stop_value=400"):  # below CartPole-v1's 475, on purpose
        serial_pipeline((cartpole_ppo.main_config, cartpole_ppo.create_config), seed=seed,
                        max_env_step=PPO_BUDGET, overrides=overrides, exp_name="masked_ppo_lstm", quiet=True)
    with open(f"masked_ppo_lstm_seed{seed}/result.json") as f:
        result = json.load(f)
    assert result["best_return"] >= 400, result
    assert result["stop_reason"] == "stop_value" and result["env_step"] <= PPO_BUDGET, result


@pytest.mark.slow
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): the control of the LSTM
# IMPALA test, which CI runs.
@pytest.mark.long
def test_feed_forward_impala_cannot(in_tmp):
    result = run(None)
    assert result["env_step"] >= BUDGET, result  # the whole budget was spent
    assert result["best_return"] < 200, result
