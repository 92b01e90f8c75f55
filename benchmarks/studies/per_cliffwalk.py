"""Prioritised replay where the literature expects a gain: Schaul et al.'s Blind Cliffwalk (ding_lite/envs/
blind_cliffwalk.py), the number of updates until the value function is learned, uniform against prioritised replay.

The paper's experiment (section 3.1) as far as ding_lite's policies allow:

* The replay memory is filled by ``--warm-up`` env steps of uniformly random actions (the collector's warm-up
  mode) and then only replayed, or, with ``--stream``, grows by one random env step before each update, as in a run
  (the figure is then also counted from the update at which the first rewarding transition entered the memory;
  both variants see the same stream). A random episode reaches the reward once in 2^n.
* The paper's learner is tabular Q-learning. Here it is discrete SAC with ``discrete_policy='boltzmann'`` (a soft
  Q-learner: the policy is exp(Q / alpha), there is no actor) at a fixed, tiny temperature (alpha = 1e-6), so the
  targets are Q-learning's up to an entropy term below 1e-6; the target critics follow with ``target_theta=0.1``,
  and the observations are one-hot, so little generalises between states. Batch 32, learning rate 1e-3.
* "Learned": the root-mean-squared error of Q over all 2n state-action pairs against the true
  values (Q*(s_k, right) = gamma^(n-1-k), Q*(s, wrong) = 0, gamma = 1 - 1/n) below ``--tolerance``, checked every
  ``--check-every`` updates (the smaller of the twin critics, as the targets use).
* Prioritised: ``policy.priority=True`` with importance weights and the defaults (alpha 0.6, beta 0.4 annealed over
  100k updates); the priorities come from the critics' TD errors after every update, as in a run.

    python benchmarks/studies/per_cliffwalk.py                     # n=16, memory filled by 2^19 random env steps
    python benchmarks/studies/per_cliffwalk.py --n 12 --warm-up 1000 --stream --max-updates 60000

One torch thread; writes benchmarks/studies/results/per_cliffwalk_n<n>[_stream].json. Each takes 2-10 minutes for 5 seeds
(the filled n=16 memory needs ~5 GB of RAM).
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)

from ding_lite.worker.train_step import train_on_sample  # noqa: E402
from ding_lite.entry.build import build, build_buffer, compile_input  # noqa: E402
from ding_lite.envs import BlindCliffwalkEnv  # noqa: E402
from ding_lite.utils import set_seed  # noqa: E402
from ding_lite.utils.file_io import atomic_write_json  # noqa: E402
from ding_lite.worker import SampleCollector  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "studies", "results")


def config(n: int, priority: bool, batch_size: int, target_theta: float = 0.1):
    main_config = dict(
        exp_name="cliffwalk",
        torch_threads=1,
        env=dict(kwargs=dict(n=n), collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=1),
        policy=dict(
            priority=priority, priority_IS_weight=priority,
            model=dict(critic_head_hidden_size=64),
            learn=dict(discrete_policy="boltzmann", alpha=1e-6, auto_alpha=False, batch_size=batch_size,
                       learning_rate_q=1e-3, target_theta=target_theta, discount_factor=1.0 - 1.0 / n),
            other=dict(replay_buffer=dict(replay_buffer_size=1_000_000)),
        ),
    )
    return main_config, dict(env=dict(type="blind_cliffwalk"), policy=dict(type="discrete_sac"))


def q_rmse(model: torch.nn.Module, env, gamma: float) -> float:
    """RMSE of min over the critics of Q(s, a) against Q* over every state-action pair of the chain."""
    n = env.n
    with torch.no_grad():
        q = model.compute_critic(torch.eye(n)).min(0).values.numpy()  # (n, 2)
    target = np.zeros((n, 2))
    target[np.arange(n), env.right] = gamma ** (n - 1 - np.arange(n))
    return float(np.sqrt(((q - target) ** 2).mean()))


def updates_to_learn(n: int, priority: bool, seed: int, warm_up: int, batch_size: int, max_updates: int,
                     check_every: int, tolerance: float, stream: bool) -> dict:
    """Fill a memory with ``warm_up`` random env steps, then replay it until Q's RMSE falls below ``tolerance``;
    with ``stream``, one more random env step is collected before each update. Returns the number of updates that
    took (None: not within ``max_updates``)."""
    cfg = compile_input(config(n, priority, batch_size), seed)
    set_seed(seed)  # as a run does: the same network and the same random memory for both variants
    parts = build(cfg, seed)
    parts.evaluator_env.close()
    collector = SampleCollector(parts.collector_env, parts.policy.collect_mode)
    buffer = build_buffer(cfg, seed)
    memory = collector.collect(warm_up, random_action=True)
    rewarding = int((memory["reward"] > 0).sum())
    buffer.push(memory, collector.envstep)
    env = BlindCliffwalkEnv(n)  # its chain: the same for every seed
    learn, gamma = parts.policy.learn_mode, 1.0 - 1.0 / n
    t0 = time.perf_counter()
    learned, errors = None, []
    first_reward = 0 if rewarding else None  # the update at which the memory first held a rewarding transition
    for it in range(1, max_updates + 1):
        if stream:
            step = collector.collect(1, random_action=True)
            rewarding += int((step["reward"] > 0).sum())
            buffer.push(step, collector.envstep)
            if first_reward is None and rewarding:
                first_reward = it
        train_on_sample(buffer, batch_size, it, learn.forward)
        if it % check_every == 0:
            errors.append(round(q_rmse(parts.policy.model, env, gamma), 4))
            if errors[-1] < tolerance:
                learned = it
                break
    collector.close()
    after = None if learned is None or first_reward is None else learned - first_reward
    return {"seed": seed, "updates": learned, "first_reward_at": first_reward, "updates_after_first_reward": after,
            "seconds": round(time.perf_counter() - t0, 1),
            "memory": len(buffer), "rewarding_transitions": rewarding, "rmse_every_check": errors[::10]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--warm-up", type=int, default=2 ** 19, help="random env steps that fill the memory")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-updates", type=int, default=60_000)
    parser.add_argument("--check-every", type=int, default=100)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--stream", action="store_true",
                        help="collect one random env step before each update (the memory grows during learning)")
    args = parser.parse_args()
    runs = {"uniform": [], "prioritized": []}
    for seed in args.seeds:  # interleaved: the machine's load hits both alike
        for name in runs:
            row = updates_to_learn(args.n, name == "prioritized", seed, args.warm_up, args.batch_size,
                                   args.max_updates, args.check_every, args.tolerance, args.stream)
            runs[name].append(row)
            print(name, row, flush=True)
    summary = {}
    for name, rows in runs.items():
        updates, after = [r["updates"] for r in rows], [r["updates_after_first_reward"] for r in rows]
        summary[name] = {"updates_to_learn": updates, "learned": sum(u is not None for u in updates),
                         "median": statistics.median([u if u is not None else float("inf") for u in updates]),
                         "updates_after_first_reward": after,
                         "median_after_first_reward": statistics.median(
                             [u if u is not None else float("inf") for u in after])}
        print(f"{name}: updates to learn {updates} (median {summary[name]['median']}); after the first rewarding "
              f"transition {after} (median {summary[name]['median_after_first_reward']})")
    atomic_write_json({"setup": {**vars(args), "torch": torch.__version__, "machine": platform.machine()},
                       "summary": summary, "runs": runs}, os.path.join(RESULTS, f"per_cliffwalk_n{args.n}{'_stream' if args.stream else ''}.json"))


if __name__ == "__main__":
    main()
