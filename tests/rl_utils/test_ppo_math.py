"""rl_utils.ppo against slow references written from the papers: GAE (Schulman et al., 2016, eq. 16) as an explicit
sum over l of (gamma lambda)^l delta_{t+l} stopping at episode ends, and PPO's clipped objective (Schulman et al., 2017,
eq. 7) in its piecewise form, sample by sample."""
import math

import pytest
import torch

from ding_lite.rl_utils import (
    GAEReturns, PPOPolicyLoss, from_importance_weights, gae, gae_next_value_rows, ppo_policy_loss, ppo_value_loss,
    weighted_mean
)

D64 = torch.float64


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------------- slow, obvious references
def ref_gae_1d(rewards, values, next_values, terminated, truncated, gamma, lambda_):
    """One column of Python floats. V(s_{t+1}) is 0 after a termination, next_values[t] after a truncation or at the
    last step, values[t+1] otherwise; A_t = sum_{lag>=0} (gamma lambda)^lag delta_{t+lag} up to the step that ends the
    episode (or the unroll)."""
    T = len(rewards)

    def value_after(t):
        if terminated[t]:
            return 0.0
        if truncated[t] or t == T - 1:
            return next_values[t]
        return values[t + 1]

    def ends_trace(t):
        return terminated[t] or truncated[t] or t == T - 1

    delta = [rewards[t] + gamma * value_after(t) - values[t] for t in range(T)]
    advantages = []
    for t in range(T):
        total = 0.0
        for lag in range(T - t):
            total += (gamma * lambda_) ** lag * delta[t + lag]
            if ends_trace(t + lag):
                break
        advantages.append(total)
    return advantages


def ref_gae(rewards, values, next_values, terminated, truncated, gamma, lambda_):
    """Runs :func:`ref_gae_1d` on every (B, ...) column; float64 advantages shaped like ``values``."""
    cols = lambda x: x.double().reshape(x.shape[0], -1).T.tolist()  # noqa: E731
    out = [ref_gae_1d(*col, gamma, lambda_) for col in
           zip(cols(rewards), cols(values), cols(next_values), cols(terminated), cols(truncated))]
    return torch.tensor(out, dtype=D64).T.reshape(values.shape)


def ref_clipped_objective(ratio, advantage, eps):
    """L^CLIP of one sample in the piecewise form of Figure 1 of the PPO paper: the ratio is capped at 1 + eps for
    A >= 0 and floored at 1 - eps for A < 0, never the other way."""
    return min(ratio, 1 + eps) * advantage if advantage >= 0 else max(ratio, 1 - eps) * advantage


def ref_value_error(v, v_old, ret, c):
    if c is None:
        return 0.5 * (v - ret) ** 2
    v_clipped = v_old + min(max(v - v_old, -c), c)
    return 0.5 * max((v - ret) ** 2, (v_clipped - ret) ** 2)


def ref_weighted_mean(xs, ws):
    return sum(w * x for x, w in zip(xs, ws)) / sum(ws)


# -------------------------------------------------------------------------------------------------------- GAE
def random_unroll(shape, dtype=D64, seed=0):
    g = gen(seed)
    rnd = lambda: torch.randn(*shape, generator=g, dtype=dtype)  # noqa: E731
    u = torch.rand(*shape, generator=g)
    terminated, truncated = u < 0.15, (u > 0.75) | (u < 0.05)  # some steps both: terminated wins
    rewards, values, next_values = rnd(), rnd(), rnd()
    read = (truncated & ~terminated).clone()
    read[-1] |= ~terminated[-1]
    next_values[~read] = float('nan')  # rows gae must never read
    return dict(rewards=rewards, values=values, next_values=next_values, terminated=terminated, truncated=truncated)


@pytest.mark.parametrize('shape', [(11, 5), (9, 3, 2)])
@pytest.mark.parametrize('lambda_', [0.0, 0.5, 0.95, 1.0])
@pytest.mark.parametrize('dtype', [torch.float32, D64])
def test_gae_matches_paper_definition(shape, lambda_, dtype):
    x = random_unroll(shape, dtype, seed=len(shape))
    inner_term, inner_trunc = x['terminated'][:-1], x['truncated'][:-1] & ~x['terminated'][:-1]
    assert inner_term.any() and inner_trunc.any() and (x['terminated'] & x['truncated']).any()
    out = gae(**x, gamma=0.9, lambda_=lambda_)
    assert isinstance(out, GAEReturns) and out.advantages.shape == shape and out.advantages.dtype == dtype
    expected = ref_gae(*x.values(), 0.9, lambda_)
    tol = 1e-12 if dtype == D64 else 1e-5
    torch.testing.assert_close(out.advantages.double(), expected, rtol=tol, atol=tol)
    torch.testing.assert_close(out.returns.double(), expected + x['values'].double(), rtol=tol, atol=tol)


def hand_unroll():
    """Two columns, gamma = 0.5: column 0 terminates at t = 1, column 1 is truncated at t = 1 with V(final) = 6;
    both bootstrap from V(x_T) = 8 at the end of the unroll."""
    col = lambda *v: torch.tensor(v, dtype=D64)  # noqa: E731
    two = lambda a, b: torch.stack([a, b], dim=1)  # noqa: E731
    rewards = col(1., 2., 3., 4.)
    values = col(10., 20., 30., 40.)
    flag = col(0., 1., 0., 0.).bool()
    none = torch.zeros(4, dtype=torch.bool)
    return dict(rewards=two(rewards, rewards), values=two(values, values),
                next_values=two(col(0., 99., 0., 8.), col(0., 6., 0., 8.)),
                terminated=two(flag, none), truncated=two(none, flag))


def test_gae_lambda_one_is_monte_carlo_return_with_bootstrap():
    out = gae(**hand_unroll(), gamma=0.5, lambda_=1.0)
    # column 0: R_1 = 2 (terminal), R_0 = 1 + 0.5 * 2; column 1: R_1 = 2 + 0.5 * 6, R_0 = 1 + 0.5 * 5;
    # both: R_3 = 4 + 0.5 * 8, R_2 = 3 + 0.5 * 8
    expected = torch.tensor([[2., 3.5], [2., 5.], [7., 7.], [8., 8.]], dtype=D64)
    torch.testing.assert_close(out.returns, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(out.advantages, expected - hand_unroll()['values'], rtol=0, atol=1e-12)


def test_gae_lambda_zero_is_td0():
    out = gae(**hand_unroll(), gamma=0.5, lambda_=0.0)
    # delta_t = r_t + 0.5 V(next) - V_t: t=0: 1 + 10 - 10; t=1: 2 + 0 - 20 | 2 + 3 - 20; t=2: 3 + 20 - 30; t=3: 4 + 4 - 40
    expected = torch.tensor([[1., 1.], [-18., -15.], [-7., -7.], [-32., -32.]], dtype=D64)
    torch.testing.assert_close(out.advantages, expected, rtol=0, atol=1e-12)


def test_truncation_bootstraps_from_final_value_and_termination_does_not():
    T, t_end, gamma = 6, 2, 0.9
    x = random_unroll((T, 2), seed=3)
    x['terminated'].zero_()
    x['truncated'].zero_()
    x['terminated'][t_end, 0] = True
    x['truncated'][t_end, 1] = True
    x['next_values'][t_end] = 100.0  # V(final_obs) in both columns; only the truncated one may use it
    x['next_values'][-1] = 0.0
    for k in ('rewards', 'values'):
        x[k][:, 1] = x[k][:, 0]
    out = gae(**x, gamma=gamma, lambda_=0.8)
    gap = out.returns[:, 1] - out.returns[:, 0]
    # step t_end: the truncated return has gamma V(final) on top; earlier steps carry it down the trace
    expected_gap = torch.tensor([(gamma * 0.8) ** (t_end - t) * gamma * 100.0 for t in range(t_end + 1)], dtype=D64)
    torch.testing.assert_close(gap[:t_end + 1], expected_gap, rtol=1e-12, atol=1e-12)
    assert torch.equal(gap[t_end + 1:], torch.zeros(T - t_end - 1, dtype=D64))  # the next episode does not see it
    # what comes after the cut (the reset observation's value, the next rewards) reaches neither column
    y = {k: v.clone() for k, v in x.items()}
    y['values'][t_end + 1] += 50.0
    y['rewards'][t_end + 1:] -= 3.0
    again = gae(**y, gamma=gamma, lambda_=0.8)
    assert torch.equal(again.advantages[:t_end + 1], out.advantages[:t_end + 1])


def test_gae_equals_on_policy_vtrace_with_the_vtrace_callers_convention():
    """APPO with pi == mu reduces to PPO's GAE: from_importance_weights fed as vtrace.py's docstring tells its callers
    (discounts gamma (1 - done), r_t + gamma V(final_obs_t) at a truncation) gives vs - V = GAE(lambda) advantages,
    and at lambda = 1 pg_advantages = GAE(1) advantages."""
    shape, gamma = (10, 4), 0.95
    x = random_unroll(shape, seed=5)
    boot = x['truncated'] & ~x['terminated']
    next_values = torch.where(torch.isnan(x['next_values']), torch.zeros_like(x['values']), x['next_values'])
    done = x['terminated'] | x['truncated']
    rewards = x['rewards'] + gamma * torch.where(boot, next_values, torch.zeros_like(next_values))
    for lambda_ in (0.7, 1.0):
        vt = from_importance_weights(torch.zeros(shape, dtype=D64), gamma * (~done).to(D64), rewards, x['values'],
                                     next_values[-1], None, None, None, lambda_=lambda_)
        out = gae(**x, gamma=gamma, lambda_=lambda_)
        torch.testing.assert_close(vt.vs, out.returns, rtol=1e-12, atol=1e-12)
        if lambda_ == 1.0:
            torch.testing.assert_close(vt.pg_advantages, out.advantages, rtol=1e-12, atol=1e-12)


def test_gae_is_detached_keyword_only_and_checks_shapes():
    x = random_unroll((5, 2))
    x['values'].requires_grad_()
    out = gae(**x, gamma=0.9, lambda_=0.9)
    assert not out.advantages.requires_grad and not out.returns.requires_grad
    with pytest.raises(TypeError):
        gae(x['rewards'], x['values'], x['next_values'], x['terminated'], x['truncated'], 0.9, 0.9)
    with pytest.raises(ValueError):
        gae(**{**x, 'truncated': x['truncated'][:-1]}, gamma=0.9, lambda_=0.9)


# --------------------------------------------------------------------------------------------- clipped objective
def random_policy_batch(n, seed, dtype=D64):
    g = gen(seed)
    logp_old = -torch.rand(n, generator=g, dtype=dtype) * 3
    logp_new = logp_old + 0.4 * torch.randn(n, generator=g, dtype=dtype)  # ratios spread across both clip edges
    return logp_new, logp_old, torch.randn(n, generator=g, dtype=dtype)


@pytest.mark.parametrize('eps', [0.1, 0.2, 0.3])
def test_clipped_objective_matches_scalar_loop(eps):
    logp_new, logp_old, adv = random_policy_batch(64, seed=int(eps * 10))
    out = ppo_policy_loss(logp_new, logp_old, adv, eps)
    assert isinstance(out, PPOPolicyLoss)
    ratios = [math.exp(a - b) for a, b in zip(logp_new.tolist(), logp_old.tolist())]
    assert min(ratios) < 1 - eps and max(ratios) > 1 + eps
    expected = -sum(ref_clipped_objective(r, a, eps) for r, a in zip(ratios, adv.tolist())) / len(ratios)
    assert out.loss.item() == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert out.clip_fraction.item() == pytest.approx(sum(abs(r - 1) > eps for r in ratios) / len(ratios), abs=1e-15)
    assert out.approx_kl.item() == pytest.approx(sum(r - 1 - math.log(r) for r in ratios) / len(ratios), rel=1e-12)
    assert not out.clip_fraction.requires_grad and not out.approx_kl.requires_grad


# (ratio, advantage, expected d loss / d logp_new) with eps = 0.2: the loss is -r A on the unclipped branch, whose
# derivative w.r.t. log r is -r A, and constant (gradient 0) on the clipped one.
GRADIENT_CASES = [
    (1.0, 2.0, -2.0),          # at the old policy: inside the range
    (1.1, 2.0, -2.2),          # inside, A > 0
    (0.9, -1.5, 1.35),         # inside, A < 0
    (1.19, 2.0, -2.38),        # just inside the upper edge
    (1.21, 2.0, 0.0),          # just past it, A > 0: clipped, no push further
    (1.5, 2.0, 0.0),
    (0.79, -1.5, 0.0),         # just past the lower edge, A < 0: clipped
    (0.5, -1.5, 0.0),
    (0.5, 2.0, -1.0),          # below the range with A > 0: unclipped, pulled back up
    (0.79, 2.0, -1.58),
    (1.5, -1.5, 2.25),         # above the range with A < 0: unclipped, pulled back down
    (1.21, -1.5, 1.815),
    (1.5, 0.0, 0.0),
]


@pytest.mark.parametrize('ratio,adv,grad', GRADIENT_CASES)
def test_clipped_objective_gradient_at_the_clip_edges(ratio, adv, grad):
    logp_old = torch.tensor([-1.0], dtype=D64)
    logp_new = (logp_old + math.log(ratio)).requires_grad_()
    loss = ppo_policy_loss(logp_new, logp_old, torch.tensor([adv], dtype=D64), 0.2).loss
    (got,) = torch.autograd.grad(loss, logp_new)
    assert got.item() == pytest.approx(grad, abs=1e-12)


@pytest.mark.parametrize('edge,adv', [(1.2, 2.0), (0.8, -1.5), (1.2, -1.5), (0.8, 2.0)])
def test_clipped_objective_gradient_exactly_on_an_edge_is_a_subgradient(edge, adv):
    logp_old = torch.zeros(1, dtype=D64)
    logp_new = torch.full((1,), math.log(edge), dtype=D64, requires_grad=True)
    (got,) = torch.autograd.grad(ppo_policy_loss(logp_new, logp_old, torch.tensor([adv], dtype=D64), 0.2).loss,
                                 logp_new)
    unclipped = -edge * adv
    assert min(0.0, unclipped) - 1e-12 <= got.item() <= max(0.0, unclipped) + 1e-12


def test_policy_loss_gradcheck_away_from_the_kinks():
    logp_new, logp_old, adv = random_policy_batch(32, seed=7)
    ratio = (logp_new - logp_old).exp()
    keep = ((ratio - 0.8).abs() > 1e-3) & ((ratio - 1.2).abs() > 1e-3)
    logp_new, logp_old, adv = logp_new[keep].requires_grad_(), logp_old[keep], adv[keep]
    weights = torch.rand(logp_new.shape, generator=gen(8), dtype=D64)
    assert torch.autograd.gradcheck(lambda lp: ppo_policy_loss(lp, logp_old, adv, 0.2, weights).loss, (logp_new,))
    # and the gradient does not reach logp_old or the advantages
    logp_old_, adv_ = logp_old.clone().requires_grad_(), adv.clone().requires_grad_()
    ppo_policy_loss(logp_new, logp_old_, adv_, 0.2).loss.backward()
    assert logp_old_.grad is None and adv_.grad is None


def test_approx_kl_estimates_kl_old_to_new():
    """mean over a ~ pi_old of (r - 1) - log r approaches KL(pi_old || pi), not KL(pi || pi_old)."""
    g = gen(9)
    old = torch.distributions.Categorical(logits=torch.tensor([0.0, 0.0, -3.0], dtype=D64))
    new = torch.distributions.Categorical(logits=torch.tensor([2.0, -1.0, -1.0], dtype=D64))
    actions = torch.multinomial(old.probs, 50_000, replacement=True, generator=g)
    est = ppo_policy_loss(new.log_prob(actions), old.log_prob(actions), torch.zeros(50_000, dtype=D64), 0.2)
    forward, reverse = torch.distributions.kl_divergence(old, new).item(), torch.distributions.kl_divergence(new, old)
    assert est.approx_kl.item() == pytest.approx(forward, rel=0.02)
    assert abs(forward - reverse.item()) > 0.3 * forward  # the two directions are told apart here


# -------------------------------------------------------------------------------------------------- value loss
@pytest.mark.parametrize('clip_value', [None, 0.2, 1.0])
def test_value_loss_matches_scalar_loop(clip_value):
    g = gen(11)
    old_values, returns = torch.randn(50, generator=g, dtype=D64), torch.randn(50, generator=g, dtype=D64)
    values = old_values + 0.6 * torch.randn(50, generator=g, dtype=D64)
    loss = ppo_value_loss(values, old_values, returns, clip_value)
    expected = sum(ref_value_error(v, o, r, clip_value) for v, o, r in
                   zip(values.tolist(), old_values.tolist(), returns.tolist())) / 50
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def test_value_loss_without_clipping_is_half_mse_and_clipping_changes_it():
    g = gen(12)
    values, old_values, returns = (torch.randn(40, generator=g, dtype=D64) for _ in range(3))
    plain = ppo_value_loss(values, None, returns, None)
    torch.testing.assert_close(plain, 0.5 * torch.nn.functional.mse_loss(values, returns), rtol=1e-14, atol=0)
    assert ppo_value_loss(values, old_values, returns, 0.1).item() > plain.item()  # the max never lowers it


@pytest.mark.parametrize('value,grad', [
    (0.1, -0.9),    # within c of V_old: plain gradient v - R
    (0.5, 0.0),     # moved past c towards R: the clipped error (0.2 - 1)^2 is larger, gradient 0
    (1.5, 0.0),     # overshot R by less than the clipped error: still the clipped branch
    (-0.5, -1.5),   # moved away from R: the unclipped error is larger, gradient v - R
])
def test_value_clipping_gradient(value, grad):
    v = torch.tensor([value], dtype=D64, requires_grad=True)
    loss = ppo_value_loss(v, torch.zeros(1, dtype=D64), torch.ones(1, dtype=D64), clip_value=0.2)
    (got,) = torch.autograd.grad(loss, v)
    assert got.item() == pytest.approx(grad, abs=1e-12)


def test_value_loss_gradcheck_and_needs_old_values_to_clip():
    g = gen(13)
    old_values, returns = torch.randn(20, generator=g, dtype=D64), torch.randn(20, generator=g, dtype=D64)
    values = (old_values + torch.randn(20, generator=g, dtype=D64)).requires_grad_()
    assert ((values - old_values).abs() - 0.3).abs().min() > 1e-3
    assert torch.autograd.gradcheck(lambda v: ppo_value_loss(v, old_values, returns, 0.3), (values,))
    with pytest.raises(ValueError):
        ppo_value_loss(values, None, returns, 0.3)


# ------------------------------------------------------------------------------------------- weights and masks
def test_mask_equals_the_loss_over_the_kept_entries():
    T, B = 8, 3
    logp_new, logp_old, adv = (t.view(T, B) for t in random_policy_batch(T * B, seed=14))
    g = gen(15)
    old_values, returns = torch.randn(T, B, generator=g, dtype=D64), torch.randn(T, B, generator=g, dtype=D64)
    values = old_values + 0.5 * torch.randn(T, B, generator=g, dtype=D64)
    mask = torch.ones(T, B, dtype=torch.bool)
    mask[5:, 0] = False  # padded sequence ends
    mask[2:, 2] = False
    logp_new[~mask] += 3.0  # padding holds (finite) garbage
    kept = lambda x: x[mask]  # noqa: E731
    masked = ppo_policy_loss(logp_new, logp_old, adv, 0.2, weights=mask)
    dense = ppo_policy_loss(kept(logp_new), kept(logp_old), kept(adv), 0.2)
    for a, b in zip(masked, dense):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-15)
    assert masked.loss.item() != pytest.approx(ppo_policy_loss(logp_new, logp_old, adv, 0.2).loss.item())
    for clip_value in (None, 0.2):
        torch.testing.assert_close(ppo_value_loss(values, old_values, returns, clip_value, weights=mask.float()),
                                   ppo_value_loss(kept(values), kept(old_values), kept(returns), clip_value),
                                   rtol=1e-12, atol=1e-15)
    lp = logp_new.clone().requires_grad_()
    ppo_policy_loss(lp, logp_old, adv, 0.2, weights=mask).loss.backward()
    assert torch.equal(lp.grad[~mask], torch.zeros(int((~mask).sum()), dtype=D64))


def test_per_sample_weights_are_a_weighted_mean():
    logp_new, logp_old, adv = random_policy_batch(30, seed=16)
    w = torch.rand(30, generator=gen(17), dtype=D64) * 3
    out = ppo_policy_loss(logp_new, logp_old, adv, 0.2, weights=w)
    ratios = [math.exp(a - b) for a, b in zip(logp_new.tolist(), logp_old.tolist())]
    terms = [-ref_clipped_objective(r, a, 0.2) for r, a in zip(ratios, adv.tolist())]
    assert out.loss.item() == pytest.approx(ref_weighted_mean(terms, w.tolist()), rel=1e-12)
    assert weighted_mean(torch.ones(4), torch.zeros(4)).item() == 0.0  # nothing kept: 0, not NaN


def test_gae_reads_the_next_value_only_after_a_truncation_and_at_the_unroll_end():
    """Env 0: terminated at t=1, truncated at t=3 (and terminated and truncated at once at t=2: a termination);
    env 1: nothing ends, so only its last step bootstraps; env 2: its last step terminates, so none does."""
    T = 5
    terminated = torch.zeros(T, 3, dtype=torch.bool)
    truncated = torch.zeros(T, 3, dtype=torch.bool)
    terminated[1, 0] = terminated[2, 0] = truncated[2, 0] = truncated[3, 0] = True
    terminated[T - 1, 2] = True
    want = torch.zeros(T, 3, dtype=torch.bool)
    want[3, 0] = want[T - 1, 0] = want[T - 1, 1] = True
    assert torch.equal(gae_next_value_rows(terminated, truncated), want)
    # the rows it names are the only ones gae reads: NaN elsewhere changes nothing
    rewards, values = torch.rand(T, 3, dtype=D64), torch.rand(T, 3, dtype=D64)
    next_values = torch.where(want, torch.rand(T, 3, dtype=D64), torch.full((T, 3), float("nan"), dtype=D64))
    out = gae(rewards, values, next_values, terminated=terminated, truncated=truncated, gamma=0.9, lambda_=0.8)
    assert torch.isfinite(out.advantages).all()
