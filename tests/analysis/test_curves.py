"""mean_curve: seeds evaluated at different x interpolated onto one grid, never extrapolated."""
import numpy as np
import pytest

from ding_lite.analysis.curves import X_AXES, mean_curve
from ding_lite.analysis.runs import EVAL_COLUMNS, RunRecord, load_runs
from ding_lite.utils import UserError


def record(env_step, return_mean, seed=0, **columns) -> RunRecord:
    env_step = np.asarray(env_step, dtype=float)
    evals = {c: np.asarray(columns.get(c, np.zeros_like(env_step)), dtype=float) for c in EVAL_COLUMNS}
    evals["env_step"], evals["return_mean"] = env_step, np.asarray(return_mean, dtype=float)
    return RunRecord(path=f"x_seed{seed}", exp_name="x", seed=seed, evals=evals, result=None)


def test_hand_computed_curve():
    a = record([0, 100, 200], [0, 10, 20], seed=0)
    b = record([0, 50, 150], [0, 30, 30], seed=1)
    curve = mean_curve([a, b], "env_step", "return_mean")
    assert curve.grid.tolist() == [0, 50, 100, 150, 200]
    # a at 50 -> 5, at 150 -> 15; b at 100 -> 30; b stopped at 150, so 200 is a's alone.
    assert curve.mean.tolist() == [0, 17.5, 20, 22.5, 20]
    assert curve.low.tolist() == [0, 5, 10, 15, 20]
    assert curve.high.tolist() == [0, 30, 30, 30, 20]
    assert curve.count.tolist() == [2, 2, 2, 2, 1]


def reference_value(xs, ys, at):
    """A seed's value at ``at`` from the definition of linear interpolation; None outside its evaluations."""
    if at < xs[0] or at > xs[-1]:
        return None
    for i in range(len(xs)):
        if xs[i] == at:
            return ys[i]
        if xs[i] < at < xs[i + 1]:
            return ys[i] + (ys[i + 1] - ys[i]) * (at - xs[i]) / (xs[i + 1] - xs[i])


def test_random_seeds_against_reference():
    rng = np.random.default_rng(0)
    seeds = []
    for s in range(4):
        xs = np.sort(rng.choice(np.arange(1, 1000), size=rng.integers(2, 9), replace=False)).astype(float)
        seeds.append((xs, rng.normal(size=xs.size)))
    # Shuffled rows: the curve sorts each seed by x itself.
    runs = []
    for s, (xs, ys) in enumerate(seeds):
        order = rng.permutation(xs.size)
        runs.append(record(np.zeros(xs.size), rng.normal(size=xs.size), seed=s, train_iter=xs[order],
                           return_max=ys[order]))
    curve = mean_curve(runs, "train_iter", "return_max")
    assert curve.grid.tolist() == sorted({x for xs, _ in seeds for x in xs.tolist()})
    for k, at in enumerate(curve.grid):
        present = [v for v in (reference_value(xs, ys, at) for xs, ys in seeds) if v is not None]
        assert curve.count[k] == len(present)
        assert curve.mean[k] == pytest.approx(sum(present) / len(present))
        assert curve.low[k] == pytest.approx(min(present)) and curve.high[k] == pytest.approx(max(present))


@pytest.mark.slow
def test_real_runs_each_axis(runs_dir):
    runs = [r for r in load_runs([runs_dir]) if r.exp_name == "cartpole_impala"]
    for x in X_AXES:
        curve = mean_curve(runs, x, "return_mean")
        assert np.all(np.diff(curve.grid) > 0)
        assert np.all(curve.low <= curve.mean + 1e-9) and np.all(curve.mean <= curve.high + 1e-9)
        last_points = [r.evals[x][-1] for r in runs]
        assert curve.grid[-1] == max(last_points)
        assert curve.count[curve.grid > min(last_points)].max(initial=0) < len(runs)  # no extrapolation


def test_bad_axis_and_metric():
    run = record([0, 1], [0, 1])
    with pytest.raises(UserError, match="unknown x axis 'time': choose one of env_step, wall_time, train_iter"):
        mean_curve([run], "time", "return_mean")
    with pytest.raises(UserError, match="unknown metric 'reward': choose from return_mean, return_std"):
        mean_curve([run], "env_step", "reward")
