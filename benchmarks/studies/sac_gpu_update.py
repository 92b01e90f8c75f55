"""SAC's update on one device, each way ding_lite can run it, with and without CUDA graphs: ms per update.

Builds ding_lite's continuous SAC through the real config path (pendulum_sac.py, [H, H] actor and critics, batch
256) once per variant and times each on a fixed random batch already on the device, in alternating rounds (so that
a busy host hits all alike). Each timed update ends as in a run, with the learner's one device -> host transfer of
the logged scalars (``worker.learner.to_floats``), so the time covers the device's work:

* ``autograd``: ``policy.learn.manual_update=False``;
* ``manual``: the hand-written update, eager (``manual_update=True, compile_update=False``; the default on a GPU);
* ``compiled``: ``compile_update=True``, one ``torch.compile`` program per update with the optimizer's step, the
  temperature's clamp and the Polyak update folded in (``policy/sac/compiled_update.py``); on a GPU it is recorded once
  as a CUDA graph and replayed, one launch instead of a few hundred;
* ``compiled_no_graphs`` (CUDA only, not a config setting): that same program without the CUDA graph, to show what
  the graph adds.

``compile_s`` is the first compiled update (what a run pays at start). ``max_param_diff`` checks each variant
against ``manual`` from the same parameters, batches and random numbers over ``--check-updates`` updates: the
largest difference of any parameter, target critic or optimizer moment.

    python benchmarks/studies/sac_gpu_update.py [--device cuda|cpu] [--hidden 256] [--variants ...] [--rounds 5]

Writes benchmarks/studies/results/sac_gpu_update.json (``sac_gpu_update_cpu.json`` with ``--device cpu``; ``--output NAME``:
NAME.json).
"""
import argparse
import os
import statistics
import sys
import time
from typing import Callable, Dict, List

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

from machine import STUDY_RESULTS, write_results  # noqa: E402  (benchmarks/machine.py)

VARIANTS = ("autograd", "manual", "compiled", "compiled_no_graphs")
OVERRIDES = {"autograd": {"policy.learn.manual_update": False},
             "manual": {"policy.learn.manual_update": True, "policy.learn.compile_update": False},
             "compiled": {"policy.learn.compile_update": True},
             "compiled_no_graphs": {"policy.learn.compile_update": True}}


def build(variant: str, hidden: int, device: str, batch: int):
    """The policy of ``variant`` (seed 0: every variant starts from the same parameters)."""
    from ding_lite.config import read_config_file
    from ding_lite.entry.build import compile_input
    from ding_lite.utils import POLICY_REGISTRY, set_seed
    main, create = read_config_file(os.path.join(ROOT, "dizoo_configs", "pendulum_sac.py"))
    cfg = compile_input((main, create), 0, {
        "policy.model.actor_head_hidden_size": hidden, "policy.model.critic_head_hidden_size": hidden,
        "policy.learn.batch_size": batch, "policy.cuda": device == "cuda", "policy.model.obs_shape": 3,
        "policy.model.action_shape": 1, **OVERRIDES[variant]})
    cfg.policy.action_space = cfg.policy.model.action_space = "continuous"
    set_seed(0)
    return POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy)


def random_batch(batch: int, device: str, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    data = {"obs": torch.randn(batch, 3, generator=g), "next_obs": torch.randn(batch, 3, generator=g),
            "action": torch.rand(batch, 1, generator=g) * 2 - 1, "reward": torch.randn(batch, generator=g),
            "terminated": torch.rand(batch, generator=g) < 0.1, "truncated": torch.zeros(batch, dtype=torch.bool)}
    return {k: v.to(device) for k, v in data.items()}


def without_graphs(policy) -> None:
    """The folded program compiled as the policy compiles it, less the CUDA graph (the policy's update engine is a
    ``CompiledUpdate``, compiled when it was built: ``compile_update=True``)."""
    engine = policy._update
    engine._graphs = False
    engine._losses_grads_and_step = torch.compile(engine._eager_step, fullgraph=True, dynamic=False)


def updater(policy, variant: str) -> Callable[[dict], List[float]]:
    """One update as a run makes it: the policy's learn step, then one transfer of its logged scalars."""
    from ding_lite.worker.learner import to_floats

    def update(batch: dict) -> List[float]:
        info = policy._forward_learn(dict(batch))
        return to_floats(list(info.values()))
    return update


def prepared(variant: str, hidden: int, device: str, batch: int):
    """The policy and its update, past the optimizer's first step (and, compiled, past the compilation)."""
    policy = build(variant, hidden, device, batch)
    if variant == "compiled_no_graphs":
        without_graphs(policy)
    update = updater(policy, variant)
    update(random_batch(batch, device, 0))  # the optimizer makes its state (eager in every variant)
    start = time.perf_counter()
    update(random_batch(batch, device, 1))  # compiled variants compile here
    return policy, update, time.perf_counter() - start


def state_of(policy) -> List[torch.Tensor]:
    out = [p.detach().clone() for p in policy.model.parameters()]
    out += [p.detach().clone() for p in policy._target_critic.parameters()]
    for state in policy._optimizer.state.values():
        out += [state[k].detach().clone() for k in ("exp_avg", "exp_avg_sq")]
    return out


def max_param_diff(variant: str, hidden: int, device: str, batch: int, updates: int) -> float:
    """The largest difference from the eager hand-written update after ``updates`` updates, same inputs and
    random numbers."""
    states = []
    for name in ("manual", variant):
        policy = build(name, hidden, device, batch)
        if name == "compiled_no_graphs":
            without_graphs(policy)
        update = updater(policy, name)
        for k in range(updates):
            torch.manual_seed(100 + k)
            update(random_batch(batch, device, 10 + k))
        states.append(state_of(policy))
    return max((a - b).abs().max().item() for a, b in zip(*states))


def run(device: str, hidden: int, variants: List[str], batch: int, rounds: int, updates: int,
        check_updates: int) -> Dict[str, dict]:
    runs, out = {}, {}
    for variant in variants:
        policy, update, compile_s = prepared(variant, hidden, device, batch)
        runs[variant] = update
        out[variant] = {"compile_s": round(compile_s, 2) if variant.startswith("compiled") else None,
                        "ms": []}
    batches = [random_batch(batch, device, 100 + k) for k in range(8)]
    for update in runs.values():  # warm-up
        for k in range(20):
            update(batches[k % 8])
    for _ in range(rounds):
        for variant, update in runs.items():
            start = time.perf_counter()
            for k in range(updates):
                update(batches[k % 8])
            out[variant]["ms"].append(round(1e3 * (time.perf_counter() - start) / updates, 3))
    for variant in variants:
        row = out[variant]
        row["ms_per_update"] = statistics.median(row["ms"])
        row["updates_per_s"] = round(1e3 / row["ms_per_update"], 1)
        row["max_param_diff"] = (0.0 if variant == "manual" else
                                 max_param_diff(variant, hidden, device, batch, check_updates))
        print(f"[{hidden}, {hidden}] {variant:10} {row['ms_per_update']:.3f} ms/update "
              f"({row['updates_per_s']} updates/s), compile {row['compile_s']} s, "
              f"max |diff| from manual {row['max_param_diff']:.2e}", flush=True)
    return out


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--hidden", type=int, nargs="+", default=[256])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=200, help="updates per timed round")
    parser.add_argument("--check-updates", type=int, default=5)
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("sac_gpu_update: torch sees no CUDA device here; nothing written (--device cpu runs it on the CPU)")
        return 0
    variants = [v for v in args.variants if v != "compiled_no_graphs" or args.device == "cuda"]
    # each variant's program compiles afresh (a new policy), twice per variant and size: above dynamo's default limit
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    results = {str(h): run(args.device, h, variants, args.batch, args.rounds, args.updates, args.check_updates)
               for h in args.hidden}
    name = args.output or ("sac_gpu_update" if args.device == "cuda" else "sac_gpu_update_cpu")
    write_results(name, results_dir=STUDY_RESULTS, what=__doc__.splitlines()[0], device=args.device,
                  gpu=torch.cuda.get_device_name(0) if args.device == "cuda" else None, batch=args.batch,
                  updates_per_round=args.updates, rounds=args.rounds, torch_threads=torch.get_num_threads(),
                  torch_version=torch.__version__, results=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
