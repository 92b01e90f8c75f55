"""ACER's learn step computes nothing twice (issue 25, item 7) and still computes the same thing: a shared encoder runs
once per update (discrete and continuous), its one pass gives the outputs and, up to float rounding, the gradients of
the two passes it replaces; the policy loss reuses the policy's log-probabilities exactly."""
import pytest
import torch
import torch.nn.functional as F

import ding_lite.rl_utils.acer as A
from ding_lite.model.acer import ACER

from test_acer import make_policy, random_batch

OBS_DIM = 3


@pytest.mark.parametrize("space", ["discrete", "continuous"])
@pytest.mark.parametrize("share_encoder", [True, False])
def test_each_encoder_runs_once_per_update(space, share_encoder):
    policy = make_policy(space, model=dict(share_encoder=share_encoder))
    model = policy.model
    calls = {"actor": 0, "critic": 0}
    model.actor.encoder.register_forward_hook(lambda *_: calls.__setitem__("actor", calls["actor"] + 1))
    if not share_encoder:
        model.critic.encoder.register_forward_hook(lambda *_: calls.__setitem__("critic", calls["critic"] + 1))
    policy.learn_mode.forward(random_batch(policy, 3, 4))
    assert calls == {"actor": 1, "critic": 0 if share_encoder else 1}


def two_pass(model: ACER, obs: torch.Tensor, make_action=None):
    """The reference: the actor's and the critic's own forward passes, each through the (shared) encoder."""
    logit = model.actor(obs)
    if make_action is None:
        return {"logit": logit, **model.critic(obs)}
    return {"logit": logit, **model.critic(obs, make_action(logit), logit)}


def outputs_and_grads(model: ACER, out):
    flat = [out["logit"]] if isinstance(out["logit"], torch.Tensor) else list(out["logit"].values())
    flat += [out[k] for k in ("q_value", "value") if k in out]
    loss = sum((x * torch.linspace(-1, 1, x.numel()).view_as(x)).sum() for x in flat)
    params = [p for p in model.parameters()]
    return [x.detach() for x in flat], torch.autograd.grad(loss, params, allow_unused=True)


@pytest.mark.parametrize("space", ["discrete", "continuous"])
@pytest.mark.parametrize("share_encoder", [True, False])
def test_one_pass_matches_the_two_passes_it_replaces(space, share_encoder):
    torch.manual_seed(0)
    model = ACER(OBS_DIM, 2, space, share_encoder=share_encoder, encoder_hidden_size_list=[16, 16],
                 actor_head_hidden_size=16, critic_head_hidden_size=16)
    obs = torch.randn(32, OBS_DIM, generator=torch.Generator().manual_seed(1))

    def make_action(logit):  # a'_t ~ pi, as ACER's policy draws it
        return torch.stack([torch.zeros_like(logit["mu"]), logit["mu"] + logit["sigma"] * torch.randn_like(
            logit["mu"])]).detach()

    results = []
    for one_pass in (True, False):
        torch.manual_seed(2)  # the same a' and SDN samples u_i
        if space == "discrete":
            out = model(obs, mode="compute_actor_critic") if one_pass else two_pass(model, obs)
        else:
            out = (model.compute_actor_then_critic(obs, make_action) if one_pass
                   else two_pass(model, obs, make_action))
        results.append(outputs_and_grads(model, out))
    (out1, grads1), (out2, grads2) = results
    for a, b in zip(out1, out2):
        assert torch.equal(a, b)  # the forward pass is the same computation
    for a, b in zip(grads1, grads2):
        if share_encoder:  # the shared encoder's gradient is summed before its backward, not after: rounding only
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
        else:
            assert torch.equal(a, b)


def test_policy_loss_from_the_callers_log_probabilities_is_exact():
    g = torch.Generator().manual_seed(0)
    T, B, N = 5, 4, 3
    logits = torch.randn(T, B, N, generator=g, requires_grad=True)
    behaviour = torch.randn(T, B, N, generator=g)
    action = torch.randint(N, (T, B), generator=g)
    q, q_ret = torch.randn(T, B, N, generator=g), torch.randn(T, B, generator=g)
    values = (F.softmax(logits, -1) * q).sum(-1).detach()
    ref = A.acer_policy_loss_discrete(logits, behaviour, action, q, q_ret, 1.0, values)
    log_pi, log_mu = F.log_softmax(logits, -1), F.log_softmax(behaviour, -1)
    new = A.acer_policy_loss_discrete(log_pi, log_mu, action, q, q_ret, 1.0, values, normalized=True)
    for a, b in zip(ref, new):
        assert torch.equal(a, b)
    g_ref, = torch.autograd.grad(ref.loss.sum(), logits)
    g_new, = torch.autograd.grad(new.loss.sum(), logits)
    assert torch.equal(g_ref, g_new)
