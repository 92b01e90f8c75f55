"""Memory per stored Atari transition in the replay buffer: uint8 frame stacks, IMPALA/ACER unroll samples.

An Atari observation is a stack of 4 grey 84x84 frames, uint8: the *payload* of one transition is 4 x 84 x 84 =
28,224 bytes. A train sample of IMPALA or ACER is one env's unroll of T steps, built by the policy's own
``_get_train_sample`` from a time-major segment as the collector hands it over (observations uint8, as the collector
keeps them), and stored in the columnar ``ReplayBuffer``. Measured for each ``policy.obs_storage``:

* 'compact' (the default for integer observations): x_0 .. x_T plus one final-observation slot, (T + 2) stacks per
  unroll;
* 'full' (the default for float observations): obs and next_obs of every step, 2T stacks per unroll;
* and, for scale, 'full' with float32 frames (what storing the collector's old ``.float()`` output would cost).

Per stored transition = the bytes of every buffer column (all leaves: obs, final_obs, action int64, logit (6,)
float32, reward float32, terminated, truncated) / (capacity x T), and the process's resident memory growth
(``/proc/self/statm``) while a buffer of that capacity is allocated and filled, / (capacity x T): what the OS
actually commits, buffer bookkeeping included. Also the lower bound a frame-deduplicating store could reach (each
84x84 frame once: T + 4 frames per unroll of one episode, plus the final slot), which ding_lite does not implement.

Run from the repository root: ``python benchmarks/studies/pixel_memory.py``. Prints a table and writes
``benchmarks/studies/results/pixel_memory.json``. Takes ~20 s and ~0.6 GB.
"""
import gc
import multiprocessing
import os
import platform
import resource
import sys
from typing import Dict

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.data import ReplayBuffer  # noqa: E402
from ding_lite.policy import IMPALAPolicy  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402

STACK, SIZE, ACTIONS, N_ENV = 4, 84, 6, 8
PAYLOAD = STACK * SIZE * SIZE  # bytes of one uint8 frame stack
RESULT = os.path.join(ROOT, "benchmarks", "studies", "results", "pixel_memory.json")
PAGE = resource.getpagesize()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def policy(storage: str, T: int) -> IMPALAPolicy:
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict(unroll_len=T, obs_storage=storage,
                                                             model=dict(encoder_type="nature_conv")))
    cfg = compile_config((main, dict(policy=dict(type="impala"))))
    cfg.policy.action_space = "discrete"
    cfg.policy.model.update(obs_shape=[STACK, SIZE, SIZE], action_shape=ACTIONS, action_space="discrete")
    return IMPALAPolicy(cfg.policy, enable_field=("collect",))


def segment(T: int, dtype: torch.dtype, gen: torch.Generator) -> Dict[str, torch.Tensor]:
    """A time-major segment (T, N_ENV, ...) as the collector builds it; one env's episode is cut by a time limit
    inside it (so the final-observation slot holds a frame)."""
    frames = torch.randint(0, 256, (T + 1, N_ENV, STACK, SIZE, SIZE), dtype=torch.uint8, generator=gen)
    frames = frames if dtype == torch.uint8 else frames.to(dtype)
    truncated = torch.zeros(T, N_ENV, dtype=torch.bool)
    truncated[T // 2, 0] = True
    return {"obs": frames[:T], "next_obs": frames[1:].clone(), "action": torch.randint(ACTIONS, (T, N_ENV)),
            "reward": torch.rand(T, N_ENV), "terminated": torch.zeros(T, N_ENV, dtype=torch.bool),
            "truncated": truncated, "logit": torch.randn(T, N_ENV, ACTIONS, generator=gen)}


def measure(storage: str, T: int, dtype: torch.dtype, capacity: int) -> Dict[str, float]:
    """One row, run in a fresh process (``main`` spawns one per row) so that no memory freed before is reused."""
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    get_train_sample = policy(storage, T).collect_mode.get_train_sample
    seg = segment(T, dtype, gen)  # kept alive: its memory is not handed back to the buffer's columns
    samples = get_train_sample(seg)
    gc.collect()
    before = rss_bytes()
    buffer = ReplayBuffer(dict(replay_buffer_size=capacity), seed=0)
    for _ in range(capacity // N_ENV):
        buffer.push(samples, cur_collector_envstep=0)
    grown = rss_bytes() - before
    columns = {".".join(p): c for p, c in zip(buffer._paths, buffer._cols)}
    column_bytes = sum(c.nbytes for c in columns.values())
    obs_keys = [k for k in columns if k in ("obs", "next_obs", "final_obs")]
    stacks = sum(columns[k].shape[1] for k in obs_keys)  # frame stacks per stored unroll
    batch = buffer.sample(32, cur_learner_iter=0)
    out = {
        "storage": storage, "T": T, "dtype": str(dtype).replace("torch.", ""), "capacity_unrolls": capacity,
        "leaves": {k: f"{tuple(c.shape[1:])} {str(c.dtype).replace('torch.', '')}" for k, c in columns.items()},
        "stacks_per_unroll": stacks,
        "bytes_per_transition_columns": column_bytes / (capacity * T),
        "bytes_per_transition_rss": grown / (capacity * T),
        "x_payload_columns": column_bytes / (capacity * T) / PAYLOAD,
        "x_payload_rss": grown / (capacity * T) / PAYLOAD,
        "sampled_obs_dtype": str(batch["obs"].dtype).replace("torch.", ""),
    }
    return out


def main() -> None:
    runs = [("compact", T, torch.uint8, 320) for T in (20, 32)] + [("full", T, torch.uint8, 320) for T in (20, 32)]
    runs.append(("full", 20, torch.float32, 64))
    with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        rows = [pool.apply(measure, run) for run in runs]
    dedup = {T: (T + STACK + 1) * SIZE * SIZE / T for T in (20, 32)}  # frames once each (+ the final slot)
    print(f"payload: one {STACK}x{SIZE}x{SIZE} uint8 stack = {PAYLOAD:,} bytes per transition")
    print(f"{'storage':8} {'T':>3} {'dtype':8} {'stacks/unroll':>13} {'B/transition':>13} {'x payload':>10} "
          f"{'RSS B/tr.':>10} {'x payload':>10}")
    for r in rows:
        print(f"{r['storage']:8} {r['T']:>3} {r['dtype']:8} {r['stacks_per_unroll']:>13} "
              f"{r['bytes_per_transition_columns']:>13,.0f} {r['x_payload_columns']:>10.3f} "
              f"{r['bytes_per_transition_rss']:>10,.0f} {r['x_payload_rss']:>10.3f}")
    for T, b in dedup.items():
        print(f"(not implemented) frame dedup, T={T}: {b:,.0f} B/transition = {b / PAYLOAD:.3f} x payload")
    atomic_write_json({
        "what": "replay-buffer memory per stored Atari transition (4x84x84 uint8 frame stacks), IMPALA unroll "
                "samples from the policy's own _get_train_sample, per policy.obs_storage",
        "payload_bytes": PAYLOAD,
        "rows": rows,
        "frame_dedup_lower_bound_bytes_per_transition": dedup,
        "machine": {"python": platform.python_version(), "torch": torch.__version__,
                    "cpu": platform.processor() or platform.machine()},
    }, RESULT)
    print(f"wrote {os.path.relpath(RESULT, ROOT)}")


if __name__ == "__main__":
    main()
