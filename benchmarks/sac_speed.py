"""ding_lite's SAC vs Stable-Baselines3's and SBX's: env steps per second at one gradient step per env step.

On Pendulum-v1 (default) or --env HalfCheetah-v5 (MuJoCo: pip install "gymnasium[mujoco]"). Same run, same machine,
same networks (actor and critics [H, H], 2 critics), batch size, learning rates and warm-up; no evaluation inside the
timed span for either. Rows: "defaults", each library with the thread count a user gets (ding_lite's
torch_threads='auto', SB3 with torch's default, one thread per core); "equal threads", both pinned to --threads;
and "medium matmuls", the defaults row with ding_lite's matmul_precision='medium' (bfloat16 inputs inside float32
matmuls where the CPU has them; SB3 as in "defaults", in true float32). The rate is measured as the difference
of two runs of different lengths, (N2 - N1) / (t2 - t1), so start-up, warm-up and the final checkpoint cancel out.
It is reported for wall time and for this process's CPU time (with one torch thread, the CPU-time rate is what an
idle machine would show; the wall-time rate drops when other processes compete for the cores).
SBX (Stable-Baselines3 in JAX, ``sbx-rl``) runs the same settings, each run in a child process of its own (JAX's
thread pool is set by XLA_FLAGS before JAX starts: all cores in "defaults", one in "equal threads", where the child
is also pinned to one CPU; float32 in every row). Each SBX child also times SBX's update on its own after training (``model.train`` of one gradient step,
replay sampling included, with ``block_until_ready``) and its acting (``model.predict`` on one observation): the
per-update figures to put beside benchmarks/studies/sac_update_profile.py's.
Needs the extra `bench` (stable-baselines3, sbx-rl). Writes benchmarks/results/sac_speed[_<env>][_<hidden>].json.

    python benchmarks/sac_speed.py [--env Pendulum-v1] [--hidden 64] [--batch 256] [--steps 6000 9000] [--threads 1]
                                   [--rows defaults equal_threads medium_matmuls] [--no-sbx] [--autograd]
                                   [--compiled] [--repeats 3] [--output FILE]

``--autograd`` adds ding_lite with autograd's update (``policy.learn.manual_update=False``) to each row, beside the
hand-written update that continuous SAC uses by default; ``--compiled`` adds it with that update compiled from the
first update (``policy.learn.compile_update=True``; the rate's difference of two runs leaves the compilation out).
ding_lite's default compiles that update at update 5,000 on a CPU (``sac.compiled_update.AUTO_COMPILE_AFTER``): the
default --steps (6000 9000) put both runs past it, so the rate is the compiled update's, with the compilation (once per
run) cancelling out; both runs must be on the same side of it. Before the first round one short compiled run fills
inductor's on-disk cache, so that every run compiles alike (its wall time, start-up and a cold compilation included, is
``compile_warmup_run_s``; benchmarks/studies/sac_compiled_step.py times the compilation itself).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from importlib.metadata import version as _version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TORCH_DEFAULT_THREADS = torch.get_num_threads()  # what a user's process starts with (one per core)
CONFIGS = {"Pendulum-v1": "pendulum_sac.py", "HalfCheetah-v5": "halfcheetah_sac.py"}  # ding_lite's config per env


def ding_lite_run(steps: int, args: argparse.Namespace, workdir: str, tag: str, threads,
                  precision: str = "highest", extra: tuple = ()) -> float:
    from ding_lite.config import read_config_file
    from ding_lite.entry import serial_pipeline
    cfg = read_config_file(os.path.join(ROOT, "dizoo_configs", CONFIGS[args.env]))
    overrides = [
        f"policy.model.actor_head_hidden_size={args.hidden}", f"policy.model.critic_head_hidden_size={args.hidden}",
        "policy.model.actor_head_layer_num=2", "policy.model.critic_head_layer_num=2", "policy.model.num_critics=2",
        f"policy.learn.batch_size={args.batch}", "policy.learn.update_per_collect=1", "policy.collect.n_sample=1",
        f"policy.random_collect_size={args.warmup}", "env.collector_env_num=1", "env.stop_value=None",
        "env.evaluator_env_num=1", "env.n_evaluator_episode=1", "policy.eval.evaluator.eval_freq=1000000000",
        "policy.learn.learner.hook.save_ckpt_after_iter=0", f"torch_threads={threads}",
        f"matmul_precision={precision}", "policy.learn.learning_rate_q=1e-3", "policy.learn.learning_rate_policy=1e-3",
        "policy.learn.learning_rate_alpha=1e-3", "policy.learn.target_theta=0.005", *extra,
    ]
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        serial_pipeline(cfg, seed=0, max_env_step=steps, overrides=overrides, exp_name=tag, quiet=True)
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        os.chdir(cwd)


def sb3_run(steps: int, args: argparse.Namespace, threads: int) -> float:
    import gymnasium as gym
    from stable_baselines3 import SAC
    torch.set_num_threads(threads)
    env = gym.make(args.env)
    start, cpu = time.perf_counter(), time.process_time()
    model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=100_000, learning_starts=args.warmup,
                batch_size=args.batch, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, seed=0, device="cpu",
                policy_kwargs=dict(net_arch=[args.hidden, args.hidden], n_critics=2), verbose=0)
    model.learn(total_timesteps=steps)
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    env.close()
    return elapsed


def sbx_child(steps: int, args: argparse.Namespace) -> None:
    """In a child process (``--sbx-child``): SBX's run of ``steps`` env steps, then its update and acting timed on
    their own; prints one JSON line. With ``--sbx-pin N`` the process is pinned to N CPUs first: XLA's thread flags
    alone leave JAX's runtime threads beside the Python thread (1.7 CPUs busy under "one thread", measured)."""
    if args.sbx_pin:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.sbx_pin])
    import gymnasium as gym
    import jax
    import numpy as np
    from sbx import SAC
    env = gym.make(args.env)
    start, cpu = time.perf_counter(), time.process_time()
    model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=100_000, learning_starts=args.warmup,
                batch_size=args.batch, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, seed=0,
                policy_kwargs=dict(net_arch=[args.hidden, args.hidden], n_critics=2), verbose=0)
    model.learn(total_timesteps=steps)
    out = {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}
    updates, acts = [], []
    obs, _ = env.reset(seed=0)
    for _ in range(args.sbx_timed):
        t0 = time.perf_counter()
        model.train(gradient_steps=1, batch_size=args.batch)
        jax.block_until_ready(model.policy.actor_state.params)
        t1 = time.perf_counter()
        np.asarray(model.predict(obs, deterministic=False)[0])
        acts.append(time.perf_counter() - t1)
        updates.append(t1 - t0)
    out.update(update_ms=1e3 * statistics.median(updates), act_ms=1e3 * statistics.median(acts),
               jax=jax.__version__)
    env.close()
    print("SBX_RESULT " + json.dumps(out), flush=True)


def sbx_run(steps: int, args: argparse.Namespace, threads: int, timings: list) -> tuple:
    """SBX in a child process; ``threads`` None: JAX's default thread pool (one thread per core)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if threads is not None:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                            f"intra_op_parallelism_threads={threads}").strip()
    cmd = [sys.executable, os.path.abspath(__file__), "--sbx-child", str(steps), "--env", args.env, "--hidden",
           str(args.hidden), "--batch", str(args.batch), "--warmup", str(args.warmup), "--sbx-timed",
           str(args.sbx_timed)] + (["--sbx-pin", str(threads)] if threads is not None else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("SBX_RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"SBX child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(lines[-1].split(" ", 1)[1])
    timings.append(out)
    return out["wall_s"], out["cpu_s"]


def compile_switch(args: argparse.Namespace) -> int:
    """The env step at which ding_lite's default compiles its update (on a CPU): after the random warm-up, at
    update AUTO_COMPILE_AFTER."""
    from ding_lite.policy.sac.compiled_update import AUTO_COMPILE_AFTER
    return args.warmup + AUTO_COMPILE_AFTER


def rate(run, n1: int, n2: int) -> dict:
    """Env steps/s from a run of ``n1`` and one of ``n2`` env steps: (n2 - n1) / (t2 - t1), which cancels what
    every run pays once (building the envs and the model, the warm-up). None where the longer run took no longer
    (the difference is noise: a wider ``--steps`` gap measures it), with a line that says so."""
    (t1, c1), (t2, c2) = run(n1), run(n2)
    out = {"short_steps": n1, "short_s": round(t1, 3), "long_steps": n2, "long_s": round(t2, 3)}
    for key, dt in (("env_steps_per_s", t2 - t1), ("env_steps_per_cpu_s", c2 - c1)):
        out[key] = round((n2 - n1) / dt, 1) if dt > 0 else None
    if out["env_steps_per_s"] is None or out["env_steps_per_cpu_s"] is None:
        print(f"sac_speed: the run of {n2} env steps took no longer than the run of {n1} ({t2:.3f} s against "
              f"{t1:.3f} s): no rate from this pair; widen --steps", flush=True)
    return out


def ratio(a, b):
    """a / b to two decimals, None where either rate is missing."""
    return round(a / b, 2) if a is not None and b is not None else None


def fmt(value, spec: str) -> str:
    """``value`` in ``spec`` (e.g. '11.1f'), or 'n/a' right-aligned in its width."""
    return format(value, spec) if value is not None else format("n/a", ">" + spec.rstrip("f").split(".")[0])


def median_rate(rates: list) -> dict:
    """The repeat with the median env steps/s (its own figures), and every repeat's rate."""
    ordered = sorted(rates, key=lambda r: -1.0 if r["env_steps_per_s"] is None else r["env_steps_per_s"])
    return dict(ordered[(len(ordered) - 1) // 2], repeats=[r["env_steps_per_s"] for r in rates])


def compare(args: argparse.Namespace, ding_threads, sb3_threads: int, precision: str = "highest",
            sbx_threads=None) -> dict:
    """The libraries' rates (and ding_lite's ratios to them) with the given thread settings: ``--repeats`` rounds,
    each running every library's pair of runs in turn (so that the machine's slow and fast spells hit all of them),
    the median round per library."""
    n1, n2 = args.steps
    variants = {"ding_lite": (), "ding_lite_autograd": ("policy.learn.manual_update=False",),
                "ding_lite_compiled": ("policy.learn.compile_update=True",)}
    ding = [v for v, on in (("ding_lite", True), ("ding_lite_autograd", args.autograd),
                            ("ding_lite_compiled", args.compiled)) if on]
    rates: dict = {name: [] for name in ding + ["stable_baselines3"] + (["sbx"] if args.sbx else [])}
    timings: list = []
    compile_warmup_s = None
    with tempfile.TemporaryDirectory() as workdir:
        counter = iter(range(1000))

        def ding_lite_pair(name):
            return rate(lambda n: ding_lite_run(n, args, workdir, f"bench{next(counter)}", ding_threads, precision,
                                                variants[name]), n1, n2)
        if args.compiled or n1 > compile_switch(args):  # inductor's on-disk cache filled first (see the doc)
            warm = ding_lite_run(args.warmup + args.batch + 50, args, workdir, "compile_warmup", ding_threads,
                                 precision, variants["ding_lite_compiled"])
            compile_warmup_s = round(warm[0], 1)
        # One short untimed run of ding_lite and of SB3 first: what the process pays once (imports and lazy set-ups
        # on first use) would otherwise fall in the first timed short run alone, shrink the difference the rate is
        # taken from and so inflate that library's first rate. (SBX runs in fresh processes, each paying it alike.)
        first_updates = args.warmup + args.batch + 20  # a few updates: the optimizer's first step makes its state
        ding_lite_run(first_updates, args, workdir, "process_warmup", ding_threads, precision)
        sb3_run(first_updates, args, sb3_threads)
        for _ in range(args.repeats):
            for name in ding:
                rates[name].append(ding_lite_pair(name))
            resolved = torch.get_num_threads()  # what ding_lite's 'auto' resolved to (SB3 sets its own next)
            torch.set_float32_matmul_precision("highest")  # SB3 in torch's default precision
            rates["stable_baselines3"].append(rate(lambda n: sb3_run(n, args, sb3_threads), n1, n2))
            if args.sbx:
                rates["sbx"].append(rate(lambda n: sbx_run(n, args, sbx_threads, timings), n1, n2))
    row = {name: median_rate(r) for name, r in rates.items()}
    row["ding_lite"].update(threads=resolved, matmul_precision=precision, compiles_at_env_step=compile_switch(args)
                            if n1 > compile_switch(args) else None, compile_warmup_run_s=compile_warmup_s)
    row["stable_baselines3"]["threads"] = sb3_threads
    others = ["stable_baselines3"] + (["sbx"] if args.sbx else [])
    if args.sbx:
        row["sbx"].update(threads=sbx_threads or os.cpu_count(), jax=timings[-1]["jax"],
                          update_ms=round(statistics.median(t["update_ms"] for t in timings), 3),
                          act_ms=round(statistics.median(t["act_ms"] for t in timings), 3))
    for other, short in zip(others, ("sb3", "sbx")):
        row[f"ratio_ding_lite_over_{short}"] = ratio(row["ding_lite"]["env_steps_per_s"],
                                                     row[other]["env_steps_per_s"])
        row[f"cpu_ratio_ding_lite_over_{short}"] = ratio(row["ding_lite"]["env_steps_per_cpu_s"],
                                                         row[other]["env_steps_per_cpu_s"])
    print(row, flush=True)
    return row


# row -> (ding_lite's torch_threads, SB3's threads, ding_lite's matmul_precision, SBX's threads: None = JAX's default)
ROWS = {"defaults": lambda args: ("auto", TORCH_DEFAULT_THREADS, "highest", None),
        "equal_threads": lambda args: (args.threads, args.threads, "highest", args.threads),
        "medium_matmuls": lambda args: ("auto", TORCH_DEFAULT_THREADS, "medium", None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="Pendulum-v1", choices=sorted(CONFIGS))
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--steps", type=int, nargs=2, default=[6000, 9000])
    parser.add_argument("--threads", type=int, default=1, help="the thread count of the 'equal threads' row")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--no-sbx", dest="sbx", action="store_false", help="leave SBX out")
    parser.add_argument("--autograd", action="store_true",
                        help="also ding_lite with autograd's update (policy.learn.manual_update=False)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of every library's pair of runs, interleaved; the median round is reported")
    parser.add_argument("--compiled", action="store_true",
                        help="also ding_lite with its update compiled (policy.learn.compile_update=True)")
    parser.add_argument("--sbx-timed", type=int, default=200, help="SBX updates timed on their own after each run")
    parser.add_argument("--sbx-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sbx-pin", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    if args.sbx_child is not None:
        sbx_child(args.sbx_child, args)
        return
    if (args.steps[0] > compile_switch(args)) != (args.steps[1] > compile_switch(args)):
        parser.error(f"--steps {args.steps[0]} {args.steps[1]}: ding_lite's default compiles its update at env step "
                     f"{compile_switch(args)}; put both runs before it or both after it, or the rate counts the "
                     f"compilation")
    if args.output is None:
        name = "sac_speed" + ("" if args.env == "Pendulum-v1" else "_" + args.env.split("-")[0].lower())
        name += "" if args.hidden == 64 else f"_{args.hidden}"
        args.output = os.path.join(ROOT, "benchmarks", "results", f"{name}.json")
    rows = {}
    for row in args.rows:
        ding_threads, sb3_threads, precision, sbx_threads = ROWS[row](args)
        rows[row] = compare(args, ding_threads, sb3_threads, precision, sbx_threads)
    import stable_baselines3
    out = {"settings": vars(args), "rows": rows, "loadavg_1min_after": os.getloadavg()[0],
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                       "torch_default_threads": TORCH_DEFAULT_THREADS,
                       "stable_baselines3": stable_baselines3.__version__,
                       "sbx": _version("sbx-rl") if args.sbx else None}, "date": time.strftime("%Y-%m-%d")}
    print(f"\n{args.env}, SAC, 1 update per env step, [{args.hidden}, {args.hidden}] nets, batch {args.batch}; "
          f"env steps/s (threads):")
    print(f"{'':16}{'ding_lite':>16}{'SB3':>16}{'SBX':>16}{'/SB3 (wall)':>13}{'/SB3 (CPU)':>12}{'/SBX (wall)':>13}"
          f"{'/SBX (CPU)':>12}")
    for name, row in rows.items():
        d, s, x = row["ding_lite"], row["stable_baselines3"], row.get("sbx")
        sbx_cols = (f"{fmt(x['env_steps_per_s'], '11.1f')} ({x['threads']})" if x else f"{'-':>16}")
        sbx_ratios = (f"{fmt(row['ratio_ding_lite_over_sbx'], '12.2f')}x"
                      f"{fmt(row['cpu_ratio_ding_lite_over_sbx'], '11.2f')}x" if x else "")
        print(f"  {name:14}{fmt(d['env_steps_per_s'], '11.1f')} ({d['threads']})"
              f"{fmt(s['env_steps_per_s'], '11.1f')} ({s['threads']}){sbx_cols}"
              f"{fmt(row['ratio_ding_lite_over_sb3'], '12.2f')}x{fmt(row['cpu_ratio_ding_lite_over_sb3'], '11.2f')}x"
              f"{sbx_ratios}")
    for name, row in rows.items():
        for variant, what in (("ding_lite_autograd", "autograd's update"), ("ding_lite_compiled", "compile_update")):
            if variant in row:
                print(f"  {name}: ding_lite with {what} {fmt(row[variant]['env_steps_per_s'], '.1f')}")
    if any("sbx" in row for row in rows.values()):
        print("  SBX on its own, ms: " + ", ".join(f"{name}: update {row['sbx']['update_ms']}, act "
                                                    f"{row['sbx']['act_ms']}" for name, row in rows.items()))
    print(f"  (load average {os.getloadavg()[0]:.2f})")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
