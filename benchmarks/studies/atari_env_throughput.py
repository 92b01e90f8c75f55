"""Atari env throughput: ALE frames per second of N preprocessed Pong envs, per env manager, with random actions.

Each row is a vector env made as ding_lite's pipelines make it (``make_vector_env`` on a compiled config with
``env.env_id='ALE/Pong-v5'`` and the default ``env.atari``: noop reset, frame skip 4, 84x84 grey, 4-frame stack,
episodic life and reward clipping, the collector's envs) of ``num_envs`` envs, stepped with random actions drawn up
front. Frames are env steps x ``env.atari.frame_skip`` (4): what the ALE emulates, as papers count them (the noop
frames of resets are not counted). The benches, each for N in ``--envs`` (default 1, 2, 4, 8):

- ``base``: the 'base' manager, gymnasium's ``SyncVectorEnv``: every env stepped in this process, one after another.
- ``subprocess``: the 'subprocess' manager, gymnasium's ``AsyncVectorEnv``: one spawned process per env.
- ``envpool``: the 'envpool' manager (envpool's C++ envs on ``min(N, cores)`` threads), where envpool is installed.
- ``collector_base`` and ``collector_envpool``: ding_lite's ``SampleCollector`` with the IMPALA policy of
  dizoo_configs/pong_impala.py (shared ``nature_conv`` encoder, unroll 20; untrained weights) over the 'base' or
  'envpool' vector env: the actor's forward on the N frame stacks, the env step, the transition kept as uint8 and the
  unroll's train sample, as in a serial run's collection; torch threads as ``torch_threads='auto'`` gives a conv
  policy. Their rows beside ``base`` / ``envpool`` give the share of raw env frames/s the collector keeps.

More benches can be added: ``BENCHES`` maps a name to a function ``(num_envs, seed) -> Bench`` (anything with
``chunk() -> env steps made`` and ``close()``), e.g. the collector with a conv policy over one of these vector envs;
its rows appear in the table and the JSON with the same fields.

Before each row the script sleeps one second and records the share of the machine's CPU that other processes used
meanwhile (``background_cpu_share``, from /proc/stat), apart for processes at normal priority (which compete with the
benchmark as equals: rows taken with more than 25 % of that are flagged) and niced ones (which mostly yield to it).
The reference machine has 2 cores shared with other work.

Every row runs ``--repeats`` times (default 3), interleaved over the rows so that slow drift of the machine hits them
alike; the tables show the best run of each row (the least disturbed by other work: interference only ever slows a
run down) and the median. Run from the repository root: ``python benchmarks/studies/atari_env_throughput.py``
(needs ``pip install -e ".[atari]"``; ``.[envpool]`` for the envpool rows). Prints a table and writes
``benchmarks/studies/results/atari_env_throughput.json``. About 4 minutes with the defaults.
"""
import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]  # ding_lite; machine.py

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.envs import make_vector_env  # noqa: E402
from ding_lite.envs.envpool_manager import envpool_available  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from machine import machine_info as shared_machine_info  # noqa: E402  (benchmarks/machine.py)

ENV_ID = "ALE/Pong-v5"
RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "atari_env_throughput.json")


def env_section(manager: str, env_id: str = ENV_ID):
    """The compiled ``env`` section of an IMPALA config on ``env_id`` with env manager ``manager``."""
    return compile_config(dict(env=dict(env_id=env_id)),
                          dict(policy=dict(type="impala"), env_manager=dict(type=manager))).env


class VectorEnvBench:
    """A vector env of the 'manager' stepped with random actions; ``chunk`` makes ``steps`` vector steps."""

    def __init__(self, manager: str, num_envs: int, seed: int, steps: int = 100) -> None:
        cfg = env_section(manager)
        self.frame_skip = cfg.atari.frame_skip
        self.env = make_vector_env(cfg, num_envs, seed=seed)
        self.actions = np.random.default_rng(seed).integers(0, self.env.single_action_space.n, (steps, num_envs))

    def chunk(self) -> int:
        step = self.env.step
        for action in self.actions:
            step(action)
        return self.actions.size

    def close(self) -> None:
        self.env.close()


class CollectorBench:
    """``SampleCollector`` with pong_impala.py's IMPALA policy over the 'manager' vector env; ``chunk`` collects one
    unroll per env (``unroll_len`` vector steps)."""

    def __init__(self, manager: str, num_envs: int, seed: int) -> None:
        import torch
        from ding_lite.config import read_config_file
        from ding_lite.entry.build import build, compile_input
        from ding_lite.worker import SampleCollector
        main, create = read_config_file(os.path.join(ROOT, "dizoo_configs", "pong_impala.py"))
        create = dict(create, env_manager=dict(type=manager))
        self._threads = torch.get_num_threads()
        # keep_freed_memory off: it cannot be undone in this process, and the rows after this one would inherit it.
        cfg = compile_input((main, create), seed, {"env.collector_env_num": num_envs, "env.evaluator_env_num": 1,
                                                   "keep_freed_memory": False})
        self.parts = build(cfg, seed)
        self.frame_skip = cfg.env.atari.frame_skip
        self.collector = SampleCollector(self.parts.collector_env, self.parts.policy.collect_mode)
        self.n_sample = num_envs

    def chunk(self) -> int:
        before = self.collector.envstep
        self.collector.collect(self.n_sample)
        return self.collector.envstep - before

    def close(self) -> None:
        import torch
        self.parts.collector_env.close()
        self.parts.evaluator_env.close()
        torch.set_num_threads(self._threads)


# name -> (num_envs, seed) -> bench.
BENCHES: Dict[str, Callable[[int, int], Any]] = {
    "base": lambda n, seed: VectorEnvBench("base", n, seed),
    "subprocess": lambda n, seed: VectorEnvBench("subprocess", n, seed),
    "collector_base": lambda n, seed: CollectorBench("base", n, seed),
}
if envpool_available():
    BENCHES["envpool"] = lambda n, seed: VectorEnvBench("envpool", n, seed)
    BENCHES["collector_envpool"] = lambda n, seed: CollectorBench("envpool", n, seed)


def cpu_ticks() -> Optional[tuple]:
    """(busy ticks of processes at normal priority, busy ticks of niced processes, all ticks) from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return user + system + irq + softirq + steal, nice, sum(fields)


def background_cpu_share(seconds: float = 1.0) -> Dict[str, Optional[float]]:
    """Shares of the machine's CPU that other processes used while this one slept ``seconds``: at normal priority
    (they compete with the benchmark as equals) and niced (they mostly yield to it)."""
    start = cpu_ticks()
    time.sleep(seconds)
    end = cpu_ticks()
    if start is None or end is None or end[2] == start[2]:
        return {"normal": None, "niced": None}
    total = end[2] - start[2]
    return {"normal": (end[0] - start[0]) / total, "niced": (end[1] - start[1]) / total}


def measure(bench: Any, seconds: float, warm_up: float) -> Dict[str, float]:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_up:
        bench.chunk()
    steps, t0 = 0, time.perf_counter()
    while True:
        steps += bench.chunk()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return {"env_steps": steps, "seconds": elapsed}


def machine_info() -> Dict[str, Any]:
    import ale_py
    import gymnasium
    versions = {"gymnasium": gymnasium.__version__, "ale_py": ale_py.__version__, "numpy": np.__version__}
    if envpool_available():
        import envpool
        versions["envpool"] = envpool.__version__
    return shared_machine_info(**versions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4, 8], help="vector env sizes (1 2 4 8)")
    parser.add_argument("--benches", nargs="+", default=list(BENCHES), choices=list(BENCHES),
                        help=f"which benches to run (default: all of {list(BENCHES)})")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per run (default 3)")
    parser.add_argument("--warm-up", type=float, default=1.0, help="seconds stepped before measuring (default 1)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per row, interleaved over the rows; the table shows the best (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=RESULT, help="the JSON file to write")
    args = parser.parse_args()

    runs: Dict[tuple, List[Dict[str, Any]]] = {(name, n): [] for name in args.benches for n in args.envs}
    print(f"{'bench':<18} {'envs':>4} {'env steps/s':>12} {'frames/s':>10} {'per env':>9}  other load (niced)")
    for repeat in range(args.repeats):
        for name, n in runs:
            bench = BENCHES[name](n, args.seed + repeat)
            try:
                load = background_cpu_share()
                result = measure(bench, args.seconds, args.warm_up)
            finally:
                bench.close()
            frame_skip = getattr(bench, "frame_skip", 4)
            steps_per_s = result["env_steps"] / result["seconds"]
            runs[name, n].append(dict(result, env_steps_per_s=steps_per_s, frames_per_s=steps_per_s * frame_skip,
                                      frame_skip=frame_skip, background_cpu_share=load))
            flag = "" if load["normal"] is None or load["normal"] < 0.25 else "  (busy machine)"
            load_text = "n/a" if load["normal"] is None else f"{load['normal']:.0%} ({load['niced']:.0%})"
            print(f"{name:<18} {n:>4} {steps_per_s:>12,.0f} {steps_per_s * frame_skip:>10,.0f} "
                  f"{steps_per_s * frame_skip / n:>9,.0f}  {load_text}{flag}", flush=True)
    rows = []
    for (name, n), row_runs in runs.items():
        frames = [r["frames_per_s"] for r in row_runs]
        rows.append({"bench": name, "num_envs": n, "frame_skip": row_runs[0]["frame_skip"],
                     "median_frames_per_s": statistics.median(frames), "min_frames_per_s": min(frames),
                     "max_frames_per_s": max(frames),
                     "median_env_steps_per_s": statistics.median(r["env_steps_per_s"] for r in row_runs),
                     "runs": row_runs})
    sizes = list(args.envs)
    for stat in ("max", "median"):
        print(f"\n{'best' if stat == 'max' else 'median'} of {args.repeats} runs, ALE frames/s (env steps x frame "
              f"skip):")
        print(f"{'bench':<18}" + "".join(f"{f'N={n}':>10}" for n in sizes))
        for name in args.benches:
            cells = {row["num_envs"]: row[f"{stat}_frames_per_s"] for row in rows if row["bench"] == name}
            print(f"{name:<18}" + "".join(f"{cells[n]:>10,.0f}" for n in sizes))
    atomic_write_json({"env_id": ENV_ID, "what": "ALE frames/s = env steps/s x frame_skip; random actions; default "
                       "env.atari (collector envs)", "seconds_per_run": args.seconds, "repeats": args.repeats,
                       "machine": machine_info(), "rows": rows}, args.out)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    main()
