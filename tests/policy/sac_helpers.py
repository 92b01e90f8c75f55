"""Shared by test_sac.py and test_sac_training.py: SAC built through the real config path for each action space
(``Sac``; the ``make`` fixture is in conftest.py), recorders patched onto ``ding_lite.rl_utils.sac`` and small
tree/parameter helpers."""
import copy
import inspect
import math
import os

import torch
from torch import nn

import ding_lite.rl_utils.sac as S
from ding_lite.config import read_config_file
from ding_lite.data import ReplayBuffer
from ding_lite.entry.build import build, compile_input
from ding_lite.utils import set_seed
from ding_lite.worker import SampleCollector

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dizoo_configs")
# case -> (shipped config, overrides on top of it)
CASES = {
    "continuous": ("pendulum_sac", {}),
    "discrete": ("cartpole_sac", {}),
    "boltzmann": ("cartpole_sac", {"policy.learn.discrete_policy": "boltzmann"}),
    "mixed": ("mixed_sac", {}),
}
ALL = list(CASES)
# learn.target_entropy per case far below (LOW) or near the top of (HIGH) the entropies its parts can have: Pendulum
# (1-dim continuous), CartPole (2 actions) and MixedTarget ([Discrete(3), 2-dim continuous], discrete first).
LOW_TARGET = {"continuous": -15.0, "discrete": 1e-3, "boltzmann": 1e-3, "mixed": [1e-3, -30.0]}
HIGH_TARGET = {"continuous": 0.6, "discrete": 0.999 * math.log(2), "boltzmann": 0.999 * math.log(2),
               "mixed": [0.999 * math.log(3), 1.2]}
WITH_ACTOR = ["continuous", "discrete", "mixed"]
SMALL = {
    "env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1,
    "policy.model.actor_head_hidden_size": 32, "policy.model.critic_head_hidden_size": 32,
    "policy.learn.batch_size": 32,
}
CRITIC_TARGET_FN = {"continuous": "sac_critic_target", "discrete": "discrete_sac_critic_target",
                    "boltzmann": "discrete_sac_critic_target", "mixed": "mixed_sac_critic_target"}
ACTOR_LOSS_FN = {"continuous": "sac_actor_loss", "discrete": "discrete_sac_actor_loss",
                 "mixed": "mixed_sac_actor_loss"}


class Sac:
    """A policy built through the real config path (compile_input + build), with its collector and a buffer."""

    def __init__(self, case, overrides=None, seed=0):
        name, case_overrides = CASES[case]
        main, create = read_config_file(os.path.join(CONFIGS, f"{name}.py"))
        set_seed(seed)
        self.case = case
        self.cfg = compile_input((main, create), seed, {**SMALL, **case_overrides, **(overrides or {})})
        self.parts = build(self.cfg, seed)
        self.policy = self.parts.policy
        self.collector = SampleCollector(self.parts.collector_env, self.policy.collect_mode)
        self.buffer = ReplayBuffer(dict(replay_buffer_size=1000), seed=seed)
        self.filled = False

    def fill(self, n_random=48, n_policy=16):
        self.buffer.push(self.collector.collect(n_random, random_action=True), self.collector.envstep)
        self.buffer.push(self.collector.collect(n_policy), self.collector.envstep)
        self.filled = True

    def batch(self, size=None):
        if not self.filled:
            self.fill()
        return self.buffer.sample(size or self.cfg.policy.learn.batch_size, 0)

    def learn(self, batch):
        return self.policy.learn_mode.forward(copy.deepcopy(batch))

    def state(self):
        return copy.deepcopy(self.policy.learn_mode.state_dict())

    def close(self):
        self.parts.collector_env.close()
        self.parts.evaluator_env.close()


def clone(tree):
    return {k: clone(v) if isinstance(v, dict) else v.detach().clone() for k, v in tree.items()}


def assert_tree_equal(a, b, path="state"):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            assert_tree_equal(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_tree_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def last_linear(module):
    return [m for m in module.modules() if isinstance(m, nn.Linear)][-1]


def set_constant_q(policy, per_replica):
    """Make every critic replica output a constant Q vector (its final layer: zero weight, the given bias)."""
    last = policy.model.critic.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor(per_replica, dtype=torch.float32).unsqueeze(1))


def set_log_alpha(policy, values):
    state = policy.learn_mode.state_dict()
    state["model"] = dict(state["model"], log_alpha=torch.tensor(values, dtype=torch.float32))
    policy.learn_mode.load_state_dict(state)


def log_alpha(policy):
    """The temperature the policy acts and learns with."""
    return policy._log_alpha.detach().clone()


def critic_params(policy):
    return {k: v.detach().clone() for k, v in policy.model.critic.state_dict().items()}


def actor_params(policy):
    return {k: v.detach().clone() for k, v in policy.model.actor.state_dict().items()}


def max_change(before, after):
    return max((after[k] - before[k]).abs().max().item() for k in before)


class Recorder:
    """Stands in for ``S.<name>``: calls the real function and records its bound arguments and its output."""

    def __init__(self, monkeypatch, name):
        self.fn = getattr(S, name)
        self.signature = inspect.signature(self.fn)
        self.calls = []
        monkeypatch.setattr(S, name, self)

    def __call__(self, *args, **kwargs):
        out = self.fn(*args, **kwargs)
        arguments = dict(self.signature.bind(*args, **kwargs).arguments)
        self.calls.append({**{k: v.detach().clone() if isinstance(v, torch.Tensor) else v
                              for k, v in arguments.items()}, "out": out.detach().clone()})
        return out


def as_float(x):
    return torch.as_tensor(x, dtype=torch.float32)


def check_action(case, action, batch_size):
    if case == "mixed":
        assert isinstance(action, dict) and set(action) == {"discrete", "continuous"}
        check_action("discrete3", action["discrete"], batch_size)
        check_action("continuous2", action["continuous"], batch_size)
    elif case.startswith("continuous"):
        dim = 2 if case == "continuous2" else 1
        assert action.shape == (batch_size, dim) and action.dtype == torch.float32
        assert action.abs().max() <= 1.0
    else:
        n = 3 if case == "discrete3" else 2
        assert action.shape == (batch_size,) and action.dtype == torch.int64
        assert action.min() >= 0 and action.max() < n


def flat_action(action):
    if isinstance(action, dict):
        return torch.cat([action["discrete"].float().unsqueeze(-1), action["continuous"]], -1)
    return action.float()
