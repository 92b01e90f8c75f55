"""DQN on CartPole-v1 side by side: ding_lite and Stable-Baselines3, env steps and wall time to the first evaluation
mean >= 475.

The same protocol for both: gymnasium CartPole-v1, seed s, rl-baselines3-zoo's DQN hyperparameters for CartPole-v1
(hyperparams/dqn.yml; dizoo_configs/cartpole_dqn.py: one env, Adam 2.3e-3, batches of 64 from a 100k buffer, 1,000
random steps first, 128 updates every 256 env steps, the target network refreshed between update phases, epsilon
1 -> 0.04 over the first 8,000 env steps, two hidden layers of 256, the Huber loss, gradient norm 10, no double
Q-learning), an evaluation of 5 greedy episodes at env step 0 and then every --eval-every env steps (after the
update phase that ends there), a stop at the first evaluation mean >= 475 or at --budget env steps. SB3's epsilon
schedule is a fraction (0.16) of its total timesteps, so the budget is rl-zoo's 50k for both to explore alike.
ding_lite runs through ``serial_pipeline`` (torch_threads=1) and its own evaluator; SB3 is evaluated by
ppo_cartpole_peers.py's shared ``evaluate``. Wall time, the interleaving of seeds and the one torch thread are as in
ppo_cartpole_peers.py. Needs the extra `bench` (stable-baselines3). Writes benchmarks/results/dqn_cartpole_peers.json.

    python benchmarks/dqn_cartpole_peers.py [--seeds 0 1 2] [--contestants ding_lite sb3] [--quick] [--output FILE]
"""
import argparse
import os
import sys
import time

import gymnasium as gym
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import write_results  # noqa: E402  (benchmarks/machine.py)
from ppo_cartpole_peers import ENV_ID, ROOT, TARGET, _commit, evaluate, print_table, run_ding_lite, summarise  # noqa: E402,F401

CONFIG = os.path.join(ROOT, "dizoo_configs", "cartpole_dqn.py")
# rl-baselines3-zoo's DQN hyperparameters for CartPole-v1, as SB3 takes them (and cartpole_dqn.py holds them).
HP = dict(learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000, gamma=0.99,
          target_update_interval=10, train_freq=256, gradient_steps=128, exploration_fraction=0.16,
          exploration_final_eps=0.04, net_arch=[256, 256])
UPDATES_PER_ENV_STEP = HP["gradient_steps"] / HP["train_freq"]  # ding_lite's train iterations are updates
CONTESTANTS = ("ding_lite", "sb3")


def run_ding(seed: int, budget: int, eval_every: int) -> dict:
    return run_ding_lite(seed, budget, eval_every, config=CONFIG, iters_per_env_step=UPDATES_PER_ENV_STEP)


def run_sb3(seed: int, budget: int, eval_every: int, hp: dict = HP, env_id: str = ENV_ID, target: float = TARGET,
            episodes: int = 5) -> dict:
    """SB3's DQN with rl-zoo's hyperparameters ``hp``; the shared evaluation (``episodes`` greedy episodes) at the
    start of each rollout (after the update phase on the previous one) that reaches a multiple of ``eval_every`` env
    steps."""
    from stable_baselines3 import DQN
    from stable_baselines3.common.callbacks import BaseCallback

    class EvalStop(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next_eval, self.hit, self.evals, self.last = 0, None, 0, None

        def _on_rollout_start(self) -> None:
            if self.hit is None and self.num_timesteps >= self.next_eval:
                self.last = evaluate(lambda o: int(self.model.predict(o, deterministic=True)[0]), seed, episodes,
                                     env_id)
                self.evals += 1
                self.next_eval += eval_every
                if self.last >= target:
                    self.hit = self.num_timesteps

        def _on_step(self) -> bool:
            return self.hit is None

    start = time.perf_counter()
    kwargs = {k: v for k, v in hp.items() if k != "net_arch"}
    model = DQN("MlpPolicy", gym.make(env_id), policy_kwargs=dict(net_arch=hp["net_arch"]), seed=seed, device="cpu",
                verbose=0, **kwargs)
    stop = EvalStop()
    model.learn(total_timesteps=budget, callback=stop)
    wall = time.perf_counter() - start
    return {"reached": stop.hit is not None, "env_steps": stop.hit if stop.hit is not None else model.num_timesteps,
            "wall_s": wall, "evaluations": stop.evals, "last_eval": stop.last}


RUNNERS = {"ding_lite": run_ding, "sb3": run_sb3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--budget", type=int, default=50_000, help="env steps per run at most (rl-zoo's 50k)")
    parser.add_argument("--eval-every", type=int, default=2560,
                        help="env steps between evaluations (ding_lite's config: every 10 collections of 256)")
    parser.add_argument("--contestants", nargs="+", default=list(CONTESTANTS), choices=CONTESTANTS)
    parser.add_argument("--quick", action="store_true", help="seed 0 at a 1,536 env step budget: checks that it runs")
    parser.add_argument("--output", default=None,
                        help="the results JSON (default benchmarks/results/dqn_cartpole_peers.json)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.budget, args.eval_every = [0], 1536, 512
    torch.set_num_threads(1)
    runs = []
    for seed in args.seeds:  # interleaved: every contestant on seed 0, then seed 1, ...
        for name in args.contestants:
            torch.set_num_threads(1)
            row = {"contestant": name, "seed": seed, **RUNNERS[name](seed, args.budget, args.eval_every)}
            row["wall_s"] = round(row["wall_s"], 3)
            runs.append(row)
            print(row, flush=True)
    summary = summarise(runs)
    print_table(summary, "DQN")
    import stable_baselines3
    path = args.output or os.path.join(ROOT, "benchmarks", "results", "dqn_cartpole_peers.json")
    write_results(os.path.basename(path)[:-len(".json")], os.path.dirname(os.path.abspath(path)),
                  settings={"seeds": args.seeds, "budget": args.budget, "eval_every": args.eval_every,
                            "target": TARGET, "config": os.path.relpath(CONFIG, ROOT), "hyperparameters": HP,
                            "torch_threads": 1},
                  versions={"torch": torch.__version__, "gymnasium": gym.__version__,
                            "stable_baselines3": stable_baselines3.__version__, "ding_lite_commit": _commit()},
                  summary=summary, runs=runs)


if __name__ == "__main__":
    main()
