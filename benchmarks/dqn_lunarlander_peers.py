"""DQN on LunarLander-v3 side by side: ding_lite and Stable-Baselines3, env steps and wall time to the first
evaluation mean >= 200 (the env's "solved").

dqn_cartpole_peers.py's protocol on LunarLander: gymnasium LunarLander-v3, seed s, rl-baselines3-zoo's DQN
hyperparameters for LunarLander (hyperparams/dqn.yml; dizoo_configs/lunarlander_dqn.py: one env, Adam 6.3e-4,
batches of 128 from a 50k buffer, no random warm-up, one update per env step in groups of 4, the target network
copied every 250 env steps, epsilon 1 -> 0.1 over the first 12,000 env steps, two hidden layers of 256, the Huber
loss, gradient norm 10, no double Q-learning), 10 greedy evaluation episodes at env step 0 and then every
--eval-every env steps, a stop at the first evaluation mean >= 200 or at rl-zoo's budget of 100k env steps. SB3's
epsilon schedule is a fraction (0.12) of its total timesteps, so both get that budget. Needs the extras `bench`
(stable-baselines3) and `box2d`. Writes benchmarks/results/dqn_lunarlander_peers.json.

    python benchmarks/dqn_lunarlander_peers.py [--seeds 0 1 2] [--contestants ding_lite sb3] [--quick] [--output FILE]
"""
import argparse
import os
import sys

import gymnasium as gym
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dqn_cartpole_peers import CONTESTANTS, run_sb3  # noqa: E402
from machine import write_results  # noqa: E402  (benchmarks/machine.py)
from ppo_cartpole_peers import ROOT, _commit, print_table, run_ding_lite, summarise  # noqa: E402

ENV_ID = "LunarLander-v3"
TARGET = 200.0
EPISODES = 10  # per evaluation, both contestants (the config's env.n_evaluator_episode)
CONFIG = os.path.join(ROOT, "dizoo_configs", "lunarlander_dqn.py")
# rl-baselines3-zoo's DQN hyperparameters for LunarLander, as SB3 takes them (and lunarlander_dqn.py holds them).
HP = dict(learning_rate=6.3e-4, batch_size=128, buffer_size=50_000, learning_starts=0, gamma=0.99,
          target_update_interval=250, train_freq=4, gradient_steps=-1, exploration_fraction=0.12,
          exploration_final_eps=0.1, net_arch=[256, 256])


def run_ding(seed: int, budget: int, eval_every: int) -> dict:
    return run_ding_lite(seed, budget, eval_every, config=CONFIG, iters_per_env_step=1.0, target=TARGET)


def run_sb3_lunar(seed: int, budget: int, eval_every: int) -> dict:
    return run_sb3(seed, budget, eval_every, hp=HP, env_id=ENV_ID, target=TARGET, episodes=EPISODES)


RUNNERS = {"ding_lite": run_ding, "sb3": run_sb3_lunar}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=100_000, help="env steps per run at most (rl-zoo's 100k)")
    parser.add_argument("--eval-every", type=int, default=10_000, help="env steps between evaluations")
    parser.add_argument("--contestants", nargs="+", default=list(CONTESTANTS), choices=CONTESTANTS)
    parser.add_argument("--quick", action="store_true", help="seed 0 at a 1,000 env step budget: checks that it runs")
    parser.add_argument("--output", default=None,
                        help="the results JSON (default benchmarks/results/dqn_lunarlander_peers.json)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.budget, args.eval_every = [0], 1000, 500
    runs = []
    for seed in args.seeds:  # interleaved: every contestant on seed 0, then seed 1, ...
        for name in args.contestants:
            torch.set_num_threads(1)
            row = {"contestant": name, "seed": seed, **RUNNERS[name](seed, args.budget, args.eval_every)}
            row["wall_s"] = round(row["wall_s"], 3)
            runs.append(row)
            print(row, flush=True)
    summary = summarise(runs)
    print_table(summary, "DQN", ENV_ID, TARGET)
    import stable_baselines3
    path = args.output or os.path.join(ROOT, "benchmarks", "results", "dqn_lunarlander_peers.json")
    write_results(os.path.basename(path)[:-len(".json")], os.path.dirname(os.path.abspath(path)),
                  settings={"seeds": args.seeds, "budget": args.budget, "eval_every": args.eval_every,
                            "target": TARGET, "episodes": EPISODES, "config": os.path.relpath(CONFIG, ROOT),
                            "hyperparameters": HP, "torch_threads": 1},
                  versions={"torch": torch.__version__, "gymnasium": gym.__version__,
                            "stable_baselines3": stable_baselines3.__version__, "ding_lite_commit": _commit()},
                  summary=summary, runs=runs)


if __name__ == "__main__":
    main()
