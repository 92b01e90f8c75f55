"""``--backend ray`` on a local Ray instance: the same roles as Ray actors learn CartPole and shut down cleanly."""
import subprocess

import pytest

from entry_helpers import CARTPOLE, read_eval_csv, read_result

ray = pytest.importorskip("ray", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")

pytestmark = pytest.mark.slow


def _ray_workers() -> int:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return sum(line.startswith("ray::") for line in out.splitlines())


def test_ray_backend_learns_and_shuts_down(cli, in_tmp):
    res = cli("-m", "parallel", "--backend", "ray", "-c", CARTPOLE, "-q", "--env-step", "100000",
              "--set", "parallel.collector_num=1", "--set", "env.stop_value=300")
    assert res.exit_code == 0, res.output
    run = in_tmp / "cartpole_impala_seed0"
    result = read_result(run)
    assert result["stop_reason"] == "stop_value", result
    assert result["parallel"]["backend"] == "ray" and result["parallel"]["restarts"] == {}
    _, rows = read_eval_csv(run)
    assert float(rows[0]["return_mean"]) < 100 <= max(float(r["return_mean"]) for r in rows)
    assert not ray.is_initialized()  # the run's own Ray instance is gone again
    assert _ray_workers() == 0
