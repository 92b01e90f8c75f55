"""Replay-buffer benchmark: push rate, sample latency and memory overhead of the columnar ReplayBuffer.

Sample: a CartPole-like unroll of T=32 steps {obs (T, 4) f32, next_obs (T, 4) f32, logit (T, 2) f32,
action (T,) i64, reward (T,) f32, terminated (T,) bool, truncated (T,) bool}. Pushes are blocks of 8 unrolls,
as a collector would send them; sampling is ``sample(64)`` on a full buffer. One torch thread.

Run from the repository root: ``python benchmarks/buffer.py [--quick] [--output PATH]``. Prints a table and writes
``benchmarks/results/buffer.json``. Takes ~10 s (``--quick``: about 1 s, fewer calls, for a check that it runs).
"""
import argparse
import os
import statistics
import sys
import time
from typing import Dict, List

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]  # ding_lite; machine.py

from ding_lite.data import ReplayBuffer  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

T, BLOCK, BATCH = 32, 8, 64
RESULT = os.path.join(ROOT, "benchmarks", "results", "buffer.json")


def unrolls(n: int, gen: torch.Generator) -> Dict[str, torch.Tensor]:
    """A batch of n CartPole-like unrolls, every leaf (n, T, ...)."""
    return {
        "obs": torch.randn(n, T, 4, generator=gen),
        "next_obs": torch.randn(n, T, 4, generator=gen),
        "logit": torch.randn(n, T, 2, generator=gen),
        "action": torch.randint(2, (n, T), generator=gen),
        "reward": torch.ones(n, T),
        "terminated": torch.rand(n, T, generator=gen) < 0.05,
        "truncated": torch.zeros(n, T, dtype=torch.bool),
    }


def pct(xs: List[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench_push(capacity: int, gen: torch.Generator, seconds: float = 1.5) -> Dict[str, float]:
    buf = ReplayBuffer(dict(replay_buffer_size=capacity), seed=0)
    blocks = [unrolls(BLOCK, gen) for _ in range(16)]
    buf.push(blocks[0], 0)
    us, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for block in blocks:
            t1 = time.perf_counter()
            buf.push(block, len(us) * BLOCK)
            us.append((time.perf_counter() - t1) * 1e6)
    total_s = sum(us) / 1e6
    return {"push_median_us_per_block": statistics.median(us), "push_p90_us_per_block": pct(us, 0.9),
            "samples_per_s": len(us) * BLOCK / total_s, "transitions_per_s": len(us) * BLOCK * T / total_s}


def bench_sample(capacity: int, gen: torch.Generator, calls: int, **cfg) -> Dict[str, float]:
    buf = ReplayBuffer(dict(replay_buffer_size=capacity, **cfg), seed=0)
    for i in range(0, capacity, 500):
        buf.push(unrolls(min(500, capacity - i), gen), i)
    refill = unrolls(BLOCK, gen)
    finite = "max_use" in cfg
    state = {"it": 0}

    def call() -> None:
        if finite:  # steady state: 8 fresh unrolls per learner iter (push not timed), removals on both rules
            buf.push(refill, 0, collect_iter=state["it"])
        t0 = time.perf_counter()
        batch = buf.sample(BATCH, state["it"])
        state["dt"] = time.perf_counter() - t0
        assert batch is not None
        state["it"] += 1

    for _ in range(50):
        call()
    us = []
    for _ in range(calls):
        call()
        us.append(state["dt"] * 1e6)
    med = statistics.median(us)
    return {"median_us": med, "p90_us": pct(us, 0.9), "samples_per_s": BATCH / med * 1e6,
            "transitions_per_s": BATCH * T / med * 1e6, "calls": calls}


def bench_memory(capacity: int, gen: torch.Generator) -> Dict[str, float]:
    buf = ReplayBuffer(dict(replay_buffer_size=capacity), seed=0)
    sample = unrolls(1, gen)
    buf.push(sample, 0)
    raw = sum(v[0].numel() * v.element_size() for v in sample.values())  # bytes per unroll, payload only
    cols = sum(c.numel() * c.element_size() for c in buf._cols)
    book = sum(a.nbytes for a in (buf._iter, buf._use, buf._valid, buf._live, buf._pos))  # per-slot NumPy arrays
    stored = (cols + book) / capacity
    return {"raw_bytes_per_transition": raw / T, "stored_bytes_per_transition": stored / T,
            "ratio": stored / raw, "column_bytes": cols, "bookkeeping_bytes": book}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 1 s): checks that it runs")
    parser.add_argument("--output", default=RESULT, help="where to write the JSON results")
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    push_s, calls = (0.1, 200) if args.quick else (1.5, 3000)
    results: Dict[str, object] = {
        "setup": {"T": T, "push_block": BLOCK, "batch_size": BATCH, "torch": torch.__version__,
                  "threads": torch.get_num_threads(), "quick": args.quick},
        "machine": machine_info(torch=torch.__version__), "date": time.strftime("%Y-%m-%d"),
        "push": {}, "sample": {}, "memory": {},
    }
    rows = []
    for cap in (1000, 10000):
        p = results["push"][str(cap)] = bench_push(cap, gen, seconds=push_s)
        s = results["sample"][str(cap)] = bench_sample(cap, gen, calls=calls)
        m = results["memory"][str(cap)] = bench_memory(cap, gen)
        rows.append((f"cap {cap}", p, s, m))
    s = results["sample"]["1000_max_use8_staleness50"] = bench_sample(1000, gen, calls=calls * 2 // 3, max_use=8,
                                                                      max_staleness=50)

    print(f"{'case':<26}{'push samples/s':>16}{'push med us/8':>15}{'sample med us':>15}{'p90 us':>9}"
          f"{'samples/s':>12}{'B/transition':>14}{'raw B':>7}{'ratio':>7}")
    for name, p, s_, m in rows:
        print(f"{name:<26}{p['samples_per_s']:>16,.0f}{p['push_median_us_per_block']:>15.1f}{s_['median_us']:>15.1f}"
              f"{s_['p90_us']:>9.1f}{s_['samples_per_s']:>12,.0f}{m['stored_bytes_per_transition']:>14.2f}"
              f"{m['raw_bytes_per_transition']:>7.1f}{m['ratio']:>7.3f}")
    print(f"{'cap 1000 max_use8 stale50':<26}{'':>16}{'':>15}{s['median_us']:>15.1f}{s['p90_us']:>9.1f}"
          f"{s['samples_per_s']:>12,.0f}")
    worst = max(v["median_us"] for v in results["sample"].values())
    ratio = max(v["ratio"] for v in results["memory"].values())
    results["targets"] = {"sample_median_us_max": worst, "sample_target_us": 500, "memory_ratio_max": ratio,
                          "memory_target_ratio": 1.5, "met": worst < 500 and ratio <= 1.5}
    print(f"targets: sample median <= 500 us: {worst:.1f} us; memory ratio <= 1.5: {ratio:.3f} -> "
          f"{'met' if results['targets']['met'] else 'MISSED'}")
    atomic_write_json(results, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
