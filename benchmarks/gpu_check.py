"""Every policy on a GPU (``policy.cuda=True``): its learn step and a short serial run, with learner updates/s.

For each shipped config below (IMPALA, ACER discrete and continuous, SAC continuous, discrete and mixed,
Pendulum SAC with prioritised replay, whose priorities go back to the buffer after each update: a second transfer,
and Pendulum SAC with its update compiled, ``policy.learn.compile_update=True``):

* ``learn``: the policy built through the real config path, a replay buffer filled by its collector (pinned batches
  with ``cuda``), then ``Learner.train(buffer.sample(batch_size))`` timed for ``--seconds`` after a warm-up: learner
  updates per second. Each update ends with the learner's one device -> host transfer of its logged scalars, so the
  timing covers the GPU's work. On CUDA, ``syncs_per_update`` counts the host-device synchronisations of an update
  (``torch.cuda.set_sync_debug_mode``): 1, that transfer, is the target.
* ``serial``: ``serial_pipeline`` for ``--env-steps`` env steps in a temporary directory: wall time, train
  iterations and updates per second of the whole run (collection and evaluation included).

Without a CUDA device the script says so and exits 0 (nothing is written); ``--device cpu`` runs the same checks on
the CPU. Issue 25, item 1: a policy that makes a tensor off the policy's device fails here at its first update.

    python benchmarks/gpu_check.py [--device cuda|cpu] [--configs cartpole_acer ...] [--seconds 5] [--env-steps 2000]

Writes benchmarks/results/gpu_check.json (``gpu_check_cpu.json`` with ``--device cpu``).
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Dict, List

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]  # ding_lite and machine.py, also when imported by a test

from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

RESULTS = os.path.join(ROOT, "benchmarks", "results")
CONFIGS = ["cartpole_impala", "cartpole_acer", "pendulum_acer", "pendulum_sac", "cartpole_sac", "mixed_sac",
           "pendulum_sac_per", "pendulum_sac_compiled"]
# Checked variants of shipped configs: name -> (config file, overrides). Prioritised replay adds the transfer of the
# batch's priorities to the buffer after each update. compile_update=True: the hand-written SAC update as one
# torch.compile program with the optimizer's step folded in (on a GPU the default never compiles; this checks that
# asking for it works there, through Triton).
VARIANTS = {"pendulum_sac_per": ("pendulum_sac", {"policy.priority": True, "policy.priority_IS_weight": True}),
            "pendulum_sac_compiled": ("pendulum_sac", {"policy.learn.compile_update": True})}
SMALL = {"env.evaluator_env_num": 1, "env.n_evaluator_episode": 1}


THREADS = {"n": 1}  # torch threads on the CPU (--threads)


def overrides(device: str, name: str) -> Dict[str, Any]:
    out = {**SMALL, "policy.cuda": device == "cuda", "torch_threads": THREADS["n"]}
    if "sac" in name:  # a short warm-up of random actions, so that the short run trains
        out["policy.random_collect_size"] = 256
    return {**out, **VARIANTS.get(name, (None, {}))[1]}


def config(name: str):
    from ding_lite.config import read_config_file
    return read_config_file(os.path.join(ROOT, "dizoo_configs", f"{VARIANTS.get(name, (name,))[0]}.py"))


def check_learn(name: str, device: str, seconds: float, warmup: int = 10) -> Dict[str, Any]:
    """Learner updates/s of one config's policy on ``device``."""
    from ding_lite.worker.train_step import train_on_sample
    from ding_lite.entry.build import build, build_buffer, compile_input
    from ding_lite.worker import Learner, SampleCollector

    # every sampled unroll stays in the buffer (no max_use), so that the timed updates never run out of batches
    no_max_use = {"policy.other.replay_buffer.max_use": float("inf")}
    cfg = compile_input(config(name), 0, {**overrides(device, name), **no_max_use})
    parts = build(cfg, 0)
    try:
        policy = parts.policy
        assert policy.device.type == device and next(policy.model.parameters()).device.type == device
        collector = SampleCollector(parts.collector_env, policy.collect_mode)
        buffer = build_buffer(cfg, 0)
        batch_size = cfg.policy.learn.batch_size
        while len(buffer) < batch_size:
            samples = collector.collect(max(cfg.policy.collect.n_sample, batch_size))
            buffer.push(samples, collector.envstep)
        learner = Learner(policy.learn_mode)

        def step() -> None:  # as the training loop: with priorities, the batch's go back to the buffer
            train_on_sample(buffer, batch_size, 0, learner.train)

        for _ in range(warmup):
            step()
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            step()
            n += 1
        elapsed = time.perf_counter() - start
        syncs = count_syncs(step, 5) if device == "cuda" else None
        obs, _ = parts.evaluator_env.reset(seed=0)
        action = policy.eval_mode.forward(torch.as_tensor(obs))["action"]  # the eval path on the device as well
        assert all(x.device.type == device for x in (action.values() if isinstance(action, dict) else [action]))
        return {"updates": n, "updates_per_s": round(n / elapsed, 1), "batch_size": batch_size,
                "pinned_batches": bool(getattr(buffer, "pin_memory", False)), "syncs_per_update": syncs,
                "compiled_sum_tree": getattr(buffer, "compiled", None)}
    finally:
        parts.collector_env.close()
        parts.evaluator_env.close()


def count_syncs(update, n: int) -> float:
    """Host-device synchronisations per call of ``update`` (CUDA's sync debug mode warns at each); the target is
    1 per learner update, the transfer of the logged scalars. The process's first switch into the debug mode warns
    once by itself (seen on an H100, 2026-11-26: that warning's stack ends at ``set_sync_debug_mode``), which read as
    1.2 for the first config checked; so the mode is switched on and off once before counting."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.cuda.set_sync_debug_mode("warn")
        torch.cuda.set_sync_debug_mode("default")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(n):
                update()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught) / n


def check_serial(name: str, device: str, env_steps: int) -> Dict[str, Any]:
    """A short serial run on ``device`` in a temporary directory."""
    from ding_lite.entry import serial_pipeline

    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            start = time.perf_counter()
            serial_pipeline(config(name), seed=0, max_env_step=env_steps, overrides=overrides(device, name),
                            exp_name=f"gpu_check_{name}", quiet=True)
            wall = time.perf_counter() - start
            with open(os.path.join(tmp, f"gpu_check_{name}_seed0", "result.json")) as f:
                result = json.load(f)
        finally:
            os.chdir(cwd)
    return {"wall_s": round(wall, 1), "env_step": result["env_step"], "train_iter": result["train_iter"],
            "updates_per_s": round(result["train_iter"] / wall, 1), "stop_reason": result["stop_reason"]}


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--seconds", type=float, default=5.0, help="time each learn step this long")
    parser.add_argument("--env-steps", type=int, default=2000, help="env steps of each short serial run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the CPU's share of the work)")
    parser.add_argument("--output", default=None,
                        help="where to write the JSON results (default benchmarks/results/gpu_check.json, "
                             "gpu_check_cpu.json with --device cpu)")
    args = parser.parse_args(argv)
    THREADS["n"] = args.threads
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: torch sees no CUDA device here, so there is nothing to check; nothing written. "
              "(Run it on a machine with a GPU, or with --device cpu for the same checks on the CPU.)")
        return 0
    rows, failed = [], False
    for name in args.configs:
        row: Dict[str, Any] = {"config": name}
        for part, fn in (("learn", lambda: check_learn(name, args.device, args.seconds)),
                         ("serial", lambda: check_serial(name, args.device, args.env_steps))):
            try:
                row[part] = fn()
            except Exception as exc:  # noqa: BLE001 -- a failing policy is a finding; the others still run
                failed = True
                row[part] = {"error": f"{type(exc).__name__}: {exc}"}
                traceback.print_exc()
        rows.append(row)
        learn, serial = row["learn"], row["serial"]
        print(f"{name:18} learn {learn.get('updates_per_s', learn.get('error'))} updates/s | serial "
              f"{serial.get('updates_per_s', serial.get('error'))} updates/s ({serial.get('train_iter')} updates, "
              f"{serial.get('wall_s')} s)", flush=True)
    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else None
    path = args.output or os.path.join(RESULTS, "gpu_check.json" if args.device == "cuda" else "gpu_check_cpu.json")
    from ding_lite.utils.file_io import atomic_write_json
    atomic_write_json({"what": __doc__.splitlines()[0], "device": args.device, "gpu": gpu, "rows": rows,
                       "seconds_per_learn_check": args.seconds, "env_steps_per_serial_run": args.env_steps,
                       "torch_threads": args.threads,
                       "machine": machine_info(torch=torch.__version__)}, path)
    print(f"wrote {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
