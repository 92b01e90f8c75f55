"""A prioritised run says when its sum tree runs without the compiled kernels (numba, the ``fast`` extra), and how
to get them; with them it says nothing."""
import os

import pytest

from ding_lite.data import sum_tree

from entry_helpers import REPO, read_result

PENDULUM = os.path.join(REPO, "dizoo_configs", "pendulum_sac.py")
ARGS = ["--set", "policy.priority=True", "--set", "policy.random_collect_size=100", "--set",
        "policy.learn.batch_size=16", "--set", "policy.eval.evaluator.eval_freq=100000", "--set", "env.stop_value=None"]


@pytest.mark.parametrize("numba", [False, True])
def test_prioritised_run_names_the_fast_extra_only_without_numba(numba, cli, in_tmp, monkeypatch):
    if not numba:
        monkeypatch.setattr(sum_tree, "load_kernels", lambda: None)  # as where numba is not installed
    elif sum_tree.load_kernels() is None:
        pytest.skip("numba is not installed (the fast extra)")
    res = cli.train(*ARGS, "--exp-name", "h", config=PENDULUM, env_step=150)
    assert res.exit_code == 0, res.output
    assert read_result(in_tmp / "h_seed0")["train_iter"] > 0
    log = (in_tmp / "h_seed0" / "log" / "train.log").read_text()
    assert ("NumPy path" in log and "ding_lite[fast]" in log) == (not numba), log
