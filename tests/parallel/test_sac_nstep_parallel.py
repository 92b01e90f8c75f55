"""SAC with n-step returns (``policy.nstep=3``) in -m parallel: the collector workers hold back nstep - 1 steps and
send n-step samples; the learner trains on them."""
import os

import pytest

from entry_helpers import REPO, read_result


@pytest.mark.slow
def test_sac_with_nstep_3_runs_in_parallel_mode(cli, in_tmp):
    res = cli.train("--set", "parallel.collector_num=1", "--set", "policy.nstep=3", "--set",
                    "policy.random_collect_size=200", "--set", "policy.eval.evaluator.eval_freq=50", "--set",
                    "env.stop_value=None", "--exp-name", "p",
                    config=os.path.join(REPO, "dizoo_configs", "pendulum_sac.py"), env_step=1200, mode="parallel")
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "p_seed0")
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > 0
    assert result["parallel"]["restarts"] == {}
