"""Collector throughput: env steps per second of ding_lite's SampleCollector on CartPole-v1 beside raw gymnasium.

Rows (all in one process, on the same machine, in the same run):

1. ``gym single``: the raw single-env gymnasium loop: ``gym.make('CartPole-v1')``, random actions (drawn up front
   into a list), ``reset()`` when an episode ends. The floor of what any collector can reach per core.
2. ``gym SyncVectorEnv``: gymnasium's ``SyncVectorEnv`` of ``--envs`` envs in SAME_STEP autoreset mode (what the
   'base' env manager builds), random actions from a preallocated numpy array. The floor for a vectorised collector.
3. ``ding_lite collector``: ``SampleCollector`` over the 'base' manager's vector env with the IMPALA collect policy
   (VAC model, 64-64 encoder, unroll_len 32), ``collect(n_sample)`` with ``n_sample = envs * --samples-per-env``.
   Measured with one torch thread (the default here) and once with torch's default thread count.
4. ``... subprocess``: the same collector over the 'subprocess' manager (gymnasium ``AsyncVectorEnv``, spawn), once.

Rows 1-3 run ``--repeats`` times, interleaved (so slow drift of the machine hits every row alike), each for at least
``--seconds`` after a warm-up; the table shows the median. A short instrumented run then splits the collector's time
per vector step into policy forward, ``env.step`` and the collector's own bookkeeping, and a cProfile run lists the
hottest functions.

Why ``torch.set_num_threads(1)``: the collect forward is an MLP on a batch of ``--envs`` observations (8 x 4 floats);
each op takes a few microseconds, far below what an intra-op thread pool can split profitably, so extra threads can
only add wake-up and synchronisation cost, and on a 2-core machine they compete with the Python thread that steps the
envs (and with the learner in a real run). The script measures the collector with torch's default thread count too,
interleaved with the 1-thread runs, and prints both. On the 2-core reference VM, idle, the two are within run-to-run
noise (the pool hardly engages at batch 8); with one other busy process on the machine, the 2-thread collector fell to
roughly 55-70 % of the 1-thread one (the pool waits for a worker thread that is not scheduled). One thread was never
measurably slower.

Run from the repository root: ``python benchmarks/collector_throughput.py``. Prints a table and writes
``benchmarks/results/collector_throughput.json``. Takes about 50 s with the defaults (much of the time beyond the
measured seconds is the 'subprocess' row's start-up: every spawned env process re-imports this script, torch
included). Other processes on the machine skew the numbers: the CPU share they took during the measured rows (from
/proc/stat) is printed and recorded, with a warning when it is high.
"""
import argparse
import contextlib
import cProfile
import dataclasses
import io
import os
import pstats
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict
from gymnasium.vector import AutoresetMode, SyncVectorEnv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ding_lite.model  # noqa: E402,F401  (registers 'vac')
import ding_lite.worker.collector as collector_mod  # noqa: E402
from ding_lite.envs import EnvSpec, GymEnv, SubprocessEnvManager, make_vector_env  # noqa: E402
from ding_lite.policy import IMPALAPolicy  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from ding_lite.worker.collector import SampleCollector  # noqa: E402
from machine import machine_info as shared_machine_info  # noqa: E402  (benchmarks/machine.py)

ENV_ID = "CartPole-v1"
UNROLL_LEN = 32
TARGET_STEPS_PER_S = 25_000
RESULT = os.path.join(ROOT, "benchmarks", "results", "collector_throughput.json")


# ---- measurement helpers ---------------------------------------------------------------------------------------------
def timed_rate(chunk: Callable[[], int], seconds: float) -> Dict[str, float]:
    """Call ``chunk`` (which returns the env steps it made) until ``seconds`` have passed; env steps per second of
    wall time, and per second of this process's CPU time (which other processes on the machine hardly change; it
    leaves out child processes, so it means nothing for the 'subprocess' row)."""
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        steps += chunk()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            cpu = time.process_time() - c0
            return {"steps_per_s": steps / elapsed, "steps_per_cpu_s": steps / cpu, "steps": steps,
                    "seconds": elapsed, "cpu_seconds": cpu}


def warm_up(chunk: Callable[[], int], seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        chunk()


class RawSingle:
    """The plain gymnasium loop on one env; ``chunk`` makes 2,000 steps."""

    CHUNK = 2000

    def __init__(self, seed: int) -> None:
        self.env = gym.make(ENV_ID)
        self.env.reset(seed=seed)
        self.actions = np.random.default_rng(seed).integers(0, 2, size=self.CHUNK).tolist()

    def chunk(self) -> int:
        env = self.env
        for a in self.actions:
            _, _, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                env.reset()
        return self.CHUNK

    def close(self) -> None:
        self.env.close()


class RawVector:
    """gymnasium's SyncVectorEnv in SAME_STEP mode; ``chunk`` makes 256 vector steps."""

    CHUNK = 256

    def __init__(self, num_envs: int, seed: int) -> None:
        self.num_envs = num_envs
        self.env = SyncVectorEnv([lambda: gym.make(ENV_ID)] * num_envs, autoreset_mode=AutoresetMode.SAME_STEP)
        self.env.reset(seed=seed)
        self.actions = np.random.default_rng(seed).integers(0, 2, size=(self.CHUNK, num_envs))

    def chunk(self) -> int:
        step = self.env.step
        for a in self.actions:
            step(a)
        return self.CHUNK * self.num_envs

    def close(self) -> None:
        self.env.close()


# ---- the ding_lite side ----------------------------------------------------------------------------------------------
def env_config(manager: str) -> EasyDict:
    env_cfg = GymEnv.default_config()
    env_cfg.update(env_id=ENV_ID, type="gym")
    env_cfg.manager = SubprocessEnvManager.default_config() if manager == "subprocess" else EasyDict()
    env_cfg.manager.type = manager
    return env_cfg


def _compiled_policy_config(num_envs: int, spec: EnvSpec) -> EasyDict:
    """The policy section through ``ding_lite.config.compile_config`` and the dizoo CartPole IMPALA config."""
    import importlib.util

    from ding_lite.config import compile_config
    from ding_lite.entry.build import resolve_env_spaces

    path = os.path.join(ROOT, "dizoo_configs", "cartpole_impala.py")
    module_spec = importlib.util.spec_from_file_location("_cartpole_impala", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    main_config, create_config = module.main_config, module.create_config
    main_config["env"]["collector_env_num"] = num_envs
    main_config["policy"]["unroll_len"] = UNROLL_LEN
    cfg = compile_config(main_config, create_config, seed=0, exp_name="collector_throughput")  # writes nothing
    resolve_env_spaces(cfg, spec)
    return cfg.policy


def _hand_policy_config(spec: EnvSpec) -> EasyDict:
    cfg = IMPALAPolicy.default_config()
    cfg.unroll_len = UNROLL_LEN
    cfg.action_space = spec.action_space_type
    cfg.model = EasyDict(type=None, import_names=[], obs_shape=spec.obs_shape[0], action_shape=spec.action_shape,
                         action_space=spec.action_space_type, encoder_hidden_size_list=[64, 64])
    return cfg


def make_policy(num_envs: int) -> Tuple[IMPALAPolicy, str]:
    """The IMPALA policy (collect mode only): from compile_config when it is available and works, else by hand."""
    probe = gym.make(ENV_ID)
    spec = EnvSpec.from_spaces(probe.observation_space, probe.action_space)
    probe.close()
    try:
        cfg, source = _compiled_policy_config(num_envs, spec), "compile_config(dizoo_configs/cartpole_impala.py)"
    except Exception as err:  # the config compiler is optional here: fall back to the policy's defaults
        cfg, source = _hand_policy_config(spec), f"IMPALAPolicy.default_config() by hand ({type(err).__name__})"
    torch.manual_seed(0)
    return IMPALAPolicy(cfg, enable_field=("collect",)), source


class Collect:
    """A SampleCollector and the chunk of work one measurement repeats: one ``collect(n_sample)``."""

    def __init__(self, policy: IMPALAPolicy, num_envs: int, n_sample: int, manager: str, seed: int) -> None:
        env = make_vector_env(env_config(manager), num_envs, seed)
        self.collector = SampleCollector(env, policy.collect_mode)
        self.n_sample = n_sample

    def chunk(self) -> int:
        before = self.collector.envstep
        self.collector.collect(self.n_sample)
        return self.collector.envstep - before

    def close(self) -> None:
        self.collector.close()


@contextlib.contextmanager
def torch_threads(n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


# ---- time breakdown --------------------------------------------------------------------------------------------------
class Timers:
    def __init__(self) -> None:
        self.total: Dict[str, float] = {}

    def wrap(self, name: str, fn: Callable) -> Callable:
        total, clock = self.total, time.perf_counter
        total.setdefault(name, 0.0)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                total[name] += clock() - t0

        return timed


def wrapper_overhead_us(calls: int = 200_000) -> float:
    """What one ``Timers.wrap`` layer adds to a call, in microseconds."""
    def noop() -> None:
        return None

    wrapped = Timers().wrap("noop", noop)
    best = []
    for fn in (noop, wrapped):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append(time.perf_counter() - t0)
    return (best[1] - best[0]) / calls * 1e6


def breakdown(policy: IMPALAPolicy, num_envs: int, n_sample: int, seconds: float) -> Dict[str, Any]:
    """Per-vector-step split of a collector's time with manual timers around its parts (this process only; the
    library's module globals ``tree_stack`` and ``replace_final_obs`` are wrapped for the run and restored after)."""
    timers = Timers()
    run = Collect(policy, num_envs, n_sample, "base", seed=1)
    c = run.collector
    warm_up(run.chunk, 0.5)
    model = policy.model
    model.forward = timers.wrap("model.forward (VAC MLP)", model.forward)  # instance attribute, removed below
    mode = c.policy
    c.policy = dataclasses.replace(mode, forward=timers.wrap("policy forward (total)", mode.forward),
                                   process_transition=timers.wrap("process_transition", mode.process_transition),
                                   get_train_sample=timers.wrap("get_train_sample", mode.get_train_sample))
    c.env.step = timers.wrap("env.step (SyncVectorEnv)", c.env.step)
    c._env_action = timers.wrap("action -> numpy", c._env_action)
    c.episodes.step = timers.wrap("episode tracker", c.episodes.step)
    saved = collector_mod.tree_stack, collector_mod.replace_final_obs
    collector_mod.tree_stack = timers.wrap("tree_stack (per segment)", collector_mod.tree_stack)
    collector_mod.replace_final_obs = timers.wrap("replace_final_obs", collector_mod.replace_final_obs)
    step_total = timers.wrap("collector.step (total)", c.step)
    c.step = step_total
    try:
        steps0 = c.envstep
        rate = timed_rate(run.chunk, seconds)
    finally:
        collector_mod.tree_stack, collector_mod.replace_final_obs = saved
        del model.forward
        run.close()
    vector_steps = (c.envstep - steps0) // num_envs
    us = {k: v / vector_steps * 1e6 for k, v in timers.total.items()}
    total = us["collector.step (total)"]
    parts = ["policy forward (total)", "env.step (SyncVectorEnv)", "action -> numpy", "replace_final_obs",
             "process_transition", "episode tracker", "tree_stack (per segment)", "get_train_sample"]
    us["collector glue (rest of step: from_numpy/.float, dicts, tree_map)"] = total - sum(us[p] for p in parts)
    us["policy forward outside model (no_grad, Module call, sampling)"] = (us["policy forward (total)"]
                                                                          - us["model.forward (VAC MLP)"])
    us["collect() loop outside step"] = rate["seconds"] / vector_steps * 1e6 - total
    # wrapped calls per vector step: step, policy forward, model.forward, env.step, action, replace_final_obs,
    # process_transition, episode tracker, and tree_stack + get_train_sample once per segment
    per_step = 8 + 2 / c.unroll_len
    return {"us_per_vector_step": us, "vector_steps": vector_steps, "instrumented_steps_per_s": rate["steps_per_s"],
            "timer_overhead_us_per_vector_step": per_step * wrapper_overhead_us()}


def profile_top(policy: IMPALAPolicy, num_envs: int, n_sample: int, calls: int, top: int = 12) -> List[Dict]:
    """cProfile of ``calls`` collect() calls: the functions with the most own time (profiler overhead inflates
    small Python functions, so read it for ranking, not for absolute numbers)."""
    run = Collect(policy, num_envs, n_sample, "base", seed=2)
    warm_up(run.chunk, 0.3)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        run.chunk()
    prof.disable()
    run.close()
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = stats.total_tt
    rows = []
    for (path, line, name), (cc, nc, tt, ct, _) in stats.stats.items():
        short = f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}:{line}({name})" if line else name
        rows.append({"function": short, "calls": nc, "own_s": tt, "own_share": tt / total, "cum_s": ct})
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:top]


# ---- report ----------------------------------------------------------------------------------------------------------
def machine_info() -> Dict[str, Any]:
    return shared_machine_info(torch=torch.__version__, gymnasium=gym.__version__, numpy=np.__version__)


class MachineUse:
    """CPU time the whole machine spent (from /proc/stat) beside this process's own, over a stretch of wall time:
    what other processes took, and what the hypervisor stole. Empty where /proc/stat is missing."""

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> Optional[Tuple[float, float, float, float]]:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        tick = os.sysconf("SC_CLK_TCK")
        user, nice, system, idle, iowait, irq, softirq, steal = fields
        busy = (user + nice + system + irq + softirq) / tick
        return busy, steal / tick, time.process_time(), time.perf_counter()

    def stop(self) -> Dict[str, float]:
        end = self._read()
        if self.start is None or end is None:
            return {}
        busy, steal, own, wall = (b - a for a, b in zip(self.start, end))
        capacity = wall * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else wall * os.cpu_count()
        return {"other_processes_cpu_share": max(0.0, busy - own) / capacity, "steal_share": steal / capacity,
                "wall_s": wall}


def summarise(runs: List[Dict[str, float]]) -> Dict[str, Any]:
    rates = [r["steps_per_s"] for r in runs]
    return {"median_steps_per_s": statistics.median(rates), "min_steps_per_s": min(rates),
            "max_steps_per_s": max(rates),
            "median_steps_per_cpu_s": statistics.median(r["steps_per_cpu_s"] for r in runs), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per run (default 3)")
    parser.add_argument("--envs", type=int, default=8, help="envs in the vector env / collector (default 8)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per row; the median is reported (default 3)")
    parser.add_argument("--samples-per-env", type=int, default=2,
                        help="collect(n_sample) with n_sample = envs * this, i.e. this many unrolls of "
                             f"{UNROLL_LEN} steps per env per call (default 2)")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the 'subprocess' env manager row")
    parser.add_argument("--output", default=RESULT, help="where to write the JSON results")
    args = parser.parse_args()
    start = time.perf_counter()
    default_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    envs, n_sample, seconds = args.envs, args.envs * args.samples_per_env, args.seconds
    warm = min(0.5, max(0.2, seconds / 6))
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None

    policy, config_source = make_policy(envs)
    single, vector = RawSingle(seed=0), RawVector(envs, seed=0)
    collect = Collect(policy, envs, n_sample, "base", seed=0)
    # name: (chunk, torch threads, seconds per run); the default-threads row shares the collector (and its warm-up)
    rows = {"single": (single.chunk, 1, seconds), "vector": (vector.chunk, 1, seconds),
            "collector": (collect.chunk, 1, seconds),
            "collector_default_threads": (collect.chunk, default_threads, max(1.0, seconds / 2))}
    runs: Dict[str, List[Dict[str, float]]] = {k: [] for k in rows}
    use = MachineUse()
    for name, (chunk, threads, _) in rows.items():
        with torch_threads(threads):
            warm_up(chunk, warm)
    for _ in range(args.repeats):
        for name, (chunk, threads, secs) in rows.items():
            with torch_threads(threads):
                runs[name].append(timed_rate(chunk, secs))
    single.close(), vector.close(), collect.close()
    # read before the 'subprocess' row, whose spawned env processes would raise it themselves
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    machine_use = use.stop()

    subprocess: Optional[Dict[str, Any]] = None
    if not args.no_subprocess:
        t0 = time.perf_counter()
        sub = Collect(policy, envs, n_sample, "subprocess", seed=0)
        startup = time.perf_counter() - t0
        warm_up(sub.chunk, 0.5)
        subprocess = timed_rate(sub.chunk, max(1.0, seconds / 2))
        subprocess["startup_s"] = startup
        sub.close()

    split = breakdown(policy, envs, n_sample, max(1.0, seconds / 2))
    top = profile_top(policy, envs, n_sample, calls=20)

    results: Dict[str, Any] = {
        "setup": {"env_id": ENV_ID, "envs": envs, "policy": "impala", "model": "VAC encoder [64, 64]",
                  "unroll_len": UNROLL_LEN, "n_sample": n_sample, "seconds": seconds, "repeats": args.repeats,
                  "torch_threads": 1, "torch_default_threads": default_threads, "policy_config": config_source},
        "machine": dict(machine_info(), loadavg_1min_before=load_before, loadavg_1min_after=load_after,
                        during_measured_rows=machine_use),
        "rows": {
            "gym_single_env": summarise(runs["single"]),
            "gym_sync_vector_env": summarise(runs["vector"]),
            "ding_lite_collector_base": summarise(runs["collector"]),
            "ding_lite_collector_base_default_threads": summarise(runs["collector_default_threads"]),
        },
        "breakdown": split,
        "profile_top_own_time": top,
    }
    if subprocess is not None:
        results["rows"]["ding_lite_collector_subprocess"] = {"median_steps_per_s": subprocess["steps_per_s"],
                                                             "runs": [subprocess]}
    collector_rate = results["rows"]["ding_lite_collector_base"]["median_steps_per_s"]
    results["target"] = {"steps_per_s": TARGET_STEPS_PER_S, "measured": collector_rate,
                         "met": collector_rate >= TARGET_STEPS_PER_S}

    # ---- print ----
    m = results["machine"]
    print(f"{ENV_ID}, {envs} envs, IMPALA collect policy (unroll_len {UNROLL_LEN}, n_sample {n_sample}); "
          f"{m['cpu_model']}, {m['cpus_usable']} CPUs; torch {m['torch']}, gymnasium {m['gymnasium']}")
    print(f"policy config: {config_source}")
    # other processes' CPU time and the hypervisor's steal during rows 1-3 (the 'subprocess' row comes after)
    other = machine_use.get("other_processes_cpu_share", 0.0)
    steal = machine_use.get("steal_share", 0.0)
    m["contended"] = other > 0.1 or steal > 0.05
    print(f"during the measured rows, other processes used {100 * other:.0f} % of the machine's CPU time and the "
          f"hypervisor stole {100 * steal:.0f} %")
    if m["contended"]:
        print("WARNING: the machine was shared: the numbers below may be pessimistic and noisy; re-run when it is idle "
              "(on a VM, a busy host can slow every row without showing here)")
    vec_rate = results["rows"]["gym_sync_vector_env"]["median_steps_per_s"]
    print(f"\n{'row':<46}{'env steps/s':>13}{'min':>10}{'max':>10}{'us/vec step':>13}{'vs raw vec':>11}"
          f"{'steps/cpu-s':>13}")
    labels = [
        ("gym_single_env", "raw gymnasium, 1 env"),
        ("gym_sync_vector_env", f"raw gymnasium SyncVectorEnv, {envs} envs"),
        ("ding_lite_collector_base", "ding_lite collector 'base', 1 torch thread"),
        ("ding_lite_collector_base_default_threads", f"ding_lite collector 'base', {default_threads} torch threads"),
        ("ding_lite_collector_subprocess", "ding_lite collector 'subprocess', 1 thread"),
    ]
    for key, label in labels:
        if key not in results["rows"]:
            continue
        r = results["rows"][key]
        med = r["median_steps_per_s"]
        lo = r.get("min_steps_per_s", med)
        hi = r.get("max_steps_per_s", med)
        per_vec = "" if key == "gym_single_env" else f"{envs / med * 1e6:>13.1f}"
        cpu = "-" if key == "ding_lite_collector_subprocess" else f"{r['median_steps_per_cpu_s']:,.0f}"
        print(f"{label:<46}{med:>13,.0f}{lo:>10,.0f}{hi:>10,.0f}{per_vec:>13}{med / vec_rate:>11.2f}{cpu:>13}")
    if subprocess is not None:
        print(f"  ('subprocess': one run of {subprocess['seconds']:.1f} s; start-up of {envs} spawned envs "
              f"{subprocess['startup_s']:.2f} s, not counted; it includes every child re-importing this script, "
              f"hence torch, as spawn does with any main script)")
    print("  (steps/cpu-s: per second of this process's CPU time: leaves out waiting for a CPU, not the slowdown of "
          "sharing cores and caches)")
    print(f"  (medians of {args.repeats} runs of >= {seconds:g} s, rows interleaved; default-threads row: runs of "
          f">= {rows['collector_default_threads'][2]:g} s)")

    us = split["us_per_vector_step"]
    total = us["collector.step (total)"]
    print(f"\ntime per vector step ({envs} env steps), instrumented run of {split['vector_steps']} vector steps "
          f"({split['instrumented_steps_per_s']:,.0f} env steps/s with timers on):")
    order = ["policy forward (total)", "model.forward (VAC MLP)",
             "policy forward outside model (no_grad, Module call, sampling)", "env.step (SyncVectorEnv)",
             "action -> numpy", "replace_final_obs", "process_transition", "episode tracker",
             "tree_stack (per segment)",
             "get_train_sample", "collector glue (rest of step: from_numpy/.float, dicts, tree_map)",
             "collector.step (total)", "collect() loop outside step"]
    for name in order:
        indent = "    " if name in ("model.forward (VAC MLP)",
                                    "policy forward outside model (no_grad, Module call, sampling)") else "  "
        print(f"{indent}{name:<{72 - len(indent)}}{us[name]:>8.1f} us{100 * us[name] / total:>7.1f} %")
    raw_vec_us = envs / vec_rate * 1e6
    print(f"  (raw SyncVectorEnv.step alone, row 2: {raw_vec_us:.1f} us per vector step; the timers themselves add "
          f"about {split['timer_overhead_us_per_vector_step']:.1f} us per vector step, mostly to the total and glue)")
    print(f"\ncProfile, top {len(top)} functions by own time (20 collect() calls; ranking only):")
    for r in top:
        print(f"  {100 * r['own_share']:>5.1f} %  {r['calls']:>8}  {r['function']}")

    status = "met" if results["target"]["met"] else "MISSED"
    print(f"\ntarget: collector >= {TARGET_STEPS_PER_S:,} env steps/s: {collector_rate:,.0f} -> {status}")
    results["wall_s"] = time.perf_counter() - start
    atomic_write_json(results, args.output)
    print(f"wrote {os.path.relpath(args.output, ROOT)} ({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
