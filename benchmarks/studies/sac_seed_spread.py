"""Are the MuJoCo SAC suite's misses against Tianshou larger than the seeds' own spread?

The suite (benchmarks/suites/mujoco_sac.py) compares the IQM of our 3 seeds with the mean of Tianshou's 10 at the
same real env steps. Tianshou's benchmark file kept every seed's curve (examples/mujoco/benchmark/<Env>-v3/sac/
test_rew_10seeds.csv, at commit 39acf209; the file was removed later), so the question has an exact answer: pool the
13 returns at a checkpoint, split them into 3 and 10 every one of the C(13, 3) = 286 ways, and count how often the
difference of means is at least as far from 0 as ours (a permutation test, two-sided). Also: a 95% bootstrap interval
of the difference of means (each group resampled, 20,000 draws), and where each of our seeds ranks among Tianshou's
10.

With 3 seeds against 10 the smallest possible p-value is 1/286 (0.0035); a test this small finds only large gaps.
It says whether a miss is evidence of a difference, not how large a real one is.

Reads our per-seed returns from benchmarks/results/mujoco_sac.json (the suite's report); writes
benchmarks/studies/results/sac_seed_spread.json and prints a table:

    python benchmarks/studies/sac_seed_spread.py
"""
import argparse
import itertools
import json
import os
from typing import Dict, List

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = ("thu-ml/tianshou@39acf2094d96268d92ebb54dcbfc3de76d702567:examples/mujoco/benchmark/<Env>-v3/sac/"
          "test_rew_10seeds.csv, seeds 0-9 at env_step 90000 and 290000 (our 100k and 300k: its env_step leaves out "
          "its 10k random warm-up)")
# Each seed's test return (10 episodes) at its env_step 90k and 290k, read from the file above.
TIANSHOU: Dict[str, Dict[int, List[float]]] = {
    "halfcheetah": {100_000: [5461.5, 6818.3, 6286.7, 6063.2, 6129.3, 6724.2, 6823.4, 5887.1, 6172.9, 5761.3],
                    300_000: [6800.8, 10247.5, 9300.2, 8152.5, 8848.3, 10323.1, 9818.3, 9233.6, 8588.9, 10189.1]},
    "hopper": {100_000: [2963.8, 364.4, 1029.6, 1019.5, 881.5, 3372.2, 1798.4, 3222.5, 2055.6, 951.7],
               300_000: [3349.1, 1220.2, 3525.4, 3416.5, 3426.9, 3496.8, 3434.2, 3358.5, 2900.1, 3522.5]},
    "walker2d": {100_000: [404.2, 289.6, 530.7, 725.4, 1596.4, 695.4, -8.5, 1143.9, 2540.0, 518.2],
                 300_000: [950.0, 1445.9, 3870.4, 4238.5, 4483.1, 4364.0, 3710.7, 3936.6, 4575.2, 4253.6]},
}


def permutation_p(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Two-sided exact permutation p-value of the difference of means over every split of the pooled values."""
    pooled = np.concatenate([ours, theirs])
    observed = abs(ours.mean() - theirs.mean())
    total, count, n = pooled.sum(), 0, len(ours)
    splits = list(itertools.combinations(range(len(pooled)), n))
    for idx in splits:
        a = pooled[list(idx)].sum()
        diff = a / n - (total - a) / (len(pooled) - n)
        count += abs(diff) >= observed - 1e-9
    return count / len(splits)


def bootstrap_ci(ours: np.ndarray, theirs: np.ndarray, draws: int, seed: int) -> List[float]:
    """95% percentile interval of mean(ours) - mean(theirs), each group resampled with replacement."""
    rng = np.random.default_rng(seed)
    a = rng.choice(ours, size=(draws, len(ours))).mean(axis=1)
    b = rng.choice(theirs, size=(draws, len(theirs))).mean(axis=1)
    return [float(x) for x in np.percentile(a - b, [2.5, 97.5])]


def compare(ours: List[float], theirs: List[float], draws: int = 20_000, seed: int = 0) -> dict:
    a, b = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    return dict(ours=list(map(float, a)), theirs=list(map(float, b)),
                ours_mean=float(a.mean()), theirs_mean=float(b.mean()), theirs_median=float(np.median(b)),
                difference=float(a.mean() - b.mean()), ci95=bootstrap_ci(a, b, draws, seed),
                permutation_p=permutation_p(a, b),
                # how many of Tianshou's seeds each of ours is above
                above=[int((b < x).sum()) for x in a])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", default=os.path.join(ROOT, "benchmarks", "results", "mujoco_sac.json"))
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks", "studies", "results",
                                                         "sac_seed_spread.json"))
    args = parser.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    rows = []
    for task in report["tasks"]:
        if task["task"] not in TIANSHOU:
            continue
        for checkpoint in task["checkpoints"]:
            ours = [s["return"] for s in checkpoint["per_seed"] if s.get("return") is not None]
            if len(ours) < 2:
                continue
            row = dict(task=task["task"], env_step=checkpoint["env_step"],
                       seeds=[s["seed"] for s in checkpoint["per_seed"] if s.get("return") is not None],
                       **compare(ours, TIANSHOU[task["task"]][checkpoint["env_step"]]))
            rows.append(row)
    print("| task, env steps | ours (mean) | Tianshou (mean; median) | difference [95% CI] | permutation p | "
          "each of ours above how many of Tianshou's 10 |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']}, {r['env_step'] // 1000}k | {r['ours_mean']:,.0f} | {r['theirs_mean']:,.0f}; "
              f"{r['theirs_median']:,.0f} | {r['difference']:+,.0f} [{r['ci95'][0]:+,.0f}, {r['ci95'][1]:+,.0f}] | "
              f"{r['permutation_p']:.2f} | {', '.join(map(str, r['above']))} |")
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(dict(source=SOURCE, report=os.path.relpath(args.report, ROOT), report_commit=report.get("commit"),
                       rows=rows), f, indent=1)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
