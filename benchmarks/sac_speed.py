"""ding_lite's SAC vs Stable-Baselines3's SAC on Pendulum-v1: env steps per second at one gradient step per env step.

Same run, same machine, same torch threads, same networks (actor and critics [H, H], 2 critics), batch size,
learning rates and warm-up; no evaluation inside the timed span for either. The rate is measured as the difference
of two runs of different lengths, (N2 - N1) / (t2 - t1), so start-up, warm-up and the final checkpoint cancel out.
It is reported for wall time and for this process's CPU time (with one torch thread, the CPU-time rate is what an
idle machine would show; the wall-time rate drops when other processes compete for the cores).
Needs the extra `bench` (stable-baselines3). Writes benchmarks/results/sac_speed.json.

    python benchmarks/sac_speed.py [--hidden 64] [--batch 256] [--steps 1500 4500] [--threads 1]
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def ding_lite_run(steps: int, args: argparse.Namespace, workdir: str, tag: str) -> float:
    from ding_lite.config import read_config_file
    from ding_lite.entry import serial_pipeline
    cfg = read_config_file(os.path.join(ROOT, "dizoo_configs", "pendulum_sac.py"))
    overrides = [
        f"policy.model.actor_head_hidden_size={args.hidden}", f"policy.model.critic_head_hidden_size={args.hidden}",
        "policy.model.actor_head_layer_num=2", "policy.model.critic_head_layer_num=2", "policy.model.num_critics=2",
        f"policy.learn.batch_size={args.batch}", "policy.learn.update_per_collect=1", "policy.collect.n_sample=1",
        f"policy.random_collect_size={args.warmup}", "env.collector_env_num=1", "env.stop_value=None",
        "env.evaluator_env_num=1", "env.n_evaluator_episode=1", "policy.eval.evaluator.eval_freq=1000000000",
        "policy.learn.learner.hook.save_ckpt_after_iter=0", f"torch_threads={args.threads}",
    ]
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        serial_pipeline(cfg, seed=0, max_env_step=steps, overrides=overrides, exp_name=tag, quiet=True)
        return time.perf_counter() - start, time.process_time() - cpu
    finally:
        os.chdir(cwd)


def sb3_run(steps: int, args: argparse.Namespace) -> float:
    import gymnasium as gym
    from stable_baselines3 import SAC
    torch.set_num_threads(args.threads)
    env = gym.make("Pendulum-v1")
    start, cpu = time.perf_counter(), time.process_time()
    model = SAC("MlpPolicy", env, learning_rate=1e-3, buffer_size=100_000, learning_starts=args.warmup,
                batch_size=args.batch, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, seed=0, device="cpu",
                policy_kwargs=dict(net_arch=[args.hidden, args.hidden], n_critics=2), verbose=0)
    model.learn(total_timesteps=steps)
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    env.close()
    return elapsed


def rate(run, n1: int, n2: int) -> dict:
    (t1, c1), (t2, c2) = run(n1), run(n2)
    return {"short_steps": n1, "short_s": round(t1, 3), "long_steps": n2, "long_s": round(t2, 3),
            "env_steps_per_s": round((n2 - n1) / (t2 - t1), 1),
            "env_steps_per_cpu_s": round((n2 - n1) / (c2 - c1), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--steps", type=int, nargs=2, default=[1500, 4500])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    n1, n2 = args.steps
    torch.set_num_threads(args.threads)
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        counter = iter(range(100))
        results["ding_lite"] = rate(lambda n: ding_lite_run(n, args, workdir, f"bench{next(counter)}"), n1, n2)
        print("ding_lite", results["ding_lite"], flush=True)
    results["stable_baselines3"] = rate(lambda n: sb3_run(n, args), n1, n2)
    print("stable_baselines3", results["stable_baselines3"], flush=True)
    ratio = results["ding_lite"]["env_steps_per_s"] / results["stable_baselines3"]["env_steps_per_s"]
    cpu_ratio = results["ding_lite"]["env_steps_per_cpu_s"] / results["stable_baselines3"]["env_steps_per_cpu_s"]
    import stable_baselines3
    out = {"settings": vars(args), "results": results, "ratio_ding_lite_over_sb3": round(ratio, 2),
           "cpu_ratio_ding_lite_over_sb3": round(cpu_ratio, 2), "loadavg_1min_after": os.getloadavg()[0],
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
                       "stable_baselines3": stable_baselines3.__version__}, "date": time.strftime("%Y-%m-%d")}
    print(f"\nPendulum-v1, SAC, 1 update per env step, [{args.hidden}, {args.hidden}] nets, batch {args.batch}, "
          f"{args.threads} thread(s):")
    print(f"{'':19}{'per wall s':>12}{'per CPU s':>12}")
    for name, key in (("ding_lite", "ding_lite"), ("Stable-Baselines3", "stable_baselines3")):
        r = results[key]
        print(f"  {name:17}{r['env_steps_per_s']:12.1f}{r['env_steps_per_cpu_s']:12.1f}  env steps/s")
    print(f"  {'ratio':17}{ratio:11.2f}x{cpu_ratio:11.2f}x   (load average {os.getloadavg()[0]:.2f})")
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "results", "sac_speed.json"), "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
