"""What does an Ant run's policy earn its return with? Ant's reward per step is a healthy bonus (1 while the torso's
height is in range), the forward velocity (x, m/s), minus a control cost and (v5) a contact cost; an episode ends when
the torso leaves the healthy height range, 0.2-1.0 (terminated), or at 1,000 steps. A return of 1,400 can be an ant
that stands for 1,000 steps and creeps forward, or one that runs and leaves the range early: the parts tell which.

Each checkpoint a run kept (``ckpt/iteration_<N>.pth.tar``, every ``--every`` updates) plays deterministic episodes
through ``ding_lite.load`` and ``predict`` in the run's own env (its saved config: env id and kwargs), and the reward's
parts are summed from gymnasium's ``info`` (``reward_survive``, ``reward_forward``, ``reward_ctrl``,
``reward_contact``).

    python benchmarks/studies/ant_gait.py ~/ding_lite_runs/mujoco_sac/ant_seed{2,3,4} --out FILE

Writes ``--out`` (default benchmarks/studies/results/ant_gait.json): per run and checkpoint (env steps) the mean over
the episodes of the return, the length, each part, the forward speed (m/s: the distance moved in x over the
episode's simulated time) and the share of its steps spent on its back (``on_back``: the torso's up axis pointing
down); per episode how it ended ('time limit'; terminated with the torso 'too high' or 'too low'
for the healthy range), the torso's final height and which way it faced (``final_up``: 1 upright, -1 on its back).
"""
import argparse
import glob
import json
import os
import sys
from typing import Any, Dict, List

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ding_lite  # noqa: E402
from ding_lite.envs.gym_env import env_factory  # noqa: E402
from halfcheetah_flip import train_iter  # noqa: E402  (benchmarks/studies/halfcheetah_flip.py)
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

PARTS = ("reward_survive", "reward_forward", "reward_ctrl", "reward_contact")


def up_z(qpos: np.ndarray) -> float:
    """Which way the torso faces: the world z of its own up axis, from its orientation quaternion ``qpos[3:7]``
    (w, x, y, z): 1 upright, 0 on its side, -1 on its back."""
    qx, qy = float(qpos[4]), float(qpos[5])
    return 1.0 - 2.0 * (qx * qx + qy * qy)


def play(agent, make_env, seed: int) -> Dict[str, float]:
    """One deterministic episode: its return, length, each reward part summed, the forward speed, how it ended, the
    torso's final height and facing, and the share of its steps on its back."""
    env = make_env()
    obs, info = env.reset(seed=seed)
    x0 = float(env.unwrapped.data.qpos[0])
    total, length, parts, terminated, truncated = 0.0, 0, dict.fromkeys(PARTS, 0.0), False, False
    on_back = 0
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(agent.predict(obs, deterministic=True))
        total, length = total + float(reward), length + 1
        on_back += up_z(env.unwrapped.data.qpos) < 0.0
        for part in PARTS:
            parts[part] += float(info.get(part, 0.0))
    qpos = env.unwrapped.data.qpos
    speed = (float(qpos[0]) - x0) / (length * env.unwrapped.dt)
    height, final_up = float(qpos[2]), up_z(qpos)
    # how the episode ended: its torso's height against the healthy range ('?': a non-finite state ended it)
    low, high = env.unwrapped._healthy_z_range
    ended = "time limit" if not terminated else ("too high" if height > high else "too low" if height < low else "?")
    env.close()
    return {"return": total, "length": length, **parts, "speed": speed, "ended": ended, "final_height": height,
            "final_up": final_up, "on_back": on_back / length}


def checkpoint_rows(run: str, every: int, episodes: int) -> List[Dict[str, Any]]:
    """Per checkpoint of ``run`` whose update count is a multiple of ``every``, in update order: the mean parts."""
    ckpts = sorted((train_iter(path), path) for path in glob.glob(os.path.join(run, "ckpt", "iteration_*.pth.tar")))
    ckpts = [(updates, path) for updates, path in ckpts if updates % every == 0]
    if not ckpts:
        raise SystemExit(f"no ckpt/iteration_<N>.pth.tar with N a multiple of {every} in {run}")
    rows: List[Dict[str, Any]] = []
    for updates, path in ckpts:
        agent = ding_lite.load(path)
        env_step = int(torch.load(path, map_location="cpu", weights_only=False)["counters"]["env_step"])
        make_env = env_factory(agent.config.env, "evaluator")
        played = [play(agent, make_env, 1000 + i) for i in range(episodes)]
        row: Dict[str, Any] = {"train_iter": updates, "env_step": env_step}
        for key in ("return", "length", *PARTS, "speed", "on_back"):
            row[key] = round(float(np.mean([e[key] for e in played])), 2 if key in ("speed", "on_back") else 1)
        row["ended"] = [e["ended"] for e in played]
        row["final_height"] = [round(e["final_height"], 2) for e in played]
        row["final_up"] = [round(e["final_up"], 2) for e in played]
        rows.append(row)
        print(os.path.basename(os.path.normpath(run)), json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="Ant run directories with ckpt/iteration_<N>.pth.tar files")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per checkpoint (env seeds 1000, 1001, ...)")
    parser.add_argument("--every", type=int, default=20000, help="play the checkpoints of every N updates")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "ant_gait.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    runs = [{"run": os.path.basename(os.path.normpath(run)),
             "checkpoints": checkpoint_rows(run, args.every, args.episodes)} for run in args.runs]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"episodes": args.episodes, "runs": runs,
                   "machine": machine_info(torch=torch.__version__, ding_lite=ding_lite.__version__)}, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
