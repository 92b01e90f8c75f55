"""The report of a learning suite (benchmarks/learning_suite.py): ``<suite>.json``, a Markdown table, a plot per task
and the small files of finished runs, all under the results directory: the runs' files under ``runs/<suite>/``
(``runs/<suite>/<task>/seed<N>/``), so that the results directory's top level holds results files only.

A seed's return at a checkpoint is the deterministic evaluation there: the eval.csv row with the largest env step at
or below the checkpoint plus 0.1% (``SLACK``: each resume moves a run's later evaluations one collection on, the
collection made before the interruption and trained on after it, so the evaluation of 100k lies at 100,002 after two
resumes), and the table says which env step that was. Two cases read further: at the checkpoint that
is the budget, a finished run's final evaluation counts (a run stops at the first env step at or past its budget, so
that evaluation may lie a collect beyond it); a run that finished by reaching the config's stop_value keeps its last
evaluation for the later checkpoints (marked ``stop_value``). A run that has not reached a checkpoint yet has no value
there, and a target counts as met only when every seed has one.
"""
import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import numpy as np

from ding_lite.analysis.runs import read_eval_csv, read_result
from ding_lite.analysis.stats import iqm, stratified_bootstrap_ci
from ding_lite.utils import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_FILES = ("eval.csv", "result.json", "total_config.py")  # what is committed of a finished run
LAUNCHES = "launches.jsonl"
SLACK = 0.001  # an evaluation up to this fraction past a checkpoint stands for it (resumes shift evaluations)
RUN_COPIES = "runs"  # under the results directory: <suite>/<task>/seed<N>/ holds a finished run's SMALL_FILES


def load_seed(run_path: str, copy_path: str) -> Optional[Dict[str, Any]]:
    """A seed's evaluations and result.json, from its run directory or else from the committed copy; None if neither
    has an evaluation yet."""
    for path, source in ((run_path, "run"), (copy_path, "copy")):
        try:
            evals = read_eval_csv(os.path.join(path, "eval.csv"))
        except UserError:
            continue
        return {"path": path, "source": source, "evals": evals,
                "result": read_result(os.path.join(path, "result.json"))}
    return None


def result_state(result: Optional[Dict[str, Any]], budget: int) -> Optional[str]:
    """What a run's result.json says of it: 'finished' (``budget`` env steps reached, or stop_value), 'failed'
    (stop_reason 'error: ...'), or None (no result.json, or one a run stopped short of its budget wrote)."""
    if result is None:
        return None
    reason = str(result.get("stop_reason", ""))
    if reason == "stop_value" or (reason in ("max_env_step", "max_train_iter") and result["env_step"] >= budget):
        return "finished"
    return "failed" if reason.startswith("error") else None


def seed_state(run: Dict[str, Any], budget: int) -> str:
    """'finished' (budget or stop_value), 'failed', or 'partial' (still going, or stopped short)."""
    return result_state(run["result"], budget) or "partial"


def covered(run: Dict[str, Any], column: str = "env_step") -> float:
    """How far the run has got, in env steps (or ``column='wall_time'``, seconds): its result.json's, or its last
    evaluation's where that is later (a resumed run still going has passed the result.json its interruption left)."""
    last = float(run["evals"][column][-1])
    result = run["result"]
    return last if result is None else max(float(result[column]), last)


def value_at(run: Dict[str, Any], checkpoint: int, budget: int, state: str) -> Optional[Dict[str, Any]]:
    """The evaluation that stands for ``checkpoint`` (see the module's docstring), or None."""
    evals, result = run["evals"], run["result"]
    progress = int(covered(run))
    limit, note = checkpoint + int(checkpoint * SLACK), None
    stopped_early = state == "finished" and result["stop_reason"] == "stop_value" and progress < checkpoint
    if stopped_early:
        limit, note = progress, "stop_value"
    elif progress < checkpoint:
        return None
    elif state == "finished" and checkpoint == budget:
        limit = max(limit, progress)
    rows = np.nonzero(evals["env_step"] <= limit)[0]
    if rows.size == 0:
        return None
    i = rows[-1]
    return {"return": float(evals["return_mean"][i]), "at_env_step": int(evals["env_step"][i]),
            "episodes": int(evals["episodes"][i]), **({"note": note} if note else {})}


def first_reach(run: Dict[str, Any], threshold: float, state: str) -> Optional[float]:
    """Env step of the first evaluation at or above ``threshold``; inf for a finished run that never got there,
    None for one still going."""
    hits = np.nonzero(run["evals"]["return_mean"] >= threshold)[0]
    if hits.size:
        return float(run["evals"]["env_step"][hits[0]])
    return float("inf") if state in ("finished", "failed") else None


def task_report(task, runs: Dict[int, Optional[Dict[str, Any]]]) -> Dict[str, Any]:
    """The table's entry for one task: per checkpoint the seeds' returns, IQM, CI and target; per seed its run."""
    states = {seed: seed_state(run, task.env_step) if run else "not started" for seed, run in runs.items()}
    seeds_out = []
    for seed, run in runs.items():
        entry: Dict[str, Any] = {"seed": seed, "state": states[seed]}
        if run:
            result = run["result"] or {}
            env_step, wall = int(covered(run)), covered(run, "wall_time")
            entry.update(stop_reason=result.get("stop_reason"), env_step=env_step, wall_time_s=round(wall, 1),
                         env_step_per_s=round(env_step / wall, 1) if wall else None,
                         final_return=result.get("final_return"), best_return=result.get("best_return"),
                         read_from=run["source"])
        seeds_out.append(entry)
    checkpoints = []
    for cp in task.checkpoints:
        per_seed = {seed: value_at(run, cp.env_step, task.env_step, states[seed]) if run else None
                    for seed, run in runs.items()}
        values = np.array([v["return"] for v in per_seed.values() if v is not None])
        row: Dict[str, Any] = {"env_step": cp.env_step, "per_seed": [{"seed": s, **(v or {"return": None})}
                                                                    for s, v in per_seed.items()],
                               "seeds_with_value": int(values.size), "target": cp.target, "source": cp.source}
        if values.size:
            low, high = stratified_bootstrap_ci(values, iqm)
            row.update(iqm=round(iqm(values), 1), ci95=[round(low, 1), round(high, 1)])
        else:
            row.update(iqm=None, ci95=None)
        complete = values.size == len(runs)
        row["met"] = None if cp.target is None or not complete else bool(row["iqm"] >= cp.target)
        row["min_evaluation_episodes"] = min((v["episodes"] for v in per_seed.values() if v), default=None)
        checkpoints.append(row)
    out = {"task": task.name, "config": task.config, "seeds": list(runs), "env_step_budget": task.env_step,
           "note": task.note, "checkpoints": checkpoints, "runs": seeds_out,
           "anchors": [{"source": s, "env_step": e, "return": r} for s, e, r in task.anchors]}
    if task.reach is not None:
        firsts = {seed: first_reach(run, task.reach, states[seed]) if run else None for seed, run in runs.items()}
        known = None if any(v is None for v in firsts.values()) else float(np.median(list(firsts.values())))
        met, bound = reach_verdict(list(firsts.values()), known, task.reach_within)
        out["reach"] = {"return": task.reach, "within_env_step": task.reach_within,
                        "first_env_step": {str(s): (None if v is None or np.isinf(v) else int(v))
                                           for s, v in firsts.items()},
                        "never": [str(s) for s, v in firsts.items() if v is not None and np.isinf(v)],
                        "median_env_step": None if known is None or np.isinf(known) else known,
                        "median_bound": bound, "met": met}
    return out


def reach_verdict(firsts: List[Optional[float]], median: Optional[float],
                  within: Optional[int]) -> Tuple[Optional[bool], Optional[str]]:
    """Whether the median first env step to the bar is at most ``within``, and what is known of a median that seeds
    still going leave open. ``firsts``: each seed's first env step at the bar, inf for a seed that finished without it,
    None for one still going. More than half the seeds past ``within`` put the median past it whatever the others do
    (more than half at most ``within``: at most it), so the verdict does not wait for them."""
    if median is not None:
        return (None if within is None else bool(median <= within)), ("beyond the budget" if np.isinf(median) else None)
    decided = [v for v in firsts if v is not None]
    if 2 * sum(np.isinf(v) for v in decided) > len(firsts):
        return (None if within is None else False), "beyond the budget"
    if within is None:
        return None, None
    if 2 * sum(v > within for v in decided) > len(firsts):
        return False, f"past {within:,}"
    if 2 * sum(v <= within for v in decided) > len(firsts):
        return True, f"at most {within:,}"
    return None, None


# ---- Markdown ------------------------------------------------------------------------------------------------------
def fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def markdown(report: Dict[str, Any]) -> str:
    """The tables of a suite's report, one pair per task."""
    lines = [f"## {report['suite']}: commit {report['commit']}, {report['machine']['cpu_model']}, "
             f"{report['machine']['cpus_usable']} usable cores"]
    for task in report["tasks"]:
        seeds = task["seeds"]
        lines += ["", f"### {task['task']} ({task['config']}, seeds {', '.join(map(str, seeds))}, "
                      f"{task['env_step_budget']:,} env steps)", "",
                  "| env step | " + " | ".join(f"seed {s}" for s in seeds) + " | IQM [95% CI] | target | met |",
                  "|---" * (len(seeds) + 4) + "|"]
        for cp in task["checkpoints"]:
            cells = [f"{fmt(v['return'])} @ {v['at_env_step']:,}{' (' + v['note'] + ')' if v.get('note') else ''}"
                     if v["return"] is not None else "-" for v in cp["per_seed"]]
            ci = f"{fmt(cp['iqm'])} [{fmt(cp['ci95'][0])}, {fmt(cp['ci95'][1])}]" if cp["iqm"] is not None else "-"
            target = f"{fmt(cp['target'])} ({cp['source']})" if cp["target"] is not None else "-"
            met = {True: "yes", False: "no", None: "-"}[cp["met"]]
            lines.append(f"| {cp['env_step']:,} | " + " | ".join(cells) + f" | {ci} | {target} | {met} |")
        lines += ["", "| seed | state | env steps | wall time | env steps/s | final | best | CPU |", "|---" * 8 + "|"]
        for run in task["runs"]:
            if "env_step" not in run:
                lines.append(f"| {run['seed']} | {run['state']} | - | - | - | - | - | - |")
                continue
            lines.append(f"| {run['seed']} | {run['state']} ({run['stop_reason'] or 'running or killed'}) | "
                         f"{run['env_step']:,} | {duration(run['wall_time_s'])} | {fmt(run['env_step_per_s'])} | "
                         f"{fmt(run['final_return'])} | {fmt(run['best_return'])} | "
                         f"{' + '.join(run.get('cpu_models', ())) or '-'} |")
        if "reach" in task:
            lines += ["", reach_line(task["reach"])]
    return "\n".join(lines)


def reach_line(reach: Dict[str, Any]) -> str:
    """'first evaluation at or above R: seed 0 N, ...; median M (target <= T: met)'."""
    never = reach.get("never", [])  # seeds that finished without getting there (None: still going)

    def first(seed: str, env_step: Optional[int]) -> str:
        return "not by its end" if seed in never else "-" if env_step is None else format(env_step, ",")
    firsts = ", ".join(f"seed {s} {first(s, v)}" for s, v in reach["first_env_step"].items())
    median = (format(reach["median_env_step"], ",.0f") if reach["median_env_step"] is not None
              else reach.get("median_bound") or ("beyond the budget" if reach["met"] is not None else "-"))
    line = f"first evaluation at or above {fmt(reach['return'])}: {firsts}; median {median}"
    if reach["within_env_step"] is not None:
        verdict = {True: "met", False: "missed", None: "open"}[reach["met"]]
        line += f" (target <= {reach['within_env_step']:,}: {verdict})"
    return line


# ---- the plot ------------------------------------------------------------------------------------------------------
def plot_task(task, runs: Dict[int, Optional[Dict[str, Any]]], path: str) -> None:
    """Each seed's curve, the IQM over seeds (where every seed has data), the published points with their labels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    have = {seed: run for seed, run in runs.items() if run}
    for seed, run in have.items():
        axes.plot(run["evals"]["env_step"], run["evals"]["return_mean"], alpha=0.4, linewidth=1, label=f"seed {seed}")
    if len(have) > 1:
        end = min(run["evals"]["env_step"][-1] for run in have.values())
        grid = np.unique(np.concatenate([run["evals"]["env_step"] for run in have.values()]))
        grid = grid[grid <= end]
        curves = np.array([np.interp(grid, run["evals"]["env_step"], run["evals"]["return_mean"])
                           for run in have.values()])
        axes.plot(grid, [iqm(curves[:, j]) for j in range(grid.size)], color="black", linewidth=2,
                  label=f"IQM over {len(have)} seeds")
    for source, env_step, value in task.anchors:
        axes.plot([env_step], [value], marker="D", linestyle="none", color="tab:red")
        axes.annotate(f"{source}: {value:,.0f}", (env_step, value), textcoords="offset points", xytext=(-4, 6),
                      ha="right",
                      fontsize="x-small", color="tab:red")
    for cp in task.checkpoints:
        axes.axvline(cp.env_step, color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel("env steps")
    axes.set_ylabel("evaluation return (deterministic)")
    axes.set_title(f"{task.name}: {task.config}", fontsize="medium")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.savefig(path, format="png", dpi=100)


# ---- writing it all --------------------------------------------------------------------------------------------------
def launches(runs_dir: str) -> List[Dict[str, Any]]:
    """The runner's launch records (launches.jsonl), [] if none."""
    try:
        with open(os.path.join(runs_dir, LAUNCHES)) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def committed_copy(results_dir: str, suite_name: str, task_name: str, seed: int) -> str:
    """Where the report keeps a finished run's small files (eval.csv, result.json, total_config.py)."""
    return os.path.join(results_dir, RUN_COPIES, suite_name, task_name, f"seed{seed}")


def earlier_runs(report_path: str) -> Dict[Tuple[str, int], Dict[str, Set[str]]]:
    """(task, seed) -> the commits and CPU models an earlier report recorded for the run, {} without one. A report
    from before runs recorded their CPUs gives its own machine's (the machine every run of it ran on then)."""
    try:
        with open(report_path) as f:
            report = json.load(f)
        machine = report.get("machine", {}).get("cpu_model")
        return {(task["task"], run["seed"]): {
                    "commits": set(run.get("commits", ())),
                    "cpu_models": set(run.get("cpu_models", [machine] if run.get("commits") and machine else ()))}
                for task in report["tasks"] for run in task["runs"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def copy_small_files(run: Dict[str, Any], dest: str) -> None:
    os.makedirs(dest, exist_ok=True)
    for name in SMALL_FILES:
        if os.path.isfile(os.path.join(run["path"], name)):
            shutil.copyfile(os.path.join(run["path"], name), os.path.join(dest, name))


def write_report(suite, runs_dir: str, results_dir: str, run_dir: Callable, machine: Dict[str, Any],
                 commit: str) -> Dict[str, Any]:
    """Build the report of ``suite`` from ``runs_dir`` (falling back on the committed copies), write it, print it."""
    os.makedirs(results_dir, exist_ok=True)
    started = launches(runs_dir)
    path = os.path.join(results_dir, f"{suite.name}.json")
    earlier = earlier_runs(path)
    tasks, notes = [], []
    for task in suite.tasks:
        runs = {seed: load_seed(run_dir(runs_dir, task, seed), committed_copy(results_dir, suite.name, task.name, seed))
                for seed in task.seeds}
        entry = task_report(task, runs)
        for run_entry in entry["runs"]:
            mine = [r for r in started if r["task"] == task.name and r["seed"] == run_entry["seed"]]
            commits = {r["commit"] for r in mine}
            cpus = {r["cpu_model"] for r in mine if r.get("cpu_model")}  # a run resumed on another VM has two
            if run_entry.get("read_from") == "copy":  # launched from a runs directory this machine no longer has
                before = earlier.get((task.name, run_entry["seed"]), {})
                commits |= before.get("commits", set())
                cpus |= before.get("cpu_models", set())
            run_entry["commits"], run_entry["cpu_models"] = sorted(commits), sorted(cpus)
        tasks.append(entry)
        for seed, run in runs.items():
            if run and run["source"] == "run" and seed_state(run, task.env_step) == "finished":
                copy_small_files(run, committed_copy(results_dir, suite.name, task.name, seed))
        png = os.path.join(results_dir, f"{suite.name}_{task.name}.png")
        if any(runs.values()):
            try:
                plot_task(task, runs, png)
            except ImportError:
                notes.append("plots skipped: matplotlib is not installed (pip install ding_lite[plot])")
        elif os.path.exists(png):  # a plot of runs this report no longer holds (a seed list changed, runs moved)
            os.remove(png)
    report = {"suite": suite.name, "suite_file": os.path.relpath(suite.path, ROOT),
              "note": suite.note, "runs_dir": runs_dir, "commit": commit, "machine": machine, "tasks": tasks}
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(markdown(report))
    for note in sorted(set(notes)):
        print(note)
    print(f"wrote {path}")
    return report
