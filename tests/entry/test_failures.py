"""Every failure is one clear line (exit 2, no traceback) and leaves nothing half-written: read-only directories, a
parent that is not a directory, a full disk during a checkpoint write, checkpoints that do not fit the config; signals
exit as a shell reports them (SIGINT 130, SIGTERM 143); outputs respect the umask."""
import builtins
import errno
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from entry_helpers import CARTPOLE, REPO, SMALL, assert_user_error, load_ckpt, read_result, snapshot

RUN = "cartpole_impala_seed0"


def outputs(run):
    """A snapshot of the run's files but the lock file (whose holder PID a refused resume rewrote)."""
    return {k: v for k, v in snapshot(run).items() if k != ".lock"}
ACER = os.path.join(REPO, "dizoo_configs", "cartpole_acer.py")


# ---- read-only and missing directories ------------------------------------------------------------------------------
@pytest.fixture
def read_only(monkeypatch):
    """``read_only(path)``: every write under ``path`` fails as on a read-only file system (EROFS), whoever the user
    is (root ignores permission bits, so chmod cannot stand in for it)."""
    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir
    roots = []

    def under(path) -> bool:
        path = os.path.abspath(os.fsdecode(path))
        return any(path == r or path.startswith(r + os.sep) for r in roots)

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    def fake_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+") and under(file):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and under(path):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if under(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    return lambda path: roots.append(os.path.abspath(path))


def test_read_only_working_directory(cli, in_tmp, read_only):
    read_only(in_tmp)
    assert_user_error(cli.train(), "cannot create the run directory", RUN, "Read-only file system")
    assert os.listdir(in_tmp) == []


def test_read_only_run_directory_on_resume(cli, in_tmp, read_only):
    assert cli.train().exit_code == 0
    before = snapshot(in_tmp / RUN)
    read_only(in_tmp / RUN)
    assert_user_error(cli.train("--resume", env_step=3000), RUN, ".lock", "Read-only file system")
    assert snapshot(in_tmp / RUN) == before


def test_a_parent_that_is_a_file_and_missing_parents(cli, in_tmp):
    (in_tmp / "results").write_text("not a directory")
    assert_user_error(cli.train("--exp-name", "results/exp"), "cannot create the run directory", "results/exp_seed0",
                      "Not a directory")
    assert cli.train("--exp-name", "runs/2026/exp").exit_code == 0  # missing parents are created, as mkdir -p
    assert read_result(in_tmp / "runs" / "2026" / "exp_seed0")["stop_reason"] == "max_env_step"


# ---- a full disk during a checkpoint write --------------------------------------------------------------------------
def test_disk_full_during_a_checkpoint_write(cli, in_tmp, monkeypatch):
    """The third checkpoint write runs out of space half-way: one clear line, exit 2, the checkpoints written before
    are intact, and no temporary file is left behind."""
    import torch

    import ding_lite.utils.file_io as file_io
    real_save, calls = torch.save, []

    def save_until_full(obj, f):
        calls.append(getattr(f, "name", "?"))
        if len(calls) == 3:
            f.write(b"PK\x03\x04 half a checkpoint")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_save(obj, f)

    monkeypatch.setattr(file_io.torch, "save", save_until_full)
    res = cli.train("--set", "policy.learn.learner.hook.save_ckpt_after_iter=5", env_step=3000)
    line = assert_user_error(res, "cannot write checkpoint", os.path.join(RUN, "ckpt"), "No space left on device")
    ckpt = in_tmp / RUN / "ckpt"
    assert not [f for f in os.listdir(ckpt) if f.startswith(".tmp")], os.listdir(ckpt)
    for name in os.listdir(ckpt):  # what was written before the disk filled up still loads
        load_ckpt(ckpt / name)
    assert len(os.listdir(ckpt)) == 2
    assert read_result(in_tmp / RUN)["stop_reason"] == "error: RunIOError"
    assert "The run stopped; its last good checkpoint is" in line  # where to continue once there is space again


def test_disk_full_unit(tmp_path, monkeypatch):
    """atomic_torch_save: the old file stays byte for byte; RunIOError names the path and the reason."""
    import torch

    from ding_lite.utils import RunIOError
    from ding_lite.utils.file_io import atomic_torch_save
    path = tmp_path / "ckpt.pth.tar"
    atomic_torch_save({"a": torch.ones(3)}, str(path))
    before = path.read_bytes()

    def full(obj, f):
        f.write(b"partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(RunIOError, match="No space left on device") as info:
        atomic_torch_save({"a": torch.zeros(3)}, str(path))
    assert str(path) in str(info.value)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.pth.tar"]


# ---- checkpoints that do not fit ------------------------------------------------------------------------------------
def test_eval_refuses_a_checkpoint_of_another_model_config(cli, in_tmp):
    """IMPALA trained with share_encoder=True, evaluated under the shipped config's share_encoder=False: refused,
    naming the key, instead of an actor that silently gets the critic's encoder."""
    assert cli.train("--set", "policy.model.share_encoder=True").exit_code == 0
    ckpt = in_tmp / RUN / "ckpt" / "ckpt_best.pth.tar"
    line = assert_user_error(cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL), "ckpt_best.pth.tar",
                             "policy.model.share_encoder: checkpoint True, config False")
    assert "total_config.py" in line
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL, "--set", "policy.model.share_encoder=True")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("config, args, fragments", [
    (CARTPOLE, ["--set", "policy.model.encoder_hidden_size_list=[32]"],
     ["cannot resume from checkpoint", "ckpt_last.pth.tar",
      "policy.model.encoder_hidden_size_list: checkpoint [64, 64], config [32]"]),
    (ACER, [], ["--resume: run 'cartpole_impala_seed0' trains policy 'impala'", "the -c file configures 'acer'"]),
], ids=["other hidden sizes", "another policy"])
def test_resume_refuses_a_checkpoint_that_does_not_fit(cli, in_tmp, config, args, fragments):
    """A resume runs the run's own config (total_config.py): an override that changes the model is refused by the
    checkpoint's fit check, and a -c file of another algorithm names some other run."""
    assert cli.train().exit_code == 0
    before = outputs(in_tmp / RUN)
    res = cli.train("--resume", "--exp-name", "cartpole_impala", *args, config=config, env_step=3000)
    assert_user_error(res, *fragments)
    assert outputs(in_tmp / RUN) == before


def test_resume_of_a_checkpoint_without_meta_is_still_a_clear_error(cli, in_tmp):
    """A checkpoint of an older ding_lite (no model config recorded) under other hidden sizes: the strict weight load
    fails, reported as one line, not a traceback."""
    import torch
    assert cli.train().exit_code == 0
    for name in os.listdir(in_tmp / RUN / "ckpt"):
        path = in_tmp / RUN / "ckpt" / name
        state = load_ckpt(path)
        del state["meta"]
        torch.save(state, path)
    res = cli.train("--resume", "--set", "policy.model.encoder_hidden_size_list=[32]", env_step=3000)
    assert_user_error(res, "cannot resume from checkpoint", "does not fit", "size mismatch")


def test_truncated_checkpoint_message_is_a_complete_sentence(cli, in_tmp):
    assert cli.train().exit_code == 0
    ckpt = in_tmp / RUN / "ckpt" / "ckpt_best.pth.tar"
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[:len(data) // 3])
    line = assert_user_error(cli("-m", "eval", "-c", CARTPOLE, "--load-path", ckpt, *SMALL), "ckpt_best.pth.tar",
                             "truncated, corrupt or not a torch file")
    assert line.endswith(".") and line.count("(") == line.count(")"), line
    assert "..." not in line


# ---- signals --------------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_exit_codes_in_a_real_serial_process(tmp_path, sig, code):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite.cli", "-c", CARTPOLE, "-q", "--env-step",
                             "100000000", "--set", "env.stop_value=None", *SMALL],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = tmp_path / RUN
    try:
        deadline = time.time() + 60
        while not (run / "eval.csv").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the run did not start within 60 s"
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert read_result(run)["stop_reason"] == "interrupted"
    load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")


# ---- permissions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077])
def test_outputs_respect_the_umask(cli, in_tmp, umask):
    old = os.umask(umask)
    try:
        assert cli.train().exit_code == 0
    finally:
        os.umask(old)
    run = in_tmp / RUN
    expected = 0o666 & ~umask
    files = [run / "result.json", run / "eval.csv", run / "total_config.py"] + \
        [run / "ckpt" / n for n in os.listdir(run / "ckpt")]
    for path in files:
        assert stat.S_IMODE(os.stat(path).st_mode) == expected, (path.name, oct(os.stat(path).st_mode))


# ---- bad budgets ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, fragment", [(["--env-step", "-5"], "--env-step"),
                                             (["--train-iter", "-1"], "--train-iter")])
def test_negative_budgets_and_episodes(cli, in_tmp, args, fragment):
    assert_user_error(cli("-c", CARTPOLE, "-q", *SMALL, *args), fragment, "must be a whole number >= 0")
    assert os.listdir(in_tmp) == []
    res = cli("-m", "eval", "-c", CARTPOLE, "--load-path", "x.pth.tar", "--episodes", "0", *SMALL)
    assert_user_error(res, "--episodes", "must be a whole number >= 1")


# ---- a NaN in a parallel collector's env ----------------------------------------------------------------------------
def test_parallel_collector_nan_stops_the_run(cli, in_tmp, monkeypatch):
    """Not restarted max_restarts times: the run stops at once with the collector's message, keeping ckpt_last."""
    sys.path.insert(0, os.path.join(REPO, "tests", "worker"))  # in_tmp restores sys.path afterwards
    from nonfinite_env import ENV_TYPE
    from ding_lite.utils.seed import env_seeds
    first_env = env_seeds(0, "collector", 2)[0]  # the seed of collector 0's env 0
    config = in_tmp / "nan_parallel.py"
    config.write_text(
        f"main_config = dict(exp_name='nan', env=dict(kwargs=dict(what='obs', at=400, in_seed={first_env}),\n"
        "    collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1),\n"
        "    policy=dict(learn=dict(learner=dict(hook=dict(log_show_after_iter=5)))),\n"
        "    parallel=dict(collector_num=1))\n"
        f"create_config = dict(env=dict(type='{ENV_TYPE}', import_names=['nonfinite_env']),\n"
        "                     policy=dict(type='impala'))\n")
    start = time.monotonic()
    res = cli("-m", "parallel", "-c", config, "-q", "--env-step", "100000")
    assert_user_error(res, "collector 0 stopped: NonFiniteError: non-finite obs from env 'CartPole-v1'",
                             "env index 0 of 2", "The run stopped; its last good checkpoint is")
    assert time.monotonic() - start < 60
    result = read_result(in_tmp / "nan_seed0")
    assert result["stop_reason"] == "error: UserError" and result["parallel"]["restarts"] == {"collector0": 1}
    load_ckpt(in_tmp / "nan_seed0" / "ckpt" / "ckpt_last.pth.tar")


# ---- a run whose training diverges ----------------------------------------------------------------------------------
def test_a_diverging_run_stops_and_keeps_its_last_good_checkpoint(cli, in_tmp):
    """A learning rate of 1e12 is finite (the config takes it) but breaks the weights within a few updates: the run
    stops at the first NaN/inf with one line naming the value and the update, and ckpt_last stays the last finite
    state (written every iteration until then)."""
    res = cli.train("--set", "policy.learn.learning_rate=1e12", "--set",
                    "policy.learn.learner.hook.save_ckpt_last_after_iter=1", env_step=20000)
    line = assert_user_error(res, "non-finite", "in update", "The run stopped; its last good checkpoint is",
                             os.path.join(RUN, "ckpt", "ckpt_last.pth.tar"))
    failed_at = int(line.split("in update ")[1].split()[0])
    result = read_result(in_tmp / RUN)
    assert result["stop_reason"] == "error: NonFiniteError" and result["train_iter"] == failed_at
    last = load_ckpt(in_tmp / RUN / "ckpt" / "ckpt_last.pth.tar")
    assert last["counters"]["train_iter"] < failed_at
    assert f"(train_iter {last['counters']['train_iter']:,}," in line
    import torch
    for name, tensor in last["policy"]["model"].items():
        assert torch.isfinite(tensor).all(), name
