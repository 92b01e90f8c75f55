"""IMPALA's KL penalty (``learn.kl_weight``): its value against KL(mu || pi) written out for each action space, its
gradient against a hand computation, zero on-policy, and the config check; plus the KL of two MultiCategoricals."""
import copy

import pytest
import torch

from ding_lite.policy import IMPALAPolicy
from ding_lite.torch_utils import MultiCategorical
from ding_lite.utils import ConfigError

from test_impala import OBS_DIM, make_policy, random_batch

LINEAR = dict(encoder_hidden_size_list=[], actor_head_layer_num=0, critic_head_layer_num=0)


def current_logit(policy, obs):
    with torch.no_grad():
        return policy.model(obs.reshape(-1, OBS_DIM), mode="compute_actor")["logit"]


def reference_kl(space, behaviour, current):
    """mean over steps of KL(mu || pi), from the definitions: sum_a mu_a log(mu_a / pi_a) per categorical head; for
    diagonal Gaussians sum_d log(s2/s1) + (s1^2 + (m1 - m2)^2) / (2 s2^2) - 1/2."""
    if space == "continuous":
        m1, s1, m2, s2 = (x.double() for x in (behaviour["mu"], behaviour["sigma"], current["mu"],
                                                current["sigma"]))
        return (torch.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5).sum(-1).mean()
    heads = (2,) if space == "discrete" else (3, 2)
    total = 0.0
    for b, c in zip(behaviour.double().split(heads, -1), current.double().split(heads, -1)):
        mu, pi = torch.softmax(b, -1), torch.softmax(c, -1)
        total = total + (mu * (mu.log() - pi.log())).sum(-1)
    return total.mean()


def flat(batch_logit, B, T):
    """(B, T, ...) batch logits as (B*T, ...) rows in the same order as the policy's rows of obs.reshape(-1)."""
    if isinstance(batch_logit, dict):
        return {k: v.reshape(B * T, -1) for k, v in batch_logit.items()}
    return batch_logit.reshape(B * T, -1)


@pytest.mark.parametrize("space", ["discrete", "continuous", "multi_discrete"])
def test_logged_kl_is_kl_from_behaviour_to_policy(space):
    policy = make_policy(space, kl_weight=0.5)
    B, T = 3, 4
    batch = random_batch(policy, B, T, seed=1)
    current = current_logit(policy, batch["obs"])  # the weights before the update's step
    info = policy.learn_mode.forward(copy.deepcopy(batch))
    expected = reference_kl(space, flat(batch["logit"], B, T), current)
    torch.testing.assert_close(info["kl_behaviour"].double(), expected, rtol=1e-5, atol=1e-6)
    # The other direction, KL(pi || mu), is a different number on these logits: the test can tell them apart.
    assert not torch.isclose(reference_kl(space, current, flat(batch["logit"], B, T)), expected, rtol=1e-3)


def test_kl_is_zero_on_policy_and_off_by_default():
    policy = make_policy("discrete", kl_weight=2.0)
    batch = random_batch(policy, 2, 3, behaviour="current")
    assert float(policy.learn_mode.forward(batch)["kl_behaviour"]) == pytest.approx(0.0, abs=1e-6)
    assert "kl_behaviour" not in make_policy("discrete").learn_mode.forward(random_batch(policy, 2, 3))


def test_kl_gradient_matches_hand_computation():
    """Linear actor: adding w * mean KL(mu || pi) to the loss adds w * (pi - mu) / N to dL/dz per row (z the logits,
    pi = softmax(z)), so the gradients with and without the penalty differ by exactly that."""
    w = 3.0
    B, T = 2, 3
    grads = {}
    base = make_policy("discrete", model=LINEAR)
    batch = random_batch(base, B, T, seed=4)
    state = copy.deepcopy(base.learn_mode.state_dict())
    for weight in (0.0, w):
        policy = make_policy("discrete", model=LINEAR, kl_weight=weight)
        policy.learn_mode.load_state_dict(copy.deepcopy(state))
        policy._grad_clip = lambda params, weight=weight, policy=policy: grads.update(
            {weight: {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}}) or 0.0
        policy.learn_mode.forward(copy.deepcopy(batch))
    W = base.model.actor_head[0].weight.detach()
    b = base.model.actor_head[0].bias.detach()
    x = batch["obs"].reshape(B * T, OBS_DIM)
    pi = torch.softmax(x @ W.T + b, -1)
    mu = torch.softmax(batch["logit"].reshape(B * T, -1), -1)
    dz = w * (pi - mu) / (B * T)
    torch.testing.assert_close(grads[w]["actor_head.0.weight"] - grads[0.0]["actor_head.0.weight"], dz.T @ x,
                               rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(grads[w]["actor_head.0.bias"] - grads[0.0]["actor_head.0.bias"], dz.sum(0),
                               rtol=1e-4, atol=1e-6)
    # The critic's gradient does not change: the penalty is on the policy only.
    torch.testing.assert_close(grads[w]["critic_head.0.weight"], grads[0.0]["critic_head.0.weight"])


@pytest.mark.parametrize("bad", [-0.1, float("inf"), "1", True])
def test_kl_weight_is_checked(bad):
    cfg = IMPALAPolicy.default_config()
    cfg.learn.kl_weight = bad
    with pytest.raises(ConfigError, match=r"policy\.learn\.kl_weight=.*must be a number >= 0"):
        IMPALAPolicy.check_config(cfg, "policy")


def test_multi_categorical_kl_is_the_sum_over_heads():
    g = torch.Generator().manual_seed(0)
    p_logits, q_logits = torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
    kl = torch.distributions.kl_divergence(MultiCategorical(p_logits, (3, 2)), MultiCategorical(q_logits, (3, 2)))
    assert kl.shape == (4,)
    expected = torch.stack([reference_kl("multi_discrete", p_logits[i:i + 1], q_logits[i:i + 1]) for i in range(4)])
    torch.testing.assert_close(kl.double(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="different heads"):
        torch.distributions.kl_divergence(MultiCategorical(p_logits, (3, 2)), MultiCategorical(q_logits, (2, 3)))


def test_fast_categorical_kl_equals_torchs():
    """``torch_utils.kl`` computes the Categorical KL without torch's masking: the same numbers, bit for bit, on
    softmax logits (so a run's trajectory does not depend on which form it used)."""
    from torch.distributions import Categorical, kl_divergence

    from ding_lite.torch_utils import kl
    g = torch.Generator().manual_seed(1)
    p, q = torch.randn(64, 5, generator=g) * 4, torch.randn(64, 5, generator=g) * 4
    assert torch.equal(kl(Categorical(logits=p), Categorical(logits=q)),
                       kl_divergence(Categorical(logits=p), Categorical(logits=q)))
