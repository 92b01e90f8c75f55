"""What a run writes besides checkpoints: TensorBoard events, a plain-text log, eval.csv and the progress line."""
import csv
import io
import logging
import os
import sys
import time
from typing import Dict, List, Optional, Tuple

from tensorboardX import SummaryWriter

from ding_lite.utils.file_io import atomic_write_text, io_error, nofollow_opener
from ding_lite.utils.signals import deferred_interrupts

from .trackers import close_trackers, log_to_trackers, open_trackers, status_of

EVAL_FIELDS = ["train_iter", "env_step", "wall_time", "return_mean", "return_std", "return_min", "return_max",
               "episodes"]


class RunLogger:
    """Writes ``log/`` (TensorBoard + ``train.log``) and ``eval.csv`` under ``run_dir``; prints progress lines.

    TensorBoard gets two event directories, one per x axis: ``log/`` (env steps) and ``log/train_iter/`` (train
    iterations). A resumed run (``resume_at=(train_iter, env_step, last_eval_iter)`` of its checkpoint) continues
    both axes from there and marks the restart in each (tensorboardX's ``purge_step``), so TensorBoard hides the
    events a crashed run wrote past its checkpoint instead of drawing them twice. Likewise eval.csv keeps only the
    rows of evaluations the checkpoint had counted (train_iter <= last_eval_iter, env_step <= env_step): the resumed
    run repeats the others, so they move to ``eval_discarded.csv``. Each evaluation appends one row to eval.csv and
    fsyncs it; a last line a crash cut short (no newline) is dropped when the run is opened again.

    With ``cfg`` (the compiled config), the trackers its ``tracker`` section enables (W&B, MLflow: see
    ``trackers.py``) get every scalar TensorBoard gets, at the same step; a resumed run continues their runs.
    ``stop_reason`` (set when result.json is written) gives their closing status.
    """

    def __init__(self, run_dir: str, name: str, quiet: bool = False, wall_time_offset: float = 0.0,
                 resume_at: Optional[Tuple[int, int, int]] = None, cfg: Optional[Dict] = None) -> None:
        self.run_dir = run_dir
        self.name = name
        log_dir = os.path.join(run_dir, "log")
        try:
            os.makedirs(os.path.join(log_dir, "train_iter"), exist_ok=True)
        except OSError as err:
            raise io_error(err, "create the log directory", log_dir) from None
        # tensorboardX names event files by the second; a unique suffix keeps a quick resume from overwriting one.
        suffix = f".{os.getpid()}.{time.time_ns()}"
        purge_iter, purge_step = resume_at[:2] if resume_at is not None else (None, None)
        self.tb = SummaryWriter(log_dir, filename_suffix=suffix, purge_step=purge_step)
        self.tb_iter = SummaryWriter(os.path.join(log_dir, "train_iter"), filename_suffix=suffix,
                                     purge_step=purge_iter)
        self.text = logging.getLogger(f"ding_lite.run.{name}.{id(self)}")
        self.text.setLevel(logging.INFO)
        self.text.propagate = False
        handler = logging.FileHandler(os.path.join(log_dir, "train.log"))
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        self.text.addHandler(handler)
        self.quiet = quiet
        self.bar = None  # the live progress bar, on a terminal (start_progress)
        self.start = time.time() - wall_time_offset
        self.eval_csv = os.path.join(run_dir, "eval.csv")
        self.eval_rows, torn = self._read_eval_rows()
        if torn:  # a crash mid-append: the rows before it are whole; write them back without the cut line
            self._write_eval_csv()
            self.info(f"eval.csv: dropped its last line, cut short by a crash ({torn!r})", echo=False)
        if resume_at is not None:
            self._drop_rows_past(resume_at[2], resume_at[1])
        if not os.path.exists(self.eval_csv):
            self._write_eval_csv()
        self.stop_reason: Optional[str] = None
        self.trackers = []
        try:
            self.trackers = open_trackers(cfg, run_dir, resume_at is not None, self.info)
        except BaseException:
            self.close()
            raise

    @property
    def wall_time(self) -> float:
        return time.time() - self.start

    def scalars(self, prefix: str, values: Dict[str, float], step: int, axis: str = "env_step") -> None:
        """``values`` as ``prefix/key`` at ``step`` of ``axis`` ('env_step' or 'train_iter')."""
        writer = self.tb_iter if axis == "train_iter" else self.tb
        with deferred_interrupts():  # a Ctrl-C inside tensorboardX's queue hand-off can hang its close()
            for key, value in values.items():
                writer.add_scalar(f"{prefix}/{key}", value, step)
        if self.trackers and values:
            self.trackers = log_to_trackers(self.trackers, {f"{prefix}/{k}": v for k, v in values.items()}, step,
                                            axis, self.info)

    def histogram(self, tag: str, values, step: int) -> None:
        """A histogram of ``values`` at env step ``step``."""
        with deferred_interrupts():
            self.tb.add_histogram(tag, values, step)

    def info(self, message: str, echo: bool = True) -> None:
        """A line in train.log and, unless quiet, on the terminal (above the progress bar when there is one)."""
        self.text.info(message)
        if echo and not self.quiet:
            if self.bar is not None:
                self.bar.write(f"[{self.name}] {message}", file=sys.stdout)
            else:
                print(f"[{self.name}] {message}", file=sys.stdout, flush=True)

    def start_progress(self, total_env_step: Optional[int], env_step: int) -> None:
        """On a terminal (and not quiet), show progress as one live line (tqdm): env steps/s, the ETA to
        ``total_env_step`` (the --env-step budget; none without one) and what ``progress`` adds. Elsewhere (a file,
        a pipe, CI) progress stays one plain line per report, as in train.log."""
        if self.quiet or not sys.stdout.isatty():
            return
        from tqdm import tqdm
        layout = ("{desc}: {percentage:3.0f}%|{bar:12}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}"
                  "{postfix}]" if total_env_step else "{desc}: {n_fmt} [{elapsed}, {rate_fmt}{postfix}]")
        self.bar = tqdm(total=total_env_step, initial=env_step, unit=" env steps", unit_scale=True,
                        dynamic_ncols=True, file=sys.stdout, smoothing=0.3, mininterval=0.5, leave=False,
                        desc=self.name, bar_format=layout)

    def progress(self, line: str, env_step: int, postfix: str) -> None:
        """A progress report: ``line`` into train.log; on the terminal the live bar moves to ``env_step`` with
        ``postfix`` (train iters/s, the last evaluation, ...), or without a bar ``line`` is printed."""
        if self.bar is None:
            self.info(line)
            return
        self.text.info(line)
        self.bar.update(env_step - self.bar.n)
        self.bar.set_postfix_str(postfix, refresh=False)

    # ---- eval.csv ------------------------------------------------------------------------------------------------
    def eval_row(self, train_iter: int, env_step: int, result: Dict[str, float]) -> None:
        row = {"train_iter": train_iter, "env_step": env_step, "wall_time": round(self.wall_time, 3), **result}
        self.eval_rows.append({k: str(row[k]) for k in EVAL_FIELDS})
        self._append_eval_row(self.eval_rows[-1])
        self.scalars("evaluator_step", {k: result[k] for k in ("return_mean", "return_std")}, env_step)
        self.scalars("evaluator_iter", {k: result[k] for k in ("return_mean", "return_std")}, train_iter,
                     axis="train_iter")

    def _read_eval_rows(self) -> Tuple[List[Dict[str, str]], Optional[str]]:
        """The rows of eval.csv, and the last line when a crash cut it short (no newline; then it is not a row)."""
        if not os.path.exists(self.eval_csv):
            return [], None
        with open(self.eval_csv, newline="") as f:
            text = f.read()
        whole, _, torn = text.rpartition("\n") if not text.endswith("\n") else (text, "", "")
        rows = [{k: row.get(k, "") for k in EVAL_FIELDS} for row in csv.DictReader(io.StringIO(whole + "\n"))]
        return rows, (torn or None)

    def _append_eval_row(self, row: Dict[str, str]) -> None:
        """One row at the end of eval.csv, flushed and fsynced (a crash can cut only this line short)."""
        out = io.StringIO()
        csv.DictWriter(out, EVAL_FIELDS, lineterminator="\n").writerow(row)
        try:
            with open(self.eval_csv, "a", newline="", opener=nofollow_opener) as f:  # never through a link
                f.write(out.getvalue())
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            raise io_error(err, "append to", self.eval_csv) from None

    def _write_eval_csv(self) -> None:
        atomic_write_text(_csv_text(self.eval_rows), self.eval_csv)

    def _drop_rows_past(self, train_iter: int, env_step: int) -> None:
        """Keep the rows of evaluations up to ``train_iter`` and ``env_step``; move the later ones (written by a run
        after its checkpoint) to eval_discarded.csv."""
        def past(row: Dict[str, str]) -> bool:
            return int(row["train_iter"]) > train_iter or int(row["env_step"]) > env_step

        dropped = [row for row in self.eval_rows if past(row)]
        if not dropped:
            return
        discarded = os.path.join(self.run_dir, "eval_discarded.csv")
        old = []
        if os.path.exists(discarded):
            with open(discarded, newline="") as f:
                old = [{k: row.get(k, "") for k in EVAL_FIELDS} for row in csv.DictReader(f)]
        atomic_write_text(_csv_text(old + dropped), discarded)
        self.eval_rows = [row for row in self.eval_rows if not past(row)]
        self._write_eval_csv()
        self.info(f"resume: {len(dropped)} eval.csv row(s) written after the checkpoint (past train_iter "
                  f"{train_iter:,}) moved to eval_discarded.csv")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        with deferred_interrupts():
            self.tb.close()
            self.tb_iter.close()
        trackers, self.trackers = self.trackers, []
        try:
            close_trackers(trackers, status_of(self.stop_reason), self.info)
        finally:
            for handler in list(self.text.handlers):
                handler.close()
                self.text.removeHandler(handler)


def _csv_text(rows: List[Dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, EVAL_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


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
