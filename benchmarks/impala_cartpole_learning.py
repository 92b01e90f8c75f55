"""Env steps and wall time to the first evaluation mean >= 475 for the shipped CartPole IMPALA config (or another
CartPole config: ``--config dizoo_configs/cartpole_appo.py`` compares APPO with it on the same seeds).

Each seed runs as its own `ding_lite` process, one after another (so runs do not compete for the 2 cores), and the
wall time is measured from process start (imports, env creation and start-up included) to the process exit that
follows the stop at 475. Prints a table and writes benchmarks/results/impala_cartpole_learning.json (with
``--mode parallel``: ..._parallel.json; parallel runs are not bit-reproducible, so repeat seeds with ``--repeats``).

    python benchmarks/impala_cartpole_learning.py [--seeds 0 1 2] [--max-env-step 150000] [--mode parallel]
        [--config dizoo_configs/cartpole_appo.py]     (writes ..._cartpole_appo.json)
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

CONFIG = os.path.join(ROOT, "dizoo_configs", "cartpole_impala.py")


def run_seed(seed: int, max_env_step: int, workdir: str, config: str = CONFIG, mode: str = "serial") -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ding_lite.cli", "-m", mode, "-c", config, "-s", str(seed),
                    "--env-step", str(max_env_step), "--exp-name", "bench", "-q"], cwd=workdir, env=env, check=True)
    process_wall = time.perf_counter() - start
    run_dir = os.path.join(workdir, f"bench_seed{seed}")
    with open(os.path.join(run_dir, "eval.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    hit = next((r for r in rows if float(r["return_mean"]) >= 475), None)
    return {
        "seed": seed,
        "reached": hit is not None,
        "env_steps_to_475": int(hit["env_step"]) if hit else None,
        "train_iters_to_475": int(hit["train_iter"]) if hit else None,
        "run_wall_s_to_475": float(hit["wall_time"]) if hit else None,
        "process_wall_s": round(process_wall, 2),
        "stop_reason": result["stop_reason"],
        "evaluations": len(rows),
    }


def run_seeds(seeds, max_env_step: int, config: str = CONFIG, mode: str = "serial", repeats: int = 1) -> list:
    """``run_seed`` for each seed (``repeats`` times each), one after another, each in a fresh working directory."""
    rows = []
    for _ in range(repeats):
        for seed in seeds:
            with tempfile.TemporaryDirectory() as workdir:
                rows.append(run_seed(seed, max_env_step, workdir, config, mode))
            print(rows[-1], flush=True)
    return rows


def summarise(rows: list) -> dict:
    """Medians over the runs that reached 475, how many did, and the slowest (the tail is what a test trips on)."""
    reached = [r for r in rows if r["reached"]]

    def median(key):
        return statistics.median(r[key] for r in reached) if reached else None

    return {"seeds_reached": f"{len(reached)}/{len(rows)}",
            "median_env_steps_to_475": median("env_steps_to_475"),
            "max_env_steps_to_475": max((r["env_steps_to_475"] for r in reached), default=None),
            "median_process_wall_s": median("process_wall_s"),
            "median_run_wall_s_to_475": median("run_wall_s_to_475")}


def print_table(rows: list) -> None:
    print(f"\n{'seed':>4} {'env steps to 475':>17} {'run s to 475':>13} {'process s':>10} {'stop':>12}")
    for r in rows:
        print(f"{r['seed']:>4} {str(r['env_steps_to_475']):>17} {str(r['run_wall_s_to_475']):>13} "
              f"{r['process_wall_s']:>10} {r['stop_reason']:>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=150_000)
    parser.add_argument("--mode", choices=["serial", "parallel"], default="serial",
                        help="pipeline; parallel uses the default collector_num (cores - 1)")
    parser.add_argument("--config", default=os.path.relpath(CONFIG, ROOT),
                        help="a CartPole config (default dizoo_configs/cartpole_impala.py); another one writes its "
                             "results under its own name")
    parser.add_argument("--repeats", type=int, default=1, help="runs per seed (parallel runs differ run to run)")
    parser.add_argument("--output", default=None, help="where to write the JSON results (default "
                        "benchmarks/results/impala_cartpole_learning.json; ..._parallel.json with --mode parallel)")
    args = parser.parse_args()
    config = os.path.abspath(os.path.join(ROOT, args.config) if not os.path.isabs(args.config) else args.config)
    if not os.path.isfile(config):
        parser.error(f"--config {args.config}: no such file (a path relative to the repository root, or absolute)")
    rows = run_seeds(args.seeds, args.max_env_step, config=config, mode=args.mode, repeats=args.repeats)
    summary = summarise(rows)
    print_table(rows)
    print(f"median: {summary['median_env_steps_to_475']} env steps (slowest {summary['max_env_steps_to_475']}), "
          f"{summary['median_process_wall_s']} s from process start ({summary['seeds_reached']} runs reached 475)")
    out = {"machine": machine_info(torch=version("torch")), "date": time.strftime("%Y-%m-%d"),
           "config": os.path.relpath(config, ROOT), "mode": args.mode,
           "max_env_step": args.max_env_step, "runs": rows, "summary": summary}
    name = "impala_cartpole_learning" + ("_parallel" if args.mode == "parallel" else "")
    if config != CONFIG:
        name += "_" + os.path.splitext(os.path.basename(config))[0]
    path = args.output or os.path.join(ROOT, "benchmarks", "results", f"{name}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
