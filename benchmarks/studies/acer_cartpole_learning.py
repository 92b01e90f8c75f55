"""Env steps and wall time to the first evaluation mean >= 475 for the shipped CartPole ACER config, and learner
updates per second, next to IMPALA's figures.

Each seed runs as its own `ding_lite` process, one after another, timed exactly as in
benchmarks/impala_cartpole_learning.py (whose ``run_seeds``, ``summarise`` and ``print_table`` this script reuses). The learner speed is measured in this
process: the shipped config's policy trains on batches sampled from a buffer filled by its own collector, one torch
thread, as in a run. Prints a table and writes benchmarks/studies/results/acer_cartpole_learning.json.

    python benchmarks/studies/acer_cartpole_learning.py [--seeds 0 1 2] [--max-env-step 150000] [--updates 500]
"""
import argparse
import json
import os
import platform
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))  # impala_cartpole_learning.py, a benchmark of the suite
sys.path.insert(0, ROOT)

import impala_cartpole_learning as impala_bench  # noqa: E402

CONFIG = os.path.join(ROOT, "dizoo_configs", "cartpole_acer.py")
IMPALA_CONFIG = impala_bench.CONFIG
IMPALA_RESULTS = os.path.join(ROOT, "benchmarks", "results", "impala_cartpole_learning.json")


def learner_updates_per_s(config: str, n_updates: int, seed: int = 0) -> dict:
    """Learner updates per second of ``config``'s policy on its own batch size and unroll length."""
    from ding_lite.config import read_config_file
    from ding_lite.entry.build import build, build_buffer, compile_input
    from ding_lite.worker import SampleCollector

    cfg = compile_input(read_config_file(config), seed)  # sets torch's threads from the config (1)
    cfg.policy.other.replay_buffer.max_use = float("inf")  # keep every unroll: the timing needs a full buffer
    parts = build(cfg, seed)
    collector = SampleCollector(parts.collector_env, parts.policy.collect_mode)
    buffer = build_buffer(cfg, seed)
    while collector.envstep < 20_000:
        buffer.push(collector.collect(cfg.policy.collect.n_sample), collector.envstep, collect_iter=0)
    collector.close()
    parts.evaluator_env.close()
    learn, batch_size = parts.policy.learn_mode, cfg.policy.learn.batch_size
    for _ in range(20):  # warm-up
        learn.forward(buffer.sample(batch_size, 0))
    start = time.perf_counter()
    for _ in range(n_updates):
        learn.forward(buffer.sample(batch_size, 0))
    seconds = time.perf_counter() - start
    return {"updates_per_s": round(n_updates / seconds, 1), "batch_size": batch_size,
            "unroll_len": cfg.policy.unroll_len, "torch_threads": torch.get_num_threads(),
            "config": os.path.relpath(config, ROOT)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=150_000)
    parser.add_argument("--updates", type=int, default=500, help="learner updates timed per config")
    args = parser.parse_args()
    rows = impala_bench.run_seeds(args.seeds, args.max_env_step, CONFIG)
    summary = impala_bench.summarise(rows)
    speed = {"acer": learner_updates_per_s(CONFIG, args.updates),
             "impala": learner_updates_per_s(IMPALA_CONFIG, args.updates)}
    impala = None
    if os.path.exists(IMPALA_RESULTS):
        with open(IMPALA_RESULTS) as f:
            impala = json.load(f)["summary"]
    impala_bench.print_table(rows)
    print(f"ACER median: {summary['median_env_steps_to_475']} env steps, {summary['median_run_wall_s_to_475']} s "
          f"run time, {summary['median_process_wall_s']} s from process start ({summary['seeds_reached']} seeds "
          f"reached 475)")
    if impala:
        print(f"IMPALA median (benchmarks/results/impala_cartpole_learning.json): "
              f"{impala['median_env_steps_to_475']} env steps, {impala['median_run_wall_s_to_475']} s run time, "
              f"{impala['median_process_wall_s']} s from process start")
    print(f"learner updates/s: ACER {speed['acer']['updates_per_s']}, IMPALA {speed['impala']['updates_per_s']} "
          f"(batch {speed['acer']['batch_size']} x unroll {speed['acer']['unroll_len']}, 1 thread)")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                       "torch": torch.__version__},
           "date": time.strftime("%Y-%m-%d"), "config": os.path.relpath(CONFIG, ROOT), "runs": rows,
           "summary": summary, "learner_speed": speed, "impala_summary": impala}
    os.makedirs(os.path.join(ROOT, "benchmarks", "studies", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "studies", "results", "acer_cartpole_learning.json"), "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
