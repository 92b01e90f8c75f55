"""What the learner's finiteness check costs: learner updates per second with ``policy.learn.learner.check_finite``
True vs False, and vs the learner as it was before the check (``float(info[key])`` per logged key, and no gradient
norm in SAC), for

- IMPALA: the shipped dizoo_configs/cartpole_impala.py (its model, batch_size 32 unrolls of 16, clip_norm), and
- SAC: dizoo_configs/pendulum_sac.py with [256, 256] actor and critics, batch 256.

Batches are collected once by the policy itself (real CartPole / Pendulum data) and cycled. The variants run
interleaved (each repeat times every variant for ``--updates`` updates, after a warm-up, each variant first in
turn), so a change in machine load hits them alike. The table shows the median rate over repeats, for wall time and
for this process's CPU time, and the overhead as the median over repeats of the paired ratio. One torch thread (the
configs' ``torch_threads``).

Run from the repository root: ``python benchmarks/studies/finite_check_overhead.py [--repeats 6] [--updates 300]``. Prints a
table and writes ``benchmarks/studies/results/finite_check_overhead.json``. Takes about a minute and a half.

End-to-end rates on a shared 2-core machine move by a few percent from one repeat to the next, more than the check
costs, so the script also times the added work alone: the learner's handling of one update's (real) info dict per
variant, and the gradient norm, beside the time of a whole update.
"""
import argparse
import os
import platform
import statistics
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Tuple

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)

import ding_lite.policy.sac.update as sac_update  # noqa: E402  (where SAC's update takes the gradient norm)
from ding_lite.config import read_config_file  # noqa: E402
from ding_lite.entry.build import build, compile_input  # noqa: E402
from ding_lite.policy.base_policy import LearnMode  # noqa: E402
from ding_lite.torch_utils import grad_norm, tree_map  # noqa: E402
from ding_lite.utils import set_seed  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from ding_lite.worker import Learner, SampleCollector  # noqa: E402

RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "finite_check_overhead.json")
SMALL_EVAL = {"env.evaluator_env_num": 1, "env.n_evaluator_episode": 1}
CASES = {
    "impala": ("cartpole_impala", {}),
    "sac": ("pendulum_sac", {"policy.model.actor_head_hidden_size": 256, "policy.model.critic_head_hidden_size": 256,
                             "policy.model.actor_head_layer_num": 2, "policy.model.critic_head_layer_num": 2,
                             "policy.learn.batch_size": 256}),
}
N_BATCHES = 8


class LearnerBefore(Learner):
    """The learner as it was before the check: one ``float()`` (a host sync on a GPU) per logged key."""

    def train(self, batch: Dict) -> Dict[str, Any]:
        info = self.policy.forward(batch)
        self.train_iter += 1
        for key in self.policy.monitor_vars():
            if key in info:
                self._sums[key] += float(info[key])
        self._count += 1
        return info


@contextmanager
def no_sac_grad_norm() -> Iterator[None]:
    """SAC as it was before: no gradient norm (a constant stands in for it)."""
    real, zero = sac_update.grad_norm, torch.zeros(())
    sac_update.grad_norm = lambda params: zero
    try:
        yield
    finally:
        sac_update.grad_norm = real


def setup(case: str, seed: int = 0):
    """(policy, batches): the policy of the case's config and ``N_BATCHES`` batches it collected."""
    name, overrides = CASES[case]
    set_seed(seed)
    cfg = compile_input(read_config_file(os.path.join(ROOT, "dizoo_configs", f"{name}.py")), seed,
                        {**SMALL_EVAL, **overrides})
    parts = build(cfg, seed)
    size = cfg.policy.learn.batch_size
    try:
        samples = SampleCollector(parts.collector_env, parts.policy.collect_mode).collect(size * N_BATCHES)
    finally:
        parts.collector_env.close()
        parts.evaluator_env.close()
    batches = [tree_map(lambda x, i=i: x[i * size:(i + 1) * size].clone(), samples) for i in range(N_BATCHES)]
    return parts.policy, batches, cfg


def time_updates(learner: Learner, batches: List[Dict], updates: int) -> Dict[str, float]:
    """Updates per wall second and per CPU second of ``updates`` learner.train calls (batches cycled)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(updates):
        learner.train(batches[i % len(batches)])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"per_s": updates / wall, "per_cpu_s": updates / cpu}


def variants(case: str, policy) -> Dict[str, Tuple[Learner, Callable]]:
    """name -> (its learner, the context it runs in)."""
    before_ctx = no_sac_grad_norm if case == "sac" else _nothing
    return {
        "check_finite=True": (Learner(policy.learn_mode, check_finite=True), _nothing),
        "check_finite=False": (Learner(policy.learn_mode, check_finite=False), _nothing),
        "before the check": (LearnerBefore(policy.learn_mode), before_ctx),
    }


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def overhead_pct(on: List[Dict[str, float]], other: List[Dict[str, float]], key: str) -> float:
    """Median over repeats of the extra time per update with the check on (runs of one repeat are adjacent, so
    the pairing cancels slow drifts of the machine's speed)."""
    return round(100 * statistics.median(b[key] / a[key] - 1 for a, b in zip(on, other)), 2)


def per_call_us(fn: Callable[[], Any], calls: int = 5000, warmup: int = 200) -> float:
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def parts_us(case: str, policy, batches: List[Dict]) -> Dict[str, float]:
    """The added work in isolation, in microseconds: the learner's bookkeeping of one update's info (the policy's
    real info dict, replayed by a stub learn mode) per variant, and the policy's gradient norm."""
    info = policy.learn_mode.forward(batches[0])
    replay = LearnMode(lambda batch: info, dict, lambda state: None, policy.learn_mode.monitor_vars)
    out = {f"learner_{name}_us": round(per_call_us(lambda learner=learner: learner.train(None)), 2)
           for name, learner in (("check_finite=True", Learner(replay, check_finite=True)),
                                 ("check_finite=False", Learner(replay, check_finite=False)),
                                 ("before the check", LearnerBefore(replay)))}
    params = policy._trained_params if case == "sac" else list(policy.model.parameters())
    out["grad_norm_us"] = round(per_call_us(lambda: grad_norm(params)), 2)
    out["update_us"] = round(per_call_us(lambda: policy.learn_mode.forward(batches[0]), calls=100, warmup=10), 1)
    return out


def bench(case: str, repeats: int, updates: int, warmup: int) -> Dict[str, Any]:
    policy, batches, cfg = setup(case)
    runs = variants(case, policy)
    rates: Dict[str, List[Dict[str, float]]] = {name: [] for name in runs}
    for name, (learner, ctx) in runs.items():
        with ctx():
            time_updates(learner, batches, warmup)
    names = list(runs)
    for repeat in range(repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:  # each variant goes first in turn
            learner, ctx = runs[name]
            with ctx():
                rates[name].append(time_updates(learner, batches, updates))
    summary = {}
    for name, rows in rates.items():
        summary[name] = {
            "updates_per_s_median": round(statistics.median(r["per_s"] for r in rows), 1),
            "updates_per_cpu_s_median": round(statistics.median(r["per_cpu_s"] for r in rows), 1),
            "updates_per_s_each": [round(r["per_s"], 1) for r in rows],
        }
    for other, label in (("check_finite=False", "off"), ("before the check", "before")):
        for key, unit in (("per_s", "wall"), ("per_cpu_s", "cpu")):
            summary[f"overhead_vs_{label}_{unit}_pct"] = overhead_pct(rates["check_finite=True"], rates[other], key)
    summary["batch_size"] = cfg.policy.learn.batch_size
    summary["parts"] = parts_us(case, policy, batches)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = {case: bench(case, args.repeats, args.updates, args.warmup) for case in CASES}
    out = {"settings": vars(args), "results": results,
           "setup": {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
                     "python": platform.python_version(), "machine": platform.machine(),
                     "loadavg_1min_before": load_before, "loadavg_1min_after": os.getloadavg()[0]},
           "date": time.strftime("%Y-%m-%d")}
    print(f"\nLearner updates/s, median of {args.repeats} interleaved repeats of {args.updates} updates "
          f"(overhead: median of the paired ratios), "
          f"{torch.get_num_threads()} torch thread(s):")
    print(f"  {'':8}{'variant':22}{'per wall s':>12}{'per CPU s':>12}")
    for case, summary in results.items():
        for name in ("check_finite=True", "check_finite=False", "before the check"):
            row = summary[name]
            print(f"  {case:8}{name:22}{row['updates_per_s_median']:12.1f}{row['updates_per_cpu_s_median']:12.1f}")
        print(f"  {case:8}{'overhead vs False':22}{summary['overhead_vs_off_wall_pct']:11.2f}%"
              f"{summary['overhead_vs_off_cpu_pct']:11.2f}%")
        print(f"  {case:8}{'overhead vs before':22}{summary['overhead_vs_before_wall_pct']:11.2f}%"
              f"{summary['overhead_vs_before_cpu_pct']:11.2f}%")
    print(f"  (load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after)")
    print("\nThe added work alone, microseconds per update:")
    print(f"  {'':8}{'learner True':>14}{'False':>8}{'before':>8}{'grad_norm':>11}{'update':>10}")
    for case, summary in results.items():
        p = summary["parts"]
        print(f"  {case:8}{p['learner_check_finite=True_us']:14.1f}{p['learner_check_finite=False_us']:8.1f}"
              f"{p['learner_before the check_us']:8.1f}{p['grad_norm_us']:11.1f}{p['update_us']:10.1f}")
    atomic_write_json(out, RESULT)


if __name__ == "__main__":
    main()
