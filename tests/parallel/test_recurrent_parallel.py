"""The recurrent core end to end outside the serial loop: ``-m parallel`` (local backend: collector and evaluator
processes carry each env's state themselves, since the state lives in the policy's collect and eval modes that
their SampleCollector and Evaluator drive), then ``-m eval`` of its checkpoint, and a serial ``--resume``."""
import os

import pytest

from entry_helpers import read_result

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
# stop_value off: these runs check the mechanics over their whole budgets, not learning
CORE = ["--set", "policy.model.core=lstm", "--set", "policy.model.core_size=16", "--set", "env.stop_value=None"]


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["impala", "acer"])
def test_parallel_eval_and_resume_with_the_core(cli, in_tmp, algo):
    config = os.path.join(REPO, "dizoo_configs", f"cartpole_{algo}.py")
    res = cli("-m", "parallel", "-c", config, "-q", "--env-step", "3000", "--exp-name", "par",
              "--set", "parallel.collector_num=1", *CORE)
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "par_seed0")
    assert result["env_step"] >= 3000 and result["train_iter"] > 0, result
    ckpt = in_tmp / "par_seed0" / "ckpt" / "ckpt_last.pth.tar"
    res = cli("-m", "eval", "-c", str(in_tmp / "par_seed0" / "total_config.py"), "--load-path", str(ckpt))
    assert res.exit_code == 0, res.output
    res = cli("-m", "serial", "-c", config, "-q", "--env-step", "1000", "--exp-name", "ser", *CORE)
    assert res.exit_code == 0, res.output
    res = cli("-m", "serial", "-c", config, "-q", "--env-step", "2000", "--exp-name", "ser", "--resume", *CORE)
    assert res.exit_code == 0, res.output
    assert read_result(in_tmp / "ser_seed0")["env_step"] >= 2000


@pytest.mark.ray
def test_ray_backend_with_the_core(cli, in_tmp):
    """The Ray actors drive the same SampleCollector and Evaluator: the core needs nothing of the backend."""
    pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")
    config = os.path.join(REPO, "dizoo_configs", "cartpole_impala.py")
    res = cli("-m", "parallel", "--backend", "ray", "-c", config, "-q", "--env-step", "3000", "--exp-name", "ray",
              "--set", "parallel.collector_num=1", *CORE)
    assert res.exit_code == 0, res.output
    result = read_result(in_tmp / "ray_seed0")
    assert result["env_step"] >= 3000 and result["train_iter"] > 0 and result["parallel"]["backend"] == "ray"
