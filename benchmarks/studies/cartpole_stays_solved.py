"""Do the shipped CartPole configs stay solved? Each config trains seeds 0-9 for 100k env steps with its stop_value
off, and the table reports what a user judges: the final policy's evaluation return (the last eval.csv row; IQM over
seeds with a 95% stratified-bootstrap CI), the env steps to the first evaluation at 475 (median over seeds), and the
worst evaluation after that first 475 (how far a solved run falls again).

Target (issue 25): final IQM >= 475 for cartpole_impala.py and cartpole_acer.py, and the time to 475 no worse than
before (IMPALA's median was 14.6k env steps).

    python benchmarks/studies/cartpole_stays_solved.py [--only cartpole_impala] [--seeds 0 1 2] [--env-step 100000]
                                               [--set policy.learn.rho_pg_clip_ratio=1.0 ...] [--tag NAME]

Runs go to runs/stays_solved/<name>[_<tag>]/ (ignored by git); results to
benchmarks/studies/results/cartpole_stays_solved[_<tag>].json and .txt.
"""
import argparse
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)

from ding_lite.analysis.runs import load_runs  # noqa: E402
from ding_lite.analysis.stats import iqm, stratified_bootstrap_ci  # noqa: E402

CONFIGS = {"cartpole_impala": "cartpole_impala.py", "cartpole_acer": "cartpole_acer.py"}
THRESHOLD = 475.0


def train(config: str, seeds: List[int], env_step: int, overrides: List[str], folder: str) -> None:
    """One ``ding_lite`` command for every seed, exactly as a user would type it (stop value off)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "ding_lite.cli", "-c", os.path.join(ROOT, "dizoo_configs", config), "-q",
            "--env-step", str(env_step), "--set", "env.stop_value=None"]
    for seed in seeds:
        args += ["-s", str(seed)]
    for override in overrides:
        args += ["--set", override]
    subprocess.run(args, cwd=folder, env=env, check=True)


def per_seed(evals: Dict[str, np.ndarray]) -> Dict[str, Optional[float]]:
    """Final return, env steps to the first 475 and the worst evaluation after it, for one run's eval.csv."""
    returns, steps = evals["return_mean"], evals["env_step"]
    reached = np.flatnonzero(returns >= THRESHOLD)
    first = int(reached[0]) if len(reached) else None
    return {
        "final_return": float(returns[-1]),
        "env_steps_to_475": None if first is None else float(steps[first]),
        "worst_after_475": None if first is None else float(returns[first:].min()),
        "evals_below_200_after_475": None if first is None else int((returns[first:] < 200).sum()),
    }


def summarise(name: str, folder: str, overrides: List[str], env_step: int) -> dict:
    runs = load_runs([folder])
    seeds = {run.seed: per_seed(run.evals) for run in runs}
    finals = np.array([s["final_return"] for s in seeds.values()])
    low, high = stratified_bootstrap_ci(finals, iqm)
    to_475 = [s["env_steps_to_475"] for s in seeds.values() if s["env_steps_to_475"] is not None]
    worst = [s["worst_after_475"] for s in seeds.values() if s["worst_after_475"] is not None]
    return {
        "experiment": name, "overrides": overrides, "env_step_budget": env_step, "seeds": seeds,
        "final_iqm": iqm(finals), "final_iqm_ci": [low, high], "final_min": float(finals.min()),
        "reached_475": len(to_475), "median_env_steps_to_475": float(np.median(to_475)) if to_475 else None,
        "median_worst_after_475": float(np.median(worst)) if worst else None,
    }


def table(rows: List[dict]) -> str:
    head = (f"{'experiment':<18} {'seeds':>5} {'final IQM [95% CI]':>24} {'final min':>9} {'reached 475':>11} "
            f"{'median steps to 475':>19} {'median worst after 475':>22}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ci = f"{r['final_iqm']:.1f} [{r['final_iqm_ci'][0]:.1f}, {r['final_iqm_ci'][1]:.1f}]"
        steps = "-" if r["median_env_steps_to_475"] is None else f"{r['median_env_steps_to_475']:,.0f}"
        worst = "-" if r["median_worst_after_475"] is None else f"{r['median_worst_after_475']:.1f}"
        lines.append(f"{r['experiment']:<18} {len(r['seeds']):>5} {ci:>24} {r['final_min']:>9.1f} "
                     f"{r['reached_475']:>6}/{len(r['seeds']):<4} {steps:>19} {worst:>22}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--seeds", nargs="*", type=int, default=list(range(10)))
    parser.add_argument("--env-step", type=int, default=100_000)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--tag", default="", help="suffix of the run folder and results files")
    args = parser.parse_args()
    suffix = f"_{args.tag}" if args.tag else ""
    rows = []
    for name in args.only:
        folder = os.path.join(ROOT, "runs", "stays_solved", name + suffix)
        if os.path.exists(folder):
            raise SystemExit(f"{folder} exists: remove it or pick another --tag")
        os.makedirs(folder)
        train(CONFIGS[name], args.seeds, args.env_step, args.overrides, folder)
        rows.append(summarise(name, folder, args.overrides, args.env_step))
    text = table(rows)
    print(text)
    out = os.path.join(ROOT, "benchmarks", "studies", "results", f"cartpole_stays_solved{suffix}")
    with open(out + ".json", "w") as f:
        json.dump(rows, f, indent=2)
    with open(out + ".txt", "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
