"""Action masks in ACER's and discrete SAC's math (ding_lite/rl_utils/acer.py, sac.py), against slow references that
drop the masked actions entirely: softmaxes, values, ratios, losses and their gradients over the valid actions only,
computed row by row with explicit loops. The full-size masked computation must agree on the valid entries, give
exactly 0 (value and gradient) at the masked ones, and make no NaN or inf from the Q of a masked action (here +-inf
or NaN on purpose) or from 0 * log 0."""
import math

import pytest
import torch

from ding_lite.policy.sac.temperature import masked_target_entropy
from ding_lite.rl_utils import acer as A
from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils import mask_logits

T, B, N_ACT, GAMMA, C = 4, 3, 5, 0.9, 1.5


def random_mask(*shape, seed=0):
    """(..., N_ACT) bool, every row with at least one valid action, some with exactly one."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, N_ACT, generator=g) < 0.5
    first = torch.randint(N_ACT, shape, generator=g)
    mask.scatter_(-1, first.unsqueeze(-1), True)
    mask.view(-1, N_ACT)[0] = torch.nn.functional.one_hot(first.view(-1)[0], N_ACT).bool()  # one valid action
    return mask


def poison(q, mask):
    """Q with +inf, -inf and NaN at masked actions: none may reach any result."""
    bad = torch.tensor([math.inf, -math.inf, math.nan], dtype=q.dtype)
    idx = torch.arange(q.numel()).view(q.shape) % 3
    return torch.where(mask, q, bad[idx])


def valid_taken(mask, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.multinomial(mask.view(-1, N_ACT).double(), 1, generator=g).view(mask.shape[:-1])


# ------------------------------------------------------------------------------------------------------------ ACER
def ref_acer(logits, behaviour, q, q_target, action, mask):
    """Per step, over the valid actions only: V, rho(a_t), the loss (truncated + correction) to minimise, as a
    function of ``logits`` (autograd gives its gradient); every weight a constant."""
    V = torch.zeros(T, B, dtype=torch.float64)
    rho_taken = torch.zeros(T, B, dtype=torch.float64)
    loss = torch.zeros((), dtype=torch.float64)
    for t in range(T):
        for b in range(B):
            valid = torch.nonzero(mask[t, b]).flatten().tolist()
            log_pi = torch.log_softmax(logits[t, b, valid], -1)
            pi = log_pi.exp().detach()
            mu = torch.softmax(behaviour[t, b, valid], -1)
            qv = q[t, b, valid]
            v = (pi * qv).sum()
            V[t, b] = v
            rho = pi / mu
            i = valid.index(int(action[t, b]))
            rho_taken[t, b] = rho[i]
            loss = loss - min(C, float(rho[i])) * (q_target[t, b] - v) * log_pi[i]
            for j in range(len(valid)):
                w = max(0.0, 1.0 - C / float(rho[j]))
                loss = loss - pi[j] * w * (qv[j] - v) * log_pi[j]
    return V, rho_taken, loss


def ref_retrace(rewards, q_taken, V, c, last_v):
    """Q_ret over an unroll without episode ends, bootstrapping gamma V(x_T)."""
    out = torch.zeros(T, B, dtype=torch.float64)
    for b in range(B):
        for t in reversed(range(T)):
            after = last_v[b] if t == T - 1 else c[t + 1, b] * (out[t + 1, b] - q_taken[t + 1, b]) + V[t + 1, b]
            out[t, b] = rewards[t, b] + GAMMA * after
    return out


def acer_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = random_mask(T, B, seed=seed)
    logits = torch.randn(T, B, N_ACT, generator=g, dtype=torch.float64) * 2
    behaviour = torch.randn(T, B, N_ACT, generator=g, dtype=torch.float64) * 2
    q = torch.randn(T, B, N_ACT, generator=g, dtype=torch.float64)
    return mask, logits, behaviour, q, valid_taken(mask, seed), torch.randn(T, B, generator=g, dtype=torch.float64)


def test_masked_retrace_target_and_state_values_match_the_loops():
    mask, logits, behaviour, q, action, rewards = acer_inputs()
    last_mask = random_mask(B, seed=5)
    last_logits, last_q = torch.randn(B, N_ACT, dtype=torch.float64), torch.randn(B, N_ACT, dtype=torch.float64)
    V_ref, rho_ref, _ = ref_acer(logits, behaviour, q, torch.zeros(T, B, dtype=torch.float64), action, mask)
    last_ref = torch.stack([(torch.softmax(last_logits[b, last_mask[b]], -1) * last_q[b, last_mask[b]]).sum()
                            for b in range(B)])
    q_taken = q.gather(-1, action.unsqueeze(-1)).squeeze(-1)
    expected = ref_retrace(rewards, q_taken, V_ref, rho_ref.clamp(max=1.0), last_ref)

    V = A.acer_state_values(logits, poison(q, mask), mask)
    last_v = A.acer_state_values(last_logits, poison(last_q, last_mask), last_mask)
    log_pi = torch.log_softmax(mask_logits("discrete", logits, mask), -1)
    log_mu = torch.log_softmax(mask_logits("discrete", behaviour, mask), -1)
    rho = (log_pi - log_mu).gather(-1, action.unsqueeze(-1)).squeeze(-1).exp()
    bounds = A.acer_trace_boundaries(GAMMA, torch.zeros(T, B), torch.zeros(T, B),
                                     torch.cat([torch.zeros(T - 1, B, dtype=torch.float64), last_v[None]]))
    q_ret = A.acer_retrace_targets(rewards, q_taken, V, A.acer_trace_coef(rho), bounds.discounts, bounds.bootstrap)
    torch.testing.assert_close(V, V_ref)
    torch.testing.assert_close(last_v, last_ref)
    torch.testing.assert_close(rho, rho_ref)
    torch.testing.assert_close(q_ret, expected)
    # a terminal observation's mask may allow nothing: V is 0, not NaN
    assert A.acer_state_values(last_logits, last_q, torch.zeros(B, N_ACT, dtype=torch.bool)).eq(0).all()


@pytest.mark.parametrize("normalized", [False, True])
def test_masked_acer_policy_loss_and_its_gradient_match_the_loops(normalized):
    mask, logits, behaviour, q, action, q_target = acer_inputs(seed=3)
    ref_logits = logits.clone().requires_grad_(True)
    V_ref, _, ref_loss = ref_acer(ref_logits, behaviour, q, q_target, action, mask)
    ref_loss.backward()

    raw = logits.clone().requires_grad_(True)
    if normalized:  # as ACERPolicy calls it: masked log-softmaxes
        stats = torch.log_softmax(mask_logits("discrete", raw, mask), -1)
        beh = torch.log_softmax(mask_logits("discrete", behaviour, mask), -1)
    else:
        stats, beh = raw, behaviour
    out = A.acer_policy_loss_discrete(stats, beh, action, poison(q, mask), q_target, C, normalized=normalized,
                                      mask=mask)
    out.loss.sum().backward()
    torch.testing.assert_close(out.loss.sum(), ref_loss.detach())
    torch.testing.assert_close(raw.grad, ref_logits.grad)  # valid entries equal, masked ones 0 in both
    assert raw.grad[~mask].eq(0).all() and torch.isfinite(raw.grad).all()
    # g of the paper: minus the loss's gradient w.r.t. the logits, exactly 0 at masked actions
    torch.testing.assert_close(out.grad, -ref_logits.grad)
    assert out.grad[~mask].eq(0).all()
    # the explicit values V_t (what ACERPolicy passes) give the same
    again = A.acer_policy_loss_discrete(stats.detach(), beh, action, poison(q, mask), q_target, C, values=V_ref,
                                        normalized=normalized, mask=mask)
    torch.testing.assert_close(again.loss, out.loss.detach())


def test_masked_trust_region_stays_on_the_valid_actions():
    mask, logits, behaviour, q, action, q_target = acer_inputs(seed=4)
    avg = torch.randn(T, B, N_ACT, dtype=torch.float64)
    k = A.acer_kl_grad_categorical(avg, logits, mask)
    for t in range(T):
        for b in range(B):
            valid = mask[t, b]
            torch.testing.assert_close(k[t, b, valid], torch.softmax(logits[t, b, valid], -1)
                                       - torch.softmax(avg[t, b, valid], -1))
    assert k[~mask].eq(0).all()
    g = A.acer_policy_loss_discrete(logits, behaviour, action, poison(q, mask), q_target, C, mask=mask).grad
    z = A.acer_trust_region_update(g * 50, k, 0.01)  # a step large enough to be projected
    assert z[~mask].eq(0).all() and torch.isfinite(z).all()
    stats = mask_logits("discrete", logits, mask).masked_fill(~mask, 0.0).requires_grad_(True)
    A.acer_trust_region_loss(stats, z).sum().backward()
    assert stats.grad[~mask].eq(0).all()


# ------------------------------------------------------------------------------------------------- discrete SAC
def sac_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = random_mask(B, seed=seed)
    logits = torch.randn(B, N_ACT, generator=g, dtype=torch.float64) * 2
    q = torch.randn(2, B, N_ACT, generator=g, dtype=torch.float64)  # two critic replicas
    return mask, logits, q


def ref_soft_value(q, logits, alpha, mask):
    """Row by row, the masked actions removed: sum_a pi(a) (min_i Q_i(a) - alpha log pi(a)), and the entropy."""
    values, entropies = [], []
    for b in range(B):
        valid = torch.nonzero(mask[b]).flatten()
        log_pi = torch.log_softmax(logits[b, valid], -1)
        qmin = q[:, b, valid].min(0).values
        values.append((log_pi.exp() * (qmin - alpha * log_pi)).sum())
        entropies.append(-(log_pi.exp() * log_pi).sum())
    return torch.stack(values), torch.stack(entropies)


@pytest.mark.parametrize("alpha", [0.2, 5.0])  # alpha > 1: alpha log pi of a masked action would overflow
def test_masked_soft_value_actor_loss_and_entropy_match_the_valid_actions_only(alpha):
    mask, logits, q = sac_inputs()
    ref_logits = logits.clone().requires_grad_(True)
    ref_v, ref_h = ref_soft_value(q, ref_logits, alpha, mask)
    (-ref_v.mean()).backward()

    raw = logits.clone().requires_grad_(True)
    log_probs = torch.log_softmax(mask_logits("discrete", raw, mask), -1)
    poisoned = poison(q, mask.expand_as(q))
    loss = S.discrete_sac_actor_loss(poisoned, log_probs, alpha, mask)
    loss.backward()
    torch.testing.assert_close(S.discrete_soft_value(poisoned, log_probs.detach(), alpha, mask), ref_v.detach())
    torch.testing.assert_close(loss.detach(), -ref_v.mean().detach())
    torch.testing.assert_close(S.discrete_entropy(log_probs.detach(), mask), ref_h.detach())
    torch.testing.assert_close(raw.grad, ref_logits.grad)
    assert raw.grad[~mask].eq(0).all() and torch.isfinite(raw.grad).all()


def test_masked_critic_target_uses_the_next_state_mask_and_survives_an_empty_terminal_mask():
    mask, logits, q = sac_inputs(seed=2)
    mask[1] = False  # s' of row 1 is terminal and allows nothing
    reward, terminated, alpha = torch.tensor([0.5, 1.0, -0.2], dtype=torch.float64), torch.tensor([0., 1., 0.]), 0.3
    log_probs = torch.log_softmax(mask_logits("discrete", logits, mask), -1)
    y = S.discrete_sac_critic_target(reward, poison(q, mask.expand_as(q)), log_probs, alpha, GAMMA, terminated, mask)
    keep = [0, 2]
    expected = reward.clone()
    for b in keep:
        valid = torch.nonzero(mask[b]).flatten()
        lp = torch.log_softmax(logits[b, valid], -1)
        expected[b] += GAMMA * (lp.exp() * (q[:, b, valid].min(0).values - alpha * lp)).sum()
    torch.testing.assert_close(y, expected)


def test_the_target_entropy_scales_with_the_valid_actions():
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]], dtype=torch.bool)
    target = 0.5 * math.log(4)
    out = masked_target_entropy(target, 4, mask)
    torch.testing.assert_close(out, torch.tensor([target, 0.5 * math.log(2), 0.0]))
    assert masked_target_entropy(0.0, 1, mask[:, :1]).eq(0).all()
