"""Nothing lost under crashes: a SIGKILLed run (serial or parallel) resumes from a ckpt_last at most one interval old;
--resume picks the most advanced checkpoint that loads; eval.csv and TensorBoard stay consistent; one run per
directory (an OS lock that a killed run never leaves behind)."""
import os
import re
import signal
import struct
import subprocess
import sys
import time

import pytest
import torch

from entry_helpers import (CARTPOLE, REPO, SMALL, assert_user_error, event_files, load_ckpt, read_eval_csv,
                           read_result, snapshot)

HOOK = "policy.learn.learner.hook"
RUN = "cartpole_impala_seed0"
ENV = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


# early stopping off, in the killed runs and their resumes alike: the shipped config can reach its stop value within
# these budgets, and a resumed run must spend its budget to show that it went on
NO_STOP = ("--set", "env.stop_value=None")


def _start(tmp_path, *args: str, mode: str = "serial") -> subprocess.Popen:
    cmd = [sys.executable, "-m", "ding_lite.cli", "-m", mode, "-c", CARTPOLE, "-q", *SMALL, *NO_STOP,
           "--env-step", "100000000", *args]
    return subprocess.Popen(cmd, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _logged_iter(run) -> int:
    """The last train_iter of a progress line in train.log (0 before the first)."""
    log = run / "log" / "train.log"
    found = re.findall(r"train_iter ([\d,]+) \|", log.read_text()) if log.exists() else []
    return int(found[-1].replace(",", "")) if found else 0


def _train_until(proc, run, train_iter: int, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        if _logged_iter(run) >= train_iter:
            return _logged_iter(run)
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the run did not reach train_iter {train_iter} within {timeout} s")


def _kill9(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def session_starts(path) -> list:
    """Steps of the SessionLog START events in a TensorBoard events file (tensorboardX's purge_step marks)."""
    from tensorboardX.proto import event_pb2
    data, pos, steps = open(path, "rb").read(), 0, []
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4
        if event.HasField("session_log") and event.session_log.status == event.session_log.START:
            steps.append(event.step)
    return steps


def _assert_eval_csv_ordered(run) -> list:
    _, rows = read_eval_csv(run)
    iters = [int(r["train_iter"]) for r in rows]
    steps = [int(r["env_step"]) for r in rows]
    assert iters == sorted(set(iters)), f"duplicate or out-of-order eval rows: {iters}"
    assert steps == sorted(steps), steps
    return rows


# ---- SIGKILL, then --resume -----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("interval", ["iterations", "seconds"])
def test_sigkill_mid_training_then_resume_loses_at_most_one_interval(tmp_path, cli, monkeypatch, interval):
    every = ["--set", f"{HOOK}.save_ckpt_last_after_iter=25", "--set", f"{HOOK}.save_ckpt_last_every_s=0"] \
        if interval == "iterations" else \
        ["--set", f"{HOOK}.save_ckpt_last_after_iter=0", "--set", f"{HOOK}.save_ckpt_last_every_s=0.5"]
    args = [*every, "--set", f"{HOOK}.log_show_after_iter=1", "--set", "policy.eval.evaluator.eval_freq=40"]
    run = tmp_path / RUN
    proc = _start(tmp_path, *args)
    _train_until(proc, run, 150)
    killed_at = time.time()
    _kill9(proc)
    reached = _logged_iter(run)  # the last update the killed run logged (log_show_after_iter=1)

    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    if interval == "iterations":
        assert reached - 25 <= last["train_iter"] <= reached, (last["train_iter"], reached)
    else:
        age = killed_at - os.path.getmtime(run / "ckpt" / "ckpt_last.pth.tar")
        assert age < 0.5 + 1.0, f"ckpt_last was {age:.1f} s old at the kill"  # the interval + one collect/update
    # a kill that lands inside a checkpoint write leaves its temporary file: --resume removes it

    # --resume takes the most advanced checkpoint: ckpt_last, unless an evaluation after it saved a new ckpt_best
    counters = {name: load_ckpt(run / "ckpt" / name)["counters"] for name in ("ckpt_last.pth.tar", "ckpt_best.pth.tar")}
    chosen = max(counters, key=lambda n: (counters[n]["train_iter"], counters[n]["env_step"], n == "ckpt_last.pth.tar"))
    start = counters[chosen]
    monkeypatch.chdir(tmp_path)
    res = cli.train("--resume", *NO_STOP, *args, env_step=start["env_step"] + 600)
    assert res.exit_code == 0, res.output
    text = (run / "log" / "train.log").read_text()
    assert f"resuming from {os.path.join(RUN, 'ckpt', chosen)} (train_iter {start['train_iter']:,}" in text
    result = read_result(run)
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > start["train_iter"]
    rows = _assert_eval_csv_ordered(run)
    assert int(rows[-1]["train_iter"]) == result["train_iter"]
    # TensorBoard: the resumed writers mark their start at the checkpoint's steps, hiding the killed run's later events
    assert session_starts(event_files(run, "train_iter")[-1]) == [start["train_iter"]]
    assert session_starts(event_files(run)[-1]) == [start["env_step"]]
    assert not _temp_files(run), "a temporary file was left behind"


def _temp_files(run) -> list:
    return [os.path.join(root, n) for root, _, names in os.walk(run) for n in names if n.startswith(".tmp_")]


@pytest.mark.slow
def test_parallel_learner_sigkill_then_resume(tmp_path, cli, monkeypatch):
    args = ["--set", "parallel.collector_num=1", "--set", f"{HOOK}.save_ckpt_last_after_iter=20",
            "--set", f"{HOOK}.log_show_after_iter=1"]
    run = tmp_path / RUN
    proc = _start(tmp_path, *args, mode="parallel")
    _train_until(proc, run, 100)
    _kill9(proc)
    reached = _logged_iter(run)
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    assert reached - 20 <= last["train_iter"] <= reached, (last["train_iter"], reached)

    monkeypatch.chdir(tmp_path)
    res = cli.train("--resume", *NO_STOP, *args, env_step=last["env_step"] + 1000, mode="parallel")
    assert res.exit_code == 0, res.output
    # the most advanced checkpoint: ckpt_last, or ckpt_best when an evaluation snapshot of the same iteration counted
    # a few more env steps
    resumed = re.search(r"resuming from \S+ \(train_iter ([\d,]+), env_step ([\d,]+)\)",
                        (run / "log" / "train.log").read_text())
    assert resumed and int(resumed.group(1).replace(",", "")) >= last["train_iter"]
    result = read_result(run)
    assert result["stop_reason"] == "max_env_step" and result["train_iter"] > last["train_iter"]
    _assert_eval_csv_ordered(run)


# ---- which checkpoint --resume takes --------------------------------------------------------------------------------
@pytest.fixture
def finished_run(cli, in_tmp):
    """A finished run with periodic checkpoints every 5 iterations and an evaluation every 10."""
    res = cli.train("--set", f"{HOOK}.save_ckpt_after_iter=5", "--set", "policy.eval.evaluator.eval_freq=10",
                    env_step=2500)
    assert res.exit_code == 0, res.output
    return in_tmp / RUN


def test_resume_skips_a_truncated_ckpt_last_and_says_which_it_takes(cli, finished_run, capsys):
    ckpt = finished_run / "ckpt"
    data = (ckpt / "ckpt_last.pth.tar").read_bytes()
    (ckpt / "ckpt_last.pth.tar").write_bytes(data[:len(data) // 2])  # a disk that lost the end of the file
    newest = max((load_ckpt(ckpt / n)["counters"]["train_iter"], n) for n in os.listdir(ckpt)
                 if n != "ckpt_last.pth.tar")
    res = cli.train("--resume", env_step=3500)
    assert res.exit_code == 0, res.output
    assert "skipped ckpt_last.pth.tar" in res.stderr and "truncated" in res.stderr
    assert f"resuming from {os.path.join(RUN, 'ckpt', newest[1])} (train_iter {newest[0]:,}" in \
        (finished_run / "log" / "train.log").read_text()


def test_resume_removes_the_temporary_files_of_writes_a_kill_interrupted(cli, finished_run):
    """SIGKILL inside an atomic write leaves ``.tmp_<random><name>`` beside the intact file; the resumed run (holding
    the lock, so no writer is alive) deletes them and never mistakes one for a checkpoint."""
    ckpt = finished_run / "ckpt"
    half = (ckpt / "ckpt_last.pth.tar").read_bytes()[:1000]
    planted = [ckpt / ".tmp_k3j2ckpt_last.pth.tar", ckpt / ".tmp_x9qziteration_999.pth.tar",
               finished_run / ".tmp_a1b2result.json"]
    for path in planted:
        path.write_bytes(half)
    last = load_ckpt(ckpt / "ckpt_last.pth.tar")["counters"]
    res = cli.train("--resume", env_step=3000)
    assert res.exit_code == 0, res.output
    assert not _temp_files(finished_run)
    for path in planted:
        assert f"removed {os.path.join(RUN, os.path.relpath(path, finished_run))}" in res.stderr
    assert f"(train_iter {last['train_iter']:,}," in (finished_run / "log" / "train.log").read_text()


@pytest.mark.slow
def test_resume_after_a_kill_drops_later_eval_rows(cli, finished_run):
    """As after a SIGKILL: ckpt_last and ckpt_best are older than the last evaluations (rolled back to early periodic
    checkpoints: the best evaluation was not the last one). --resume takes the most advanced checkpoint (here
    ckpt_best); eval.csv keeps the rows it had counted, in order, and the later ones, which the resumed run repeats,
    move to eval_discarded.csv. (The rollback does not depend on how the run learned: a run whose returns only rose
    has its best evaluation last.)"""
    ckpt = finished_run / "ckpt"
    _, rows_before = read_eval_csv(finished_run)
    early, middle = load_ckpt(ckpt / "iteration_15.pth.tar"), load_ckpt(ckpt / "iteration_35.pth.tar")
    for name in os.listdir(ckpt):
        if name.startswith("iteration_") or name in ("ckpt_last.pth.tar", "ckpt_best.pth.tar"):
            os.remove(ckpt / name)
    torch.save(early, ckpt / "ckpt_last.pth.tar")
    torch.save(middle, ckpt / "ckpt_best.pth.tar")
    chosen = max((load_ckpt(ckpt / n)["counters"]["train_iter"], n) for n in os.listdir(ckpt))
    counters = load_ckpt(ckpt / chosen[1])["counters"]
    keep = [r for r in rows_before if int(r["train_iter"]) <= counters["last_eval_iter"]]
    dropped = rows_before[len(keep):]
    assert dropped, "the test needs evaluations after the checkpoint resumed from"

    res = cli.train("--resume", "--set", "policy.eval.evaluator.eval_freq=10", env_step=2600)
    assert res.exit_code == 0, res.output
    assert f"resuming from {os.path.join(RUN, 'ckpt', chosen[1])} (train_iter {chosen[0]:,}" in \
        (finished_run / "log" / "train.log").read_text()
    rows = _assert_eval_csv_ordered(finished_run)
    assert rows[:len(keep)] == keep and len(rows) > len(keep)
    _, discarded = read_eval_csv_named(finished_run, "eval_discarded.csv")
    assert discarded == dropped


def read_eval_csv_named(run, name):
    import csv
    with open(run / name, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def test_resume_with_no_readable_checkpoint_names_each_file(cli, finished_run):
    for name in os.listdir(finished_run / "ckpt"):
        (finished_run / "ckpt" / name).write_bytes(b"garbage")
    line = assert_user_error(cli.train("--resume"), "no checkpoint of run", "ckpt_last.pth.tar", "ckpt_best.pth.tar")
    assert "cannot be read" in line


# ---- one run per directory ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_run_of_a_locked_directory_exits_2_naming_the_pid(tmp_path, cli, monkeypatch):
    proc = _start(tmp_path)
    run = tmp_path / RUN
    try:
        _train_until(proc, run, 1)
        monkeypatch.chdir(tmp_path)
        before = snapshot(run / "ckpt")
        for extra in ([], ["--resume"]):
            line = assert_user_error(cli.train(*extra), RUN, f"in use by PID {proc.pid}")
            assert "--exp-name" in line
        assert snapshot(run / "ckpt") == before
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)


@pytest.mark.slow
def test_the_lock_is_released_when_a_run_is_killed(tmp_path, cli, monkeypatch):
    """flock dies with its process: a SIGKILLed run never leaves a stale lock."""
    proc = _start(tmp_path, "--set", f"{HOOK}.save_ckpt_last_after_iter=5")
    run = tmp_path / RUN
    _train_until(proc, run, 10)
    _kill9(proc)
    monkeypatch.chdir(tmp_path)
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    res = cli.train("--resume", "--set", f"{HOOK}.save_ckpt_last_after_iter=5", env_step=last["env_step"] + 100)
    assert res.exit_code == 0, res.output


def test_two_fresh_runs_with_one_name(cli, in_tmp):
    """The second finds the first's finished directory: one clear line, nothing overwritten."""
    from ding_lite.run.run_dir import acquire_run_dir

    lock = acquire_run_dir(RUN, resume=False)  # a run that is starting right now
    try:
        assert_user_error(cli.train(), RUN, f"in use by PID {os.getpid()}")
    finally:
        lock.release()
    assert os.listdir(in_tmp / RUN) == [".lock"]
    assert cli.train().exit_code == 0  # a directory that holds only a lock file is no run
    line = assert_user_error(cli.train(), RUN, "already exists")
    assert "--resume" in line
