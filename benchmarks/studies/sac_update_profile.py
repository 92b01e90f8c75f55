"""Where one SAC update's time goes, against the FLOP floor of this machine.

Builds ding_lite's continuous SAC through the real config path (pendulum_sac.py, or --obs/--act for other shapes such
as HalfCheetah's 17/6) with [H, H] actor and critics, and times on a fixed random batch:

* ``update``: the whole ``_forward_learn`` (what the learner calls), median over --updates, for the default update
  (continuous SAC's hand-written gradients, ``policy/sac/manual_update.py``; lever ``-``) and the autograd one (lever
  ``autograd``: ``policy.learn.manual_update=False``);
* its phases, timed one after the other in a copy of the same steps: ``forward`` (the three losses) and
  ``backward`` of the autograd update, ``forward_backward`` of the hand-written one (one call gives its losses and
  gradients), ``optimizer`` (the fused Adam step, the alpha clamp and the Polyak update of the target critics);
* ``collect``: one env step of the serial pipeline's collection (the actor's forward on one observation, the env
  step, the transition into the buffer) and ``sample``: drawing a batch from the replay buffer.

The FLOPs of one update (forward and backward) are counted by torch's ``FlopCounterMode``; the floor is those FLOPs
at the dense matmul rate measured here on the update's own shapes (``matmul_gflops``).

``--levers`` adds rows at the highest thread count, each changing one thing of the autograd update: ``foreach_adam``
(torch's multi-tensor Adam instead of the fused one ding_lite uses), ``compiled`` (``torch.compile`` of the losses'
forward; its first update, compilation included, is ``compile_s``) and ``medium_matmuls`` (``matmul_precision='medium'``). Writes
benchmarks/studies/results/sac_update_profile[_<tag>].json.

    python benchmarks/studies/sac_update_profile.py [--hidden 256] [--batch 256] [--threads 1 2] [--obs 3 --act 1] [--levers]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]  # ding_lite; machine.py

from machine import machine_info  # noqa: E402  (benchmarks/machine.py)


def build_policy(args: argparse.Namespace, threads: int, extra: dict):
    from ding_lite.config import read_config_file
    from ding_lite.entry.build import build, compile_input
    main, create = read_config_file(os.path.join(ROOT, "dizoo_configs", "pendulum_sac.py"))
    overrides = {"policy.model.actor_head_hidden_size": args.hidden, "policy.model.critic_head_hidden_size": args.hidden,
                 "policy.learn.batch_size": args.batch, "env.collector_env_num": 1, "env.evaluator_env_num": 1,
                 "torch_threads": threads, **extra}
    if args.obs != 3 or args.act != 1:  # other shapes: the model is given them (the env's are Pendulum's)
        overrides.update({"policy.model.obs_shape": args.obs, "policy.model.action_shape": args.act})
        cfg = compile_input((main, create), 0, overrides)
        from ding_lite.utils import POLICY_REGISTRY
        cfg.policy.action_space = "continuous"
        cfg.policy.model.action_space = "continuous"
        return cfg, POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy), None
    cfg = compile_input((main, create), 0, overrides)
    parts = build(cfg, 0)
    return cfg, parts.policy, parts


def random_batch(args: argparse.Namespace) -> dict:
    g = torch.Generator().manual_seed(0)
    B = args.batch
    return {"obs": torch.randn(B, args.obs, generator=g), "next_obs": torch.randn(B, args.obs, generator=g),
            "action": torch.rand(B, args.act, generator=g) * 2 - 1, "reward": torch.randn(B, generator=g),
            "terminated": torch.zeros(B, dtype=torch.bool), "truncated": torch.zeros(B, dtype=torch.bool)}


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def phases(policy, batch: dict, n: int) -> dict:
    """The update's steps as in SACPolicy._forward_learn, each timed on its own (median ms): ``forward`` (the
    losses) and ``backward`` of the autograd update, or ``forward_backward`` of the hand-written one (its losses and
    gradients come out of one call); then ``optimizer``."""
    from ding_lite.policy.sac.manual_update import ManualUpdate
    from ding_lite.rl_utils import sac as S
    from ding_lite.torch_utils import adam_step, grad_norm, polyak_update
    learn = policy._cfg.learn
    engine = policy._update  # its losses and gradients, then the optimizer's step below, as the engine runs them
    manual = isinstance(engine, ManualUpdate)
    fwd, bwd, opt = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        data = dict(batch, reward=batch["reward"].float(), terminated=batch["terminated"].float())
        policy._optimizer.zero_grad(set_to_none=True)
        if manual:
            with torch.no_grad():
                engine._set_gradients(engine._losses_and_grads(*engine._inputs(data, policy._alphas())))
            t1 = time.perf_counter()
        else:
            losses = policy._actions.losses(data, policy._alphas(), policy._target_critic, policy._target_entropy)
            t1 = time.perf_counter()
            (losses.critic + losses.actor + losses.alpha).backward()
        grad_norm(policy._trained_params)
        t2 = time.perf_counter()
        adam_step(policy._optimizer)
        S.clamp_log_alpha_(policy._log_alpha, learn.max_log_alpha, learn.min_log_alpha)
        polyak_update(policy._target_params, policy._critic_params, learn.target_theta)
        t3 = time.perf_counter()
        fwd.append(t1 - t0), bwd.append(t2 - t1), opt.append(t3 - t2)
    if manual:
        fwd, bwd = [a + b for a, b in zip(fwd, bwd)], None
    names = (("forward_backward", fwd), ("optimizer", opt)) if bwd is None else \
        (("forward", fwd), ("backward", bwd), ("optimizer", opt))
    return {name: round(1e3 * statistics.median(ts), 3) for name, ts in names}


def update_flops(policy, batch: dict) -> int:
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as counter:
        policy._forward_learn(dict(batch))
    return counter.get_total_flops()


def matmul_gflops(args: argparse.Namespace, n: int = 200) -> float:
    """Dense fp32 rate on the update's largest shapes: (2 critics, B, H) @ (H, H) batched and (2B, H) @ (H, H)."""
    H, B = args.hidden, args.batch
    a, w = torch.randn(2, B, H), torch.randn(2, H, H)
    x, v = torch.randn(2 * B, H), torch.randn(H, H)
    flops = 2 * (2 * B * H * H) + 2 * (2 * B * H * H)
    ms = median_ms(lambda: (torch.bmm(a, w), torch.mm(x, v)), n)
    return flops / (ms * 1e-3) / 1e9


def collect_and_sample(policy, parts, args: argparse.Namespace, n: int) -> dict:
    if parts is None:
        return {}
    from ding_lite.data import ReplayBuffer
    from ding_lite.worker import SampleCollector
    collector = SampleCollector(parts.collector_env, policy.collect_mode)
    buffer = ReplayBuffer(dict(replay_buffer_size=100000), seed=0)
    buffer.push(collector.collect(2 * args.batch, random_action=True), collector.envstep)

    def one_step():
        buffer.push(collector.collect(1), collector.envstep)
    return {"collect": round(median_ms(one_step, n), 3),
            "sample": round(median_ms(lambda: buffer.sample(args.batch, 0), n), 3)}


def apply_lever(policy, lever: str, batch: dict) -> dict:
    """Change one thing in a built policy (see the module doc); what it cost up front."""
    if lever == "foreach_adam":
        groups = [{k: v for k, v in g.items() if k == "params" or k == "lr"} for g in policy._optimizer.param_groups]
        policy._optimizer = torch.optim.Adam(groups, foreach=True)
    elif lever == "compiled":
        policy._actions.losses = torch.compile(policy._actions.losses)
        start = time.perf_counter()
        policy._forward_learn(dict(batch))
        return {"compile_s": round(time.perf_counter() - start, 2)}
    return {}


def profile(args: argparse.Namespace, threads: int, extra: dict, lever: str = "") -> dict:
    if lever == "medium_matmuls":
        extra = dict(extra, matmul_precision="medium")
    if lever in ("autograd", "compiled", "foreach_adam"):  # the autograd update (compiled: its losses compiled)
        extra = dict(extra, **{"policy.learn.manual_update": False})
    cfg, policy, parts = build_policy(args, threads, extra)
    torch.set_num_threads(threads)
    batch = random_batch(args)
    row = {"threads": threads, "lever": lever or "-", **apply_lever(policy, lever, batch)}
    for _ in range(20):  # warm up (allocator, compiled kernels)
        policy._forward_learn(dict(batch))
    row["update"] = round(median_ms(lambda: policy._forward_learn(dict(batch)), args.updates), 3)
    if lever != "compiled":  # the phases re-run the eager losses
        row.update(phases(policy, batch, args.updates))
    row.update(collect_and_sample(policy, parts, args, args.updates))
    flops = update_flops(policy, batch)
    gflops = matmul_gflops(args)
    row.update(update_mflop=round(flops / 1e6, 1), matmul_gflops=round(gflops, 1),
               floor_ms=round(flops / (gflops * 1e9) * 1e3, 3))
    row["update_over_floor"] = round(row["update"] / row["floor_ms"], 2)
    if parts is not None:
        parts.collector_env.close(), parts.evaluator_env.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--obs", type=int, default=3, help="obs dims (3: Pendulum; 17: HalfCheetah)")
    parser.add_argument("--act", type=int, default=1, help="action dims (1: Pendulum; 6: HalfCheetah)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides KEY=VALUE")
    parser.add_argument("--levers", action="store_true")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    extra = {}
    for item in args.set:
        key, value = item.split("=", 1)
        extra[key] = json.loads(value) if value[:1] in "0123456789-[{tf\"n" else value
    rows = [profile(args, t, extra, lever) for t in args.threads for lever in ("", "autograd")]
    if args.levers:
        rows += [profile(args, max(args.threads), extra, lever)
                 for lever in ("foreach_adam", "compiled", "medium_matmuls")]
    print(f"SAC update, [{args.hidden}, {args.hidden}] nets, batch {args.batch}, obs {args.obs}, act {args.act} "
          f"(ms, medians of {args.updates}){' ' + str(extra) if extra else ''}")
    keys = ["update", "forward", "backward", "forward_backward", "optimizer", "collect", "sample", "update_mflop", "matmul_gflops",
            "floor_ms", "update_over_floor"]  # floor_ms at this row's own matmul rate
    print(f"{'threads':>8}{'lever':>16}" + "".join(f"{k:>18}" for k in keys) + f"{'compile_s':>11}")
    for row in rows:
        print(f"{row['threads']:>8}{row['lever']:>16}" + "".join(f"{row.get(k, ''):>18}" for k in keys)
              + f"{row.get('compile_s', ''):>11}")
    name = "sac_update_profile" + (f"_{args.tag}" if args.tag else "")
    out = {"settings": vars(args), "rows": rows, "machine": machine_info(),
           "loadavg_1min_after": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d")}
    path = os.path.join(ROOT, "benchmarks", "studies", "results", f"{name}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
