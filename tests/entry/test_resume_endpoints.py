"""--resume of a copied run never contacts the servers its total_config.py names (issue 72, item 3): the tracker
section and parallel.ray_address come from the user's own -c file and --set, with a line naming what was not taken."""
import shutil

import pytest

from entry_helpers import read_result


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    from entry_helpers import Cli
    base = tmp_path_factory.mktemp("endpoints")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        res = Cli().train("--set", "env.stop_value=None", env_step=600)
    assert res.exit_code == 0, res.output
    return base / "cartpole_impala_seed0"


def test_resume_takes_no_endpoint_from_the_run_directory(finished, cli, in_tmp):
    run = in_tmp / "cartpole_impala_seed0"
    shutil.copytree(finished, run)
    config = run / "total_config.py"
    text = config.read_text()
    planted = {"mlflow=dict(enable=False, tracking_uri=None,": "mlflow=dict(enable=True, tracking_uri='http://127.0.0.1:9/',",
               "ray_address=None": "ray_address='10.0.0.1:6379'"}
    for old, new in planted.items():
        assert old in text, old
        text = text.replace(old, new)
    config.write_text(text)
    res = cli.train("--resume", "--set", "env.stop_value=None", env_step=1200)
    assert res.exit_code == 0, res.output  # an MLflow client at http://127.0.0.1:9/ would have failed to connect
    line = next(line for line in res.stderr.splitlines() if "--resume: tracker is " in line)
    assert "from your -c file and --set, not " in line and "'tracking_uri': 'http://127.0.0.1:9/'" in line
    assert "--resume: parallel.ray_address is None, from your -c file and --set, not '10.0.0.1:6379'" in res.stderr
    assert read_result(run)["env_step"] >= 1200
    rewritten = config.read_text()
    assert "http://127.0.0.1:9/" not in rewritten and "10.0.0.1:6379" not in rewritten
