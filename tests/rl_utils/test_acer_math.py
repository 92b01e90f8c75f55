import math

import pytest
import torch

from ding_lite.rl_utils import (
    AcerPolicyLoss, AcerTraceBoundaries, acer_critic_loss_continuous, acer_critic_loss_discrete,
    acer_kl_grad_categorical, acer_kl_grad_gaussian, acer_policy_loss_continuous, acer_policy_loss_discrete,
    acer_q_opc_targets, acer_retrace_targets, acer_state_values, acer_trace_boundaries, acer_trace_coef,
    acer_trust_region_loss, acer_trust_region_update, acer_value_target
)

D64 = torch.float64


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------------- slow, obvious references
def ref_retrace_1d(gamma, r, q, v, c, terminated, truncated, next_v):
    """Algorithm 2 of the paper on one column of Python floats, with the episode restarts of ACER's unrolls:
    walking backwards, Q_ret restarts from 0 at a terminated step and from V(next) at a truncated or the last step;
    then Q_ret <- r_t + gamma Q_ret is step t's target and Q_ret <- c_t (Q_ret - Q_t) + V_t is carried to t-1."""
    T = len(r)
    out = [0.0] * T
    q_ret = 0.0
    for t in reversed(range(T)):
        if terminated[t]:
            q_ret = 0.0
        elif truncated[t] or t == T - 1:
            q_ret = next_v[t]
        q_ret = r[t] + gamma * q_ret
        out[t] = q_ret
        q_ret = c[t] * (q_ret - q[t]) + v[t]
    return out


def ref_retrace(gamma, r, q, v, c, terminated, truncated, next_v):
    """ref_retrace_1d on every (B, ...) column; float64 tensor shaped like ``r``."""
    cols = lambda x: x.double().reshape(x.shape[0], -1).T.tolist()  # noqa: E731
    out = [ref_retrace_1d(gamma, *col) for col in zip(cols(r), cols(q), cols(v), cols(c), cols(terminated),
                                                      cols(truncated), cols(next_v))]
    return torch.tensor(out, dtype=D64).T.reshape(r.shape)


def random_unroll(shape, dtype=D64, seed=0, p_end=0.25):
    g = gen(seed)
    rnd = lambda: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    terminated = torch.rand(*shape, generator=g) < p_end
    truncated = torch.rand(*shape, generator=g) < p_end
    rhos = torch.exp(torch.randn(*shape, generator=g, dtype=dtype))
    return dict(rewards=rnd(), q_taken=rnd(), values=rnd(), rhos=rhos, terminated=terminated, truncated=truncated,
                next_values=rnd())


def retrace(x, gamma, coefs):
    b = acer_trace_boundaries(gamma, x['terminated'], x['truncated'], x['next_values'])
    return acer_retrace_targets(x['rewards'], x['q_taken'], x['values'], coefs, b.discounts, b.bootstrap)


# ----------------------------------------------------------------------------------------------------- trace coefs
def test_trace_coef_discrete_and_continuous():
    rho = torch.tensor([0.0, 0.25, 1.0, 4.0, float('inf')], dtype=D64)
    assert torch.equal(acer_trace_coef(rho), torch.tensor([0.0, 0.25, 1.0, 1.0, 1.0], dtype=D64))
    c = acer_trace_coef(rho, action_dim=2)
    torch.testing.assert_close(c, torch.tensor([0.0, 0.5, 1.0, 1.0, 1.0], dtype=D64))
    for d in (1, 3, 6):
        for x in [0.01, 0.3, 0.9, 1.0, 1.7, 50.0]:
            assert acer_trace_coef(torch.tensor(x, dtype=D64), action_dim=d).item() == pytest.approx(
                min(1.0, x ** (1.0 / d)), rel=1e-12)
    assert not acer_trace_coef(rho.clone().requires_grad_()).requires_grad
    with pytest.raises(ValueError):
        acer_trace_coef(rho, action_dim=0)


# ------------------------------------------------------------------------------------------------ retrace targets
@pytest.mark.parametrize('shape', [(9, 4), (7, 2, 3), (1, 3)])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('action_dim', [None, 3])
def test_retrace_matches_paper_algorithm(shape, dtype, action_dim):
    gamma = 0.9
    x = random_unroll(shape, dtype, seed=hash((shape, action_dim)) % 1000)
    x['terminated'][0, 0], x['truncated'][0, 0] = True, True  # both: counts as terminated
    c = acer_trace_coef(x['rhos'], action_dim)
    ends = x['terminated'] | x['truncated']
    ends[-1] = True
    x['next_values'][~(ends & ~x['terminated'])] = float('nan')  # rows never read
    out = retrace(x, gamma, c)
    assert out.shape == shape and out.dtype == dtype and not out.isnan().any()
    expected = ref_retrace(gamma, x['rewards'], x['q_taken'], x['values'], c, x['terminated'], x['truncated'],
                           torch.nan_to_num(x['next_values'], nan=0.0))
    tol = 1e-12 if dtype == D64 else 1e-5
    torch.testing.assert_close(out.double(), expected, rtol=tol, atol=tol)


def test_retrace_on_policy_and_monte_carlo():
    T, B, gamma = 6, 3, 0.95
    x = random_unroll((T, B), p_end=0.0)
    ones = torch.ones(T, B, dtype=D64)
    out = retrace(x, gamma, ones)
    r, q, v, boot = x['rewards'], x['q_taken'], x['values'], x['next_values'][-1]
    # c = 1: Q_ret_t = r_t + gamma (Q_ret_{t+1} - Q_{t+1} + V_{t+1}), Q_ret_{T-1} = r_{T-1} + gamma V(x_T)
    torch.testing.assert_close(out[-1], r[-1] + gamma * boot)
    for t in range(T - 1):
        torch.testing.assert_close(out[t], r[t] + gamma * (out[t + 1] - q[t + 1] + v[t + 1]))
    # Q(x, a) = V(x): the corrections cancel, Q_ret is the discounted return bootstrapped from V(x_T)
    mc = acer_retrace_targets(r, v, v, ones, torch.full((T, B), gamma, dtype=D64),
                              torch.cat([torch.zeros(T - 1, B, dtype=D64), gamma * boot[None]]))
    for s in range(T):
        expected = sum(gamma ** k * r[s + k] for k in range(T - s)) + gamma ** (T - s) * boot
        torch.testing.assert_close(mc[s], expected)
    torch.testing.assert_close(acer_q_opc_targets(r, q, v, *acer_trace_boundaries(
        gamma, x['terminated'], x['truncated'], x['next_values'])), out)


def test_retrace_zero_trace_is_one_step_target():
    T, B, gamma = 5, 2, 0.9
    x = random_unroll((T, B), p_end=0.0)
    out = retrace(x, gamma, torch.zeros(T, B, dtype=D64))  # c = 0: Q_ret_t = r_t + gamma V(x_{t+1})
    torch.testing.assert_close(out[:-1], x['rewards'][:-1] + gamma * x['values'][1:])


def test_termination_and_truncation_inside_one_unroll():
    T, B, gamma, t_term, t_trunc = 10, 2, 0.9, 2, 6
    x = random_unroll((T, B), p_end=0.0, seed=3)
    x['terminated'][t_term, 0] = True
    x['truncated'][t_trunc, 0] = True
    c = acer_trace_coef(x['rhos'])
    base = retrace(x, gamma, c)
    r, final_v = x['rewards'][:, 0], x['next_values'][t_trunc, 0]
    assert base[t_term, 0] == r[t_term]
    torch.testing.assert_close(base[t_trunc, 0], r[t_trunc] + gamma * final_v)
    torch.testing.assert_close(base[-1, 0], r[-1] + gamma * x['next_values'][-1, 0])
    # nothing after an episode end reaches the targets before it
    for end in (t_term, t_trunc):
        y = {k: v.clone() for k, v in x.items()}
        for key in ('rewards', 'q_taken', 'values', 'rhos'):
            y[key][end + 1:, 0] += 3.0
        y['next_values'][end + 1:, 0] = float('nan')
        y['values'][end + 1:, 0] = float('inf')
        out = retrace(y, gamma, acer_trace_coef(y['rhos']))
        assert torch.equal(out[:end + 1, 0], base[:end + 1, 0])
        assert torch.equal(out[:, 1], base[:, 1])
    # before the termination: the recursion as in the paper, with V(final) not involved
    for t in range(t_term):
        torch.testing.assert_close(base[t, 0], r[t] + gamma * (c[t + 1, 0] * (base[t + 1, 0] - x['q_taken'][t + 1, 0])
                                                              + x['values'][t + 1, 0]))
    # the truncated step's own value V(final) moves only the targets of its episode segment
    y = {k: v.clone() for k, v in x.items()}
    y['next_values'][t_trunc, 0] += 1.0
    moved = retrace(y, gamma, c)[:, 0] != base[:, 0]
    assert moved[t_term + 1:t_trunc + 1].all() and not moved[:t_term + 1].any() and not moved[t_trunc + 1:].any()


def test_trace_boundaries_values():
    term = torch.tensor([[0, 1, 0, 1, 0]], dtype=torch.bool).T
    trunc = torch.tensor([[0, 0, 1, 1, 0]], dtype=torch.bool).T
    nv = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]).T
    b = acer_trace_boundaries(0.5, term, trunc, nv)
    assert isinstance(b, AcerTraceBoundaries)
    assert b.discounts[:, 0].tolist() == [0.5, 0.0, 0.0, 0.0, 0.0]
    assert b.bootstrap[:, 0].tolist() == [0.0, 0.0, 1.5, 0.0, 2.5]


def test_retrace_detached_and_checks_shapes():
    x = random_unroll((4, 2))
    args = [x['rewards'], x['q_taken'], x['values'], acer_trace_coef(x['rhos'])]
    args = [a.clone().requires_grad_() for a in args]
    b = acer_trace_boundaries(0.9, x['terminated'], x['truncated'], x['next_values'].requires_grad_())
    assert not b.discounts.requires_grad and not b.bootstrap.requires_grad
    assert not acer_retrace_targets(*args, *b).requires_grad
    with pytest.raises(ValueError):
        acer_retrace_targets(*args, b.discounts[:, :1], b.bootstrap)
    with pytest.raises(ValueError):
        acer_trace_boundaries(0.9, x['terminated'], x['truncated'], x['next_values'][:-1])


# --------------------------------------------------------------------------------------------- discrete policy loss
def discrete_case(T=4, B=3, A=5, seed=0, scale=1.0):
    g = gen(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=D64)  # noqa: E731
    return dict(logits=scale * rnd(T, B, A), behaviour_logits=scale * rnd(T, B, A),
                actions=torch.randint(0, A, (T, B), generator=g), q_values=rnd(T, B, A), q_targets=rnd(T, B))


def ref_policy_loss_discrete(d, c):
    """Per-step loss with Python floats: -min(c, rho_a)(Qt - V) log pi_a - sum_b pi_b [1 - c/rho_b]_+ (Q_b - V) log pi_b
    and its gradient w.r.t. logits written per coordinate with d log pi_a / d l_j = [a == j] - pi_j."""
    T, B, A = d['logits'].shape
    loss, grad = torch.zeros(T, B, dtype=D64), torch.zeros(T, B, A, dtype=D64)
    for t in range(T):
        for b in range(B):
            lg, blg = d['logits'][t, b].tolist(), d['behaviour_logits'][t, b].tolist()
            zp, zm = sum(math.exp(x) for x in lg), sum(math.exp(x) for x in blg)
            pi, mu = [math.exp(x) / zp for x in lg], [math.exp(x) / zm for x in blg]
            q, a, qt = d['q_values'][t, b].tolist(), int(d['actions'][t, b]), float(d['q_targets'][t, b])
            v = sum(p * qq for p, qq in zip(pi, q))
            rho = [p / m for p, m in zip(pi, mu)]
            w = [min(c, rho[a]) * (qt - v) if i == a else 0.0 for i in range(A)]
            for i in range(A):
                w[i] += pi[i] * max(0.0, 1.0 - c / rho[i]) * (q[i] - v)
            loss[t, b] = -sum(w[i] * math.log(pi[i]) for i in range(A))
            for j in range(A):
                grad[t, b, j] = sum(w[i] * ((i == j) - pi[j]) for i in range(A))
    return loss, grad


@pytest.mark.parametrize('c', [0.5, 1.0, 10.0])
def test_discrete_policy_loss_and_grad_vs_reference(c):
    d = discrete_case(scale=1.5)
    logits = d['logits'].clone().requires_grad_()
    out = acer_policy_loss_discrete(logits, d['behaviour_logits'], d['actions'], d['q_values'], d['q_targets'], c)
    assert isinstance(out, AcerPolicyLoss) and out.loss.shape == (4, 3) and out.grad.shape == (4, 3, 5)
    assert not out.grad.requires_grad
    ref_loss, ref_grad = ref_policy_loss_discrete(d, c)
    torch.testing.assert_close(out.loss, ref_loss)
    torch.testing.assert_close(out.loss, out.truncated_loss + out.correction_loss)
    torch.testing.assert_close(out.grad, ref_grad)
    (autograd, ) = torch.autograd.grad(out.loss.sum(), logits)
    torch.testing.assert_close(-autograd, out.grad)
    torch.testing.assert_close(out.grad.sum(-1), torch.zeros(4, 3, dtype=D64))  # logit gradients are shift free


def test_discrete_correction_vanishes_when_ratios_below_c():
    d = discrete_case(scale=0.3, seed=1)
    rho = torch.softmax(d['logits'], -1) / torch.softmax(d['behaviour_logits'], -1)
    c = rho.max().item() * 1.01
    logits = d['logits'].clone().requires_grad_()
    out = acer_policy_loss_discrete(logits, d['behaviour_logits'], d['actions'], d['q_values'], d['q_targets'], c)
    assert torch.equal(out.correction_loss, torch.zeros_like(out.correction_loss))
    (g_corr, ) = torch.autograd.grad(out.correction_loss.sum(), logits, retain_graph=True)
    assert torch.equal(g_corr, torch.zeros_like(g_corr))
    # only the truncated term remains, with weight min(c, rho) = rho
    v = acer_state_values(d['logits'], d['q_values'])
    log_pi_a = torch.log_softmax(logits, -1).gather(-1, d['actions'][..., None])[..., 0]
    rho_a = rho.gather(-1, d['actions'][..., None])[..., 0]
    torch.testing.assert_close(out.loss, -(rho_a * (d['q_targets'] - v) * log_pi_a))
    # untruncated importance sampling (c_clip=None) gives the same here
    none = acer_policy_loss_discrete(logits, d['behaviour_logits'], d['actions'], d['q_values'], d['q_targets'], None)
    torch.testing.assert_close(none.loss, out.loss)
    torch.testing.assert_close(none.grad, out.grad)


@pytest.mark.parametrize('c', [0.3, 1.0, 2.0])
def test_discrete_truncation_plus_correction_is_unbiased(c):
    """E_{a~mu}[g(a, Q_target = Q(a))] = E_pi[grad log pi (Q - V)], enumerated over the actions of one state."""
    g = gen(7)
    A = 6
    logits, b_logits, q = torch.randn(A, generator=g, dtype=D64) * 2, torch.randn(A, generator=g, dtype=D64) * 2, \
        torch.randn(A, generator=g, dtype=D64)
    pi, mu = torch.softmax(logits, -1), torch.softmax(b_logits, -1)
    rho = pi / mu
    assert (rho > c).any() and (rho < c).any()
    # one row per taken action a (B = A), all in the same state
    out = acer_policy_loss_discrete(logits.expand(1, A, A), b_logits.expand(1, A, A), torch.arange(A)[None],
                                    q.expand(1, A, A), q[None], c)
    expected_mu = (mu[:, None] * out.grad[0]).sum(0)
    v = (pi * q).sum()
    on_policy = sum(pi[a] * (q[a] - v) * (torch.eye(A, dtype=D64)[a] - pi) for a in range(A))
    torch.testing.assert_close(expected_mu, on_policy)
    # the truncated term alone is biased here (untruncated importance sampling, c_clip=None, is not)
    rows = logits.expand(1, A, A).clone().requires_grad_()
    trunc = acer_policy_loss_discrete(rows, b_logits.expand(1, A, A), torch.arange(A)[None], q.expand(1, A, A),
                                      q[None], c).truncated_loss
    (g_trunc, ) = torch.autograd.grad(-trunc.sum(), rows)
    assert not torch.allclose((mu[:, None] * g_trunc[0]).sum(0), on_policy, atol=1e-3)
    untruncated = acer_policy_loss_discrete(logits.expand(1, A, A), b_logits.expand(1, A, A), torch.arange(A)[None],
                                            q.expand(1, A, A), q[None], None)
    torch.testing.assert_close((mu[:, None] * untruncated.grad[0]).sum(0), on_policy)


def test_discrete_values_argument_and_log_probs_as_logits():
    d = discrete_case(seed=2)
    base = acer_policy_loss_discrete(**d)
    v = acer_state_values(d['logits'], d['q_values'])
    with_v = acer_policy_loss_discrete(**d, values=v)
    torch.testing.assert_close(with_v.loss, base.loss)
    shifted = dict(d, logits=torch.log_softmax(d['logits'], -1), behaviour_logits=d['behaviour_logits'] + 3.0)
    out = acer_policy_loss_discrete(**shifted)
    torch.testing.assert_close(out.loss, base.loss)
    torch.testing.assert_close(out.grad, base.grad)
    with pytest.raises(ValueError):
        acer_policy_loss_discrete(**dict(d, actions=d['actions'][:, :1]))


# ------------------------------------------------------------------------------------------------------ trust region
def test_trust_region_projection_properties():
    g = gen(4)
    shape = (50, 7, 3)
    gv, kv = torch.randn(*shape, generator=g, dtype=D64), torch.randn(*shape, generator=g, dtype=D64)
    delta = 0.2
    z = acer_trust_region_update(gv, kv, delta)
    kg, kz = (kv * gv).sum(-1), (kv * z).sum(-1)
    active = kg > delta
    assert active.any() and (~active).any()
    assert (kz <= delta + 1e-12).all()
    torch.testing.assert_close(kz[active], torch.full_like(kz[active], delta))
    assert torch.equal(z[~active], gv[~active])
    assert torch.equal(acer_trust_region_update(gv, kv, 1e9), gv)
    # z - g is a non-positive multiple of k (KKT)
    coef = ((z - gv) * kv).sum(-1) / (kv * kv).sum(-1)
    torch.testing.assert_close(z - gv, coef[..., None] * kv)
    assert (coef <= 0).all()


@pytest.mark.parametrize('n', [2, 3])
def test_trust_region_is_the_constrained_minimiser(n):
    g = gen(n)
    for _ in range(20):
        gv, kv = torch.randn(n, generator=g, dtype=D64), torch.randn(n, generator=g, dtype=D64)
        delta = float(torch.rand(1, generator=g)) * float(kv @ gv).__abs__()
        z = acer_trust_region_update(gv, kv, delta)
        assert float(kv @ z) <= delta + 1e-12
        # brute force: no feasible point is closer to g
        cand = z + 0.5 * torch.randn(20000, n, generator=g, dtype=D64)
        feasible = cand[cand @ kv <= delta]
        assert ((feasible - gv).norm(dim=-1) >= (z - gv).norm() - 1e-12).all()


def test_trust_region_list_and_zero_k():
    g = gen(5)
    g_mu, g_sig, k_mu, k_sig = (torch.randn(4, 3, 2, generator=g, dtype=D64) for _ in range(4))
    z_mu, z_sig = acer_trust_region_update([g_mu, g_sig], [k_mu, k_sig], 0.1)
    z_cat = acer_trust_region_update(torch.cat([g_mu, g_sig], -1), torch.cat([k_mu, k_sig], -1), 0.1)
    torch.testing.assert_close(torch.cat([z_mu, z_sig], -1), z_cat)
    z = acer_trust_region_update(g_mu, torch.zeros_like(g_mu), -1.0)
    assert torch.equal(z, g_mu)
    with pytest.raises(ValueError):
        acer_trust_region_update([g_mu], [k_mu, k_sig], 0.1)


def test_kl_grad_categorical_vs_autograd():
    g = gen(6)
    avg, logits = torch.randn(3, 2, 5, generator=g, dtype=D64), torch.randn(3, 2, 5, generator=g, dtype=D64)
    logits.requires_grad_()
    p_avg = torch.softmax(avg, -1)
    kl = (p_avg * (torch.log(p_avg) - torch.log_softmax(logits, -1))).sum()
    (auto, ) = torch.autograd.grad(kl, logits)
    k = acer_kl_grad_categorical(avg, logits)
    assert not k.requires_grad
    torch.testing.assert_close(k, auto)


@pytest.mark.parametrize('wrt_log_sigma', [False, True])
def test_kl_grad_gaussian_vs_autograd(wrt_log_sigma):
    g = gen(8)
    rnd = lambda: torch.randn(3, 2, 4, generator=g, dtype=D64)  # noqa: E731
    avg_mu, avg_sigma, mu, log_sigma = rnd(), rnd().exp(), rnd().requires_grad_(), rnd().requires_grad_()
    sigma = log_sigma.exp()
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(avg_mu, avg_sigma),
                                           torch.distributions.Normal(mu, sigma)).sum()
    d_mu, d_log_sigma, d_sigma = torch.autograd.grad(kl, [mu, log_sigma, sigma])
    k_mu, k_sigma = acer_kl_grad_gaussian(avg_mu, avg_sigma, mu, sigma, wrt_log_sigma=wrt_log_sigma)
    torch.testing.assert_close(k_mu, d_mu)
    torch.testing.assert_close(k_sigma, d_log_sigma if wrt_log_sigma else d_sigma)


def test_trust_region_loss_backpropagates_z():
    g = gen(9)
    stats = [torch.randn(4, 3, 2, generator=g, dtype=D64).requires_grad_() for _ in range(2)]
    z = [torch.randn(4, 3, 2, generator=g, dtype=D64) for _ in range(2)]
    loss = acer_trust_region_loss(stats, z)
    assert loss.shape == (4, 3)
    grads = torch.autograd.grad(loss.sum(), stats)
    for gr, zz in zip(grads, z):
        torch.testing.assert_close(gr, -zz)
    single = acer_trust_region_loss(stats[0], z[0])
    torch.testing.assert_close(single, -(stats[0] * z[0]).sum(-1))


def test_discrete_trust_region_pipeline_matches_plain_loss_when_inactive():
    """Policy-author usage: with a loose trust region the surrogate moves the network exactly as the loss does; with
    a tight one the step on the statistics respects k^T z <= delta."""
    g = gen(10)
    T, B, OBS, A = 5, 3, 4, 3
    obs = torch.randn(T, B, OBS, generator=g, dtype=D64)
    net = torch.nn.Linear(OBS, A).double()
    avg_net = torch.nn.Linear(OBS, A).double()
    d = discrete_case(T, B, A, seed=11)
    logits = net(obs)
    out = acer_policy_loss_discrete(logits, d['behaviour_logits'], d['actions'], d['q_values'], d['q_targets'], 1.0)
    plain = torch.autograd.grad(out.loss.mean(), list(net.parameters()), retain_graph=True)
    with torch.no_grad():
        k = acer_kl_grad_categorical(avg_net(obs), logits)
    z = acer_trust_region_update(out.grad, k, 1e9)
    surrogate = torch.autograd.grad(acer_trust_region_loss(logits, z).mean(), list(net.parameters()),
                                    retain_graph=True)
    for a, b in zip(plain, surrogate):
        torch.testing.assert_close(a, b)
    z_tight = acer_trust_region_update(out.grad, k, 1e-3)
    assert ((k * z_tight).sum(-1) <= 1e-3 + 1e-12).all()
    assert not torch.allclose(z_tight, out.grad)


# ------------------------------------------------------------------------------------------------------- continuous
def gauss_logp(x, mu, sigma):
    return torch.distributions.Independent(torch.distributions.Normal(mu, sigma), 1).log_prob(x)


def continuous_case(T=4, B=3, D=2, seed=0):
    g = gen(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=D64)  # noqa: E731
    mu, log_sigma = rnd(T, B, D), 0.3 * rnd(T, B, D)
    b_mu, b_sigma = mu + 0.5 * rnd(T, B, D), (log_sigma + 0.3 * rnd(T, B, D)).exp()
    return dict(mu=mu, log_sigma=log_sigma, behaviour_mu=b_mu, behaviour_sigma=b_sigma,
                actions=b_mu + b_sigma * rnd(T, B, D), q_targets=rnd(T, B), values=rnd(T, B),
                sampled_actions=mu + log_sigma.exp() * rnd(T, B, D), q_sampled=rnd(T, B))


def test_value_target_vs_reference():
    g = gen(12)
    q_ret, q, v = (torch.randn(5, 3, generator=g, dtype=D64) for _ in range(3))
    rho = torch.rand(5, 3, generator=g, dtype=D64) * 3
    out = acer_value_target(q_ret, q, v, rho)
    for t in range(5):
        for b in range(3):
            expected = min(1.0, rho[t, b].item()) * (q_ret[t, b].item() - q[t, b].item()) + v[t, b].item()
            assert out[t, b].item() == pytest.approx(expected, abs=1e-14)
    assert not acer_value_target(q_ret, q.requires_grad_(), v, rho).requires_grad


@pytest.mark.parametrize('wrt_log_sigma', [False, True])
@pytest.mark.parametrize('c', [0.5, 1.2, 10.0, None])
def test_continuous_policy_loss_vs_reference_and_autograd(wrt_log_sigma, c):
    d = continuous_case()
    mu, log_sigma = d['mu'].clone().requires_grad_(), d['log_sigma'].clone().requires_grad_()
    sigma = log_sigma.exp()
    out = acer_policy_loss_continuous(mu, sigma, d['behaviour_mu'], d['behaviour_sigma'], d['actions'],
                                      d['q_targets'], d['values'], d['sampled_actions'], d['q_sampled'], c,
                                      wrt_log_sigma=wrt_log_sigma)
    assert out.loss.shape == (4, 3) and out.grad[0].shape == out.grad[1].shape == (4, 3, 2)
    logp = lambda x: gauss_logp(x, mu, sigma)  # noqa: E731
    blogp = lambda x: gauss_logp(x, d['behaviour_mu'], d['behaviour_sigma'])  # noqa: E731
    with torch.no_grad():
        rho = (logp(d['actions']) - blogp(d['actions'])).exp()
        rho_s = (logp(d['sampled_actions']) - blogp(d['sampled_actions'])).exp()
    w_trunc = rho if c is None else torch.clamp(rho, max=c)
    w_corr = torch.zeros_like(rho_s) if c is None else torch.clamp(1 - c / rho_s, min=0)
    if c == 1.2:  # both branches of both weights are exercised
        assert (rho > c).any() and (rho < c).any() and (w_corr > 0).any() and (w_corr == 0).any()
    torch.testing.assert_close(out.truncated_loss, -w_trunc * (d['q_targets'] - d['values']) * logp(d['actions']))
    torch.testing.assert_close(out.correction_loss,
                               -w_corr * (d['q_sampled'] - d['values']) * logp(d['sampled_actions']))
    g_mu, g_sigma, g_log_sigma = torch.autograd.grad(out.loss.sum(), [mu, sigma, log_sigma])
    torch.testing.assert_close(out.grad[0], -g_mu)
    torch.testing.assert_close(out.grad[1], -(g_log_sigma if wrt_log_sigma else g_sigma))


def test_continuous_truncation_plus_correction_is_unbiased():
    """1-d quadrature: E_{a~mu}[min(c, rho) score(a) (Q(a) - V)] + E_{a'~pi}[[1 - c/rho]_+ score(a') (Q(a') - V)]
    equals d E_pi[Q] / d(mu, sigma) for Q(a) = a^2 + a, i.e. (2 mu + 1, 2 sigma)."""
    m, s, bm, bs, c, v = 0.3, 0.8, -0.4, 1.3, 1.5, 0.2
    grid = torch.linspace(-15, 15, 30001, dtype=D64)
    da = (grid[1] - grid[0]).item()
    N = grid.numel()
    q = grid ** 2 + grid
    full = lambda x: torch.full((1, N, 1), x, dtype=D64)  # noqa: E731
    a = grid.view(1, N, 1)
    vv = torch.full((1, N), v, dtype=D64)
    args = (full(m), full(s), full(bm), full(bs), a)
    trunc = acer_policy_loss_continuous(*args, q[None], vv, a, vv, c)  # correction advantage 0
    corr = acer_policy_loss_continuous(*args, vv, vv, a, q[None], c)  # truncation advantage 0
    pdf = lambda x, mean, std: torch.exp(-0.5 * ((x - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi))  # noqa
    w_mu, w_pi = (pdf(grid, bm, bs) * da).view(1, N, 1), (pdf(grid, m, s) * da).view(1, N, 1)
    total = [(w_mu * gt + w_pi * gc).sum().item() for gt, gc in zip(trunc.grad, corr.grad)]
    assert total == pytest.approx([2 * m + 1, 2 * s], abs=1e-8)
    rho = pdf(grid, m, s) / pdf(grid, bm, bs)
    assert (rho > c).any()
    biased = [(w_mu * gt).sum().item() for gt in trunc.grad]
    assert biased != pytest.approx([2 * m + 1, 2 * s], abs=1e-3)


# ------------------------------------------------------------------------------------------------------------ critic
def test_critic_losses():
    g = gen(13)
    q_values = torch.randn(4, 3, 5, generator=g, dtype=D64, requires_grad=True)
    actions = torch.randint(0, 5, (4, 3), generator=g)
    q_ret = torch.randn(4, 3, generator=g, dtype=D64, requires_grad=True)
    loss = acer_critic_loss_discrete(q_values, actions, q_ret)
    q_a = q_values.gather(-1, actions[..., None])[..., 0]
    torch.testing.assert_close(loss, 0.5 * (q_ret - q_a) ** 2)
    gq, = torch.autograd.grad(loss.sum(), [q_values])
    expected = torch.zeros_like(q_values).scatter(-1, actions[..., None], (q_a - q_ret).detach()[..., None])
    torch.testing.assert_close(gq, expected)
    assert q_ret.grad is None
    q_t, v = (torch.randn(4, 3, generator=g, dtype=D64, requires_grad=True) for _ in range(2))
    v_tgt = torch.randn(4, 3, generator=g, dtype=D64, requires_grad=True)
    loss = acer_critic_loss_continuous(q_t, v, q_ret, v_tgt)
    torch.testing.assert_close(loss, 0.5 * (q_ret - q_t) ** 2 + 0.5 * (v_tgt - v) ** 2)
    grads = torch.autograd.grad(loss.sum(), [q_t, v, q_ret, v_tgt], allow_unused=True)
    torch.testing.assert_close(grads[0], (q_t - q_ret).detach())
    torch.testing.assert_close(grads[1], (v - v_tgt).detach())
    assert grads[2] is None and grads[3] is None


# ------------------------------------------------------------------------------------------------------------ shapes
@pytest.mark.parametrize('T,B,A', [(1, 1, 2), (6, 5, 4)])
def test_discrete_shapes_float32(T, B, A):
    d = {k: (v.float() if v.is_floating_point() else v) for k, v in discrete_case(T, B, A, seed=14).items()}
    out = acer_policy_loss_discrete(**d)
    assert out.loss.shape == out.truncated_loss.shape == out.correction_loss.shape == (T, B)
    assert out.grad.shape == (T, B, A) and out.loss.dtype == torch.float32
    assert acer_critic_loss_discrete(d['q_values'], d['actions'], d['q_targets']).shape == (T, B)
    assert acer_state_values(d['logits'], d['q_values']).shape == (T, B)
    k = acer_kl_grad_categorical(d['behaviour_logits'], d['logits'])
    assert acer_trust_region_update(out.grad, k, 1.0).shape == (T, B, A)


@pytest.mark.parametrize('D', [1, 6])
def test_continuous_shapes(D):
    d = continuous_case(5, 2, D, seed=15)
    out = acer_policy_loss_continuous(d['mu'], d['log_sigma'].exp(), d['behaviour_mu'], d['behaviour_sigma'],
                                      d['actions'], d['q_targets'], d['values'], d['sampled_actions'], d['q_sampled'])
    assert out.loss.shape == (5, 2) and [x.shape for x in out.grad] == [(5, 2, D)] * 2
    k = acer_kl_grad_gaussian(d['behaviour_mu'], d['behaviour_sigma'], d['mu'], d['log_sigma'].exp())
    z = acer_trust_region_update(list(out.grad), list(k), 1.0)
    assert isinstance(z, list) and [x.shape for x in z] == [(5, 2, D)] * 2
    rho = (gauss_logp(d['actions'], d['mu'], d['log_sigma'].exp()) -
           gauss_logp(d['actions'], d['behaviour_mu'], d['behaviour_sigma'])).exp()
    assert acer_trace_coef(rho, D).shape == (5, 2)
    assert acer_value_target(d['q_targets'], d['q_sampled'], d['values'], rho).shape == (5, 2)
    with pytest.raises(ValueError):
        acer_policy_loss_continuous(d['mu'], d['log_sigma'].exp(), d['behaviour_mu'], d['behaviour_sigma'],
                                    d['actions'][:-1], d['q_targets'], d['values'], d['sampled_actions'],
                                    d['q_sampled'])
