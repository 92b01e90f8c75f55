"""Throughput of the serial pipeline beside the parallel one (1 and 2 collector processes) on CartPole IMPALA.

Every run is its own ``ding_lite`` process on the shipped config (dizoo_configs/cartpole_impala.py), one after
another (never two at once: they would compete for the cores), with the same env-step budget, early stopping off
(``env.stop_value=None``) and evaluation made rare (``eval_freq=1000000``: one at the start, one at the end), so
every mode spends its time collecting and training. Modes run interleaved per seed and repeat, so slow drift of the
machine hits them alike.

Per run: env steps/s and train iterations/s end to end (result.json's counters over its ``wall_time``, which
includes start-up and the final evaluation), and over the whole process (``process``: from its start to its exit,
Python's imports and, with Ray, Ray's own start and teardown included); for parallel runs also the rates the pipeline reports (over ``run_s``)
and the policy lag and time split from result.json's ``parallel`` entry; and for every run a steady-state rate from
the progress lines of ``log/train.log`` (first to last line, one every 100 train iterations), which leaves out
start-up (spawned workers importing torch) and the final evaluation. Prints tables and writes
benchmarks/results/parallel_scaling.json.

``--modes ray1 parallel1`` sets the Ray backend beside the local one at equal collectors (interleaved, a ratio per
pair), and ``--hog`` keeps one other process busy on a core throughout, as on a shared machine:

    python benchmarks/parallel_scaling.py --modes parallel1 ray1 --repeats 3 --output benchmarks/results/ray_vs_local.json
    python benchmarks/parallel_scaling.py --modes parallel1 ray1 --repeats 3 --hog \
        --output benchmarks/results/ray_vs_local_hog.json

``--config`` runs another config the same way, e.g. the Atari one with 1 collector against serial (frames/s are env
steps/s x 4 there):

    python benchmarks/parallel_scaling.py [--env-step 60000] [--seeds 0] [--repeats 1]
    python benchmarks/parallel_scaling.py --config dizoo_configs/pong_impala.py --modes serial parallel1 \
        --env-step 40000 --output benchmarks/results/parallel_scaling_pong.json

Modes are ``serial``, ``parallelN`` and ``rayN`` for N = 1, 2, 4, 8 collectors; ``--ray-set KEY=VALUE`` adds an
override to the rayN runs only (e.g. ``parallel.segments_per_call=4``); ``--set KEY=VALUE`` (repeatable) adds
an override to every run, e.g. a GPU learner with more collectors on a machine with the cores for them:

    python benchmarks/parallel_scaling.py --config dizoo_configs/pong_impala.py --set policy.cuda=True \
        --modes serial parallel1 parallel4 parallel8 --env-step 30000 --output benchmarks/results/parallel_scaling_pong_gpu.json
"""
import argparse
import importlib.metadata
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "dizoo_configs", "cartpole_impala.py")
RESULT = os.path.join(ROOT, "benchmarks", "results", "parallel_scaling.json")
COMMON_SETS = ["env.stop_value=None", "policy.eval.evaluator.eval_freq=1000000"]
MODES: Dict[str, Tuple[str, List[str]]] = {  # label: (-m mode, extra --set)
    "serial": ("serial", []),
    "parallel1": ("parallel", ["parallel.backend=local", "parallel.collector_num=1"]),
    **{f"{backend}{n}": ("parallel", [f"parallel.backend={'ray' if backend == 'ray' else 'local'}",
                                      f"parallel.collector_num={n}"])
       for backend in ("parallel", "ray") for n in (1, 2, 4, 8)},
}
HOG = "while True: pass"  # --hog: one process that keeps a core busy for the whole benchmark
# "... env_step 17,920 | train_iter 200 | ... | 4.9 s" (serial and parallel progress lines alike)
PROGRESS = re.compile(r"env_step ([\d,]+) \| train_iter ([\d,]+) \| .* \| ([\d.]+) s$")


def progress_points(log_path: str) -> List[Tuple[int, int, float]]:
    """(env_step, train_iter, wall seconds) of each progress line in a run's train.log."""
    points = []
    with open(log_path) as f:
        for line in f:
            m = PROGRESS.search(line.rstrip())
            if m:
                points.append((int(m[1].replace(",", "")), int(m[2].replace(",", "")), float(m[3])))
    return points


def steady_rates(points: List[Tuple[int, int, float]]) -> Dict[str, Optional[float]]:
    """Env steps/s and train iters/s between the first and the last progress line (None with fewer than 2)."""
    if len(points) < 2 or points[-1][2] <= points[0][2]:
        return {"env_step_per_s": None, "train_iter_per_s": None, "seconds": None, "lines": len(points)}
    (s0, i0, t0), (s1, i1, t1) = points[0], points[-1]
    return {"env_step_per_s": round((s1 - s0) / (t1 - t0), 1), "train_iter_per_s": round((i1 - i0) / (t1 - t0), 1),
            "seconds": round(t1 - t0, 2), "lines": len(points)}


def fractions(times: Dict[str, float], total: float) -> Dict[str, float]:
    return {k: round(v / total, 3) for k, v in times.items()} if total > 0 else {}


def run_once(label: str, seed: int, repeat: int, env_step: int, workdir: str,
             config: str = CONFIG, extra_sets: List[str] = ()) -> Dict[str, Any]:
    """One ``ding_lite`` process in ``label``'s mode; the row of numbers for it."""
    mode, sets = MODES[label]
    exp_name = f"{label}_r{repeat}"  # run directory <exp_name>_seed<seed>: one per run
    cmd = [sys.executable, "-m", "ding_lite.cli", "-m", mode, "-c", config, "-s", str(seed),
           "--env-step", str(env_step), "--exp-name", exp_name, "-q"]
    for item in COMMON_SETS + sets + list(extra_sets):
        cmd += ["--set", item]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    subprocess.run(cmd, cwd=workdir, env=env, check=True)
    process_wall = time.perf_counter() - start
    run_dir = os.path.join(workdir, f"{exp_name}_seed{seed}")
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    wall = result["wall_time"]
    row: Dict[str, Any] = {
        "mode": label, "seed": seed, "repeat": repeat, "stop_reason": result["stop_reason"],
        "env_step": result["env_step"], "train_iter": result["train_iter"], "final_return": result["final_return"],
        "wall_time_s": wall, "process_wall_s": round(process_wall, 2),
        "e2e": {"env_step_per_s": round(result["env_step"] / wall, 1),
                "train_iter_per_s": round(result["train_iter"] / wall, 1)},
        # the whole process, from its start to its exit: imports, Ray's start and teardown included
        "process": {"env_step_per_s": round(result["env_step"] / process_wall, 1),
                    "train_iter_per_s": round(result["train_iter"] / process_wall, 1)},
        "steady": steady_rates(progress_points(os.path.join(run_dir, "log", "train.log"))),
    }
    par = result.get("parallel")
    if par:
        run_s, n = par["run_s"], par["collector_num"]
        row["parallel"] = {
            "collector_num": n, "env_step_per_s": par["env_step_per_s"], "train_iter_per_s": par["train_iter_per_s"],
            "run_s": run_s, "policy_lag": par["policy_lag"], "dropped_stale": par["dropped_stale"],
            "restarts": par["restarts"],
            "bottleneck": par.get("bottleneck"), "learner_capacity": par.get("learner_capacity"),
            "learner_time_s": par["learner_time_s"], "collector_time_s": par["collector_time_s"],
            # learner: share of run_s; collectors: their times are summed, so share of run_s * collector_num
            "learner_share": fractions(par["learner_time_s"], run_s),
            "collector_share": fractions(par["collector_time_s"], run_s * n),
        }
    return row


def median_of(rows: List[Dict[str, Any]], section: str, key: str) -> Optional[float]:
    values = [r[section][key] for r in rows if r.get(section) and r[section].get(key) is not None]
    return round(statistics.median(values), 1) if values else None


def summarise(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Medians per mode over seeds and repeats, and parallel/serial ratios of env steps/s."""
    per_mode = {m: {f"{section}_{key}": median_of([r for r in rows if r["mode"] == m], section, key)
                    for section in ("e2e", "process", "steady") for key in ("env_step_per_s", "train_iter_per_s")}
                for m in MODES if any(r["mode"] == m for r in rows)}
    ratios = {}
    pairs = [(f"parallel{n}", "serial") for n in (1, 2, 4, 8)] + [(f"ray{n}", f"parallel{n}") for n in (1, 2, 4, 8)]
    for m, ref in ((m, ref) for m, ref in pairs if m in per_mode and ref in per_mode):
        for section in ("steady", "e2e", "process"):
            base, value = per_mode[ref][f"{section}_env_step_per_s"], per_mode[m][f"{section}_env_step_per_s"]
            ratios[f"{m}/{ref}_{section}_env_step_per_s"] = round(value / base, 2) if base and value else None
    # ray against local within each interleaved pair (same seed and repeat): the spread the medians hide
    for m, ref in ((f"ray{n}", f"parallel{n}") for n in (1, 2, 4, 8)):
        pair = [(r, next((x for x in rows if x["mode"] == ref and x["seed"] == r["seed"]
                          and x["repeat"] == r["repeat"]), None)) for r in rows if r["mode"] == m]
        for section in ("e2e", "process"):
            values = sorted(round(r[section]["env_step_per_s"] / x[section]["env_step_per_s"], 2)
                            for r, x in pair if x)
            if values:
                ratios[f"{m}/{ref}_{section}_per_pair"] = values
    return {"median": per_mode, "ratios": ratios}


def fmt(value: Any, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def print_tables(rows: List[Dict[str, Any]], summary: Dict[str, Any]) -> None:
    print(f"\n{'mode':>9} {'seed':>4} {'env steps':>9} {'wall s':>7} {'proc s':>6} {'e2e st/s':>9} {'e2e it/s':>8} "
          f"{'steady st/s':>11} {'steady it/s':>11} {'reported st/s':>13} {'reported it/s':>13}")
    for r in rows:
        par = r.get("parallel", {})
        print(f"{r['mode']:>9} {r['seed']:>4} {r['env_step']:>9,} {r['wall_time_s']:>7.1f} {r['process_wall_s']:>6.1f} "
              f"{fmt(r['e2e']['env_step_per_s']):>9} {fmt(r['e2e']['train_iter_per_s'], '.1f'):>8} "
              f"{fmt(r['steady']['env_step_per_s']):>11} {fmt(r['steady']['train_iter_per_s'], '.1f'):>11} "
              f"{fmt(par.get('env_step_per_s')):>13} {fmt(par.get('train_iter_per_s'), '.1f'):>13}")
    print(f"\n{'mode':>9} {'seed':>4} {'lag mean/p50/p90/max':>21} | {'learner train/wait/ingest/publish':>33} "
          f"| {'collectors collect/send/sync':>28}")
    for r in (r for r in rows if "parallel" in r):
        par, lag = r["parallel"], r["parallel"]["policy_lag"] or {}
        lag_text = "/".join(fmt(lag.get(k), ".1f") for k in ("mean", "p50", "p90")) + f"/{fmt(lag.get('max'), 'd')}"
        learner = "/".join(f"{par['learner_share'].get(k, 0):.0%}" for k in ("train_s", "wait_s", "ingest_s",
                                                                              "publish_s"))
        workers = "/".join(f"{par['collector_share'].get(k, 0):.0%}" for k in ("collect_s", "wait_s", "sync_s"))
        print(f"{r['mode']:>9} {r['seed']:>4} {lag_text:>21} | {learner:>33} | {workers:>28}")
    print("(learner shares of run_s; collector shares of run_s x collector_num)")
    for name, ratio in summary["ratios"].items():
        print(f"{name}: {ratio if isinstance(ratio, list) else fmt(ratio, '.2f')}")


def machine_info() -> Dict[str, Any]:
    return {"platform": platform.platform(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "torch": importlib.metadata.version("torch"),
            "date": time.strftime("%Y-%m-%d")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-step", type=int, default=60_000, help="env-step budget of every run (default 60000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs per mode and seed (default 1)")
    parser.add_argument("--output", default=RESULT, help="where to write the JSON results")
    parser.add_argument("--config", default=CONFIG, help="the config every run trains (default cartpole_impala.py)")
    parser.add_argument("--modes", nargs="+", default=["serial", "parallel1", "parallel2"], choices=list(MODES))
    parser.add_argument("--set", dest="extra_sets", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for every run, e.g. --set policy.cuda=True (repeatable)")
    parser.add_argument("--ray-set", dest="ray_sets", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for the rayN runs only, e.g. --ray-set parallel.segments_per_call=4")
    parser.add_argument("--hog", action="store_true", help="keep one other process busy on a core throughout "
                                                          "(a shared machine)")
    args = parser.parse_args()
    config = os.path.abspath(args.config)
    rows = []
    hog = subprocess.Popen([sys.executable, "-c", HOG]) if args.hog else None
    try:
        run_all(args, config, rows)
    finally:
        if hog is not None:
            hog.kill()
    summary = summarise(rows)
    print_tables(rows, summary)
    out = {"machine": machine_info(), "args": vars(args), "config": os.path.relpath(config, ROOT),
           "common_overrides": COMMON_SETS, "modes": {k: {"mode": m, "overrides": s} for k, (m, s) in MODES.items()},
           "runs": rows, "summary": summary}
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {os.path.relpath(args.output, ROOT)}")


def run_all(args, config: str, rows: List[Dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        for repeat in range(args.repeats):
            for seed in args.seeds:
                for label in args.modes:
                    sets = args.extra_sets + (args.ray_sets if label.startswith("ray") else [])
                    rows.append(run_once(label, seed, repeat, args.env_step, workdir, config, sets))
                    r = rows[-1]
                    print(f"{label} seed {seed} repeat {repeat}: {r['env_step']:,} env steps in {r['wall_time_s']} s, "
                          f"steady {fmt(r['steady']['env_step_per_s'])} env steps/s", flush=True)


if __name__ == "__main__":
    main()
