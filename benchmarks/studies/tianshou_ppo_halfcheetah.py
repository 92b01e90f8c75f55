"""Tianshou's own PPO on HalfCheetah-v5 on this machine: is its published 3,927 at 307k env steps a property of the
algorithm's settings (which ding_lite's halfcheetah_ppo.py reproduces) or of its benchmark's conditions (HalfCheetah-v3
with mujoco-py, its machine)?

Tianshou is not a dependency of ding_lite; run this in a virtual environment of its own:

    python -m venv /tmp/ts-venv && /tmp/ts-venv/bin/pip install torch==2.13.0 tianshou==2.0.1 "gymnasium[mujoco]"
    /tmp/ts-venv/bin/python benchmarks/studies/tianshou_ppo_halfcheetah.py --seeds 0 1 2

The settings are those of Tianshou's examples/mujoco/mujoco_ppo.py at the commit of its published benchmark table
(6426a397): 64 training envs x 32 steps per collection (2,048), 10 repetitions of minibatches of 64, Adam 3e-4 decayed
linearly to 0 over 100 epochs of 30,000 env steps (3M; this study stops after 10), gamma 0.99, GAE lambda 0.95, clip
0.2, value coefficient 0.25, no entropy bonus, gradient norm 0.5, return scaling (``rew_norm``), no value clipping, no
advantage normalisation, advantages recomputed before each repetition, actions clipped to the bounds, observation
normalisation, [64, 64] tanh actor and critic with orthogonal initialisation, the mean layer scaled by 0.01 and the
log std starting at -0.5. After every epoch the policy plays 10 test episodes with sampled actions (the published
protocol) and 10 with the mean action (ding_lite's).

Writes benchmarks/studies/results/tianshou_ppo_halfcheetah.json: per seed the returns at each epoch's env step, the
wall time, the machine and the versions.
"""
import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Independent, Normal

import tianshou
from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, VectorEnvNormObs
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.logger.logger_base import LazyLogger
from tianshou.utils.net.common import ActorCritic, Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from machine import machine_info  # noqa: E402  (benchmarks/machine.py)

EPOCH_STEPS, STEPS_PER_COLLECT, SCHEDULE_EPOCHS = 30_000, 2_048, 100


class TestReturns(LazyLogger):
    """Keeps the trainer's test results (sampled actions) by env step."""

    def __init__(self) -> None:
        super().__init__()
        self.sampled: Dict[int, float] = {}

    def log_test_data(self, log_data: dict, step: int) -> None:
        self.sampled[int(step)] = float(np.mean(log_data["returns"]))


def build(env_id: str, seed: int, train_envs: int, test_envs: int, settings: argparse.Namespace):
    """Tianshou's benchmark agent and envs (observation statistics shared by the test envs, frozen there), with the
    ``settings`` a run changes (``--schedule-epochs``, ``--vf-coef``, ``--no-recompute``)."""
    train = VectorEnvNormObs(DummyVectorEnv([lambda: gym.make(env_id) for _ in range(train_envs)]))
    test = VectorEnvNormObs(DummyVectorEnv([lambda: gym.make(env_id) for _ in range(test_envs)]),
                            update_obs_rms=False)
    test.set_obs_rms(train.get_obs_rms())
    train.seed(seed)
    test.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    env = gym.make(env_id)
    space, obs_dim = env.action_space, env.observation_space.shape
    env.close()
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[64, 64], activation=nn.Tanh),
        action_shape=space.shape, unbounded=True)
    critic = ContinuousCritic(preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[64, 64], activation=nn.Tanh))
    torch.nn.init.constant_(actor.sigma_param, -0.5)
    for m in ActorCritic(actor, critic).modules():
        if isinstance(m, nn.Linear):
            torch.nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
            torch.nn.init.zeros_(m.bias)
    for m in actor.mu.modules():
        if isinstance(m, nn.Linear):
            torch.nn.init.zeros_(m.bias)
            m.weight.data.copy_(0.01 * m.weight.data)
    optim = AdamOptimizerFactory(lr=3e-4).with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(max_epochs=settings.schedule_epochs, epoch_num_steps=EPOCH_STEPS,
                                 collection_step_num_env_steps=STEPS_PER_COLLECT))
    policy = ProbabilisticActorPolicy(
        actor=actor, dist_fn=lambda loc_scale: Independent(Normal(*loc_scale), 1), action_scaling=True,
        action_bound_method="clip", action_space=space)
    algorithm = PPO(
        policy=policy, critic=critic, optim=optim, gamma=0.99, gae_lambda=0.95, max_grad_norm=0.5,
        vf_coef=settings.vf_coef, ent_coef=0.0, return_scaling=True, eps_clip=0.2, value_clip=False, dual_clip=None,
        advantage_normalization=False, recompute_advantage=not settings.no_recompute)
    return algorithm, policy, train, test


def run_seed(env_id: str, seed: int, settings: argparse.Namespace) -> Dict[str, Any]:
    epochs, train_envs = settings.epochs, settings.train_envs
    algorithm, policy, train, test = build(env_id, seed, train_envs, 10, settings)
    greedy: Dict[int, float] = {}
    greedy_collector = Collector(algorithm, test)

    def greedy_test(epoch: int, env_step: int) -> None:
        """Before the trainer's (sampled) test: 10 episodes with the mean action."""
        policy.deterministic_eval = True
        greedy_collector.reset()
        greedy[int(env_step or 0)] = float(np.mean(greedy_collector.collect(n_episode=10).returns))
        policy.deterministic_eval = False

    logger = TestReturns()
    start = time.perf_counter()
    algorithm.run_training(OnPolicyTrainerParams(
        training_collector=Collector(algorithm, train, VectorReplayBuffer(4096, train_envs), exploration_noise=True),
        test_collector=Collector(algorithm, test), max_epochs=epochs, epoch_num_steps=EPOCH_STEPS,
        update_step_num_repetitions=10, test_step_num_episodes=10, batch_size=64,
        collection_step_num_env_steps=STEPS_PER_COLLECT, test_fn=greedy_test, logger=logger,
        test_in_training=False, show_progress=False, verbose=False))
    wall = time.perf_counter() - start
    steps = sorted(set(logger.sampled) | set(greedy))
    row = {"seed": seed, "wall_s": round(wall, 1),
           "curve": [{"env_step": s, "sampled": round(logger.sampled.get(s, float("nan")), 1),
                      "greedy": round(greedy.get(s, float("nan")), 1)} for s in steps]}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=10, help="epochs of 30,000 env steps (10: 307k)")
    parser.add_argument("--train-envs", type=int, default=64, help="2,048 env steps per collection over these")
    parser.add_argument("--schedule-epochs", type=int, default=SCHEDULE_EPOCHS,
                        help="the learning rate reaches 0 after these epochs (Tianshou's 100: 3M env steps)")
    parser.add_argument("--vf-coef", type=float, default=0.25, help="the value loss is vf_coef (R - V)^2")
    parser.add_argument("--no-recompute", action="store_true", help="advantages computed once per collection")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "tianshou_ppo_halfcheetah.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    runs: List[Dict[str, Any]] = []
    if os.path.exists(args.out):  # seeds run in another process are kept
        with open(args.out) as f:
            runs = [r for r in json.load(f)["runs"] if r["seed"] not in args.seeds]
    runs += [run_seed(args.env, seed, args) for seed in args.seeds]
    runs.sort(key=lambda r: r["seed"])
    out = {"env": args.env, "epochs": args.epochs, "train_envs": args.train_envs,
           "schedule_epochs": args.schedule_epochs, "vf_coef": args.vf_coef, "recompute": not args.no_recompute,
           "runs": runs,
           "machine": machine_info(torch=torch.__version__, tianshou=tianshou.__version__,
                                   gymnasium=gym.__version__)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
