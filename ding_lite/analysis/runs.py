"""Reading run directories (eval.csv, result.json) into ``RunRecord``s, and grouping them for comparison.

Only eval.csv and result.json are read: total_config.py is Python code and is never executed here, so the
experiment name and seed come from the directory name ``<exp_name>_seed<N>``.
"""
import csv
import io
import json
import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ding_lite.utils import UserError

EVAL_COLUMNS = ("train_iter", "env_step", "wall_time", "return_mean", "return_std", "return_min", "return_max",
                "episodes")
GROUP_BY = ("exp_name", "path")
# Files a run writes early: a directory holding one of them but no eval.csv is a broken run, not an unrelated folder.
_RUN_MARKERS = ("eval.csv", "result.json", "total_config.py")
_RUN_NAME = re.compile(r"^(?P<exp>.+)_seed(?P<seed>\d+)$")


@dataclass
class RunRecord:
    """One run directory: its eval.csv columns (float arrays sorted by env_step) and result.json (None if absent,
    i.e. the run is still going or was killed)."""
    path: str
    exp_name: str
    seed: Optional[int]
    evals: Dict[str, np.ndarray]
    result: Optional[dict]


def load_runs(paths: Sequence[str]) -> List[RunRecord]:
    """Runs found at ``paths``: each is a run directory (it has eval.csv) or a directory of run directories (one
    level down). Sorted by (exp_name, seed); a run reached twice (a parent and its child given) is read once.

    Raises UserError, naming the path, for a path that is neither, or a run whose eval.csv is missing, empty or
    malformed.
    """
    run_dirs: List[str] = []
    for path in paths:
        run_dirs.extend(_find_run_dirs(path))
    seen, runs = set(), []
    for run_dir in run_dirs:
        key = os.path.realpath(run_dir)
        if key not in seen:
            seen.add(key)
            runs.append(load_run(run_dir))
    return sorted(runs, key=_sort_key)


def load_run(run_dir: str) -> RunRecord:
    """The ``RunRecord`` of one run directory."""
    exp_name, seed = parse_run_name(os.path.basename(os.path.normpath(run_dir)))
    return RunRecord(path=os.path.normpath(run_dir), exp_name=exp_name, seed=seed,
                     evals=read_eval_csv(os.path.join(run_dir, "eval.csv")),
                     result=read_result(os.path.join(run_dir, "result.json")))


def parse_run_name(name: str) -> Tuple[str, Optional[int]]:
    """(exp_name, seed) of a directory named ``<exp_name>_seed<N>``; (name, None) for any other name."""
    match = _RUN_NAME.match(name)
    if match is None:
        return name, None
    return match.group("exp"), int(match.group("seed"))


def read_eval_csv(path: str) -> Dict[str, np.ndarray]:
    """eval.csv's columns as float arrays, rows sorted by env_step (stable, so equal steps keep file order); a last
    line without its newline (cut short by a crash while a run appended it) is left out."""
    if not os.path.isfile(path):
        raise UserError(f"{path}: missing (the run directory has no eval.csv)")
    try:
        with open(path, newline="") as f:
            text = f.read()
        if "\n" in text and not text.endswith("\n"):  # a row a run was appending when it died: not a row yet
            text = text[:text.rindex("\n") + 1]
        rows = list(csv.reader(io.StringIO(text)))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UserError(f"{path}: cannot read: {err}") from None
    if not rows:
        raise UserError(f"{path}: empty file (no header, no evaluations)")
    header = [name.strip() for name in rows[0]]
    missing = [c for c in EVAL_COLUMNS if c not in header]
    if missing:
        raise UserError(f"{path}: malformed: header lacks column(s) {', '.join(missing)} (expected "
                        f"{','.join(EVAL_COLUMNS)})")
    body = [row for row in rows[1:] if row]
    if not body:
        raise UserError(f"{path}: no evaluation rows yet (only the header)")
    table = np.empty((len(body), len(EVAL_COLUMNS)))
    where = [header.index(c) for c in EVAL_COLUMNS]
    for i, row in enumerate(body):
        if len(row) != len(header):
            raise UserError(f"{path}: malformed: data row {i + 1} has {len(row)} fields, the header {len(header)}")
        for j, k in enumerate(where):
            try:
                table[i, j] = float(row[k])
            except ValueError:
                raise UserError(f"{path}: malformed: data row {i + 1}, column {EVAL_COLUMNS[j]}: {row[k]!r} is "
                                f"not a number") from None
    order = np.argsort(table[:, EVAL_COLUMNS.index("env_step")], kind="stable")
    return {c: table[order, j] for j, c in enumerate(EVAL_COLUMNS)}


def read_result(path: str) -> Optional[dict]:
    """result.json's content, or None when the file is absent (a run still going, or killed)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            result = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise UserError(f"{path}: cannot read: {err}") from None
    if not isinstance(result, dict):
        raise UserError(f"{path}: malformed: expected a JSON object, got {type(result).__name__}")
    return result


def group_runs(runs: Sequence[RunRecord], by: str = "exp_name") -> Dict[str, List[RunRecord]]:
    """Runs grouped by experiment name ('exp_name': the seeds of one experiment together) or by 'path' (each run
    alone), in the runs' order. The same (exp_name, seed) twice in one group (runs from two parent directories) is
    an error: averaging it would count one seed twice."""
    if by not in GROUP_BY:
        raise UserError(f"cannot group runs by {by!r}: choose one of {', '.join(GROUP_BY)}")
    groups: Dict[str, List[RunRecord]] = {}
    for run in runs:
        groups.setdefault(run.exp_name if by == "exp_name" else run.path, []).append(run)
    for name, members in groups.items():
        seeds: Dict[Optional[int], str] = {}
        for run in members:
            if run.seed in seeds:
                raise UserError(f"experiment {name!r} has seed {run.seed} twice ({seeds[run.seed]} and {run.path}): "
                                f"group by 'path', or compare them separately")
            seeds[run.seed] = run.path
    return groups


def _find_run_dirs(path: str) -> List[str]:
    if not os.path.exists(path):
        raise UserError(f"{path}: no such directory")
    if not os.path.isdir(path):
        raise UserError(f"{path}: not a directory (give a run directory or a directory of run directories)")
    if _looks_like_run(path):
        return [path]
    found = [os.path.join(path, name) for name in sorted(os.listdir(path))
             if os.path.isdir(os.path.join(path, name)) and _looks_like_run(os.path.join(path, name))]
    if not found:
        raise UserError(f"{path}: neither a run directory (no eval.csv) nor a directory of run directories")
    return found


def _looks_like_run(path: str) -> bool:
    return any(os.path.isfile(os.path.join(path, marker)) for marker in _RUN_MARKERS)


def _sort_key(run: RunRecord) -> Tuple[str, bool, int, str]:
    return run.exp_name, run.seed is None, run.seed if run.seed is not None else 0, run.path
