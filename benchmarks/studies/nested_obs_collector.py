"""Collector throughput with nested observations: CartPole against the tree before nested observations, and Dict
observation envs against the same envs flattened to one Box.

The issue's bounds: the CartPole collector within 3 % of the tree before nested observations existed (commit
``3a3a3dc``), and a Dict-observation env's collector at least 70 % of the same env flattened to one Box.

Every row times ``SampleCollector(make_vector_env(cfg.env, envs, seed), policy.collect_mode).collect(n_sample)``
with the IMPALA collect policy built as a run builds it: ``dizoo_configs/cartpole_impala.py`` (VAC, separate actor
and critic encoders of [64, 64], ``encoder_type='auto'``) with its env section replaced, compiled by
``ding_lite.config.compile_config``, the env's spaces filled by ``ding_lite.entry.build.probe_env_spec``, the policy
from ``POLICY_REGISTRY``; 8 envs, ``unroll_len=32``, ``n_sample = envs * 2``, one torch thread, the 'base' manager.

1. ``cartpole``: CartPole-v1 on today's tree against the tree of ``--base`` (default ``3a3a3dc``, the commit before
   nested observations), extracted read-only with ``git archive <base> | tar -x -C /tmp/ding_base``.
2. ``goal_grid``: GoalGrid 5x5 (``ding_lite/envs/toy/goal_grid.py``: a Dict of Discrete(25) goal, Box(2) position,
   MultiBinary(4) walls) against the same env behind ``env.wrappers=['gymnasium.wrappers:FlattenObservation']``
   (one float Box of 31: the goal one-hot, position, walls).
3. ``minigrid``: MiniGrid-Empty-5x5-v0 with ``FilterObservation(['image', 'direction'])`` (a Dict of a uint8 7x7x3
   image and a Discrete(4) direction) against the same plus ``FlattenObservation`` (one uint8 Box of 151).

Each collector lives in its own worker process (this script with ``--worker``; for the base tree with
``PYTHONPATH`` set to it), built and warmed up once. The two collectors of a row then run in turn, ``--pairs``
times, for ``--seconds`` each, the pair's order alternating (AB, BA, ...) so that neither always goes first; the
ratio is taken per pair and its median reported with its range (the spread) and the quartiles, on wall time and on
the worker's own CPU time (which other processes on the machine hardly change). While a worker runs, its partner
waits on a pipe. The CPU share other processes took during each row (from /proc/stat, less this script's and its
workers' own CPU time) is printed and recorded.

Then, in this process, an instrumented run splits a vector step of the GoalGrid and MiniGrid collectors, Dict and
flat, into policy forward (and the model's encoder input preparation inside it), ``env.step``, observation
conversion and the collector's own bookkeeping, and cProfile lists the hottest functions of the Dict ones.

Run from the repository root: ``python benchmarks/studies/nested_obs_collector.py`` (about 2 min). Writes
``benchmarks/studies/results/nested_obs_collector.json`` and ``.txt`` (the printed table). ``--quick``: about 15 s, 2 pairs
of short runs, no profile; writes nothing unless ``--output`` is given. Other processes on the machine add noise:
run it on an idle machine for numbers to quote.
"""
import argparse
import cProfile
import dataclasses
import importlib.util
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
# the ding_lite tree this process imports: today's (ROOT), or a base tree for a --worker (set by the parent)
TREE = os.environ.get("NESTED_OBS_TREE") or ROOT
sys.path.insert(0, TREE)

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import ding_lite  # noqa: E402
import ding_lite.policy  # noqa: E402,F401  (registers the policies)
from ding_lite.config import compile_config  # noqa: E402
from ding_lite.entry.build import probe_env_spec  # noqa: E402
from ding_lite.envs import make_vector_env  # noqa: E402
from ding_lite.utils import POLICY_REGISTRY  # noqa: E402
from ding_lite.worker.collector import SampleCollector  # noqa: E402

BASE = "3a3a3dc"
BASE_DIR = "/tmp/ding_base"
UNROLL_LEN = 32
RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "nested_obs_collector.json")
FLATTEN = "gymnasium.wrappers:FlattenObservation"
DROP_MISSION = dict(type="gymnasium.wrappers:FilterObservation", kwargs=dict(filter_keys=["image", "direction"]))

# case -> variant -> (env section of the config, env type)
CASES: Dict[str, Dict[str, Tuple[dict, str]]] = {
    "cartpole": {"plain": (dict(env_id="CartPole-v1"), "gym")},
    "goal_grid": {"dict": (dict(), "goal_grid"), "flat": (dict(wrappers=[FLATTEN]), "goal_grid")},
    "minigrid": {"dict": (dict(env_id="minigrid:MiniGrid-Empty-5x5-v0", wrappers=[DROP_MISSION]), "gym"),
                 "flat": (dict(env_id="minigrid:MiniGrid-Empty-5x5-v0", wrappers=[DROP_MISSION, FLATTEN]), "gym")},
}
ROWS = [  # (row, case, (label A, variant A, tree A), (label B, variant B, tree B)); ratio = A / B
    ("cartpole", "cartpole", ("today", "plain", "today"), ("base", "plain", "base")),
    ("goal_grid", "goal_grid", ("dict", "dict", "today"), ("flat", "flat", "today")),
    ("minigrid", "minigrid", ("dict", "dict", "today"), ("flat", "flat", "today")),
]
TITLES = {"cartpole": "CartPole-v1: today / tree before nested obs",
          "goal_grid": "GoalGrid 5x5: Dict / FlattenObservation",
          "minigrid": "MiniGrid-Empty-5x5 (image, direction): Dict / FlattenObservation"}
BOUNDS = {"cartpole": 0.97, "goal_grid": 0.70, "minigrid": 0.70}


# ---- one collector, as a run builds it (works on today's tree and on the base tree) ---------------------------------
def build_collector(case: str, variant: str, envs: int, seed: int = 0) -> Tuple[SampleCollector, Any, Any]:
    """(collector, policy, compiled config) of ``case``/``variant``: cartpole_impala.py's config, env replaced."""
    path = os.path.join(ROOT, "dizoo_configs", "cartpole_impala.py")
    module_spec = importlib.util.spec_from_file_location("_cartpole_impala", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    env_section, env_type = CASES[case][variant]
    main_config, create_config = module.main_config, dict(module.create_config)
    main_config["env"] = dict(collector_env_num=envs, evaluator_env_num=1, **env_section)
    main_config["policy"]["unroll_len"] = UNROLL_LEN
    create_config["env"] = dict(type=env_type)
    cfg = compile_config(main_config, create_config, seed=seed, exp_name="nested_obs_collector")  # writes nothing
    probe_env_spec(cfg, seed)
    torch.manual_seed(seed)
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, enable_field=("collect",))
    collector = SampleCollector(make_vector_env(cfg.env, envs, seed), policy.collect_mode)
    return collector, policy, cfg


def timed_rate(chunk: Callable[[], int], seconds: float) -> Dict[str, float]:
    """Call ``chunk`` (returns the env steps it made) until ``seconds`` have passed: env steps per second of wall
    time and of this process's CPU time."""
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


def chunk_of(collector: SampleCollector, n_sample: int) -> Callable[[], int]:
    def chunk() -> int:
        before = collector.envstep
        collector.collect(n_sample)
        return collector.envstep - before
    return chunk


def worker(case: str, variant: str, envs: int, n_sample: int, warm: float) -> None:
    """``--worker``: build one collector, report 'ready', then time ``run SECONDS`` lines from stdin (one JSON line
    each) until 'quit'."""
    torch.set_num_threads(1)
    collector, policy, cfg = build_collector(case, variant, envs)
    chunk = chunk_of(collector, n_sample)
    warm_up(chunk, warm)
    space = cfg.policy.model.get("obs_space") or {"space": "box", "shape": cfg.policy.model.obs_shape}
    print(json.dumps({"ready": True, "ding_lite": os.path.dirname(ding_lite.__file__), "obs_space": space,
                      "encoder": type(policy.model.actor_encoder).__name__, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        print(json.dumps(timed_rate(chunk, float(cmd[1]))), flush=True)
    collector.close()


class Worker:
    """A ``--worker`` process of this script on ``tree`` (its ding_lite first on the path)."""

    def __init__(self, case: str, variant: str, tree: str, args: argparse.Namespace, warm: float) -> None:
        env = dict(os.environ, NESTED_OBS_TREE=tree, PYTHONPATH=tree, OMP_NUM_THREADS="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", case, variant, "--envs", str(args.envs),
               "--samples-per-env", str(args.samples_per_env), "--warm", str(warm)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=ROOT)
        self.info: Dict[str, Any] = {}

    def ready(self) -> Dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.proc.args} exited with {self.proc.wait()}")
        self.info = json.loads(line)
        return self.info

    def run(self, seconds: float) -> Dict[str, float]:
        self.proc.stdin.write(f"run {seconds}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=30)


def base_tree(commit: str, directory: str) -> str:
    """The ding_lite tree of ``commit``, extracted (once) into ``directory`` by ``git archive``, read-only for the
    repository."""
    if not os.path.isfile(os.path.join(directory, "ding_lite", "worker", "collector.py")):
        os.makedirs(directory, exist_ok=True)
        subprocess.run(f"git -C {ROOT} archive {commit} | tar -x -C {directory}", shell=True, check=True)
    return directory


# ---- machine load -----------------------------------------------------------------------------------------------
def _busy_s() -> Optional[Tuple[float, float]]:
    try:
        with open("/proc/stat") as f:
            user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


# ---- the paired rows --------------------------------------------------------------------------------------------
def quartiles(xs: List[float]) -> List[float]:
    return statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3


def paired_row(row: str, case: str, a: Tuple[str, str, str], b: Tuple[str, str, str], trees: Dict[str, str],
               args: argparse.Namespace, warm: float) -> Dict[str, Any]:
    workers = {label: Worker(case, variant, trees[tree], args, warm) for label, variant, tree in (a, b)}
    info = {label: w.ready() for label, w in workers.items()}
    for (label, _, tree) in (a, b):
        got = os.path.realpath(info[label]["ding_lite"])
        want = os.path.realpath(os.path.join(trees[tree], "ding_lite"))
        assert got == want, f"{row} {label}: worker imported ding_lite from {got}, not {want}"
    runs: Dict[str, List[Dict[str, float]]] = {a[0]: [], b[0]: []}
    busy0, own0, wall0 = _busy_s(), time.process_time(), time.perf_counter()
    for i in range(args.pairs):
        order = (a[0], b[0]) if i % 2 == 0 else (b[0], a[0])
        for label in order:
            runs[label].append(workers[label].run(args.seconds))
    busy1, own1, wall1 = _busy_s(), time.process_time(), time.perf_counter()
    for w in workers.values():
        w.close()
    load: Dict[str, float] = {}
    if busy0 and busy1:
        ours = (own1 - own0) + sum(r["cpu_seconds"] for rs in runs.values() for r in rs)
        capacity = (wall1 - wall0) * _cpus()
        load = {"other_processes_cpu_share": max(0.0, busy1[0] - busy0[0] - ours) / capacity,
                "steal_share": (busy1[1] - busy0[1]) / capacity, "wall_s": wall1 - wall0}
    ratio = [x["steps_per_s"] / y["steps_per_s"] for x, y in zip(runs[a[0]], runs[b[0]])]
    cpu_ratio = [x["steps_per_cpu_s"] / y["steps_per_cpu_s"] for x, y in zip(runs[a[0]], runs[b[0]])]
    out: Dict[str, Any] = {"case": case, "a": a[0], "b": b[0], "ratio_of": f"{a[0]} / {b[0]}", "bound": BOUNDS[row],
                           "workers": info, "machine_load": load}
    for label in (a[0], b[0]):
        rates = [r["steps_per_s"] for r in runs[label]]
        out[label] = {"median_steps_per_s": statistics.median(rates), "min_steps_per_s": min(rates),
                      "max_steps_per_s": max(rates),
                      "median_steps_per_cpu_s": statistics.median(r["steps_per_cpu_s"] for r in runs[label]),
                      "runs": runs[label]}
    out.update(paired_ratios=ratio, median_ratio=statistics.median(ratio), ratio_range=[min(ratio), max(ratio)],
               ratio_quartiles=quartiles(ratio), paired_cpu_ratios=cpu_ratio,
               median_cpu_ratio=statistics.median(cpu_ratio), cpu_ratio_range=[min(cpu_ratio), max(cpu_ratio)])
    return out


# ---- where a step's time goes (this process, today's tree) -------------------------------------------------------
PARTS = ["policy forward (total)", "env.step (SyncVectorEnv)", "obs_to_tensor (obs, next_obs)", "replace_final_obs",
         "finite check", "action -> numpy", "process_transition", "episode tracker", "tree_stack (per segment)",
         "get_train_sample"]
INSIDE_FORWARD = ["model.forward (VAC)", "encoder input prep (leaf one-hot/cast, cat; x2 encoders)"]
GLUE = "collector glue (rest of step: dicts, tree_map, from_numpy)"
OUTSIDE_MODEL = "policy forward outside model (no_grad, sampling)"


def instrument(case: str, variant: str, envs: int, n_sample: int, timers: Any) -> Tuple[Any, Callable, Callable]:
    """A collector of ``case``/``variant`` with manual timers around its parts (all adding into ``timers``):
    (collector, chunk, undo). The collector module's globals are wrapped once, by the caller."""
    c, policy, _ = build_collector(case, variant, envs, seed=1)
    chunk = chunk_of(c, n_sample)
    warm_up(chunk, 0.5)
    model = policy.model
    model.forward = timers.wrap("model.forward (VAC)", model.forward)
    wrapped_inputs = []
    for enc in {id(model.actor_encoder): model.actor_encoder, id(model.critic_encoder): model.critic_encoder}.values():
        if hasattr(enc, "inputs"):  # MultiInputEncoder: ObsFlattener, then the MLP
            enc.inputs.forward = timers.wrap(INSIDE_FORWARD[1], enc.inputs.forward)
            wrapped_inputs.append(enc.inputs)
    mode = c.policy
    c.policy = dataclasses.replace(mode, forward=timers.wrap("policy forward (total)", mode.forward),
                                   process_transition=timers.wrap("process_transition", mode.process_transition),
                                   get_train_sample=timers.wrap("get_train_sample", mode.get_train_sample))
    c.env.step = timers.wrap("env.step (SyncVectorEnv)", c.env.step)
    c._env_action = timers.wrap("action -> numpy", c._env_action)
    c._finite.step = timers.wrap("finite check", c._finite.step)
    c.episodes.step = timers.wrap("episode tracker", c.episodes.step)
    c.step = timers.wrap("collector.step (total)", c.step)

    def undo() -> None:
        del model.forward
        for inputs in wrapped_inputs:
            del inputs.forward
        c.close()

    return c, chunk, undo


def breakdown(case: str, variants: List[str], envs: int, n_sample: int, rounds: int,
              seconds: float) -> Dict[str, Dict[str, Any]]:
    """µs per vector step of each collector part, for ``variants`` of ``case`` run in turn (alternating order)
    ``rounds`` times for ``seconds`` each; the median per part over rounds (the collector module's globals
    ``obs_to_tensor``, ``replace_final_obs`` and ``tree_stack`` are wrapped for the runs and restored after)."""
    import ding_lite.worker.collector as collector_mod
    from collector_throughput import Timers  # its time-breakdown helper (this process runs today's tree)

    timers = Timers()
    saved = collector_mod.obs_to_tensor, collector_mod.replace_final_obs, collector_mod.tree_stack
    collector_mod.obs_to_tensor = timers.wrap("obs_to_tensor (obs, next_obs)", collector_mod.obs_to_tensor)
    collector_mod.replace_final_obs = timers.wrap("replace_final_obs", collector_mod.replace_final_obs)
    collector_mod.tree_stack = timers.wrap("tree_stack (per segment)", collector_mod.tree_stack)
    runs = {v: instrument(case, v, envs, n_sample, timers) for v in variants}
    samples: Dict[str, List[Dict[str, float]]] = {v: [] for v in variants}
    try:
        for r in range(rounds):
            for v in (variants if r % 2 == 0 else variants[::-1]):
                c, chunk, _ = runs[v]
                for k in timers.total:
                    timers.total[k] = 0.0
                timers.total.setdefault(INSIDE_FORWARD[1], 0.0)
                steps0 = c.envstep
                rate = timed_rate(chunk, seconds)
                vector_steps = (c.envstep - steps0) // envs
                us = {k: t / vector_steps * 1e6 for k, t in timers.total.items()}
                total = us["collector.step (total)"]
                us[GLUE] = total - sum(us[p] for p in PARTS)
                us[OUTSIDE_MODEL] = us["policy forward (total)"] - us["model.forward (VAC)"]
                us["collect() loop outside step"] = rate["seconds"] / vector_steps * 1e6 - total
                us["instrumented env steps/s"] = rate["steps_per_s"]
                samples[v].append(us)
    finally:
        collector_mod.obs_to_tensor, collector_mod.replace_final_obs, collector_mod.tree_stack = saved
        for _, _, undo in runs.values():
            undo()
    out = {}
    for v, xs in samples.items():
        out[f"{case} {v}"] = {"us_per_vector_step": {k: statistics.median(x[k] for x in xs) for k in xs[0]},
                              "rounds": xs}
    return out


def profile_top(case: str, variant: str, envs: int, n_sample: int, calls: int, top: int = 15) -> List[Dict]:
    """cProfile of ``calls`` collect() calls: the functions with the most own time (for ranking: the profiler
    inflates small Python functions)."""
    c, _, _ = build_collector(case, variant, envs, seed=2)
    chunk = chunk_of(c, n_sample)
    warm_up(chunk, 0.3)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        chunk()
    prof.disable()
    c.close()
    stats = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (path, line, name), (cc, nc, tt, ct, _) in stats.stats.items():
        short = f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}:{line}({name})" if line else name
        rows.append({"function": short, "calls": nc, "own_s": tt, "own_share": tt / stats.total_tt, "cum_s": ct})
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:top]


# ---- report ---------------------------------------------------------------------------------------------------------
def report(res: Dict[str, Any]) -> str:
    s, m = res["setup"], res["machine"]
    lines = [f"SampleCollector, IMPALA collect policy (cartpole_impala.py config, VAC [64, 64] x2 encoders), "
             f"{s['envs']} envs, unroll_len {s['unroll_len']}, n_sample {s['n_sample']}, 1 torch thread; "
             f"{m['cpu_model']}, {m['cpus_usable']} CPUs; torch {m['torch']}, gymnasium {m['gymnasium']}",
             f"{s['pairs']} pairs of {s['seconds']:g} s runs per row, alternating order; ratio per pair, median "
             f"(min-max) [q1-q3]; base tree: {s['base']}; 1-min load average {m['loadavg_1min_before']:.2f} before, "
             f"{m['loadavg_1min_after']:.2f} after", ""]
    lines.append(f"{'row':<62}{'A env steps/s':>14}{'B env steps/s':>14}{'A/B wall: median (min-max) [q1-q3]':>40}"
                 f"{'A/B CPU':>9}{'bound':>7}{'':<7}{'others':>6}")
    for row, r in res["rows"].items():
        lo, hi = r["ratio_range"]
        q1, _, q3 = r["ratio_quartiles"]
        other = r["machine_load"].get("other_processes_cpu_share")
        other_s = "-" if other is None else f"{100 * other:.0f} %"
        ok = "ok" if r["median_ratio"] >= r["bound"] else "BELOW"
        lines.append(f"{TITLES[row]:<62}{r[r['a']]['median_steps_per_s']:>14,.0f}{r[r['b']]['median_steps_per_s']:>14,.0f}"
                     f"{r['median_ratio']:>13.3f} ({lo:.3f}-{hi:.3f}) [{q1:.3f}-{q3:.3f}]"
                     f"{r['median_cpu_ratio']:>9.3f}{r['bound']:>7.2f} {ok:<6}{other_s:>6}")
    lines.append("  (A, B: today/base, dict/flat; CPU: the same ratio per second of the worker's own CPU time; others: "
                 "CPU share of the machine other processes took during the row, from /proc/stat)")
    for row, r in res["rows"].items():
        for label in (r["a"], r["b"]):
            w = r["workers"][label]
            space = w["obs_space"]
            desc = space.get("space")
            if desc in ("dict", "tuple"):
                desc += " " + ", ".join(f"{k}: {v.get('space')}{v.get('shape', '') or v.get('n', '')}"
                                        for k, v in space["spaces"].items())
            else:
                desc += f" {space.get('shape')} {space.get('dtype', '')}"
            lines.append(f"  {row} {label}: obs {desc}; encoder {w['encoder']}")
    for key, split in res.get("breakdown", {}).items():
        us = split["us_per_vector_step"]
        total = us["collector.step (total)"]
        lines.append(f"\n{key}: us per vector step ({res['setup']['envs']} env steps), median of "
                     f"{len(split['rounds'])} instrumented runs interleaved with the other variant "
                     f"({us['instrumented env steps/s']:,.0f} env steps/s with timers on)")
        order = (["policy forward (total)", "model.forward (VAC)", INSIDE_FORWARD[1], OUTSIDE_MODEL] + PARTS[1:]
                 + [GLUE, "collector.step (total)", "collect() loop outside step"])
        for name in order:
            indent = "    " if name in INSIDE_FORWARD or name == OUTSIDE_MODEL else "  "
            lines.append(f"{indent}{name:<{66 - len(indent)}}{us[name]:>8.1f} us{100 * us[name] / total:>7.1f} %")
    for key, top in res.get("profile", {}).items():
        lines.append(f"\ncProfile of {key}, top {len(top)} functions by own time ({res['setup']['profile_calls']} "
                     f"collect() calls; ranking only):")
        for t in top:
            lines.append(f"  {100 * t['own_share']:>5.1f} %  {t['calls']:>8}  {t['function']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=16, help="runs of each collector per row, in pairs (default 16)")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per run (default 1)")
    parser.add_argument("--envs", type=int, default=8, help="envs per collector (default 8)")
    parser.add_argument("--samples-per-env", type=int, default=2, help=f"collect(n_sample) with n_sample = envs * "
                        f"this: unrolls of {UNROLL_LEN} steps per env per call (default 2)")
    parser.add_argument("--rows", nargs="*", default=[r[0] for r in ROWS], choices=[r[0] for r in ROWS])
    parser.add_argument("--base", default=BASE, help=f"the commit before nested observations (default {BASE})")
    parser.add_argument("--base-dir", default=BASE_DIR, help=f"where its tree is extracted (default {BASE_DIR})")
    parser.add_argument("--quick", action="store_true", help="a short check (about 15 s): 2 pairs of 0.3 s, the "
                        "GoalGrid breakdown only, no profile; writes nothing unless --output is given")
    parser.add_argument("--output", default=None, help=f"results JSON (default {os.path.relpath(RESULT, ROOT)}; the "
                        "printed table goes to the same name with .txt)")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--warm", type=float, default=0.5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_sample = args.envs * args.samples_per_env
    if args.worker:
        worker(*args.worker, args.envs, n_sample, args.warm)
        return
    if args.quick:
        args.pairs, args.seconds = 2, 0.3
    output = args.output or (None if args.quick else RESULT)
    torch.set_num_threads(1)
    start = time.perf_counter()
    from machine import machine_info  # benchmarks/machine.py

    res: Dict[str, Any] = {
        "setup": {"envs": args.envs, "unroll_len": UNROLL_LEN, "n_sample": n_sample, "pairs": args.pairs,
                  "seconds": args.seconds, "torch_threads": 1, "manager": "base", "base": args.base,
                  "policy_config": "compile_config(dizoo_configs/cartpole_impala.py, env section replaced) + "
                                   "probe_env_spec + POLICY_REGISTRY['impala']",
                  "cases": {c: {v: dict(env=dict(e), type=t) for v, (e, t) in vs.items()} for c, vs in CASES.items()},
                  "profile_calls": 0 if args.quick else 20},
        "machine": dict(machine_info(torch=torch.__version__, gymnasium=gym.__version__, numpy=np.__version__),
                        loadavg_1min_before=os.getloadavg()[0])}
    trees = {"today": ROOT}
    if "cartpole" in args.rows:
        trees["base"] = base_tree(args.base, args.base_dir)
    warm = 0.3 if args.quick else 1.0
    res["rows"] = {}
    for row, case, a, b in ROWS:
        if row in args.rows:
            res["rows"][row] = paired_row(row, case, a, b, trees, args, warm)
    res["machine"]["loadavg_1min_after"] = os.getloadavg()[0]
    res["breakdown"] = {}
    for case in ("goal_grid",) if args.quick else ("goal_grid", "minigrid"):
        res["breakdown"].update(breakdown(case, ["dict", "flat"], args.envs, n_sample, rounds=2 if args.quick else 7,
                                          seconds=0.3 if args.quick else 0.5))
    if not args.quick:
        res["profile"] = {f"{c} {v}": profile_top(c, v, args.envs, n_sample, res["setup"]["profile_calls"])
                          for c, v in (("goal_grid", "dict"), ("minigrid", "dict"))}
    text = report(res)
    print(text)
    res["wall_s"] = time.perf_counter() - start
    if output:
        from ding_lite.utils.file_io import atomic_write_json

        atomic_write_json(res, output)
        with open(os.path.splitext(output)[0] + ".txt", "w") as f:
            f.write(text + "\n")
        print(f"wrote {os.path.relpath(output, ROOT)} and .txt ({res['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
