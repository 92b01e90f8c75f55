"""Nothing lost at the last second: a stop signal or an env error inside the final evaluation (after training has
ended) still writes ckpt_last and result.json, whole, with the stop reason that ended the run; Ctrl-C to the whole
process group of a run with 'subprocess' env processes is an interrupt (exit 130/143), not a broken pipe."""
import os
import signal
import subprocess
import sys
import time

import pytest

from entry_helpers import CARTPOLE, REPO, SMALL, load_ckpt, read_eval_csv, read_result
from final_eval_env import MARKER

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = "cartpole_impala_seed0"
TRAIN_ITER = 30
# evaluations at train_iter 0 and, after training, the final one: nothing in between
FINAL_ONLY = ["--train-iter", str(TRAIN_ITER), "--set", "env.stop_value=None",
              "--set", "policy.eval.evaluator.eval_freq=1000000"]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, HERE, os.environ.get("PYTHONPATH", "")]))


def _cli(*args: str, cwd, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ding_lite.cli", *args], cwd=cwd, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _temp_files(run) -> list:
    return [os.path.join(root, n) for root, _, names in os.walk(run) for n in names if n.startswith(".tmp_")]


def _assert_kept(run, stop_reason: str) -> dict:
    """result.json says ``stop_reason`` and ckpt_last holds the same counters; no half-written file is left."""
    result = read_result(run)
    assert result["stop_reason"] == stop_reason, result
    counters = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")["counters"]
    assert (counters["train_iter"], counters["env_step"]) == (result["train_iter"], result["env_step"])
    assert not _temp_files(run)
    return result


@pytest.mark.parametrize("sig, wrapper, last_line", [
    (signal.SIGINT, "SigintInFinalEval", "ding_lite: interrupted"),
    (signal.SIGTERM, "SigtermInFinalEval", "ding_lite: terminated"),
], ids=["SIGINT", "SIGTERM"])
@pytest.mark.slow
def test_a_signal_inside_the_final_evaluation_keeps_the_run(tmp_path, sig, wrapper, last_line):
    proc = _cli("-c", CARTPOLE, "-q", *SMALL, *FINAL_ONLY, "--set", f"env.wrappers=['final_eval_env:{wrapper}']",
                cwd=tmp_path)
    _, err = proc.communicate(timeout=120)
    assert (tmp_path / MARKER).read_text() == f"{wrapper}\n", err  # the signal came inside the final evaluation
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == last_line, err
    run = tmp_path / RUN
    result = _assert_kept(run, "interrupted")
    assert result["train_iter"] == TRAIN_ITER
    _, rows = read_eval_csv(run)
    assert [int(r["train_iter"]) for r in rows] == [0]  # the final evaluation was cut: no row for it


def test_an_env_error_inside_the_final_evaluation_keeps_the_run(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RuntimeError, match="failed in the final evaluation"):
        cli.train(*FINAL_ONLY, "--set", "env.wrappers=['final_eval_env:RaiseInFinalEval']", env_step=None)
    assert (tmp_path / MARKER).exists()
    assert _assert_kept(tmp_path / RUN, "error: RuntimeError")["train_iter"] == TRAIN_ITER


# ---- Ctrl-C in a terminal: the signal reaches every process of the group, env processes included ---------------------
def _group_gone(pgid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
# SIGINT is in the long tier (benchmarks/studies/ci_time.md#the-long-tier-2026-11-29): SIGTERM takes the same path in
# CI.
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGINT, marks=pytest.mark.long), signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_with_subprocess_envs_is_an_interrupt(tmp_path, sig):
    """As a terminal's Ctrl-C (or ``timeout``, a job scheduler) does: the signal goes to the run and its env processes
    at once; the env processes that stop with it are part of the interrupt, not a broken pipe."""
    proc = _cli("-c", CARTPOLE, "-q", *SMALL, "--env-step", "100000000", "--set", "env.stop_value=None",
                "--set", "env.manager.type=subprocess", "--set", "policy.learn.learner.hook.log_show_after_iter=10",
                cwd=tmp_path, start_new_session=True)
    run, pgid = tmp_path / RUN, proc.pid
    try:
        log, deadline = run / "log" / "train.log", time.monotonic() + 120
        while not (log.exists() and "train_iter 20 |" in log.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start training within 120 s"
            time.sleep(0.1)
        os.killpg(pgid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(pgid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    last_line = "ding_lite: interrupted" if sig == signal.SIGINT else "ding_lite: terminated"
    assert err.strip().splitlines()[-1] == last_line, err
    assert "Traceback" not in err and "Broken pipe" not in err and "ERROR" not in err, err
    assert _assert_kept(run, "interrupted")["train_iter"] >= 20
    assert _group_gone(pgid, within=5.0), "env processes outlived the run"
