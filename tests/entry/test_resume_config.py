"""``--resume`` runs the run's own config, with explicit ``--set`` overrides on top, and the run directory says what
ran: total_config.py rewritten with them, each resume a line in resume_overrides.jsonl (issue 44, item 5). And the
CLI's sys.path entries cannot shadow an installed dependency (issue 44, item 1)."""
import json
import os
import subprocess
import sys

import pytest

from entry_helpers import CARTPOLE, REPO, assert_user_error

from ding_lite.config import read_config_file

RUN = "cartpole_impala_seed0"


def run_config(run_dir):
    return read_config_file(os.path.join(run_dir, "total_config.py"))[0]  # the test's own file


def test_resume_applies_set_records_it_and_ignores_a_changed_config_file(cli, in_tmp):
    config = in_tmp / "cartpole.py"
    config.write_text(open(CARTPOLE).read())
    assert cli.train(config=str(config), env_step=300).exit_code == 0
    before = run_config(in_tmp / RUN)
    assert before["policy"]["learn"]["batch_size"] == 32 and before["policy"]["learn"]["learning_rate"] != 0.0007
    config.write_text(config.read_text().replace("batch_size=32", "batch_size=16"))  # edited since the run started

    res = cli.train("--resume", "--set", "policy.learn.learning_rate=0.0007", config=str(config), env_step=600)
    assert res.exit_code == 0, res.output
    assert "the -c file differs at policy.learn.batch_size; those values are not applied" in res.output, res.output
    after = run_config(in_tmp / RUN)
    assert after["policy"]["learn"]["learning_rate"] == 0.0007  # the override ran, and the run says so
    assert after["policy"]["learn"]["batch_size"] == 32  # the edited -c file did not silently change the run
    with open(in_tmp / RUN / "log" / "train.log") as f:
        assert "resuming from" in f.read()
    lines = [json.loads(line) for line in open(in_tmp / RUN / "resume_overrides.jsonl")]
    assert len(lines) == 1 and lines[0]["overrides"][-1] == "policy.learn.learning_rate=0.0007", lines
    assert lines[0]["config_file_not_applied"] == ["policy.learn.batch_size"]
    assert lines[0]["checkpoint"].startswith("ckpt/") and lines[0]["env_step"] > 0 and "time" in lines[0]

    # a second resume without --set keeps the first one's override (it is part of the run's config now), and says
    # that the -c file (the original again) differs there
    config.write_text(open(CARTPOLE).read())
    res = cli.train("--resume", config=str(config), env_step=900)
    assert res.exit_code == 0 and "differs at policy.learn.learning_rate;" in res.output, res.output
    assert run_config(in_tmp / RUN)["policy"]["learn"]["learning_rate"] == 0.0007
    assert len(open(in_tmp / RUN / "resume_overrides.jsonl").readlines()) == 2


def test_resume_refuses_a_run_config_that_is_not_literals(cli, in_tmp):
    assert cli.train(env_step=300).exit_code == 0
    path = in_tmp / RUN / "total_config.py"
    path.write_text("import os\n" + path.read_text())
    assert_user_error(cli.train("--resume", env_step=600), f"{RUN}/total_config.py:1: the statement import os",
                      "--trust-config")
    res = cli.train("--resume", "--trust-config", env_step=600)
    assert res.exit_code == 0, res.output
    assert "import os" not in path.read_text()  # rewritten with what this resume ran


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (no cwd on sys.path) is Python 3.11+")
def test_a_stray_module_in_the_working_directory_does_not_shadow_a_dependency(tmp_path):
    """A file named like a dependency in the cwd (here tensorboardX.py, which fails on import) is not what the run
    imports: the CLI adds the cwd at the end of sys.path, where only the user's own modules resolve from it."""
    (tmp_path / "tensorboardX.py").write_text("raise RuntimeError('the stray tensorboardX.py was imported')\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-P", "-m", "ding_lite.cli", "-m", "serial", "-c", CARTPOLE, "-q",
                           "--env-step", "100", "--set", "env.collector_env_num=2", "--set", "env.evaluator_env_num=1",
                           "--set", "env.n_evaluator_episode=1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "stray tensorboardX" not in proc.stderr


def test_resume_without_total_config_and_a_stray_trust_config_are_one_line(cli, in_tmp):
    assert_user_error(cli.train("--trust-config", env_step=300), "--trust-config is for reading a run's "
                      "total_config.py")
    assert os.listdir(in_tmp) == []
    assert cli.train(env_step=300).exit_code == 0
    os.remove(in_tmp / RUN / "total_config.py")
    assert_user_error(cli.train("--resume", env_step=600), f"--resume: run '{RUN}' has no total_config.py")
