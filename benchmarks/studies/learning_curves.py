"""The learning curves shown in docs/: the shipped configs over seeds 0-2, drawn by `ding_lite plot` and summarised by
`ding_lite summary`, exactly as a user would (one `ding_lite -s 0 -s 1 -s 2` run per config).

Each config trains for a fixed env-step budget with its stop_value off, so every curve shows the whole budget.
Writes docs/images/<name>.png and benchmarks/studies/results/learning_curves/<name>.txt/.json (the summary); the runs
themselves go to runs/learning_curves/ (ignored by git).

    python benchmarks/studies/learning_curves.py [--only cartpole_impala] [--seeds 0 1 2]

halfcheetah_sac and halfcheetah_sac_per (dizoo_configs/halfcheetah_sac.py with uniform and prioritised replay) measure
what prioritised replay does there; run them as two processes side by side (``--only halfcheetah_sac`` and ``--only
halfcheetah_sac_per``); afterwards ``ding_lite plot runs/learning_curves/halfcheetah_sac
runs/learning_curves/halfcheetah_sac_per -o docs/images/halfcheetah_sac_per_compare.png`` draws them together.

pendulum_sac_256_manual / _compiled / _autograd and halfcheetah_sac_manual / _compiled / _autograd measure SAC's
hand-written update, eager and compiled, against autograd's (docs/sac.md#speed); run them two processes side by side.

hopper_sac and hopper_sac_normalize_obs (dizoo_configs/hopper_sac.py without and with ``env.normalize_obs``; needs
``pip install "gymnasium[mujoco]"``) measure what observation normalisation does (docs/custom_env.md); afterwards
``ding_lite plot runs/learning_curves/hopper_sac runs/learning_curves/hopper_sac_normalize_obs -o
docs/images/hopper_sac_normalize_obs_compare.png`` draws them together.
"""
import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
# dizoo_configs/hopper_sac.py (gymnasium's mujoco extra) with and without env.normalize_obs.
# name -> (config, env-step budget, summary threshold, extra CLI arguments)
# SAC's update, three ways (below): the hand-written gradients eager, the same compiled, and autograd's.
UPDATES = {"manual": ["--set", "policy.learn.manual_update=True", "--set", "policy.learn.compile_update=False"],
           "compiled": ["--set", "policy.learn.manual_update=True", "--set", "policy.learn.compile_update=True"],
           "autograd": ["--set", "policy.learn.manual_update=False"]}
# The MuJoCo SAC configs as they were when these curves were recorded: 2 updates per 4 env steps with 4 envs (half
# the standard ratio the configs now ship, issue 45), 5 evaluation episodes every 2,500 updates; Hopper with a 5k-step
# warm-up and normalised observations.
HALF_RATIO = [arg for item in (
    "env.collector_env_num=4", "policy.collect.n_sample=4", "policy.learn.update_per_collect=2",
    "env.evaluator_env_num=5", "env.n_evaluator_episode=5", "policy.eval.evaluator.eval_freq=2500")
    for arg in ("--set", item)]
HOPPER_HALF_RATIO = [*HALF_RATIO, "--set", "policy.random_collect_size=5000"]
CURVES = {
    "cartpole_impala": ("cartpole_impala.py", 30_000, 475, []),
    "cartpole_acer": ("cartpole_acer.py", 30_000, 475, []),
    "pendulum_sac": ("pendulum_sac.py", 6_000, -200, []),
    "hopper_sac": ("hopper_sac.py", 60_000, 1000, [*HOPPER_HALF_RATIO, "--set", "env.normalize_obs=False"]),
    "hopper_sac_normalize_obs": ("hopper_sac.py", 60_000, 1000,
                                 [*HOPPER_HALF_RATIO, "--set", "env.normalize_obs=True"]),
    # Prioritised replay against uniform on HalfCheetah (docs/sac.md#prioritised-replay); one torch thread each, so
    # that the two can run side by side on two cores.
    "halfcheetah_sac": ("halfcheetah_sac.py", 60_000, 3000, [*HALF_RATIO, "--set", "torch_threads=1"]),
    "halfcheetah_sac_per": ("halfcheetah_sac.py", 60_000, 3000, [*HALF_RATIO, "--set", "torch_threads=1", "--set",
                                                                 "policy.priority=True", "--set",
                                                                 "policy.priority_IS_weight=True"]),
    # SAC's hand-written update (policy.learn.manual_update, the default) eager, compiled from the first update
    # (policy.learn.compile_update=True) and autograd's, one torch thread each so that two runs go side by side
    # (docs/sac.md#speed): Pendulum at [256, 256] and HalfCheetah.
    **{f"{name}_{kind}": (config, budget, threshold, [*extra, "--set", "torch_threads=1", *UPDATES[kind]])
       for name, config, budget, threshold, extra in [
           ("pendulum_sac_256", "pendulum_sac.py", 6_000, -200,
            ["--set", "policy.model.actor_head_hidden_size=256", "--set", "policy.model.critic_head_hidden_size=256"]),
           ("halfcheetah_sac", "halfcheetah_sac.py", 60_000, 3000, HALF_RATIO)]
       for kind in UPDATES},
}


def ding_lite(*args: str, cwd: str, capture: bool = False) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "ding_lite.cli", *args], cwd=cwd, env=env, check=True,
                         stdout=subprocess.PIPE if capture else None, text=True)
    return out.stdout if capture else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(CURVES), choices=list(CURVES))
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    work = os.path.join(ROOT, "runs", "learning_curves")
    images = os.path.join(ROOT, "docs", "images")
    results = os.path.join(ROOT, "benchmarks", "studies", "results", "learning_curves")
    os.makedirs(images, exist_ok=True)
    os.makedirs(results, exist_ok=True)
    for name in args.only:
        config, budget, threshold, extra = CURVES[name]
        folder = os.path.join(work, name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        seeds = [a for s in args.seeds for a in ("-s", str(s))]
        ding_lite("-c", os.path.join(ROOT, "dizoo_configs", config), *seeds, "--env-step", str(budget), "-q",
                  "--exp-name", name,
                  "--set", "env.stop_value=None", *extra, cwd=folder)
        ding_lite("plot", ".", "-o", os.path.join(images, f"{name}.png"), cwd=folder)
        table = ding_lite("summary", ".", "--threshold", str(threshold), cwd=folder, capture=True)
        data = ding_lite("summary", ".", "--threshold", str(threshold), "--json", cwd=folder, capture=True)
        with open(os.path.join(results, f"{name}.txt"), "w") as f:
            f.write(table)
        with open(os.path.join(results, f"{name}.json"), "w") as f:
            f.write(data)
        print(f"{name} ({config}, {budget:,} env steps, seeds {args.seeds}):\n{table}")


if __name__ == "__main__":
    main()
