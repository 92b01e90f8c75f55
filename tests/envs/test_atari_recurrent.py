"""Atari with an LSTM runs end to end (issue 32): dizoo_configs/pong_impala.py (ALE/Pong-v5 frames, the Nature conv,
compact uint8 unrolls) with ``policy.model.core='lstm'``, a short serial run: collection with the state carried per
env, learner updates replaying the unrolls, an evaluation, checkpoints. About 20 s on the 2-core VM."""
import os

import pytest

from entry_helpers import read_result

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


@pytest.mark.slow
# Long tier, left out of .ci/run (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI trains pong_impala.py end
# to end (tests/config/test_dizoo_configs.py) and the LSTM core on compact uint8-style unrolls (tests/policy/
# test_recurrent_impala.py, tests/model/test_recurrent_feature_off.py).
@pytest.mark.long
def test_pong_impala_with_an_lstm_runs(cli, in_tmp):
    pytest.importorskip("ale_py", reason="Atari needs the extra: pip install 'ding_lite[atari]'")
    res = cli("-m", "serial", "-c", os.path.join(REPO, "dizoo_configs", "pong_impala.py"), "-q", "--env-step", "640",
              "--exp-name", "pong_lstm", "--set", "env.collector_env_num=4", "--set", "policy.collect.n_sample=4",
              "--set", "policy.learn.batch_size=4", "--set", "policy.model.core=lstm",
              "--set", "policy.model.core_size=32")
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "pong_lstm_seed0")
    assert result["train_iter"] > 0 and result["env_step"] >= 640, result
    assert (in_tmp / "pong_lstm_seed0" / "ckpt" / "ckpt_last.pth.tar").is_file()
