"""Is a HalfCheetah run's collapse the cheetah flipping onto its back? Each checkpoint a run kept
(``ckpt/iteration_<N>.pth.tar``) plays deterministic episodes through ``ding_lite.load`` and ``predict``, and the
torso's pitch (``qpos[2]``, radians; 0 upright, +-pi on its back) is read from the simulator at every step.

    python benchmarks/studies/halfcheetah_flip.py ~/ding_lite_runs/mujoco_sac/halfcheetah_seed4 --episodes 2
    python benchmarks/studies/halfcheetah_flip.py RUN [RUN ...] --pattern ckpt_last.pth.tar --out FILE

Writes benchmarks/studies/results/halfcheetah_flip_<run>.json (<run> without a leading ``halfcheetah_``; ``--out``
for several runs): per run and checkpoint the mean return, the torso's pitch at the end of each episode and its
largest magnitude, and whether the episode ended on its back (|pitch| > pi/2).
"""
import argparse
import glob
import json
import math
import os
import re
import sys
from typing import Any, Dict, List

import gymnasium as gym
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ding_lite  # noqa: E402
from machine import machine_info  # noqa: E402  (benchmarks/machine.py)


def play(agent, env_id: str, seed: int) -> Dict[str, float]:
    """One deterministic episode: its return and the torso's pitch (final, largest magnitude)."""
    env = gym.make(env_id)
    obs, _ = env.reset(seed=seed)
    total, pitches, done = 0.0, [], False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(agent.predict(obs, deterministic=True))
        total += float(reward)
        pitches.append(float(env.unwrapped.data.qpos[2]))
        done = terminated or truncated
    env.close()
    return {"return": total, "final_pitch": pitches[-1], "max_abs_pitch": float(np.max(np.abs(pitches)))}


def train_iter(path: str) -> int:
    """The update count a checkpoint was saved at: its file name's (iteration_<N>), else the checkpoint's own."""
    match = re.search(r"iteration_(\d+)", os.path.basename(path))
    if match:
        return int(match.group(1))
    return int(torch.load(path, map_location="cpu", weights_only=False)["counters"]["train_iter"])


def checkpoint_rows(run: str, pattern: str, env_id: str, episodes: int) -> List[Dict[str, Any]]:
    """Per checkpoint of ``run`` (``ckpt/<pattern>``, in update order): the return and the torso's pitch."""
    ckpts = sorted((train_iter(path), path) for path in glob.glob(os.path.join(run, "ckpt", pattern)))
    if not ckpts:
        raise SystemExit(f"no ckpt/{pattern} in {run}")
    rows: List[Dict[str, Any]] = []
    for updates, path in ckpts:
        agent = ding_lite.load(path)
        played = [play(agent, env_id, 1000 + i) for i in range(episodes)]
        row = {"train_iter": updates,
               "return_mean": round(float(np.mean([e["return"] for e in played])), 1),
               "final_pitch": [round(e["final_pitch"], 2) for e in played],
               "max_abs_pitch": [round(e["max_abs_pitch"], 2) for e in played],
               "on_its_back": [abs(e["final_pitch"]) > math.pi / 2 for e in played]}
        rows.append(row)
        print(os.path.basename(os.path.normpath(run)), json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories with ckpt/iteration_<N>.pth.tar files")
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--episodes", type=int, default=2, help="episodes per checkpoint (env seeds 1000, 1001, ...)")
    parser.add_argument("--pattern", default="iteration_*.pth.tar",
                        help="which files of ckpt/ to play (e.g. ckpt_last.pth.tar for runs that kept no others)")
    parser.add_argument("--out", default=None, help="default: results/halfcheetah_flip_<run>.json for one run")
    args = parser.parse_args()
    if args.out is None and len(args.runs) > 1:
        parser.error("--out is needed for several runs")
    torch.set_num_threads(1)
    runs = [{"run": os.path.basename(os.path.normpath(run)),
             "checkpoints": checkpoint_rows(run, args.pattern, args.env, args.episodes)} for run in args.runs]
    name = runs[0]["run"]
    suffix = name[len("halfcheetah_"):] if name.startswith("halfcheetah_") else name
    out = args.out or os.path.join(HERE, "results", f"halfcheetah_flip_{suffix}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"env": args.env, "episodes": args.episodes, "runs": runs,
                   "machine": machine_info(torch=torch.__version__, ding_lite=ding_lite.__version__)}, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
