"""Ctrl-C and SIGTERM on a parallel run: every process exits within 10 s, ckpt_last and result.json are written,
and no worker process is left behind."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from entry_helpers import CARTPOLE, REPO, SMALL

EXIT_LIMIT_S = 10.0


def _descendants(pid: int):
    """Every process below ``pid`` (read from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _spawned_workers(pid: int):
    """The worker processes below ``pid`` (collectors, evaluator): those multiprocessing started, whether spawned
    (``spawn_main``) or forked by its fork server (whose children share its command line), not the fork server
    itself or the resource tracker."""
    workers = []
    for child in _descendants(pid):
        cmd = _cmdline(child)
        if b"spawn_main" in cmd or (b"forkserver" in cmd and _descendants(child) == [] and any(
                b"forkserver" in _cmdline(p) and child in _descendants(p) for p in _descendants(pid) if p != child)):
            workers.append(child)
    return workers


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _start_training(tmp_path):
    """A parallel CLI run with two collectors, returned once it is training: (process, run directory)."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "ding_lite.cli", "-m", "parallel", "-c", CARTPOLE, "-q", *SMALL,
           "--set", "parallel.collector_num=2", "--set", "env.stop_value=None",
           "--set", "policy.learn.learner.hook.log_show_after_iter=10"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = tmp_path / "cartpole_impala_seed0"
    log = run / "log" / "train.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and "train_iter 20 |" in log.read_text():
            return proc, run
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the run did not start training: {proc.communicate()[0]}")


def _assert_all_gone(pids, within: float) -> None:
    assert pids, "no worker processes to check"  # an empty list would pass vacuously
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if _alive(pid)], "orphaned worker processes"


@pytest.mark.slow
# SIGINT is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): SIGTERM takes the same path in
# CI.
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.long), signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_signal_stops_every_process_and_keeps_the_run(tmp_path, sig):
    proc, run = _start_training(tmp_path)
    try:
        workers = _descendants(proc.pid)
        # two collectors and the evaluator (and multiprocessing's resource tracker), all running
        assert len(_spawned_workers(proc.pid)) >= 3, workers
        assert all(_alive(pid) for pid in workers), workers
        start = time.monotonic()
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=EXIT_LIMIT_S + 5)
        elapsed = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, out  # as a shell reports a signal: 130 for SIGINT, 143 for SIGTERM
    assert elapsed < EXIT_LIMIT_S, f"took {elapsed:.1f} s to stop"
    _assert_all_gone(workers, within=2.0)  # the resource tracker leaves when the learner's end of its pipe closes
    assert (run / "ckpt" / "ckpt_last.pth.tar").exists()
    result = json.loads((run / "result.json").read_text())
    assert result["stop_reason"] == "interrupted" and result["train_iter"] >= 20


@pytest.mark.slow
def test_workers_exit_when_the_learner_is_killed(tmp_path):
    proc, _ = _start_training(tmp_path)
    try:
        workers = _descendants(proc.pid)
        # two collectors and the evaluator (and multiprocessing's resource tracker), all running
        assert len(_spawned_workers(proc.pid)) >= 3, workers
        assert all(_alive(pid) for pid in workers), workers
    except BaseException:
        proc.kill()
        raise
    proc.kill()  # SIGKILL: no clean-up code runs in the learner
    proc.communicate(timeout=10)
    _assert_all_gone(workers, within=EXIT_LIMIT_S)
