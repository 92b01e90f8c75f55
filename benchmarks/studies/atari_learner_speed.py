"""Learner updates per second of IMPALA with each conv encoder on Atari-sized inputs: batch 32 x unroll 20 of
(4, 84, 84) uint8 frame stacks, 6 actions.

Each update is what the learner does in a run: ``buffer.sample(32)`` from a replay buffer of synthetic unrolls (uint8,
stored 'compact' as the collector's samples are: 21 stacks plus the final-observation slot per unroll), then
``Learner.train(batch)``: the batch to the policy's device (still uint8), one forward pass over the
32 x 20 + 32 observations, the V-trace loss, backward and an Adam step, then the learner's one transfer of the logged
scalars to the host. Measured on the CPU with 1 and 2 torch threads, and with ``policy.cuda=True`` when torch sees a
CUDA device (the same script, unchanged). That transfer waits for the update, so every update ends synchronised with
the device. Besides wall time, each row has the
process's CPU time per update (user and system, all threads), which does not depend on what else runs.

Each CPU setting also runs with glibc's malloc kept from returning memory to the system (``mallopt``: no mmap'd
allocations, no heap trimming; the same as ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647`` in the
environment): an update allocates and frees activations of tens to hundreds of MB (the float copy of 672 uint8 frames
stacks alone is 76 MB), which by default are fresh mmap'd pages every update, zero-filled by the kernel on first
touch (the ``cpu_system_s_per_update``). Every setting runs in a fresh process.

``--autocast bfloat16`` adds each setting with ``policy.learn.autocast='bfloat16'`` (the learner's forward under
torch.autocast: bfloat16 convolutions and matmuls, on a CPU through oneDNN's AMX or AVX512-BF16 kernels where it has
them).

Run from the repository root: ``python benchmarks/studies/atari_learner_speed.py`` (options: ``--encoders``, ``--threads``,
``--cpu-seconds``, ``--gpu-updates``, ``--autocast``, ``--malloc``, ``--output``). Prints a table and writes ``benchmarks/studies/results/atari_learner_speed.json``.
Takes about 4 minutes on a 2-core CPU (the IMPALA ResNet is about 6x the multiply-adds of the Nature conv).
"""
import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import time
from typing import Dict, List, Optional

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.data import ReplayBuffer  # noqa: E402
from ding_lite.policy import IMPALAPolicy  # noqa: E402
from ding_lite.torch_utils.malloc import keep_freed_memory  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from ding_lite.worker import Learner  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

OBS = [4, 84, 84]
ACTIONS, T, BATCH, N_ENV, UNROLLS = 6, 20, 32, 8, 96
RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "atari_learner_speed.json")


def make_policy(encoder: str, cuda: bool, autocast: Optional[str] = None) -> IMPALAPolicy:
    main = dict(env=dict(env_id="CartPole-v1"),
                policy=dict(cuda=cuda, unroll_len=T, model=dict(encoder_type=encoder),
                            learn=dict(batch_size=BATCH, grad_clip_type="clip_norm", clip_value=40.0,
                                       autocast=autocast)))
    cfg = compile_config((main, dict(policy=dict(type="impala"))))
    cfg.policy.action_space = "discrete"
    cfg.policy.model.update(obs_shape=OBS, action_shape=ACTIONS, action_space="discrete")
    torch.manual_seed(0)
    return IMPALAPolicy(cfg.policy, enable_field=("learn", "collect"))


def fill_buffer(policy: IMPALAPolicy) -> ReplayBuffer:
    """UNROLLS synthetic unrolls of random frames through the policy's own get_train_sample (compact, uint8)."""
    gen = torch.Generator().manual_seed(0)
    buffer = ReplayBuffer(dict(replay_buffer_size=UNROLLS), seed=0)
    for _ in range(UNROLLS // N_ENV):
        frames = torch.randint(0, 256, (T + 1, N_ENV, *OBS), dtype=torch.uint8, generator=gen)
        terminated = torch.rand(T, N_ENV, generator=gen) < 0.01
        segment = {"obs": frames[:T], "next_obs": frames[1:].clone(), "action": torch.randint(ACTIONS, (T, N_ENV)),
                   "reward": torch.randn(T, N_ENV, generator=gen).sign(), "terminated": terminated,
                   "truncated": torch.zeros(T, N_ENV, dtype=torch.bool),
                   "logit": torch.randn(T, N_ENV, ACTIONS, generator=gen)}
        buffer.push(policy.collect_mode.get_train_sample(segment), cur_collector_envstep=0)
    return buffer


def bench(encoder: str, device: str, threads: int, min_seconds: float, min_updates: int, warmup: int,
          malloc_heap: bool = False, autocast: Optional[str] = None) -> Dict[str, object]:
    """One setting; ``main`` runs each in a fresh process."""
    if malloc_heap and not keep_freed_memory():
        return {"encoder": encoder, "device": device, "threads": threads, "malloc_heap": "unavailable"}
    torch.set_num_threads(threads)
    policy = make_policy(encoder, device == "cuda", autocast)
    buffer = fill_buffer(policy)
    forward = Learner(policy.learn_mode).train  # ends with the one device -> host transfer of the logged scalars
    for _ in range(warmup):
        forward(buffer.sample(BATCH, 0))
    times, sample_times = [], []
    usage0 = os.times()
    start = time.perf_counter()
    while len(times) < min_updates or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        batch = buffer.sample(BATCH, 0)
        t1 = time.perf_counter()
        info = forward(batch)
        t2 = time.perf_counter()
        times.append(t2 - t0)
        sample_times.append(t1 - t0)
    usage1 = os.times()
    assert batch["obs"].dtype == torch.uint8 and torch.isfinite(info["total_loss"])
    median = statistics.median(times)
    params = sum(p.numel() for p in policy.model.parameters())
    return {
        "encoder": encoder, "device": device, "threads": threads if device == "cpu" else None,
        "malloc_heap": malloc_heap, "autocast": autocast,
        "updates": len(times), "updates_per_s": 1.0 / median, "ms_per_update_median": 1e3 * median,
        "ms_per_update_mean": 1e3 * statistics.mean(times), "ms_buffer_sample_median": 1e3 * statistics.median(sample_times),
        "env_steps_per_s": BATCH * T / median, "model_parameters": params,
        # CPU time of this process per update (all threads): what an update costs whatever else runs on the machine
        "cpu_user_s_per_update": (usage1.user - usage0.user) / len(times),
        "cpu_system_s_per_update": (usage1.system - usage0.system) / len(times),
    }


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", nargs="+", default=["nature_conv", "impala_resnet"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--cpu-seconds", type=float, default=10.0, help="time each CPU setting at least this long")
    parser.add_argument("--cpu-updates", type=int, default=3, help="and at least this many updates")
    parser.add_argument("--gpu-updates", type=int, default=100)
    parser.add_argument("--autocast", nargs="+", default=["none"], choices=["none", "bfloat16"],
                        help="policy.learn.autocast settings to time ('none': float32)")
    parser.add_argument("--malloc", nargs="+", default=["glibc", "heap"], choices=["glibc", "heap"],
                        help="glibc's default malloc, and/or freed memory kept on the heap")
    parser.add_argument("--output", default=RESULT, help="the results file")
    args = parser.parse_args(argv)
    runs = []
    for encoder in args.encoders:
        for cast in [None if a == "none" else a for a in args.autocast]:
            for malloc_heap in [m == "heap" for m in args.malloc]:
                runs += [(encoder, "cpu", t, args.cpu_seconds, args.cpu_updates, 1, malloc_heap, cast)
                         for t in args.threads]
            if torch.cuda.is_available():
                runs.append((encoder, "cuda", torch.get_num_threads(), 0.0, args.gpu_updates, 10, False, cast))
    rows = []
    for run in runs:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            rows.append(pool.apply(bench, run))
        print(rows[-1], flush=True)
    rows = [r for r in rows if r.get("malloc_heap") != "unavailable"]
    print(f"\nIMPALA learner, batch {BATCH} x unroll {T}, {OBS} uint8, {ACTIONS} actions")
    print(f"{'encoder':14} {'device':6} {'threads':>7} {'malloc':>6} {'autocast':>8} {'updates/s':>10} "
          f"{'ms/update':>10} {'env steps/s':>12} {'cpu user s':>10} {'cpu sys s':>9}")
    for r in rows:
        print(f"{r['encoder']:14} {r['device']:6} {str(r['threads'] or '-'):>7} "
              f"{'heap' if r['malloc_heap'] else 'glibc':>6} {r['autocast'] or '-':>8} {r['updates_per_s']:>10.2f} "
              f"{r['ms_per_update_median']:>10.1f} {r['env_steps_per_s']:>12,.0f} {r['cpu_user_s_per_update']:>10.3f} "
              f"{r['cpu_system_s_per_update']:>9.3f}")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    atomic_write_json({
        "what": f"IMPALA learner updates/s, batch {BATCH} x unroll {T} of {OBS} uint8 (compact unrolls from a "
                f"replay buffer), {ACTIONS} actions; median over the timed updates",
        "rows": rows,
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "cpu_cores": os.cpu_count(),
                    "cpu": machine_info()["cpu_model"], "gpu": gpu,
                    "load_average_1_5_15min_at_end": [round(x, 2) for x in os.getloadavg()]},
    }, args.output)
    print(f"wrote {os.path.relpath(args.output, ROOT)}")


if __name__ == "__main__":
    main()
