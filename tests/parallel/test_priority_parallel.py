"""Prioritised replay in -m parallel: the learner owns the buffer, so sampling by priority, the policy's priorities and
their update run in the learner process exactly as in the serial pipeline; the buffer it saves holds them."""
import os

import pytest

from entry_helpers import REPO, load_ckpt, read_result


@pytest.mark.slow
def test_sac_with_priority_runs_in_parallel_mode(cli, in_tmp):
    res = cli.train("--set", "parallel.collector_num=1", "--set", "policy.priority=True", "--set",
                    "policy.priority_IS_weight=True", "--set", "policy.random_collect_size=200", "--set",
                    "policy.eval.evaluator.eval_freq=50", "--set", "env.stop_value=None", "--set",
                    "policy.other.replay_buffer.save_replay_buffer=True", "--exp-name", "p",
                    config=os.path.join(REPO, "dizoo_configs", "pendulum_sac.py"), env_step=1000, mode="parallel")
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "p_seed0")
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > 0
    assert result["parallel"]["restarts"] == {}
    content = load_ckpt(in_tmp / "p_seed0" / "ckpt" / "replay_buffer.pth.tar")["buffer"]
    assert content["type"] == "PrioritizedReplayBuffer"
    assert len(set(content["priorities"][:content["filled"]].tolist())) > 10  # set from TD errors by the learner
