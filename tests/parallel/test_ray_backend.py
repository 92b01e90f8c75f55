"""``--backend ray`` on a local Ray instance: the same roles as Ray actors learn CartPole and shut down cleanly."""
import os
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



def test_a_model_class_only_the_learner_can_import_reaches_the_actors(in_tmp, monkeypatch):
    """The run's model is an instance of a class from a module beside the user's script (on the learner's sys.path
    only). Each actor unpickles its spec, model included, before any ding_lite code runs in it, so the module must be
    importable there already: the private Ray instance's raylet, and every worker it starts, inherits the learner's
    import paths in PYTHONPATH. The learner's own PYTHONPATH is as it was."""
    (in_tmp / "user_models").mkdir()
    (in_tmp / "user_models" / "my_vac.py").write_text(
        "from ding_lite.model import VAC\n\n\nclass MyVAC(VAC):\n    pass\n")
    monkeypatch.syspath_prepend(str(in_tmp / "user_models"))
    monkeypatch.setenv("PYTHONPATH", "/nonexistent-before")
    from my_vac import MyVAC

    from ding_lite.config import read_config_file
    from ding_lite.entry import parallel_pipeline
    main, create = read_config_file(CARTPOLE)
    main = {**main, "parallel": {"collector_num": 1, "backend": "ray"}}
    model = MyVAC(obs_shape=4, action_shape=2, **{k: v for k, v in main["policy"].get("model", {}).items()})
    result = parallel_pipeline((main, create), seed=0, model=model, max_train_iter=8, quiet=True)
    assert result["train_iter"] >= 8 and result["parallel"]["restarts"] == {}, result
    assert not ray.is_initialized()
    assert os.environ["PYTHONPATH"] == "/nonexistent-before"
