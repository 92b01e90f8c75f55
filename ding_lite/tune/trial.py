"""One trial: an ordinary ``ding_lite -m serial`` run per seed, in a process of its own, watched through its
eval.csv; its evaluations go to the pruner as they appear, and a pruned run is asked to stop cleanly (a
``stop_request`` file in its directory: the run ends between updates, writes ckpt_last, and records
``stop_reason: pruned`` in result.json).
"""
import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ding_lite.analysis.runs import read_eval_csv, read_result
from ding_lite.utils import UserError

METRICS = ("final", "best", "auc")
POLL_S = 0.25  # how often a running trial's eval.csv is read
STOP_REQUEST = "stop_request"  # the file a run stops on (ding_lite.run.run_dir; its first word: the stop reason)
STOP_GRACE_S = 60.0  # after a stop request, how long a run may take to end before it is sent SIGTERM


class TrialFailed(Exception):
    """A trial's run ended with an error (its message: the run's last error line and its log)."""


def metric_value(evals: Dict[str, np.ndarray], metric: str) -> float:
    """The trial value of one run's evaluations: the last return (``final``), the highest (``best``), or the mean
    return over the env steps evaluated, i.e. the area under the curve divided by its length (``auc``)."""
    returns, steps = evals["return_mean"], evals["env_step"]
    if metric == "final":
        return float(returns[-1])
    if metric == "best":
        return float(np.max(returns))
    if metric == "auc":
        if returns.size < 2 or steps[-1] <= steps[0]:
            return float(returns[-1])
        return float(np.sum((returns[1:] + returns[:-1]) / 2 * np.diff(steps)) / (steps[-1] - steps[0]))
    raise UserError(f"--metric {metric!r}: choose one of {', '.join(METRICS)}")


def read_evals(run_dir: str) -> Optional[Dict[str, np.ndarray]]:
    """The run's eval.csv columns so far (``ding_lite.analysis``'s reader), or None before its first row."""
    path = os.path.join(run_dir, "eval.csv")
    if not os.path.isfile(path):
        return None
    try:
        return read_eval_csv(path)
    except UserError:  # header only, or a row being written
        return None


def trial_command(base_config: str, exp_name: str, seed: int, env_step: Optional[int],
                  assignments: Dict[str, Any], extra_sets: Sequence[str]) -> List[str]:
    """The command line of one seed of a trial: ``ding_lite -m serial`` on the study's base config, quiet, with the
    trial's values as ``--set`` items after the user's own; one torch thread (``torch_threads=1``) unless the user's
    ``--set`` names torch_threads, since ``--jobs`` trials share the cores."""
    cmd = [sys.executable, "-m", "ding_lite.tune.child", "-m", "serial", "-c", base_config, "-s", str(seed),
           "--exp-name", exp_name, "-q"]
    if env_step is not None:
        cmd += ["--env-step", str(env_step)]
    threads = [] if any(item.strip().startswith("torch_threads=") for item in extra_sets) else ["torch_threads=1"]
    for item in threads + list(extra_sets) + [f"{path}={value!r}" for path, value in assignments.items()]:
        cmd += ["--set", item]
    return cmd


def child_env() -> Dict[str, str]:
    """The environment of a trial's process: one thread for torch's and NumPy's math libraries (each trial process
    is one of ``--jobs``)."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.setdefault(name, "1")
    return env


def run_seed(cmd: List[str], run_dir: str, log_path: str,
             on_eval: Callable[[Dict[str, np.ndarray]], bool]) -> Tuple[int, bool]:
    """Run ``cmd`` (one seed of a trial) to its end; ``on_eval`` gets the run's evaluations each time a row is added
    and answers whether to prune. Returns (exit status, pruned)."""
    pruned, seen = False, 0
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env())
        try:
            stop_sent: Optional[float] = None
            while True:
                code = proc.poll()
                evals = read_evals(run_dir)
                rows = 0 if evals is None else int(evals["env_step"].size)
                if rows > seen and not pruned:
                    seen = rows
                    if on_eval(evals):
                        pruned, stop_sent = True, time.monotonic()
                        with open(os.path.join(run_dir, STOP_REQUEST), "w") as f:
                            f.write("pruned\n")
                if code is not None:
                    return code, pruned
                if stop_sent is not None and time.monotonic() - stop_sent > STOP_GRACE_S:
                    proc.send_signal(signal.SIGTERM)
                    stop_sent = None
                time.sleep(POLL_S)
        except BaseException:
            if proc.poll() is None:  # the study is interrupted: the run stops cleanly too (SIGTERM)
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
            raise


def last_error_line(log_path: str) -> str:
    """The run's last line that starts with 'ding_lite: error' (or its last line), for a failed trial's record."""
    try:
        with open(log_path, errors="replace") as f:
            lines = [line.rstrip() for line in f if line.strip()]
    except OSError:
        return "(no log)"
    errors = [line for line in lines if line.startswith("ding_lite: error")]
    return (errors or lines or ["(empty log)"])[-1][:500]


def run_result(run_dir: str) -> Dict[str, Any]:
    """result.json of a finished run ({} when it wrote none)."""
    try:
        return read_result(os.path.join(run_dir, "result.json")) or {}
    except UserError:
        return {}
