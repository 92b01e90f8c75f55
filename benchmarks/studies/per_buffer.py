"""Prioritised replay and the buffer in checkpoints: what they cost at capacity 1e6.

1. ``sample(256)`` on a full 1e6-transition buffer of Pendulum-shaped SAC transitions {obs (3,) f32, next_obs (3,)
   f32, action (1,) f32, reward f32, terminated bool, truncated bool}: uniform ``ReplayBuffer`` vs
   ``PrioritizedReplayBuffer`` (importance weights on, priorities spread over 4 orders of magnitude) on the sum
   tree's NumPy path and, with numba installed (the ``fast`` extra), on its compiled kernels, measured in
   interleaved rounds (the machine's load hits all alike); plus ``update_priority`` of a batch of 256 on each path,
   and what the kernels cost a process once (numba's import and compilation, or its cache).
2. ``save_replay_buffer``: the size of ``ckpt/replay_buffer.pth.tar`` for that buffer (prioritised), the time to
   write it (``buffer_content`` + the atomic ``torch.save`` with fsync) and to load it back into a new buffer.
3. Compression, to decide where it pays: zlib (level 1) on the float columns of (2), and on Atari frames (Pong,
   uniformly random actions, frame skip 4, grey frames halved to 105x80) when ale-py is installed.

One torch thread. Run from the repository root: ``python benchmarks/studies/per_buffer.py``; writes
``benchmarks/studies/results/per_buffer.json``. Takes ~1 minute.
"""
import os
import platform
import statistics
import sys
import tempfile
import time
import zlib
from typing import Dict

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)

from ding_lite.data import ReplayBuffer  # noqa: E402
from ding_lite.data.buffer_io import buffer_content, load_buffer_content  # noqa: E402
from ding_lite.data.prioritized import PrioritizedReplayBuffer  # noqa: E402
from ding_lite.data.sum_tree import load_kernels  # noqa: E402
from ding_lite.utils.file_io import atomic_torch_save, atomic_write_json  # noqa: E402

CAPACITY, BATCH = 1_000_000, 256
RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "per_buffer.json")


def transitions(n: int, gen: torch.Generator) -> Dict[str, torch.Tensor]:
    return {"obs": torch.randn(n, 3, generator=gen), "next_obs": torch.randn(n, 3, generator=gen),
            "action": torch.rand(n, 1, generator=gen) * 2 - 1, "reward": torch.randn(n, generator=gen),
            "terminated": torch.zeros(n, dtype=torch.bool), "truncated": torch.rand(n, generator=gen) < 0.005}


def full(cls, gen: torch.Generator, **kw):
    buf = cls(dict(replay_buffer_size=CAPACITY), seed=0, **kw)
    for i in range(0, CAPACITY, 100_000):
        buf.push(transitions(100_000, gen), i)
    if isinstance(buf, PrioritizedReplayBuffer):  # |TD errors| over 4 orders of magnitude
        buf.update_priority(buf.index_for(np.arange(CAPACITY)),
                            10 ** np.random.default_rng(0).uniform(-3, 1, CAPACITY))
    return buf


def bench_sample(gen: torch.Generator, rounds: int = 30, calls: int = 200) -> Dict[str, Dict[str, float]]:
    """Uniform against prioritised sampling, with the sum tree's NumPy path and (numba installed) its compiled
    kernels, interleaved; plus ``update_priority`` of 256 on each path."""
    bufs = {"uniform": full(ReplayBuffer, gen), "numpy": full(PrioritizedReplayBuffer, gen, IS_weight=True,
                                                               compiled=False)}
    if load_kernels() is not None:
        bufs["compiled"] = full(PrioritizedReplayBuffer, gen, IS_weight=True, compiled=True)
    times: Dict[str, list] = {k: [] for k in bufs}
    upd: Dict[str, list] = {k: [] for k in bufs if k != "uniform"}
    for buf in bufs.values():
        for _ in range(100):
            buf.sample(BATCH, 0)
    prio = torch.rand(BATCH) * 5
    for _ in range(rounds):
        for name, buf in bufs.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                buf.sample(BATCH, 0)
            times[name].append((time.perf_counter() - t0) / calls * 1e6)
        for name in upd:
            buf = bufs[name]
            buf.sample(BATCH, 0)
            index = buf.last_index
            t0 = time.perf_counter()
            for _ in range(calls):
                buf.update_priority(index, prio)
            upd[name].append((time.perf_counter() - t0) / calls * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}  # the least disturbed round (a shared machine's load only adds)
    out = {"uniform": {"sample_us": round(med["uniform"], 1), "best_round_sample_us": round(best["uniform"], 1),
                       "samples_per_s": round(BATCH / med["uniform"] * 1e6)}}
    for name in upd:
        out[f"prioritized_{name}"] = {
            "sample_us": round(med[name], 1), "best_round_sample_us": round(best[name], 1),
            "rate_vs_uniform": round(med["uniform"] / med[name], 3),
            "best_round_rate_vs_uniform": round(best["uniform"] / best[name], 3),
            "samples_per_s": round(BATCH / med[name] * 1e6),
            "update_priority_us": round(statistics.median(upd[name]), 1)}
    tree = bufs["numpy"]._tree
    out["tree"] = {"block_size": int(tree.keys.size // tree.n_blocks), "blocks": tree.n_blocks,
                   "rounds": rounds, "calls_per_round": calls}
    return out


COMPILE_PROBE = """
import time
t0 = time.perf_counter()
import numpy as np
from ding_lite.data.sum_tree import PriorityTree
t1 = time.perf_counter()
tree = PriorityTree(1024, compiled=True)
tree.update(np.arange(8), np.ones(8))
tree.sample(np.random.rand(4), 0.4)
tree.find(np.random.rand(4))
print(time.perf_counter() - t1)
"""


def bench_compile() -> Dict[str, float]:
    """What the compiled kernels cost a process once: importing numba and compiling them (an empty cache), or
    loading them from numba's cache (the next process)."""
    if load_kernels() is None:
        return {"skipped": "numba not installed"}
    import subprocess
    with tempfile.TemporaryDirectory() as cache:
        paths = [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(paths))
        run = [sys.executable, "-c", COMPILE_PROBE]
        cold = float(subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout)
        warm = float(subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout)
    return {"first_process_s": round(cold, 2), "cached_s": round(warm, 2)}


def bench_checkpoint(gen: torch.Generator) -> Dict[str, float]:
    buf = full(PrioritizedReplayBuffer, gen, IS_weight=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "replay_buffer.pth.tar")
        t0 = time.perf_counter()
        atomic_torch_save({"counters": {"train_iter": 0, "env_step": 0}, "buffer": buffer_content(buf)}, path)
        save_s = time.perf_counter() - t0
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        loaded = torch.load(path, map_location="cpu", weights_only=True)
        fresh = PrioritizedReplayBuffer(dict(replay_buffer_size=CAPACITY), seed=1, IS_weight=True)
        load_buffer_content(fresh, loaded["buffer"])
        load_s = time.perf_counter() - t0
    payload = sum(c.numel() * c.element_size() for c in buf._cols)
    cols = b"".join(c.numpy().tobytes() for c in buf._cols)
    t0 = time.perf_counter()
    packed = zlib.compress(cols, 1)
    zlib_s = time.perf_counter() - t0
    return {"file_mb": round(size / 1e6, 1), "column_payload_mb": round(payload / 1e6, 1),
            "save_s": round(save_s, 2), "load_s": round(load_s, 2), "write_mb_per_s": round(size / 1e6 / save_s),
            "zlib1_ratio_float_columns": round(len(cols) / len(packed), 2),
            "zlib1_mb_per_s": round(len(cols) / 1e6 / zlib_s)}


def bench_atari_frames(n: int = 2000) -> Dict[str, float]:
    try:
        import ale_py
        import gymnasium as gym
    except ImportError:
        return {"skipped": "ale-py not installed"}
    gym.register_envs(ale_py)
    env = gym.make("PongNoFrameskip-v4", obs_type="grayscale")
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    frames = np.empty((n, 105, 80), np.uint8)  # grey, halved (the compression is what is measured, not the agent)
    for i in range(n):
        frames[i] = obs[::2, ::2]
        for _ in range(4):  # frame skip 4
            obs, _, term, trunc, _ = env.step(env.action_space.sample())
            if term or trunc:
                obs, _ = env.reset()
    env.close()
    raw = frames.tobytes()
    t0 = time.perf_counter()
    packed = zlib.compress(raw, 1)
    dt = time.perf_counter() - t0
    return {"frames": n, "zlib1_ratio": round(len(raw) / len(packed), 2), "zlib1_mb_per_s": round(len(raw) / 1e6 / dt)}


def main() -> None:
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    results = {"setup": {"capacity": CAPACITY, "batch_size": BATCH, "torch": torch.__version__, "threads": 1,
                         "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count()}}
    results["sample"] = bench_sample(gen)
    print("sample(256) at 1e6:", results["sample"])
    results["compile"] = bench_compile()
    print("compiled kernels, once per process:", results["compile"])
    results["checkpoint"] = bench_checkpoint(gen)
    print("replay_buffer.pth.tar:", results["checkpoint"])
    results["atari_frames"] = bench_atari_frames()
    print("Atari frames:", results["atari_frames"])
    atomic_write_json(results, RESULT)


if __name__ == "__main__":
    main()
