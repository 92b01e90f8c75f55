"""Greedy against sampled evaluation of trained runs: each run's final checkpoint plays the same episodes twice, with
the mean action (ding_lite's evaluator) and with actions sampled from the policy (Tianshou's MuJoCo benchmarks
evaluate that way), through ``ding_lite.load`` and ``predict``.

    python benchmarks/studies/sampled_evaluation.py RUN_DIR [RUN_DIR ...] --env HalfCheetah-v5 --episodes 10

Writes benchmarks/studies/results/sampled_evaluation.json (the returns per run, the machine, the date).
"""
import argparse
import json
import os
import sys
from typing import Dict, List

import gymnasium as gym
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ding_lite  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)


def episode_returns(agent, env_id: str, episodes: int, deterministic: bool) -> List[float]:
    """``episodes`` returns of ``agent`` on ``env_id``, the env seeded 1000, 1001, ... and torch at 0."""
    torch.manual_seed(0)
    env = gym.make(env_id)
    returns = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=1000 + episode)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = env.step(agent.predict(obs, deterministic=deterministic))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories (their ckpt/ckpt_last.pth.tar is played)")
    parser.add_argument("--env", required=True, help="gymnasium env id, e.g. HalfCheetah-v5")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "sampled_evaluation.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows: Dict[str, Dict[str, float]] = {}
    for run in args.runs:
        agent = ding_lite.load(os.path.join(run, "ckpt", "ckpt_last.pth.tar"))
        rows[os.path.basename(os.path.normpath(run))] = {
            mode: round(float(np.mean(episode_returns(agent, args.env, args.episodes, mode == "greedy"))), 1)
            for mode in ("greedy", "sampled")}
        print(os.path.basename(os.path.normpath(run)), rows[os.path.basename(os.path.normpath(run))], flush=True)
    means = {mode: round(float(np.mean([r[mode] for r in rows.values()])), 1) for mode in ("greedy", "sampled")}
    print("mean", means)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"env": args.env, "episodes": args.episodes, "runs": rows, "mean": means,
                   "machine": machine_info()}, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
