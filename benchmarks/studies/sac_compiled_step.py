"""Does a compiled training step make ding_lite's SAC update faster on this CPU? Eager against torch.compile, A/B.

Builds ding_lite's continuous SAC twice through the real config path (pendulum_sac.py, [H, H] actor and critics,
batch 256) and times, on a fixed random batch, the eager update against one compiled variant, alternating rounds of
100 updates (so that the machine's load hits both alike; the ratio of each round is reported):

* ``losses``: ``torch.compile`` of the three losses' forward (its backward compiled by AOTAutograd), Adam eager;
* ``losses_adam``: the same plus the Adam step and the Polyak update of the target critics compiled together;
* ``whole_step``: forward, backward (compiled autograd) and Adam in one compiled function;

these three against the autograd update (``policy.learn.manual_update=False``); and

* ``manual``: the hand-written update (the default, ``policy/sac/manual_update.py``) against itself compiled
  (``policy.learn.compile_update=True``: its losses and gradients as one ``fullgraph`` program, Adam eager);
* ``manual_unkept``: the same with the top-level ``keep_freed_memory=False``, which the compiled update otherwise
  turns on (glibc then returns the memory of the program's fresh intermediate results after each call).

Each row also gives the page faults per update (``ru_minflt``) of both sides.

The first call of each compiled variant (what a run pays at start; inductor's on-disk cache makes a second process
faster) is reported as ``compile_s``. Writes benchmarks/studies/results/sac_compiled_step.json (``--variants manual``
alone: sac_compiled_step_manual.json).

    python benchmarks/studies/sac_compiled_step.py [--hidden 64 256] [--threads 1 2] [--variants losses losses_adam whole_step manual manual_unkept]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from machine import STUDY_RESULTS, write_results  # noqa: E402  (benchmarks/machine.py)

VARIANTS = ("losses", "losses_adam", "whole_step", "manual", "manual_unkept")


def step_fn(policy, batch: dict, variant: str):
    """One SAC update as ``variant`` runs it (the eager one is the policy's own ``_forward_learn``)."""
    if variant in ("eager", "manual", "manual_unkept"):  # the policy's own (manual*: compile_update=True)
        return lambda: policy._forward_learn(dict(batch))
    data = dict(batch, reward=batch["reward"].float(), terminated=batch["terminated"].float())
    opt, theta = policy._optimizer, policy._cfg.learn.target_theta

    def total_loss():
        losses = policy._actions.losses(data, policy._alphas(), policy._target_critic, policy._target_entropy)
        return losses.critic + losses.actor + losses.alpha

    def adam_and_polyak():
        opt.step()
        torch._foreach_lerp_(policy._target_params, policy._critic_params, theta)

    if variant == "whole_step":
        torch._dynamo.config.compiled_autograd = True

        @torch.compile
        def whole():
            total_loss().backward()
            adam_and_polyak()
            opt.zero_grad(set_to_none=False)
        return whole
    compiled_loss = torch.compile(total_loss)
    after = torch.compile(adam_and_polyak) if variant == "losses_adam" else adam_and_polyak

    def step():
        total = compiled_loss()
        opt.zero_grad(set_to_none=True)
        total.backward()
        after()
    return step


def child(args: argparse.Namespace) -> None:
    """One (hidden, threads, variant) A/B in this process; prints one JSON line."""
    import sac_update_profile as P
    torch.set_num_threads(args.child_threads)
    shape = argparse.Namespace(hidden=args.child_hidden, batch=256, obs=3, act=1)
    fns = {}
    compile_s = None
    for variant in ("eager", args.child_variant):
        if args.child_variant.startswith("manual"):  # the hand-written update, eager and compiled
            overrides = {"policy.learn.compile_update": variant != "eager"}
            if args.child_variant == "manual_unkept":
                overrides["keep_freed_memory"] = False
        else:  # the autograd update, eager and its compiled variants
            overrides = {"policy.learn.manual_update": False}
        _, policy, _ = P.build_policy(shape, args.child_threads, overrides)
        torch.set_num_threads(args.child_threads)
        fn = step_fn(policy, P.random_batch(shape), variant)
        start = time.perf_counter()
        fn()
        if variant != "eager":
            compile_s = time.perf_counter() - start
        fns[variant] = fn
    for _ in range(30):
        for fn in fns.values():
            fn()
    times, faults = {v: [] for v in fns}, {v: [] for v in fns}
    for _ in range(args.rounds):
        for v, fn in fns.items():
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            times[v].append(P.median_ms(fn, 100))
            faults[v].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 100)
    eager, comp = times["eager"], times[args.child_variant]
    print("AB_RESULT " + json.dumps({
        "hidden": args.child_hidden, "threads": args.child_threads, "variant": args.child_variant,
        "eager_ms": round(statistics.median(eager), 3), "compiled_ms": round(statistics.median(comp), 3),
        "speedup_per_round": [round(e / c, 2) for e, c in zip(eager, comp)], "compile_s": round(compile_s, 2),
        "page_faults_per_update": {"eager": round(statistics.median(faults["eager"]), 1),
                                   "compiled": round(statistics.median(faults[args.child_variant]), 1)}}),
        flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--child-hidden", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_variant:
        child(args)
        return
    rows = []
    for hidden in args.hidden:
        for threads in args.threads:
            for variant in args.variants:  # each in a fresh process: compiled autograd is a process-wide switch
                cmd = [sys.executable, os.path.abspath(__file__), "--child-hidden", str(hidden), "--child-threads",
                       str(threads), "--child-variant", variant, "--rounds", str(args.rounds)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                lines = [x for x in proc.stdout.splitlines() if x.startswith("AB_RESULT ")]
                if proc.returncode != 0 or not lines:
                    raise RuntimeError(f"{cmd} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
                rows.append(json.loads(lines[-1].split(" ", 1)[1]))
                r = rows[-1]
                print(f"[{hidden}, {hidden}] threads {threads} {variant:12} eager {r['eager_ms']:.3f} ms, compiled "
                      f"{r['compiled_ms']:.3f} ms (eager/compiled per round {r['speedup_per_round']}), first call "
                      f"{r['compile_s']} s, page faults per update {r['page_faults_per_update']}", flush=True)
    manual = {"manual", "manual_unkept"}
    name = "sac_compiled_step_manual" if set(args.variants) <= manual else "sac_compiled_step"
    write_results(name, results_dir=STUDY_RESULTS, settings=vars(args), rows=rows, torch=torch.__version__)


if __name__ == "__main__":
    main()
