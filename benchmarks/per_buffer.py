"""Prioritised replay and the buffer in checkpoints: what they cost at capacity 1e6.

1. ``sample(256)`` on a full 1e6-transition buffer of Pendulum-shaped SAC transitions {obs (3,) f32, next_obs (3,)
   f32, action (1,) f32, reward f32, terminated bool, truncated bool}: uniform ``ReplayBuffer`` vs
   ``PrioritizedReplayBuffer`` (importance weights on, priorities spread over 4 orders of magnitude), measured in
   interleaved rounds (the machine's load hits both alike); plus ``update_priority`` of a batch of 256.
2. ``save_replay_buffer``: the size of ``ckpt/replay_buffer.pth.tar`` for that buffer (prioritised), the time to
   write it (``buffer_content`` + the atomic ``torch.save`` with fsync) and to load it back into a new buffer.
3. Compression, to decide where it pays: zlib (level 1) on the float columns of (2), and on Atari frames (Pong,
   uniformly random actions, frame skip 4, grey frames halved to 105x80) when ale-py is installed.

One torch thread. Run from the repository root: ``python benchmarks/per_buffer.py``; writes
``benchmarks/results/per_buffer.json``. Takes ~1 minute.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ding_lite.data import ReplayBuffer  # noqa: E402
from ding_lite.data.buffer_io import buffer_content, load_buffer_content  # noqa: E402
from ding_lite.data.prioritized import PrioritizedReplayBuffer  # noqa: E402
from ding_lite.utils.file_io import atomic_torch_save, atomic_write_json  # noqa: E402

CAPACITY, BATCH = 1_000_000, 256
RESULT = os.path.join(ROOT, "benchmarks", "results", "per_buffer.json")


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


def bench_sample(gen: torch.Generator, rounds: int = 30, calls: int = 200) -> Dict[str, float]:
    uniform = full(ReplayBuffer, gen)
    per = full(PrioritizedReplayBuffer, gen, IS_weight=True)
    times: Dict[str, list] = {"uniform": [], "prioritized": [], "update_priority": []}
    for buf in (uniform, per):
        for _ in range(100):
            buf.sample(BATCH, 0)
    prio = torch.rand(BATCH) * 5
    for _ in range(rounds):
        for name, buf in (("uniform", uniform), ("prioritized", per)):
            t0 = time.perf_counter()
            for _ in range(calls):
                buf.sample(BATCH, 0)
            times[name].append((time.perf_counter() - t0) / calls * 1e6)
        per.sample(BATCH, 0)
        index = per.last_index
        t0 = time.perf_counter()
        for _ in range(calls):
            per.update_priority(index, prio)
        times["update_priority"].append((time.perf_counter() - t0) / calls * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}  # the least disturbed round (a shared machine's load only adds)
    return {"uniform_sample_us": round(med["uniform"], 1), "prioritized_sample_us": round(med["prioritized"], 1),
            "prioritized_rate_vs_uniform": round(med["uniform"] / med["prioritized"], 3),
            "best_round_uniform_us": round(best["uniform"], 1),
            "best_round_prioritized_us": round(best["prioritized"], 1),
            "best_round_rate_vs_uniform": round(best["uniform"] / best["prioritized"], 3),
            "uniform_samples_per_s": round(BATCH / med["uniform"] * 1e6),
            "prioritized_samples_per_s": round(BATCH / med["prioritized"] * 1e6),
            "update_priority_us": round(med["update_priority"], 1),
            "tree_block_size": int(per._tree.keys.size // per._tree.n_blocks), "tree_blocks": per._tree.n_blocks,
            "rounds": rounds, "calls_per_round": calls}


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
    results["checkpoint"] = bench_checkpoint(gen)
    print("replay_buffer.pth.tar:", results["checkpoint"])
    results["atari_frames"] = bench_atari_frames()
    print("Atari frames:", results["atari_frames"])
    atomic_write_json(results, RESULT)


if __name__ == "__main__":
    main()
