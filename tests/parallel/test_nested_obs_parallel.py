"""Nested observations through the parallel pipeline (collector processes, the learner's buffer, weights back) and
through ``-m eval`` and ``--resume`` of a serial run: GoalGrid's two-level Dict observation (``nesting='nested'``:
``{'agent': {'position', 'walls'}, 'goal'}``) end to end.

Measured on the 2-core VM (2026-11-25): the local backend with 2 collectors reached 0.95 at 30-45k env steps.
"""
import pytest
import torch

from entry_helpers import read_result

GOAL_GRID = """
main_config = dict(
    exp_name="goal_grid",
    torch_threads=1,
    env=dict(kwargs=dict(nesting="nested"), collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=20,
             stop_value=0.95),
    policy=dict(
        unroll_len=16,
        learn=dict(learning_rate=0.001, entropy_weight=0.01, discount_factor=0.95, batch_size=32),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=50)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=4)),
    ),
)
create_config = dict(env=dict(type="goal_grid"), policy=dict(type="impala"))
"""


@pytest.fixture
def goal_grid(in_tmp):
    (in_tmp / "goal_grid.py").write_text(GOAL_GRID)
    return "goal_grid.py"


def test_serial_run_evaluates_and_resumes_with_nested_observations(cli, in_tmp, goal_grid):
    res = cli("-m", "serial", "-c", goal_grid, "-q", "--env-step", "2000")
    assert res.exit_code == 0, res.output
    run = in_tmp / "goal_grid_seed0"
    assert "obs_space=dict(" in (run / "total_config.py").read_text()
    res = cli("-m", "eval", "-c", str(run / "total_config.py"), "--load-path", str(run / "ckpt" / "ckpt_last.pth.tar"))
    assert res.exit_code == 0, res.output
    res = cli("-m", "serial", "-c", goal_grid, "-q", "--env-step", "4000", "--resume")
    assert res.exit_code == 0, res.output
    result = read_result(run)
    assert result["env_step"] >= 4000 and result["train_iter"] > 0, result


@pytest.mark.slow
# Ray is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): CI runs the local backend here, and
# normalize_obs on Ray in tests/parallel/test_recurrent_parallel.py.
@pytest.mark.parametrize("backend", ["local", pytest.param("ray", marks=[pytest.mark.ray, pytest.mark.long])])
def test_parallel_learns_with_nested_observations(cli, in_tmp, goal_grid, backend):
    """The Ray run also normalises the float leaf (``env.normalize_obs``): the statistics reach the actors with the
    weights (Ray publishes ``model.state_dict()``, the normaliser's buffers included)."""
    if backend == "ray":
        pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")
    extra = ["--set", "parallel.collector_num=2"] if backend == "local" else \
        ["--set", "parallel.collector_num=1", "--set", "env.normalize_obs=True"]
    res = cli("-m", "parallel", "--backend", backend, "-c", goal_grid, "-q", "--env-step", "100000", *extra)
    assert res.exit_code == 0, res.output
    run = in_tmp / "goal_grid_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "stop_value" and result["best_return"] >= 0.95, result
    model = torch.load(run / "ckpt" / "ckpt_last.pth.tar", weights_only=False)["policy"]["model"]
    if backend == "ray":
        assert model["obs_normalizer.count"].item() > 0
    else:
        assert "obs_normalizer.count" not in model
