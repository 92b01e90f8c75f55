"""What the recurrent core costs: collector env steps/s and learner updates/s of IMPALA with and without
``policy.model.core='lstm'``, on CartPole-v1 (dizoo_configs/cartpole_impala.py: 8 envs, unroll 16, batch 32,
separate actor and critic, so two LSTMs) and Pong (dizoo_configs/pong_impala.py: ALE/Pong-v5 frames, Nature conv
shared, unroll 20; collector 16 envs, learner batch ``--pong-batch`` unrolls).

Rows per env: 'feed-forward' (core None), 'lstm 64' / 'lstm 256' (core_size). Each row is measured ``--repeats``
times, interleaved, for at least ``--seconds`` each after a warm-up; the median is reported. Collector: the
SampleCollector's ``collect`` with the IMPALA collect policy (one torch thread). Learner: ``learn_mode.forward`` on
batches of train samples collected beforehand (torch threads: ``--threads``).

Run from the repository root: ``python benchmarks/studies/recurrent_cost.py`` (about 2 minutes on an idle 2-core machine;
``--no-pong`` without ale-py). Writes benchmarks/studies/results/recurrent_cost.json. Other processes on the machine skew
the numbers: the load average is recorded.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
sys.path[:0] = [REPO, os.path.join(REPO, "dizoo_configs")]

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.entry.build import resolve_env_spaces  # noqa: E402
from ding_lite.envs import EnvSpec, make_vector_env  # noqa: E402
from ding_lite.policy import IMPALAPolicy  # noqa: E402
from ding_lite.worker import SampleCollector  # noqa: E402


def build(module, core, core_size, envs, device):
    overrides = {"policy.model.core": core, "policy.model.core_size": core_size, "env.collector_env_num": envs,
                 "policy.cuda": device == "cuda"}
    cfg = compile_config((module.main_config, module.create_config), overrides=overrides)
    venv = make_vector_env(cfg.env, envs, seed=0)
    resolve_env_spaces(cfg, EnvSpec.from_spaces(venv.single_observation_space, venv.single_action_space))
    torch.manual_seed(0)
    policy = IMPALAPolicy(cfg.policy)
    return cfg, venv, policy, SampleCollector(venv, policy.collect_mode)


def timed(fn, seconds):
    fn()  # warm-up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        n += fn()
    return n / (time.perf_counter() - start)


def measure(env_name, module, rows, envs, batch, args):
    results = {}
    built = {}
    for label, core, size in rows:
        cfg, venv, policy, collector = build(module, core, size, envs, args.device)
        samples = collector.collect(batch)
        batch_data = {k: v[:batch] for k, v in samples.items()} if isinstance(samples, dict) else samples
        from ding_lite.torch_utils import tree_map
        batch_data = tree_map(lambda x: x[:batch], samples)
        built[label] = (policy, collector, batch_data, cfg.policy.unroll_len)
        results[label] = {"collector_env_steps_per_s": [], "learner_updates_per_s": []}
    for _ in range(args.repeats):
        for label, (policy, collector, data, unroll) in built.items():
            torch.set_num_threads(1)
            steps = lambda: (collector.collect(envs), envs * unroll)[1]  # noqa: E731  one segment of every env
            results[label]["collector_env_steps_per_s"].append(timed(steps, args.seconds))
            torch.set_num_threads(args.threads)

            def update():
                policy.learn_mode.forward(data)
                if args.device == "cuda":
                    torch.cuda.synchronize()
                return 1
            results[label]["learner_updates_per_s"].append(timed(update, args.seconds))
    out = {}
    for label, r in results.items():
        out[label] = {k: round(statistics.median(v), 2) for k, v in r.items()}
        out[label]["runs"] = {k: [round(x, 2) for x in v] for k, v in r.items()}
    for policy, collector, *_ in built.values():
        collector.close()
    base = out[rows[0][0]]
    print(f"\n{env_name} ({envs} envs, batch {batch} unrolls, device {args.device})")
    print(f"{'':14s} {'collector env steps/s':>22s} {'learner updates/s':>18s}")
    for label, r in out.items():
        c, u = r["collector_env_steps_per_s"], r["learner_updates_per_s"]
        print(f"{label:14s} {c:14.0f} ({c / base['collector_env_steps_per_s']:4.0%}) "
              f"{u:10.2f} ({u / base['learner_updates_per_s']:4.0%})")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the learner rows")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--pong-batch", type=int, default=8)
    parser.add_argument("--no-pong", action="store_true")
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "studies", "results", "recurrent_cost.json"))
    args = parser.parse_args()
    import cartpole_impala

    rows = [("feed-forward", None, 64), ("lstm 64", "lstm", 64), ("lstm 256", "lstm", 256)]
    result = {"args": vars(args), "loadavg_before": os.getloadavg()}
    result["cartpole"] = measure("CartPole-v1", cartpole_impala, rows, 8, 32, args)
    if not args.no_pong:
        import pong_impala
        result["pong"] = measure("Pong", pong_impala, rows[:1] + rows[2:], 16, args.pong_batch, args)
    result["loadavg_after"] = os.getloadavg()
    if args.out:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
