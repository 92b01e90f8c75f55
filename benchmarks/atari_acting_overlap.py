"""How much acting overlapped with env stepping could buy the Atari collector on this machine: an upper bound.

The collector acts and steps in turn: the conv policy's forward on the N frame stacks, then the N envs' step. The
usual remedy is to overlap them: split the envs into two groups, and compute one group's actions while the other
group steps. This script measures that remedy in its cheapest form, with none of the collector's bookkeeping, over
envpool's Pong (C++ threads, no GIL, no inter-process copies: the best case for overlap) and pong_impala.py's IMPALA
policy (shared ``nature_conv`` encoder, untrained, its collect forward: the model and the action sampling):

- ``raw``: one envpool pool of N envs, random actions drawn up front (the env alone).
- ``in_turn``: one pool of N envs; forward on its N observations, then step (what the collector does).
- ``overlapped``: two pools of N/2 envs each (envpool's asynchronous ``send`` / ``recv``); while one pool steps,
  the forward for the other runs.
- ``forward_only``: the forward alone on N fixed observations, no env (frames/s it could act for).

When env and forward both need the same cores, perfect overlap cannot beat ``1 / (1 / raw + 1 / forward_only)`` (the
two workloads' CPU time added up), printed as ``cpu_bound``.

each with 1 and 2 torch threads (the forward's), envpool with ``--envpool-threads`` per pool. Frames/s are ALE frames
(env steps x 4). Run from the repository root: ``python benchmarks/atari_acting_overlap.py`` (needs the atari and
envpool extras); prints a table and writes ``benchmarks/results/atari_acting_overlap.json``. About 2 minutes.
"""
import argparse
import os
import sys
import time
from typing import Any, Dict, List

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from atari_env_throughput import CollectorBench, background_cpu_share, machine_info  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402

RESULT = os.path.join(ROOT, "benchmarks", "results", "atari_acting_overlap.json")
FRAME_SKIP = 4


def make_pools(num_envs: int, groups: int, threads: int, seed: int) -> List[Any]:
    """``groups`` envpool Pong pools of ``num_envs / groups`` envs, with the collector envs' preprocessing."""
    import envpool
    size = num_envs // groups
    return [envpool.make("Pong-v5", env_type="gymnasium", num_envs=size, batch_size=size, num_threads=threads,
                         episodic_life=True, reward_clip=True, noop_max=30, seed=seed + g * size)
            for g in range(groups)]


def act(policy: Any, obs: np.ndarray) -> np.ndarray:
    return policy.forward(torch.from_numpy(obs))["action"].numpy().astype(np.int32)


def run(bench: str, policy: Any, num_envs: int, threads: int, seconds: float, seed: int) -> Dict[str, float]:
    """Env steps made in ``seconds`` (after one second of warm-up) by ``bench`` ('raw', 'in_turn', 'overlapped')."""
    if bench == "forward_only":
        obs = make_pools(num_envs, 1, threads, seed)[0].reset()[0]
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 1.0:
            act(policy, obs)
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            act(policy, obs)
            steps += num_envs
        return {"env_steps": steps, "seconds": time.perf_counter() - start}
    pools = make_pools(num_envs, 2 if bench == "overlapped" else 1, threads, seed)
    obs = [pool.reset()[0] for pool in pools]
    rng = np.random.default_rng(seed)
    random_actions = rng.integers(0, 6, (256, num_envs)).astype(np.int32)
    try:
        if bench == "overlapped":
            for g, pool in enumerate(pools):
                pool.send(act(policy, obs[g]))
        steps, start, measured_from, i = 0, time.perf_counter(), None, 0
        while True:
            now = time.perf_counter()
            if measured_from is None and now - start >= 1.0:
                measured_from, steps = now, 0
            if measured_from is not None and now - measured_from >= seconds:
                return {"env_steps": steps, "seconds": now - measured_from}
            if bench == "raw":
                pools[0].step(random_actions[i % len(random_actions)])
                steps += num_envs
            elif bench == "in_turn":
                obs[0] = pools[0].step(act(policy, obs[0]))[0]
                steps += num_envs
            else:
                for g, pool in enumerate(pools):
                    obs[g] = pool.recv()[0]
                    steps += len(obs[g])
                    pool.send(act(policy, obs[g]))
            i += 1
    finally:
        if bench == "overlapped":
            for pool in pools:
                pool.recv()
        for pool in pools:
            pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 16], help="vector env sizes (8 16)")
    parser.add_argument("--envpool-threads", type=int, default=2, help="envpool threads per pool (2)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per run (default 3)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per row; the table shows the best (2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=RESULT, help="the JSON file to write")
    args = parser.parse_args()

    collector = CollectorBench("base", 1, args.seed)  # only for pong_impala.py's policy
    policy = collector.parts.policy.collect_mode
    collector.close()
    threads_before = torch.get_num_threads()
    rows: Dict[tuple, List[Dict[str, Any]]] = {}
    print(f"{'bench':<11} {'envs':>4} {'torch threads':>13} {'frames/s':>10}  other load (niced)")
    for repeat in range(args.repeats):
        for n in args.envs:
            for bench, torch_threads in (("raw", 0), ("forward_only", 1), ("forward_only", 2), ("in_turn", 1),
                                         ("in_turn", 2), ("overlapped", 1), ("overlapped", 2)):
                torch.set_num_threads(max(1, torch_threads))
                load = background_cpu_share()
                result = run(bench, policy, n, args.envpool_threads, args.seconds, args.seed + repeat)
                frames = result["env_steps"] / result["seconds"] * FRAME_SKIP
                rows.setdefault((bench, n, torch_threads), []).append(dict(result, frames_per_s=frames,
                                                                           background_cpu_share=load))
                load_text = "n/a" if load["normal"] is None else f"{load['normal']:.0%} ({load['niced']:.0%})"
                print(f"{bench:<11} {n:>4} {torch_threads or '-':>13} {frames:>10,.0f}  {load_text}", flush=True)
    torch.set_num_threads(threads_before)
    out = []
    for (bench, n, torch_threads), runs in rows.items():
        raw = max(r["frames_per_s"] for r in rows["raw", n, 0])
        best = max(r["frames_per_s"] for r in runs)
        out.append({"bench": bench, "num_envs": n, "torch_threads": torch_threads or None,
                    "max_frames_per_s": best, "share_of_raw": best / raw, "runs": runs})
    for n in args.envs:
        raw = max(r["frames_per_s"] for r in rows["raw", n, 0])
        forward = max(r["frames_per_s"] for r in rows["forward_only", n, 2])
        out.append({"bench": "cpu_bound", "num_envs": n, "torch_threads": 2,
                    "max_frames_per_s": 1 / (1 / raw + 1 / forward), "share_of_raw": forward / (raw + forward),
                    "runs": []})
    print(f"\nbest of {args.repeats} runs, ALE frames/s (share of raw envpool at the same N):")
    for row in out:
        threads = row["torch_threads"] or "-"
        print(f"{row['bench']:<11} N={row['num_envs']:<3} torch threads {threads}: {row['max_frames_per_s']:>8,.0f} "
              f"({row['share_of_raw']:.0%})")
    atomic_write_json({"env_id": "ALE/Pong-v5 (envpool Pong-v5)", "envpool_threads_per_pool": args.envpool_threads,
                       "seconds_per_run": args.seconds, "repeats": args.repeats, "machine": machine_info(),
                       "rows": out}, args.out)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    main()
