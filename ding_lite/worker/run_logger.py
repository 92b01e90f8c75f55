"""What a run writes besides checkpoints: TensorBoard events, a plain-text log, eval.csv and the progress line."""
import csv
import logging
import os
import sys
import time
from typing import Dict

from tensorboardX import SummaryWriter

EVAL_FIELDS = ["train_iter", "env_step", "wall_time", "return_mean", "return_std", "return_min", "return_max",
               "episodes"]


class RunLogger:
    """Writes ``log/`` (TensorBoard + ``train.log``) and ``eval.csv`` under ``run_dir``; prints progress lines.

    Steps continue across ``--resume`` because callers pass the restored counters; new events go to a new file in
    the same directory, which TensorBoard reads as one run.
    """

    def __init__(self, run_dir: str, name: str, quiet: bool = False, wall_time_offset: float = 0.0) -> None:
        self.run_dir = run_dir
        self.name = name
        log_dir = os.path.join(run_dir, "log")
        os.makedirs(log_dir, exist_ok=True)
        # tensorboardX names event files by the second; a unique suffix keeps a quick resume from overwriting one.
        self.tb = SummaryWriter(log_dir, filename_suffix=f".{os.getpid()}.{time.time_ns()}")
        self.text = logging.getLogger(f"ding_lite.run.{name}.{id(self)}")
        self.text.setLevel(logging.INFO)
        self.text.propagate = False
        handler = logging.FileHandler(os.path.join(log_dir, "train.log"))
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        self.text.addHandler(handler)
        self.quiet = quiet
        self.start = time.time() - wall_time_offset
        self.eval_csv = os.path.join(run_dir, "eval.csv")
        if not os.path.exists(self.eval_csv):
            with open(self.eval_csv, "w", newline="") as f:
                csv.writer(f).writerow(EVAL_FIELDS)

    @property
    def wall_time(self) -> float:
        return time.time() - self.start

    def scalars(self, prefix: str, values: Dict[str, float], step: int) -> None:
        for key, value in values.items():
            self.tb.add_scalar(f"{prefix}/{key}", value, step)

    def info(self, message: str, echo: bool = True) -> None:
        self.text.info(message)
        if echo and not self.quiet:
            print(f"[{self.name}] {message}", file=sys.stdout, flush=True)

    def eval_row(self, train_iter: int, env_step: int, result: Dict[str, float]) -> None:
        row = {"train_iter": train_iter, "env_step": env_step, "wall_time": round(self.wall_time, 3), **result}
        with open(self.eval_csv, "a", newline="") as f:
            csv.DictWriter(f, EVAL_FIELDS).writerow({k: row[k] for k in EVAL_FIELDS})
        self.scalars("evaluator_step", {k: result[k] for k in ("return_mean", "return_std")}, env_step)
        self.scalars("evaluator_iter", {k: result[k] for k in ("return_mean", "return_std")}, train_iter)

    def close(self) -> None:
        self.tb.close()
        for handler in list(self.text.handlers):
            handler.close()
            self.text.removeHandler(handler)


class Throughput:
    """Env steps and train iterations per second since the previous call."""

    def __init__(self, env_step: int = 0, train_iter: int = 0) -> None:
        self._last = (time.perf_counter(), env_step, train_iter)

    def __call__(self, env_step: int, train_iter: int) -> Dict[str, float]:
        now = time.perf_counter()
        t0, s0, i0 = self._last
        self._last = (now, env_step, train_iter)
        dt = max(now - t0, 1e-9)
        return {"env_step_per_s": (env_step - s0) / dt, "train_iter_per_s": (train_iter - i0) / dt}
