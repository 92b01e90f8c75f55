"""A copied run directory is data: --resume refuses symbolic links inside it (a planted .lock or eval.csv link would
take the resumed run's writes to a file outside it), with one line naming the link; the file it points to is left
as it was. A fresh run refuses a planted .lock link too."""
import os

import pytest

from entry_helpers import assert_user_error


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from entry_helpers import Cli
    base = tmp_path_factory.mktemp("symlinks")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        res = Cli().train("--set", "env.stop_value=None", env_step=600)
    assert res.exit_code == 0, res.output
    return base / "cartpole_impala_seed0"


def copy_run(src, dst):
    import shutil
    shutil.copytree(src, dst, symlinks=True)
    return dst


@pytest.mark.parametrize("name", [".lock", "eval.csv", "log/train.log"])
def test_resume_refuses_a_link_in_the_run_directory_and_leaves_its_target_alone(finished_run, name, cli, in_tmp):
    run = copy_run(finished_run, in_tmp / "cartpole_impala_seed0")
    victim = in_tmp / "victim.txt"
    victim.write_text("the user's file\n")
    os.remove(run / name)
    os.symlink(victim, run / name)
    res = cli.train("--resume", "--set", "env.stop_value=None", env_step=1200)
    line = assert_user_error(res, f"{name} is a symbolic link (to {victim})", "remove the link")
    assert str(run) in line or "cartpole_impala_seed0" in line
    assert victim.read_text() == "the user's file\n"


def test_a_fresh_run_refuses_a_planted_lock_link(cli, in_tmp):
    victim = in_tmp / "victim.txt"
    victim.write_text("the user's file\n")
    os.makedirs(in_tmp / "cartpole_impala_seed0")
    os.symlink(victim, in_tmp / "cartpole_impala_seed0" / ".lock")
    res = cli.train(env_step=600)
    assert_user_error(res, ".lock is a symbolic link")
    assert victim.read_text() == "the user's file\n"


def test_the_run_directory_itself_may_be_a_link(finished_run, cli, in_tmp):
    """A user's runs folder on another disk: the link is theirs, not the run's."""
    elsewhere = copy_run(finished_run, in_tmp / "disk" / "cartpole_impala_seed0")
    os.symlink(elsewhere, in_tmp / "cartpole_impala_seed0")
    res = cli.train("--resume", "--set", "env.stop_value=None", env_step=1200)
    assert res.exit_code == 0, res.output
