"""Learner: it averages the monitored scalars (read with one batched transfer) and stops at the first NaN or infinity
among the loss terms and gradient norms, with a NonFiniteError naming the key, the value and the update; the check
can be switched off (policy.learn.learner.check_finite). Real IMPALA and SAC policies, built through the config path
on collected batches, and a tiny policy whose gradient is infinite while its loss is finite.
"""
import copy
import math
import os
import re

import pytest
import torch
from torch import nn

from ding_lite.config import read_config_file
from ding_lite.entry.build import build, compile_input
from ding_lite.policy.base_policy import LearnMode
from ding_lite.torch_utils import GradClipper, tree_map
from ding_lite.utils import ConfigError, NonFiniteError, set_seed
from ding_lite.worker import Learner, SampleCollector
from ding_lite.worker.learner import to_floats

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SMALL = {"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1}
SAC_SMALL = {"policy.model.actor_head_hidden_size": 32, "policy.model.critic_head_hidden_size": 32,
             "policy.learn.batch_size": 32}
CONFIGS = {"impala": ("cartpole_impala", {}), "sac": ("pendulum_sac", SAC_SMALL),
           "boltzmann": ("cartpole_sac", {**SAC_SMALL, "policy.learn.discrete_policy": "boltzmann"})}
MESSAGE = re.compile(r"non-finite (?P<key>\w+)=(?P<value>-?inf|nan) in update (?P<update>\d+) "
                     r"\(train_iter (?P<before>\d+) -> (?P<after>\d+);")


def make_policy(kind, overrides=None, seed=0, n_batches=4):
    """(policy, batches): a policy built from a shipped config and ``n_batches`` batches collected by it."""
    name, extra = CONFIGS[kind]
    set_seed(seed)
    cfg = compile_input(read_config_file(os.path.join(REPO, "dizoo_configs", f"{name}.py")), seed,
                        {**SMALL, **extra, **(overrides or {})})
    parts = build(cfg, seed)
    try:
        size = cfg.policy.learn.batch_size
        samples = SampleCollector(parts.collector_env, parts.policy.collect_mode).collect(size * n_batches)
    finally:
        parts.collector_env.close()
        parts.evaluator_env.close()
    batches = [tree_map(lambda x, i=i: x[i * size:(i + 1) * size].clone(), samples) for i in range(n_batches)]
    return parts.policy, batches


def with_nan_reward(batch):
    batch = copy.deepcopy(batch)
    batch["reward"].view(-1)[0] = float("nan")
    return batch


def parse(err):
    message = str(err.value)
    assert "\n" not in message, "a user error is one line"
    assert "lower the learning rate" in message and "check_finite=False" in message
    match = MESSAGE.match(message)
    assert match, message
    return match["key"], match["value"], int(match["update"]), int(match["before"]), int(match["after"])


# ---------------------------------------------------------------------------------------------- non-finite values
@pytest.mark.parametrize("kind", ["impala", "sac"])
def test_a_nan_reward_stops_training_at_that_update(kind):
    policy, batches = make_policy(kind)
    learner = Learner(policy.learn_mode, train_iter=7)
    learner.train(batches[0])
    with pytest.raises(NonFiniteError) as err:
        learner.train(with_nan_reward(batches[1]))
    key, value, update, before, after = parse(err)
    assert (update, before, after) == (9, 8, 9) and learner.train_iter == 9
    assert value == "nan" and key == ("total_loss" if kind == "impala" else "critic_loss")  # first monitored one


def test_a_huge_learning_rate_is_caught_before_the_weights_are_used_again():
    """SAC's critics step by ~lr: after one update with lr 1e30 their outputs overflow to inf."""
    policy, batches = make_policy("sac", {"policy.learn.learning_rate_q": 1e30})
    learner = Learner(policy.learn_mode)
    learner.train(batches[0])  # the step that breaks the weights has finite inputs
    with pytest.raises(NonFiniteError) as err:
        learner.train(batches[1])
    key, value, update, _, _ = parse(err)
    assert update == 2 and key == "critic_loss" and value in ("inf", "nan")


def test_an_infinite_learning_rate_is_named_at_the_first_update():
    """The config refuses inf (see tests/config); an lr that became inf in the optimizer is caught all the same."""
    policy, batches = make_policy("impala")
    policy._optimizer.param_groups[0]["lr"] = float("inf")
    with pytest.raises(NonFiniteError) as err:
        Learner(policy.learn_mode).train(batches[0])
    assert parse(err)[:3] == ("cur_lr", "inf", 1)


class InfGrad(torch.autograd.Function):
    """The identity forward; an infinite gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return torch.full_like(grad, float("inf"))


class TinyPolicy:
    """A learn mode whose loss is finite and whose gradient is not (``grad_norm`` logged or not)."""

    def __init__(self, log_grad_norm, clip_type=None):
        self.weight = nn.Parameter(torch.ones(3))
        self.optimizer = torch.optim.SGD([self.weight], lr=0.1)
        self.clip = GradClipper(clip_type, 1.0)
        self.log_grad_norm = log_grad_norm
        self.break_at = None  # the update whose gradient is infinite
        self.steps = 0

    def forward(self, batch):
        self.steps += 1
        fn = InfGrad.apply if self.steps == self.break_at else (lambda x: x)
        loss = (fn(self.weight) * batch["x"]).sum()
        self.optimizer.zero_grad()
        loss.backward()
        info = {"total_loss": loss.detach(), "grad_norm": self.clip([self.weight])}
        self.optimizer.step()
        return info

    def monitor_vars(self):
        return ["total_loss", "grad_norm"] if self.log_grad_norm else ["total_loss"]

    @property
    def learn_mode(self):
        return LearnMode(self.forward, dict, lambda state: None, self.monitor_vars)


@pytest.mark.parametrize("clip_type", [None, "clip_value", "clip_norm"])
@pytest.mark.parametrize("log_grad_norm", [True, False])
def test_an_infinite_gradient_with_a_finite_loss_is_caught_as_grad_norm(log_grad_norm, clip_type):
    policy = TinyPolicy(log_grad_norm, clip_type)
    policy.break_at = 3
    learner = Learner(policy.learn_mode)
    batch = {"x": torch.tensor([0.5, -1.0, 2.0])}
    learner.train(batch)
    learner.train(batch)
    with pytest.raises(NonFiniteError) as err:
        learner.train(batch)
    assert parse(err)[:3] == ("grad_norm", "inf", 3)


# --------------------------------------------------------------------------------------------- finite training
def reference_means(policy, batches):
    """``float(info[key])`` per monitored key, averaged over the updates that returned it (IMPALA's encoder gradient
    norms come every encoder_grad_norm_freq updates)."""
    sums, counts = {}, {}
    for batch in batches:
        info = policy.learn_mode.forward(batch)
        for key in policy.learn_mode.monitor_vars():
            if key in info:
                sums[key] = sums.get(key, 0.0) + float(info[key])
                counts[key] = counts.get(key, 0) + 1
    return {k: v / counts[k] for k, v in sums.items()}


@pytest.mark.parametrize("check_finite", [True, False])
@pytest.mark.parametrize("kind", ["impala", "sac", "boltzmann"])
def test_finite_training_logs_the_same_means_as_before(kind, check_finite):
    policy, batches = make_policy(kind)
    reference, _ = make_policy(kind)  # the same seed: the same weights and batches
    torch.manual_seed(3)
    expected = reference_means(reference, copy.deepcopy(batches))
    torch.manual_seed(3)
    learner = Learner(policy.learn_mode, check_finite=check_finite)
    for batch in copy.deepcopy(batches):
        learner.train(batch)
    means = learner.pop_means()
    assert means == expected
    assert "grad_norm" in means and means["grad_norm"] > 0
    assert learner.pop_means() is None and learner.train_iter == len(batches)


def test_a_scalar_some_updates_return_is_averaged_over_those_updates():
    class EveryOther:
        def __init__(self):
            self.n = 0

        def monitor_vars(self):
            return ["loss", "probe"]

        def forward(self, batch):
            self.n += 1
            return {"loss": float(self.n), **({"probe": 10.0 * self.n} if self.n % 2 else {})}

    learner = Learner(EveryOther(), check_finite=False)
    for _ in range(4):
        learner.train({})
    assert learner.pop_means() == {"loss": 2.5, "probe": 20.0}  # probe: (10 + 30) / 2, not / 4


def test_check_finite_false_trains_on():
    policy, batches = make_policy("impala")
    learner = Learner(policy.learn_mode, check_finite=False)
    learner.train(with_nan_reward(batches[0]))
    learner.train(batches[1])
    means = learner.pop_means()
    assert learner.train_iter == 2 and math.isnan(means["total_loss"]) and math.isnan(means["grad_norm"])


def test_to_floats_reads_tensors_and_numbers():
    values = [torch.tensor(1.5), 2, True, torch.tensor(float("nan")), torch.tensor(3.25, dtype=torch.float64),
              torch.tensor([4.0]), 0.1]
    out = to_floats(values)
    assert all(type(v) is float for v in out)
    assert out[:3] == [1.5, 2.0, 1.0] and math.isnan(out[3]) and out[4:] == [3.25, 4.0, 0.1]
    assert to_floats([]) == []


# ------------------------------------------------------------------------------------------------------- config
def test_the_config_switch_reaches_the_learner(in_tmp):
    from ding_lite.entry import serial_pipeline
    config = read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py"))
    overrides = {**SMALL, "policy.learn.learning_rate": 1e12}  # finite, but it breaks the weights at once
    with pytest.raises(NonFiniteError, match=r"non-finite \w+=(nan|-?inf) in update [12] "):
        serial_pipeline(config, 0, max_train_iter=3, overrides=overrides, quiet=True)
    policy = serial_pipeline(config, 0, max_train_iter=3, quiet=True, exp_name="unchecked",
                             overrides={**overrides, "policy.learn.learner.check_finite": False})
    assert policy.cfg.learn.learner.check_finite is False  # and it trained on


def test_check_finite_must_be_a_bool():
    config = read_config_file(os.path.join(REPO, "dizoo_configs", "cartpole_impala.py"))
    with pytest.raises(ConfigError, match=r"^policy.learn.learner.check_finite='yes': expected bool"):
        compile_input(config, 0, {"policy.learn.learner.check_finite": "yes"})
