"""Learning results at standard budgets: run a suite of (config, seeds, env-step budget) and report it.

A suite is a Python file in benchmarks/suites/ (``mujoco_sac.py``, ``atari_impala.py``, ``smoke.py``) whose ``TASKS``
list names, per task, a config, its seeds, an env-step budget, the checkpoints to report (with the published return
to reach there) and the published points to draw. Every run is its own ``ding_lite`` process in the runs directory
(outside the repository: checkpoints are large), at most ``--jobs`` at a time, each with one torch thread:

    python benchmarks/learning_suite.py benchmarks/suites/mujoco_sac.py --jobs 2
    python benchmarks/learning_suite.py mujoco_sac --only hopper          # a suite by name; one task
    python benchmarks/learning_suite.py mujoco_sac --only hopper --seed 0 # one run of it
    python benchmarks/learning_suite.py mujoco_sac --report-only          # the table and plots from what exists

A suite spans several sittings: a run whose result.json says it finished (its budget, or the config's stop_value) is
skipped; one that stopped short (Ctrl-C, a kill, an earlier smaller budget) continues with ``--resume`` from its last
checkpoint; a run that failed (stop_reason ``error: ...``) is left alone unless ``--retry-failed``. Ctrl-C stops the
runs cleanly (each writes ckpt_last and result.json), so the next invocation picks them up.

Then the report (learning_suite_report.py): ``benchmarks/results/<suite>.json`` and a Markdown table (return per seed
at each checkpoint, IQM with a 95% stratified bootstrap CI, the published target and whether it is met, wall time,
env steps/s, machine, commit), a plot per task, and copies of the small files of finished runs (eval.csv,
result.json, total_config.py) under ``benchmarks/results/runs/<suite>/<task>/seed<N>/``.
"""
import argparse
import datetime
import glob
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITES = os.path.join(HERE, "suites")
RESULTS = os.path.join(HERE, "results")
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

# benchmarks/learning_suite_report.py
from learning_suite_report import committed_copy, result_state, write_report  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

from ding_lite.torch_utils.threads import available_cores  # noqa: E402
from ding_lite.utils import UserError  # noqa: E402

LAUNCHES = "launches.jsonl"  # in the runs directory: one line per process started (task, seed, resume, commit, date)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass
class Checkpoint:
    """An env step the table reports, with the published return to reach there (None: report only)."""
    env_step: int
    target: Optional[float] = None
    source: str = ""


@dataclass
class Task:
    """One row group of the table: a config trained for ``env_step`` env steps with each of ``seeds``."""
    name: str
    config: str  # relative to the repository root
    seeds: List[int]
    env_step: int
    checkpoints: List[Checkpoint]
    anchors: List[Tuple[str, int, float]] = field(default_factory=list)  # (source, env_step, return), drawn
    reach: Optional[float] = None  # report each seed's first evaluation at or above this return ...
    reach_within: Optional[int] = None  # ... and whether the median over seeds is at or below this env step
    note: str = ""
    sets: List[str] = field(default_factory=list)  # 'key=value' overrides given as --set to every run (and resume)


@dataclass
class Suite:
    name: str
    path: str
    tasks: List[Task]
    note: str = ""


# ---- the suite file --------------------------------------------------------------------------------------------------
def suite_path(name_or_path: str) -> str:
    """A suite file: the path given, or ``benchmarks/suites/<name>.py``."""
    if os.path.isfile(name_or_path):
        return os.path.abspath(name_or_path)
    path = os.path.join(SUITES, f"{name_or_path}.py")
    if os.path.isfile(path):
        return path
    known = sorted(n[:-3] for n in os.listdir(SUITES) if n.endswith(".py"))
    raise UserError(f"suite {name_or_path!r} not found: give a suite file or one of {', '.join(known)}")


def load_suite(name_or_path: str) -> Suite:
    """The suite a file's ``TASKS`` list (dicts with Task's fields; checkpoints as dicts or env steps) defines."""
    path = suite_path(name_or_path)
    names = runpy.run_path(path)
    if not isinstance(names.get("TASKS"), list) or not names["TASKS"]:
        raise UserError(f"{path}: defines no TASKS list; a suite file sets TASKS = [dict(name=..., config=..., "
                        f"seeds=[...], env_step=..., checkpoints=[...]), ...]")
    tasks = []
    for entry in names["TASKS"]:
        entry = dict(entry)
        try:
            entry["checkpoints"] = [Checkpoint(**c) if isinstance(c, dict) else Checkpoint(int(c))
                                    for c in entry.get("checkpoints", [])]
            entry["anchors"] = [tuple(a) for a in entry.get("anchors", [])]
            task = Task(**entry)
        except TypeError as err:
            raise UserError(f"{path}: task {entry.get('name', '?')!r}: {err}; see Task in "
                            f"benchmarks/learning_suite.py for the fields") from None
        bad = [item for item in task.sets if not isinstance(item, str) or "=" not in item]
        if bad:
            raise UserError(f"{path}: task {task.name!r}: sets={bad!r}: each entry is one 'key=value' override as "
                            f"--set takes it, e.g. 'env.manager.type=envpool'")
        if not os.path.isfile(os.path.join(ROOT, task.config)):
            raise UserError(f"{path}: task {task.name!r}: config {task.config} not found (paths are relative to the "
                            f"repository root)")
        late = [c.env_step for c in task.checkpoints if c.env_step > task.env_step]
        if late or not task.checkpoints:
            raise UserError(f"{path}: task {task.name!r}: checkpoints must be non-empty and within the budget "
                            f"({task.env_step:,} env steps); beyond it: {late}")
        tasks.append(task)
    suite_name = os.path.splitext(os.path.basename(path))[0]
    note = (names.get("__doc__") or "").split("\n\n")[0].strip()
    return Suite(name=names.get("NAME", suite_name), path=path, tasks=tasks, note=note)


# ---- the state of a run --------------------------------------------------------------------------------------------
def run_dir(runs_dir: str, task: Task, seed: int) -> str:
    return os.path.join(runs_dir, f"{task.name}_seed{seed}")


def read_json(path: str) -> Optional[dict]:
    """A JSON file's content, or None when absent or unreadable (a run killed while writing it)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_state(path: str, budget: int) -> str:
    """'new' (no directory), 'finished' (result.json: budget reached or stop_value), 'failed' (stop_reason 'error:
    ...'), 'resumable' (stopped short, with a checkpoint to continue from) or 'unstarted' (a directory without a
    checkpoint: killed before its first one)."""
    if not os.path.isdir(path):
        return "new"
    return result_state(read_json(os.path.join(path, "result.json")), budget) or (
        "resumable" if has_checkpoint(path) else "unstarted")


def has_checkpoint(path: str) -> bool:
    return bool(glob.glob(os.path.join(path, "ckpt", "*.pth.tar")))


# ---- launching -------------------------------------------------------------------------------------------------
def git_commit(results_dir: str = RESULTS, root: str = ROOT) -> str:
    """``git rev-parse HEAD`` of the repository (with ``+dirty`` for uncommitted changes), or 'unknown'. Changes
    under ``results_dir`` do not count: they are the reports' own outputs (a report rewrites the JSON and plots an
    earlier one committed), not code the runs ran."""
    rel = os.path.relpath(os.path.realpath(results_dir), os.path.realpath(root))
    exclude = [f":(exclude){rel}"] if inside(results_dir, root) and rel != "." else []
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *exclude],
                               cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def command(task: Task, seed: int, resume: bool, threads: int) -> List[str]:
    """The run's command line: the same -c, budget, thread count and the task's sets every time, plus --resume to
    continue."""
    cmd = [sys.executable, "-m", "ding_lite.cli", "-m", "serial", "-c", os.path.join(ROOT, task.config),
           "-s", str(seed), "--env-step", str(task.env_step), "--exp-name", task.name, "-q",
           "--set", f"torch_threads={threads}"]
    for item in task.sets:
        cmd += ["--set", item]
    return cmd + (["--resume"] if resume else [])


def launch(task: Task, seed: int, resume: bool, runs_dir: str, threads: int, commit: str) -> subprocess.Popen:
    """Start one run in ``runs_dir`` (its own session, so a Ctrl-C reaches it once, from the runner); output to
    ``<runs_dir>/logs/<task>_seed<N>.log``; a line in launches.jsonl records it."""
    cmd = command(task, seed, resume, threads)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               **{var: str(threads) for var in THREAD_VARS})
    os.makedirs(os.path.join(runs_dir, "logs"), exist_ok=True)
    record = {"task": task.name, "seed": seed, "resume": resume, "commit": commit, "cmd": cmd[1:],
              "cpu_model": machine_info()["cpu_model"],
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    with open(os.path.join(runs_dir, LAUNCHES), "a") as f:
        f.write(json.dumps(record) + "\n")
    log = open(os.path.join(runs_dir, "logs", f"{task.name}_seed{seed}.log"), "a")
    log.write(f"\n== {record['date']} {' '.join(cmd)}\n")
    log.flush()
    try:
        return subprocess.Popen(cmd, cwd=runs_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    finally:
        log.close()


def set_aside(path: str) -> str:
    """Rename a run directory that has no checkpoint to ``<path>.unstarted-<N>`` so the run can start afresh."""
    n = 1
    while os.path.exists(f"{path}.unstarted-{n}"):
        n += 1
    shutil.move(path, f"{path}.unstarted-{n}")
    return f"{path}.unstarted-{n}"


def plan(suite: Suite, runs_dir: str, retry_failed: bool, results_dir: str = RESULTS) -> List[Tuple[Task, int, bool]]:
    """The runs to start, as (task, seed, resume); prints what it skips and why. A run with no directory here whose
    committed copy says it finished (on another machine, or a runs directory since deleted) is not run again."""
    todo = []
    for task in suite.tasks:
        for seed in task.seeds:
            path = run_dir(runs_dir, task, seed)
            state = run_state(path, task.env_step)
            copy = committed_copy(results_dir, suite.name, task.name, seed)
            if state == "new" and run_state(copy, task.env_step) == "finished":
                print(f"skip {task.name} seed {seed}: finished, as its committed copy says ({copy})")
            elif state == "finished":
                print(f"skip {task.name} seed {seed}: finished ({path})")
            elif state == "failed" and not retry_failed:
                reason = read_json(os.path.join(path, "result.json"))["stop_reason"]
                print(f"skip {task.name} seed {seed}: failed ({reason}); see {path}/log, then --retry-failed")
            elif state == "unstarted" or (state == "failed" and not has_checkpoint(path)):
                print(f"{task.name} seed {seed}: {path} has no checkpoint to continue from; moved to "
                      f"{set_aside(path)}, starting afresh")
                todo.append((task, seed, False))
            else:
                todo.append((task, seed, state != "new"))
    return todo


def run_all(todo: List[Tuple[Task, int, bool]], runs_dir: str, jobs: int, threads: int,
            results_dir: str = RESULTS) -> int:
    """Run ``todo`` at most ``jobs`` at a time; returns how many exited with an error. Ctrl-C (or SIGTERM) sends
    each run one SIGINT and waits for it to write ckpt_last and result.json; a second Ctrl-C kills them."""
    commit, queue, running = git_commit(results_dir), list(todo), {}
    failures = 0
    # Ctrl-C and SIGTERM raise KeyboardInterrupt here even where the runner started with SIGINT ignored (a background
    # job of a shell script, nohup), where Python would leave it ignored and the runs would go on to their budgets.
    previous = (signal.signal(signal.SIGTERM, signal.default_int_handler),
                signal.signal(signal.SIGINT, signal.default_int_handler))
    try:
        while queue or running:
            while queue and len(running) < jobs:
                task, seed, resume = queue.pop(0)
                print(f"{'resume' if resume else 'start'} {task.name} seed {seed} ({task.env_step:,} env steps)",
                      flush=True)
                running[launch(task, seed, resume, runs_dir, threads, commit)] = (task, seed)
            time.sleep(0.2)
            for proc in [p for p in running if p.poll() is not None]:
                task, seed = running.pop(proc)
                if proc.returncode != 0:
                    failures += 1
                print(f"{task.name} seed {seed}: exit {proc.returncode}"
                      f"{'' if proc.returncode == 0 else f' (see {runs_dir}/logs/{task.name}_seed{seed}.log)'}",
                      flush=True)
    except KeyboardInterrupt:
        stop(running)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    return failures


def stop(running: Dict[subprocess.Popen, Tuple[Task, int]]) -> None:
    """One SIGINT to each run, then wait for them to close cleanly; a second Ctrl-C kills what is left."""
    print(f"interrupted: stopping {len(running)} run(s) cleanly (they write ckpt_last and result.json; the next "
          f"invocation resumes them); Ctrl-C again to kill them", file=sys.stderr, flush=True)
    for proc in running:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGINT)
    try:
        for proc in running:
            proc.wait()
    except KeyboardInterrupt:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ---- the command line ----------------------------------------------------------------------------------------------
def inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory + os.sep)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="a suite file, or the name of one in benchmarks/suites/")
    parser.add_argument("--runs-dir", default=None,
                        help="where the run directories go (default ~/ding_lite_runs/<suite>); not in the repository")
    parser.add_argument("--results-dir", default=RESULTS,
                        help="where <suite>.json, the plots and the small files go (default benchmarks/results)")
    parser.add_argument("--jobs", type=int, default=None, help="runs at a time (default and at most: usable cores)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--only", action="append", default=None, metavar="TASK",
                        help="start runs of this task only (repeatable); the report still holds every task")
    parser.add_argument("--seed", action="append", type=int, default=None, metavar="N",
                        help="start runs of this seed only (repeatable; a seed a task does not list is an error); "
                             "the report still holds every seed")
    parser.add_argument("--report-only", action="store_true", help="start no run: rebuild the table and plots")
    parser.add_argument("--retry-failed", action="store_true", help="resume runs whose stop_reason is an error")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    suite = load_suite(args.suite)
    if args.only:
        unknown = sorted(set(args.only) - {t.name for t in suite.tasks})
        if unknown:
            raise UserError(f"--only {', '.join(unknown)}: no such task in {suite.name}; its tasks are "
                            f"{', '.join(t.name for t in suite.tasks)}")
    # --only chooses the runs to start; the report always holds every task of the suite (with what exists of them)
    chosen = replace(suite, tasks=[t for t in suite.tasks if not args.only or t.name in args.only])
    if args.seed:
        missing = sorted({(t.name, s) for t in chosen.tasks for s in args.seed if s not in t.seeds})
        if missing:
            raise UserError("--seed: " + "; ".join(f"task {n!r} has no seed {s} (its seeds: "
                                                    f"{next(t.seeds for t in chosen.tasks if t.name == n)})"
                                                    for n, s in missing))
        chosen = replace(chosen, tasks=[replace(t, seeds=[s for s in t.seeds if s in args.seed])
                                        for t in chosen.tasks])
    runs_dir = os.path.abspath(os.path.expanduser(args.runs_dir or os.path.join("~", "ding_lite_runs", suite.name)))
    if inside(runs_dir, ROOT):
        raise UserError(f"--runs-dir {runs_dir} is inside the repository {ROOT}: run directories hold large "
                        f"checkpoints; give a path outside it (default ~/ding_lite_runs/{suite.name})")
    cores = available_cores()
    jobs = args.jobs or cores
    if jobs < 1 or args.threads < 1:
        raise UserError(f"--jobs {args.jobs} --threads {args.threads}: both must be at least 1")
    if jobs > cores:
        print(f"--jobs {jobs}: this process may use {cores} core(s); running {cores} at a time")
        jobs = cores
    failures = 0
    if not args.report_only:
        os.makedirs(runs_dir, exist_ok=True)
        todo = plan(chosen, runs_dir, args.retry_failed, args.results_dir)
        try:
            failures = run_all(todo, runs_dir, jobs, args.threads, args.results_dir)
        except KeyboardInterrupt:
            print("stopped; run the same command again to resume", file=sys.stderr)
            return 130
    write_report(suite, runs_dir, args.results_dir, run_dir, machine_info(), git_commit(args.results_dir))
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as err:
        print(f"learning_suite: error: {err}", file=sys.stderr)
        sys.exit(2)
