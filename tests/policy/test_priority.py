"""Prioritised replay in the learn steps: SAC's and ACER's per-sample priorities (|TD error|) by formula, the
importance weights on their critics' losses, the buffer's priorities changed by an update, and the refusals."""
import numpy as np
import pytest
import torch

import ding_lite.rl_utils.acer as acer_math
import ding_lite.rl_utils.sac as S
from ding_lite.data.prioritized import PrioritizedReplayBuffer
from ding_lite.policy import ACERPolicy
from ding_lite.policy.base_policy import Policy
from ding_lite.policy.impala import IMPALAPolicy
from ding_lite.utils import ConfigError

from test_acer import make_cfg, random_batch

PER = {"policy.priority": True, "policy.priority_IS_weight": True}


class Record:
    """Stands in for a loss function (looked up at call time): keeps the arguments of its last call."""

    def __init__(self, monkeypatch, module, name):
        self.fn, self.args = getattr(module, name), None
        monkeypatch.setattr(module, name, self)

    def __call__(self, *args, **kwargs):
        self.args = [a.detach().clone() if torch.is_tensor(a) else a for a in args]
        self.kwargs = kwargs
        return self.fn(*args, **kwargs)


@pytest.mark.parametrize("case", ["continuous", "discrete", "mixed"])
def test_sac_priority_is_mean_abs_td_error_and_weights_scale_the_critic_loss(case, make, monkeypatch):
    sac = make(case, PER)
    buf = PrioritizedReplayBuffer(dict(replay_buffer_size=1000), seed=0, IS_weight=True)
    buf.push(sac.collector.collect(64, random_action=True), sac.collector.envstep)
    batch = buf.sample(32, 0)
    weight = torch.rand(32) + 0.1  # any weights: the loss must use exactly these
    batch["weight"] = weight
    index = buf.last_index
    rec = Record(monkeypatch, S, "sac_critic_loss")
    info = sac.learn(batch)
    q, target = rec.args[0], rec.args[1]  # the weighted call is the last one
    assert torch.equal(rec.args[2], weight)
    err = (q - target).abs()
    expected = err.mean(0) if q.dim() == 2 else err
    assert info["priority"].shape == (32,)
    torch.testing.assert_close(info["priority"], expected)
    sq = (q - target).pow(2) * weight
    torch.testing.assert_close(info["critic_loss"], sq.mean(-1).sum() if q.dim() == 2 else sq.mean())
    before = buf.priorities()
    buf.update_priority(index, info["priority"])
    after = buf.priorities()
    slots = np.unique(index.slots)
    assert not np.allclose(before[slots], after[slots])
    last = {s: float(p) for s, p in zip(index.slots, info["priority"])}  # a slot drawn twice: one of its values
    for s in slots:
        assert after[s] == pytest.approx((last[s] + buf.eps) ** buf.alpha, rel=1e-5) or any(
            after[s] == pytest.approx((float(p) + buf.eps) ** buf.alpha, rel=1e-5)
            for t, p in zip(index.slots, info["priority"]) if t == s)


def test_sac_without_priority_returns_none_and_ignores_no_weight(make):
    sac = make("continuous")
    info = sac.learn(sac.batch())
    assert "priority" not in info


def acer(space, **cfg):
    torch.manual_seed(0)
    c = make_cfg(space)
    c.policy.update(cfg)
    return ACERPolicy(c.policy)


@pytest.mark.parametrize("space,loss_fn", [("discrete", "acer_critic_loss_discrete"),
                                           ("continuous", "acer_critic_loss_continuous")])
def test_acer_priority_is_mean_abs_q_ret_error_per_unroll_and_weights_scale_the_critic_loss(space, loss_fn,
                                                                                           monkeypatch):
    policy = acer(space, priority=True, priority_IS_weight=True)
    B, T = 5, 4
    batch = random_batch(policy, B, T)
    weight = torch.tensor([0.2, 1.0, 0.5, 0.9, 0.3])
    batch["weight"] = weight
    rec = Record(monkeypatch, acer_math, loss_fn)
    info = policy.learn_mode.forward(batch)
    if space == "discrete":
        q_values, actions, q_ret = rec.args
        q_taken = q_values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        per_step = 0.5 * (q_ret - q_taken).pow(2)
    else:
        q_taken, values, q_ret, v_target = rec.args
        per_step = 0.5 * (q_ret - q_taken).pow(2) + 0.5 * (v_target - values).pow(2)
    assert info["priority"].shape == (B,)
    torch.testing.assert_close(info["priority"], (q_ret - q_taken).abs().mean(0))
    torch.testing.assert_close(info["critic_loss"], (per_step * weight).mean())


def test_acer_priority_off_returns_none():
    policy = acer("discrete")
    assert "priority" not in policy.learn_mode.forward(random_batch(policy, 3, 4))


def test_impala_refuses_priority_with_the_reason():
    cfg = IMPALAPolicy.default_config()
    cfg.priority = True
    with pytest.raises(ConfigError, match="V-trace"):
        IMPALAPolicy.check_config(cfg, "policy")


def test_is_weight_without_priority_and_policies_without_priority_are_refused():
    cfg = ACERPolicy.default_config()
    cfg.priority_IS_weight = True
    with pytest.raises(ConfigError, match="needs policy.priority=True"):
        ACERPolicy.check_config(cfg, "policy")

    class NoPriority(Policy):
        pass

    cfg = Policy.default_config()
    cfg.priority, cfg.type = True, "mine"
    with pytest.raises(ConfigError, match="policy 'mine' does not support prioritised replay"):
        NoPriority.check_config(cfg, "policy")


def test_acer_learn_with_a_prioritized_buffer_sets_the_drawn_unrolls_priorities():
    policy = acer("discrete", priority=True, priority_IS_weight=True)
    buf = PrioritizedReplayBuffer(dict(replay_buffer_size=16, max_use=16), seed=0, IS_weight=True)
    buf.push(random_batch(policy, 8, 4), 0)
    batch = buf.sample(4, 0)
    assert batch["weight"].shape == (4,)
    index = buf.last_index
    info = policy.learn_mode.forward(batch)
    buf.update_priority(index, info["priority"])
    pr = buf.priorities()
    drawn = set(index.slots.tolist())
    assert all(pr[s] != 1.0 for s in drawn) and all(pr[s] == 1.0 for s in range(8) if s not in drawn)
