"""Learner updates per second of IMPALA and ACER on their shipped CartPole configs (dizoo_configs/cartpole_impala.py,
cartpole_acer.py), plus ACER with a shared MLP encoder (``model.share_encoder=True``) and ACER with a 1-dim
continuous action (the CartPole config's networks), on one CPU thread; 4-dim synthetic observations.

An update is what the serial pipeline's learner does: ``buffer.sample(batch_size)`` from a replay buffer of
synthetic unrolls made by the policy's own ``get_train_sample`` (so stored as a run stores them), then
``Learner.train(batch)``: the policy's ``_forward_learn`` and the learner's one host transfer of the logged scalars.

The settings are timed interleaved (round robin, ``--rounds`` rounds of ``--seconds`` each) so that a neighbour's load
on a shared machine hits them alike; each row reports the median over rounds of the updates/s in wall time and in
this process's CPU time. ``--baseline DIR`` times another copy of the code (e.g. ``git worktree add /tmp/base
HEAD~1``) against this one: each round runs one process per code base, in alternating order, and the table gives
both and their ratio. Written for issue 25, item 7 (redundant compute on the learn path); the figures are in
docs/benchmarks.md.

    python benchmarks/studies/learner_redundancy.py [--rounds 5] [--seconds 2] [--baseline DIR] [--tag TAG]

Writes benchmarks/studies/results/learner_redundancy[_<tag>].json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

SETTINGS = {
    # name -> (config file, action space, overrides of policy.model)
    "impala_cartpole": ("cartpole_impala.py", "discrete", {}),
    "acer_cartpole": ("cartpole_acer.py", "discrete", {}),
    "acer_cartpole_shared_mlp": ("cartpole_acer.py", "discrete", {"share_encoder": True}),
    "acer_continuous": ("cartpole_acer.py", "continuous", {}),
}
OBS_DIM, N_ACTIONS, ACT_DIM, N_ENV, UNROLLS = 4, 2, 1, 8, 256


def make_setting(name: str) -> Tuple[Callable[[], Dict[str, Any]], int]:
    """(one update, batch_size) for a setting: a policy, a filled buffer and a learner."""
    from ding_lite.config import compile_config, read_config_file
    from ding_lite.data import ReplayBuffer
    from ding_lite.utils import POLICY_REGISTRY
    from ding_lite.worker import Learner

    config, space, model = SETTINGS[name]
    main, create = read_config_file(os.path.join(ROOT, "dizoo_configs", config))
    cfg = compile_config((main, create))
    pol = cfg.policy
    pol.action_space = space
    action_shape = N_ACTIONS if space == "discrete" else ACT_DIM
    pol.model.update(obs_shape=OBS_DIM, action_shape=action_shape, action_space=space, **model)
    torch.manual_seed(0)
    policy = POLICY_REGISTRY.get(pol.type)(pol, enable_field=("learn", "collect"))
    T, B = pol.unroll_len, pol.learn.batch_size
    gen = torch.Generator().manual_seed(0)
    buffer = ReplayBuffer(dict(replay_buffer_size=UNROLLS), seed=0)
    for _ in range(UNROLLS // N_ENV):
        obs = torch.randn(T + 1, N_ENV, OBS_DIM, generator=gen)
        with torch.no_grad():
            out = policy.collect_mode.forward(obs[:T].reshape(T * N_ENV, OBS_DIM))
        logit = torch.utils._pytree.tree_map(lambda x: x.reshape(T, N_ENV, *x.shape[1:]), out["logit"])
        action = out["action"].reshape(T, N_ENV, *out["action"].shape[1:])
        ended = torch.rand(T, N_ENV, generator=gen) < 0.02
        segment = {"obs": obs[:T], "next_obs": obs[1:].clone(), "action": action,
                   "reward": torch.ones(T, N_ENV), "terminated": ended & (torch.rand(T, N_ENV, generator=gen) < 0.9),
                   "truncated": ended & (torch.rand(T, N_ENV, generator=gen) < 0.3), "logit": logit}
        buffer.push(policy.collect_mode.get_train_sample(segment), cur_collector_envstep=0)
    learner = Learner(policy.learn_mode)

    def update() -> Dict[str, Any]:
        return learner.train(buffer.sample(B, 0))

    return update, B


def compare(args: argparse.Namespace) -> List[Dict[str, Any]]:
    """Rows for this code and ``args.baseline``, each round one worker process per code base (alternating order)."""
    runs: Dict[str, Dict[str, List[Dict[str, float]]]] = {"baseline": {}, "this": {}}
    roots = [("baseline", os.path.abspath(args.baseline)), ("this", ROOT)]
    for r in range(args.rounds):
        for label, root in (roots if r % 2 == 0 else roots[::-1]):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--root", root, "--rounds", "1",
                   "--seconds", str(args.seconds), "--threads", str(args.threads), "--settings", *args.settings]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            for row in json.loads(out.strip().splitlines()[-1]):
                runs[label].setdefault(row["setting"], []).append(row)
    rows = []
    for name in args.settings:
        row: Dict[str, Any] = {"setting": name}
        for label in runs:
            for key in ("updates_per_s", "updates_per_cpu_s"):
                row[f"{label}_{key}"] = round(statistics.median(x[key] for x in runs[label][name]), 1)
        row["speedup_cpu"] = round(row["this_updates_per_cpu_s"] / row["baseline_updates_per_cpu_s"], 3)
        row["speedup_wall"] = round(row["this_updates_per_s"] / row["baseline_updates_per_s"], 3)
        rows.append(row)
    print(f"{'setting':28} {'baseline upd/cpu-s':>18} {'this upd/cpu-s':>15} {'x':>6} {'baseline upd/s':>15} "
          f"{'this upd/s':>11} {'x':>6}")
    for r in rows:
        print(f"{r['setting']:28} {r['baseline_updates_per_cpu_s']:>18.1f} {r['this_updates_per_cpu_s']:>15.1f} "
              f"{r['speedup_cpu']:>6.2f} {r['baseline_updates_per_s']:>15.1f} {r['this_updates_per_s']:>11.1f} "
              f"{r['speedup_wall']:>6.2f}")
    return rows


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="time each setting this long per round")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tag", default="", help="suffix of the results file (e.g. before, after)")
    parser.add_argument("--baseline", help="another copy of the repository to time against this one")
    parser.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # the code a --worker imports
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # print rows as JSON, write nothing
    args = parser.parse_args(argv)
    if args.baseline:
        rows = compare(args)
        write(args, rows, baseline=os.path.abspath(args.baseline))
        return
    sys.path.insert(0, args.root)
    torch.set_num_threads(args.threads)
    updates = {name: make_setting(name)[0] for name in args.settings}
    for fn in updates.values():  # warm-up
        for _ in range(20):
            fn()
    wall: Dict[str, List[float]] = {n: [] for n in updates}
    cpu: Dict[str, List[float]] = {n: [] for n in updates}
    for _ in range(args.rounds):
        for name, fn in updates.items():
            n, t0, c0 = 0, time.perf_counter(), time.process_time()
            while time.perf_counter() - t0 < args.seconds:
                fn()
                n += 1
            wall[name].append(n / (time.perf_counter() - t0))
            cpu[name].append(n / max(time.process_time() - c0, 1e-9))
    rows = [{"setting": n, "updates_per_s": round(statistics.median(wall[n]), 1),
             "updates_per_cpu_s": round(statistics.median(cpu[n]), 1),
             "updates_per_s_rounds": [round(x, 1) for x in wall[n]]} for n in updates]
    if args.worker:
        print(json.dumps(rows))
        return
    print(f"{'setting':28} {'updates/s':>10} {'updates/cpu-s':>14}")
    for r in rows:
        print(f"{r['setting']:28} {r['updates_per_s']:>10.1f} {r['updates_per_cpu_s']:>14.1f}")
    write(args, rows)


def write(args: argparse.Namespace, rows: List[Dict[str, Any]], **extra: Any) -> None:
    path = os.path.join(ROOT, "benchmarks", "studies", "results",
                        f"learner_redundancy{'_' + args.tag if args.tag else ''}.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"what": __doc__.splitlines()[0], "threads": args.threads, "rounds": args.rounds,
                   "seconds_per_round": args.seconds, "rows": rows, **extra,
                   "load_average_1_5_15min_at_end": [round(x, 2) for x in os.getloadavg()],
                   "machine": machine_info(torch=torch.__version__)}, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
