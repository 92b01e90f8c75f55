"""Training env steps/s of pong_ppo.py and pong_impala.py in float32 and in bfloat16 on this machine (issue 75).

Each (config, precision) is one real training run of ``--env-step`` env steps with envpool (both cores unless
``--threads``), in a temporary directory; its rate is the steady one between the first and the last progress line
of its train.log (one every 2-3k env steps), which leaves out start-up and the final evaluation. bfloat16 is both autocast
keys: ``policy.learn.autocast`` (the learner) and ``policy.collect.autocast`` (the acting passes). The results file
names the CPU and its bfloat16 flags: on a CPU without AMX or AVX-512 BF16 torch emulates bfloat16, and the
bfloat16 rows are expected slower, not faster.

    python benchmarks/autocast_speed.py                     # 30k env steps each (about 5 minutes on 2 cores)
    python benchmarks/autocast_speed.py --env-step 10000    # a quick look
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import write_results  # noqa: E402
from parallel_scaling import progress_points, steady_rates  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# config: train iterations between progress lines (PPO's iteration is a collection of 1,024 env steps and its 16
# minibatch updates; IMPALA's one update, 320 env steps at the shipped 2 per 32 unrolls of 20)
CONFIGS = {"pong_ppo": 2, "pong_impala": 8}
PRECISIONS = {"float32": [], "bfloat16": ["--set", "policy.learn.autocast=bfloat16",
                                          "--set", "policy.collect.autocast=bfloat16"]}


def run(config: str, precision: str, env_step: int, threads: int, where: str) -> dict:
    cmd = [sys.executable, "-m", "ding_lite.cli", "-m", "serial", "-c",
           os.path.join(REPO, "dizoo_configs", f"{config}.py"), "-s", "0", "-q", "--exp-name", f"{config}_{precision}",
           "--env-step", str(env_step), "--set", "env.manager.type=envpool",
           "--set", f"env.manager.num_threads={threads}", "--set", f"torch_threads={threads}",
           "--set", "env.stop_value=None", "--set", "policy.eval.evaluator.eval_freq=1000000",
           "--set", f"policy.learn.learner.hook.log_show_after_iter={CONFIGS[config]}",
           *PRECISIONS[precision]]
    subprocess.run(cmd, cwd=where, check=True)
    run_dir = os.path.join(where, f"{config}_{precision}_seed0")
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    steady = steady_rates(progress_points(os.path.join(run_dir, "log", "train.log")))
    if steady["env_step_per_s"] is None:
        raise SystemExit(f"{config} {precision}: fewer than 2 progress lines in {run_dir}/log/train.log; "
                         "raise --env-step")
    return {"config": config, "precision": precision, "env_step": result["env_step"], **steady}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-step", type=int, default=30_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=None, help="the results file (default benchmarks/results/autocast_speed.json)")
    args = parser.parse_args()
    from ding_lite.torch_utils.precision import CPU_BF16_FLAGS, cpu_flags
    model, flags = cpu_flags()
    rows = []
    with tempfile.TemporaryDirectory() as where:
        for config in CONFIGS:
            for precision in PRECISIONS:
                rows.append(run(config, precision, args.env_step, args.threads, where))
                print(f"{config:12s} {precision:9s} {rows[-1]['env_step_per_s']:8,.0f} env steps/s", flush=True)
    for config in CONFIGS:
        f32, b16 = (next(r for r in rows if r["config"] == config and r["precision"] == p) for p in PRECISIONS)
        print(f"{config}: bfloat16 / float32 = {b16['env_step_per_s'] / f32['env_step_per_s']:.2f}x")
    results_dir, name = (os.path.split(os.path.splitext(os.path.abspath(args.output))[0]) if args.output
                         else (None, "autocast_speed"))
    write_results(name, **({"results_dir": results_dir} if results_dir else {}), rows=rows, env_step=args.env_step, threads=args.threads, cpu=model,
                  bf16_flags=sorted(set(CPU_BF16_FLAGS) & flags))


if __name__ == "__main__":
    main()
