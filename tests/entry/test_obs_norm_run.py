"""``env.normalize_obs`` through the pipelines: every pushed observation counted once, the statistics restored by
``--resume`` (they live in the checkpoint), and the parallel pipeline's workers acting with the learner's statistics."""
import pytest
import torch

from entry_helpers import CARTPOLE, read_result

NORM = ["--set", "env.normalize_obs=True"]


def _stats(run):
    model = torch.load(run / "ckpt" / "ckpt_last.pth.tar", weights_only=False)["policy"]["model"]
    return {k.split(".", 1)[1]: v for k, v in model.items() if k.startswith("obs_normalizer.")}


def test_serial_counts_every_pushed_observation_and_resumes_with_its_statistics(cli, in_tmp):
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "3000", *NORM)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    first = _stats(run)
    pushed = read_result(run)["env_step"]  # CartPole IMPALA stores obs (N, T): one row per env step collected
    assert first["count"].item() == pushed and first["var_0"].min() > 0
    assert first["mean_0"].abs().max() > 0  # moved from its start (0)
    res = cli("-m", "serial", "-c", CARTPOLE, "-q", "--env-step", "6000", "--resume", *NORM)
    assert res.exit_code == 0, res.output
    second = _stats(run)
    # the resumed run went on from the checkpoint's statistics (a fresh start would count only its own pushes)
    assert second["count"].item() == read_result(run)["env_step"] > pushed


@pytest.mark.slow
def test_parallel_workers_act_with_the_learners_statistics(cli, in_tmp):
    """CartPole's angle has a variance of about 0.01: a worker acting with the identity (statistics not synced) would
    feed the model inputs 10x off from what it trained on. The run reaches 475 with every worker in step."""
    res = cli("-m", "parallel", "-c", CARTPOLE, "-q", "--env-step", "100000", "--set", "env.stop_value=475", *NORM)
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "stop_value", result
    assert _stats(run)["count"].item() > 0
