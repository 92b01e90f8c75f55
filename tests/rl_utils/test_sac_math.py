import math

import numpy as np
import pytest
import torch

from ding_lite.rl_utils import (
    boltzmann_policy, clamp_log_alpha_, continuous_target_entropy, discrete_entropy, discrete_sac_actor_loss,
    discrete_sac_critic_target, discrete_soft_value, discrete_target_entropy, ensemble_min, gather_q,
    log_one_minus_tanh_sq, mixed_joint_log_prob, mixed_sac_actor_loss, mixed_sac_critic_target,
    sac_actor_loss, sac_alpha_loss, sac_alpha_loss_from_entropy, sac_critic_loss, sac_critic_target,
    squashed_gaussian_log_prob, squashed_gaussian_sample
)
from ding_lite.rl_utils.sac import SQUASHED_GAUSSIAN_MAX_ENTROPY

D64 = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed=0, dtype=D64):
    return torch.randn(*shape, generator=gen(seed), dtype=dtype)


# ----------------------------------------------------------------------------------------- slow, obvious references
def normal_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def ref_density_1d_by_cdf(a, mu, std, low, high, h=1e-6):
    """Density of a = shift + scale tanh(u), u ~ N(mu, std), at a, by a central difference of its CDF
    P(A <= a) = Phi((atanh((a - shift) / scale) - mu) / std)  (the map is increasing)."""
    scale, shift = (high - low) / 2, (high + low) / 2
    cdf = lambda x: normal_cdf((math.atanh((x - shift) / scale) - mu) / std)  # noqa: E731
    return (cdf(a + h) - cdf(a - h)) / (2 * h)


def ref_log_prob_by_jacobian(u, mu, std, low, high):
    """log p(a) = log N(u; mu, diag std^2) - log|det J| with J the autograd Jacobian of u -> a (one sample)."""
    low_t, high_t = torch.as_tensor(low, dtype=D64), torch.as_tensor(high, dtype=D64)
    f = lambda x: (high_t - low_t) / 2 * torch.tanh(x) + (high_t + low_t) / 2  # noqa: E731
    jac = torch.autograd.functional.jacobian(f, u)
    _, logabsdet = torch.linalg.slogdet(jac)
    gauss = torch.distributions.MultivariateNormal(mu, covariance_matrix=torch.diag(std ** 2)).log_prob(u)
    return gauss - logabsdet


def ref_min(qs):
    return min(qs)


# -------------------------------------------------------------------------------------------- squashed Gaussian
@pytest.mark.parametrize('low,high', [(-1.0, 1.0), (-2.0, 5.0), (0.0, 0.5)])
def test_squashed_log_prob_matches_cdf_difference_1d(low, high):
    mu, std = randn(6, 1, seed=1), randn(6, 1, seed=2).abs() + 0.3
    noise = randn(6, 1, seed=3)
    action, log_prob = squashed_gaussian_sample(mu, std, low=low, high=high, noise=noise)
    assert action.shape == (6, 1) and log_prob.shape == (6, )
    for b in range(6):
        ref = ref_density_1d_by_cdf(action[b, 0].item(), mu[b, 0].item(), std[b, 0].item(), low, high)
        assert math.isclose(log_prob[b].exp().item(), ref, rel_tol=1e-5)


def test_squashed_log_prob_matches_autograd_jacobian_multidim():
    B, D = 5, 4
    mu, log_std = randn(B, D, seed=4), 0.5 * randn(B, D, seed=5)
    low, high = torch.tensor([-1.0, -2.0, 0.0, 3.0], dtype=D64), torch.tensor([1.0, 2.0, 0.1, 7.0], dtype=D64)
    noise = randn(B, D, seed=6)
    action, log_prob = squashed_gaussian_sample(mu, log_std=log_std, low=low, high=high, noise=noise)
    u = mu + log_std.exp() * noise
    assert torch.all(action >= low) and torch.all(action <= high)
    for b in range(B):
        ref = ref_log_prob_by_jacobian(u[b], mu[b], log_std[b].exp(), low, high)
        torch.testing.assert_close(log_prob[b], ref)
    # the public log-prob function evaluated at u agrees with the sampler
    torch.testing.assert_close(squashed_gaussian_log_prob(u, mu, log_std.exp(), (high - low) / 2), log_prob)


def test_squashed_sample_std_and_log_std_agree_and_deterministic_mode():
    mu, log_std, noise = randn(3, 2, seed=7), randn(3, 2, seed=8), randn(3, 2, seed=9)
    a1, lp1 = squashed_gaussian_sample(mu, log_std.exp(), low=-3.0, high=1.0, noise=noise)
    a2, lp2 = squashed_gaussian_sample(mu, log_std=log_std, low=-3.0, high=1.0, noise=noise)
    torch.testing.assert_close(a1, a2)
    torch.testing.assert_close(lp1, lp2)
    a3, lp3 = squashed_gaussian_sample(mu, log_std=log_std, low=-3.0, high=1.0, deterministic=True)
    torch.testing.assert_close(a3, 2.0 * torch.tanh(mu) - 1.0)
    torch.testing.assert_close(lp3, squashed_gaussian_log_prob(mu, mu, log_std.exp(), 2.0))
    with pytest.raises(ValueError):
        squashed_gaussian_sample(mu, log_std.exp(), log_std=log_std)
    with pytest.raises(ValueError):
        squashed_gaussian_sample(mu)
    with pytest.raises(ValueError):
        squashed_gaussian_sample(mu, log_std.exp(), low=1.0, high=1.0)


def test_squashed_sample_uses_global_rng_when_no_noise():
    mu, std = torch.zeros(1000, 2), torch.ones(1000, 2)
    torch.manual_seed(0)
    a1, _ = squashed_gaussian_sample(mu, std)
    torch.manual_seed(0)
    a2, _ = squashed_gaussian_sample(mu, std)
    torch.testing.assert_close(a1, a2)
    assert a1.std() > 0.3 and abs(a1.mean()) < 0.1  # symmetric, spread out


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_squashed_log_prob_stable_for_saturated_tanh(dtype):
    # |u| = 20: tanh(u) == +-1 exactly in float32, so inverting tanh or log(1 - tanh^2) would give inf
    mu = torch.tensor([[20.0, -20.0]], dtype=dtype)
    std = torch.tensor([[1e-3, 1e-3]], dtype=dtype, requires_grad=True)
    mu.requires_grad_(True)
    action, log_prob = squashed_gaussian_sample(mu, std, noise=torch.zeros(1, 2, dtype=dtype))
    if dtype == torch.float32:
        assert action.abs().eq(1.0).all()
        assert torch.isinf(torch.log(1 - torch.tanh(mu.detach()) ** 2)).all()  # the naive form fails
    assert torch.isfinite(log_prob).all()
    # reference in float64 from u: log N(u; u, 1e-3) - 2 * log(1 - tanh^2(20)), with log(1 - tanh^2) via cosh
    log_sech_sq = -2 * math.log(math.cosh(20.0))
    ref = 2 * (-math.log(1e-3) - 0.5 * math.log(2 * math.pi)) - 2 * log_sech_sq
    assert math.isclose(log_prob.item(), ref, rel_tol=1e-6)
    log_prob.sum().backward()
    assert torch.isfinite(mu.grad).all() and torch.isfinite(std.grad).all()


def test_log_one_minus_tanh_sq_identity():
    u = torch.linspace(-8, 8, 101, dtype=D64)
    torch.testing.assert_close(log_one_minus_tanh_sq(u), torch.log(1 - torch.tanh(u) ** 2))
    big = torch.tensor([-50.0, 50.0, 300.0])
    torch.testing.assert_close(log_one_minus_tanh_sq(big), 2 * (math.log(2) - big.abs()))


def test_squashed_sample_is_reparameterised():
    mu = randn(4, 3, seed=10).requires_grad_(True)
    log_std = (0.3 * randn(4, 3, seed=11)).requires_grad_(True)
    noise = randn(4, 3, seed=12)
    action, _ = squashed_gaussian_sample(mu, log_std=log_std, low=-2.0, high=2.0, noise=noise)
    action.sum().backward()
    u = mu.detach() + log_std.detach().exp() * noise
    torch.testing.assert_close(mu.grad, 2.0 * (1 - torch.tanh(u) ** 2))
    torch.testing.assert_close(log_std.grad, 2.0 * (1 - torch.tanh(u) ** 2) * noise * log_std.detach().exp())


# ------------------------------------------------------------------------------------------------ critic targets
def test_continuous_critic_target_termination_truncation_and_ensemble_min():
    N, B = 3, 4
    reward, next_q, next_lp = randn(B, seed=13), randn(N, B, seed=14), randn(B, seed=15)
    alpha, gamma = 0.2, 0.9
    # row 0 terminated, row 1 truncated (time limit: terminated=False, next obs is the real final obs), 2-3 normal
    terminated = torch.tensor([True, False, False, False])
    y = sac_critic_target(reward, next_q, next_lp, alpha, gamma, terminated)
    for b in range(B):
        if terminated[b]:
            ref = reward[b].item()
        else:
            q_min = ref_min([next_q[i, b].item() for i in range(N)])
            ref = reward[b].item() + gamma * (q_min - alpha * next_lp[b].item())
        assert math.isclose(y[b].item(), ref, rel_tol=1e-12)
    assert y[0].item() == reward[0].item()
    assert y[1].item() != reward[1].item()
    # pre-reduced critics, float terminations and tensor alpha / gamma give the same numbers
    y2 = sac_critic_target(reward, next_q.min(0).values, next_lp, torch.tensor(alpha, dtype=D64),
                           torch.full((B, ), gamma, dtype=D64), terminated.double())
    torch.testing.assert_close(y, y2)


def test_critic_target_is_detached():
    next_q = randn(2, 3, seed=16).requires_grad_(True)
    next_lp = randn(3, seed=17).requires_grad_(True)
    log_alpha = torch.zeros((), dtype=D64, requires_grad=True)
    y = sac_critic_target(randn(3), next_q, next_lp, log_alpha.exp(), 0.99, torch.zeros(3))
    assert not y.requires_grad
    yd = discrete_sac_critic_target(randn(3), randn(2, 3, 5).requires_grad_(True),
                                    torch.log_softmax(randn(3, 5), -1).requires_grad_(True), log_alpha.exp(), 0.99,
                                    False)
    assert not yd.requires_grad


def test_discrete_critic_target_matches_enumeration():
    N, B, A = 2, 5, 4
    reward, next_q = randn(B, seed=18), randn(N, B, A, seed=19)
    next_log_probs = torch.log_softmax(randn(B, A, seed=20), dim=-1)
    alpha, gamma = 0.3, 0.95
    terminated = torch.tensor([0.0, 1.0, 0.0, 0.0, 1.0], dtype=D64)
    y = discrete_sac_critic_target(reward, next_q, next_log_probs, alpha, gamma, terminated)
    for b in range(B):
        v = 0.0
        for a in range(A):
            p = math.exp(next_log_probs[b, a].item())
            v += p * (ref_min([next_q[i, b, a].item() for i in range(N)]) - alpha * math.log(p))
        ref = reward[b].item() + gamma * (1 - terminated[b].item()) * v
        assert math.isclose(y[b].item(), ref, rel_tol=1e-10, abs_tol=1e-12)


# ---------------------------------------------------------------------------------------------------------- losses
def test_critic_loss_sums_replica_mse():
    import torch.nn.functional as F
    q, y = randn(2, 7, seed=21).requires_grad_(True), randn(7, seed=22).requires_grad_(True)
    loss = sac_critic_loss(q, y)
    torch.testing.assert_close(loss, F.mse_loss(q[0], y) + F.mse_loss(q[1], y))
    loss.backward()
    assert q.grad is not None and y.grad is None  # the target is never trained
    w = randn(7, seed=23).abs()
    torch.testing.assert_close(sac_critic_loss(q, y, w), sum(((q[i] - y) ** 2 * w).mean() for i in range(2)))
    torch.testing.assert_close(sac_critic_loss(q[0], y), F.mse_loss(q[0], y))


def test_gather_q():
    q, action = randn(3, 4, 5, seed=24), torch.tensor([0, 4, 2, 1])
    out = gather_q(q, action)
    assert out.shape == (3, 4)
    for i in range(3):
        for b in range(4):
            assert out[i, b] == q[i, b, action[b]]
    torch.testing.assert_close(gather_q(q[0], action), out[0])


def test_continuous_actor_loss_value_and_gradient_flow():
    """The actor loss reaches mu / log_std through the reparameterised action and log-prob, never alpha."""
    B, D = 6, 2
    mu = randn(B, D, seed=25).requires_grad_(True)
    log_std = (0.2 * randn(B, D, seed=26)).requires_grad_(True)
    log_alpha = torch.tensor(-1.0, dtype=D64, requires_grad=True)
    critic = torch.nn.Linear(D, 2).double()  # a toy twin critic Q_i(a) = w_i . a + c_i
    action, log_prob = squashed_gaussian_sample(mu, log_std=log_std, noise=randn(B, D, seed=27))
    q = critic(action).T  # (N=2, B)
    loss = sac_actor_loss(q, log_prob, log_alpha.exp())
    ref = sum(log_alpha.exp().item() * log_prob[b].item() - min(q[0, b].item(), q[1, b].item())
              for b in range(B)) / B
    assert math.isclose(loss.item(), ref, rel_tol=1e-12)
    loss.backward()
    assert mu.grad is not None and mu.grad.abs().sum() > 0
    assert log_std.grad is not None and log_std.grad.abs().sum() > 0
    assert log_alpha.grad is None
    # the critic target built from the same tensors has no graph at all
    y = sac_critic_target(randn(B), critic(action.detach()).T, log_prob, log_alpha.exp(), 0.9, False)
    assert not y.requires_grad


def test_discrete_actor_loss_matches_enumeration_and_leaves_critics_alone():
    N, B, A = 2, 3, 4
    logits = randn(B, A, seed=28).requires_grad_(True)
    q = randn(N, B, A, seed=29).requires_grad_(True)
    alpha = torch.tensor(0.4, dtype=D64, requires_grad=True)
    log_probs = torch.log_softmax(logits, dim=-1)
    loss = discrete_sac_actor_loss(q, log_probs, alpha)
    ref = 0.0
    for b in range(B):
        for a in range(A):
            p = math.exp(log_probs[b, a].item())
            ref += p * (0.4 * math.log(p) - ref_min([q[i, b, a].item() for i in range(N)]))
    assert math.isclose(loss.item(), ref / B, rel_tol=1e-10)
    loss.backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    assert q.grad is None and alpha.grad is None
    torch.testing.assert_close(-discrete_soft_value(q, log_probs, alpha).mean(), loss)


def test_boltzmann_policy_normalised_and_optimal():
    q, alpha = randn(5, 6, seed=30), 0.7
    probs, log_probs = boltzmann_policy(q, alpha)
    torch.testing.assert_close(probs.sum(-1), torch.ones(5, dtype=D64))
    torch.testing.assert_close(log_probs.exp(), probs)
    for b in range(5):
        z = sum(math.exp(q[b, a].item() / alpha) for a in range(6))
        for a in range(6):
            assert math.isclose(probs[b, a].item(), math.exp(q[b, a].item() / alpha) / z, rel_tol=1e-12)
    # its soft value is alpha * logsumexp(Q / alpha), the maximum over policies: any other policy does worse
    v = discrete_soft_value(q, log_probs, alpha)
    torch.testing.assert_close(v, alpha * torch.logsumexp(q / alpha, -1))
    other = torch.log_softmax(q / alpha + 0.3 * randn(5, 6, seed=31), -1)
    assert torch.all(discrete_soft_value(q, other, alpha) < v)
    # cold limit: greedy, with finite log-probs
    probs_cold, log_probs_cold = boltzmann_policy(q, 1e-4)
    assert torch.equal(probs_cold.argmax(-1), q.argmax(-1)) and torch.isfinite(log_probs_cold).all()


def test_discrete_entropy():
    log_probs = torch.log_softmax(randn(4, 3, seed=32), -1)
    torch.testing.assert_close(discrete_entropy(log_probs), torch.distributions.Categorical(logits=log_probs).entropy())
    uniform = torch.full((1, 5), -math.log(5), dtype=D64)
    torch.testing.assert_close(discrete_entropy(uniform), torch.tensor([math.log(5)], dtype=D64))


# ---------------------------------------------------------------------------------------------------- temperature
def test_alpha_loss_sign_and_fixed_point():
    target = -2.0

    def grad_of(loss_fn):
        log_alpha = torch.tensor(0.3, requires_grad=True)
        loss_fn(log_alpha).backward()
        return log_alpha.grad.item()

    # sampled log pi: entropy estimate = -mean(log pi)
    at_target = torch.tensor([1.5, 2.5])  # mean 2.0 -> entropy estimate -2.0 == target
    assert grad_of(lambda la: sac_alpha_loss(la, at_target, target)) == pytest.approx(0.0, abs=1e-7)
    low_entropy = torch.tensor([3.0, 4.0])  # entropy -3.5 < target: descend -> alpha goes up
    assert grad_of(lambda la: sac_alpha_loss(la, low_entropy, target)) < 0
    high_entropy = torch.tensor([0.0, -1.0])  # entropy 0.5 > target: alpha goes down
    assert grad_of(lambda la: sac_alpha_loss(la, high_entropy, target)) > 0
    assert grad_of(lambda la: sac_alpha_loss(la, low_entropy, target)) == pytest.approx(-(3.5 - 2.0))
    # exact entropy (discrete)
    h_target = 0.8
    assert grad_of(lambda la: sac_alpha_loss_from_entropy(la, torch.tensor([0.7, 0.9]), h_target)) == \
        pytest.approx(0.0, abs=1e-7)
    assert grad_of(lambda la: sac_alpha_loss_from_entropy(la, torch.tensor([0.1, 0.2]), h_target)) < 0
    assert grad_of(lambda la: sac_alpha_loss_from_entropy(la, torch.tensor([1.0, 1.2]), h_target)) > 0
    # the log-prob / entropy never receives gradient
    lp = torch.tensor([1.0, 2.0], requires_grad=True)
    sac_alpha_loss(torch.tensor(0.0, requires_grad=True), lp, target).backward()
    assert lp.grad is None


def test_alpha_learning_reaches_target_entropy_with_boltzmann_policy():
    """End to end: adapting log alpha with the exact-entropy loss drives the Boltzmann policy's entropy to target."""
    q = randn(8, 5, seed=33, dtype=torch.float32) * 2
    h_target = discrete_target_entropy(5, 0.6)
    for init in (-2.0, 2.0):  # from too cold and from too hot
        log_alpha = torch.tensor(init, requires_grad=True)
        for _ in range(60):  # plain gradient descent on log alpha
            _, log_probs = boltzmann_policy(q, log_alpha.exp())
            loss = sac_alpha_loss_from_entropy(log_alpha, discrete_entropy(log_probs), h_target)
            grad, = torch.autograd.grad(loss, log_alpha)
            with torch.no_grad():
                log_alpha -= 1.0 * grad
        _, log_probs = boltzmann_policy(q, log_alpha.exp())
        assert discrete_entropy(log_probs).mean().item() == pytest.approx(h_target, abs=1e-3)


def test_clamp_log_alpha_and_target_entropy_helpers():
    log_alpha = torch.tensor(3.0, requires_grad=True)
    assert clamp_log_alpha_(log_alpha, 1.0) is log_alpha and log_alpha.item() == 1.0 and log_alpha.requires_grad
    assert clamp_log_alpha_(log_alpha, None).item() == 1.0
    assert clamp_log_alpha_(torch.tensor(-5.0), 1.0).item() == -5.0
    assert continuous_target_entropy(6) == -6.0
    assert discrete_target_entropy(4, 0.5) == pytest.approx(0.5 * math.log(4))
    for bad in [(4, 0.0), (4, 1.0), (4, 1.5), (1, 0.5), (2.5, 0.5)]:
        with pytest.raises(ValueError):
            discrete_target_entropy(*bad)
    for bad in [0, -1, 1.5]:
        with pytest.raises(ValueError):
            continuous_target_entropy(bad)


def test_clamp_log_alpha_keeps_it_between_the_floor_and_the_cap():
    log_alpha = torch.tensor([-12.0, -3.0, 4.0], requires_grad=True)
    assert clamp_log_alpha_(log_alpha, 1.0, -10.0) is log_alpha and log_alpha.requires_grad
    assert log_alpha.tolist() == [-10.0, -3.0, 1.0]
    assert clamp_log_alpha_(torch.tensor([-12.0, 4.0]), None, -10.0).tolist() == [-10.0, 4.0]  # a floor alone
    assert clamp_log_alpha_(torch.tensor([-12.0, 4.0]), None, None).tolist() == [-12.0, 4.0]


def squashed_gaussian_entropy(mu, std):
    """H(tanh(u)), u ~ N(mu, std^2), for each of the stds (S,), by Gauss-Hermite quadrature: H(u) +
    E[log(1 - tanh(u)^2)]."""
    nodes, weights = (torch.tensor(x, dtype=D64) for x in np.polynomial.hermite_e.hermegauss(101))
    u = mu + std.unsqueeze(-1) * nodes
    return 0.5 * torch.log(2 * math.pi * math.e * std ** 2) + log_one_minus_tanh_sq(u) @ (weights / weights.sum())


def test_squashed_gaussian_max_entropy_is_the_largest_entropy_of_the_family():
    """The bound target entropies are checked against: max over (mu, std) of H(tanh(u)), per dimension, reached at
    mu = 0, std ~= 0.875, is SQUASHED_GAUSSIAN_MAX_ENTROPY (rounded up) and below log 2 (the uniform on [-1, 1])."""
    stds = torch.linspace(0.3, 3.0, 2701, dtype=D64)
    h = torch.stack([squashed_gaussian_entropy(mu, stds) for mu in (0.0, 0.1, 0.5, 1.0)])  # (4, S)
    best = h.max()
    assert h[0].max() == best and stds[h[0].argmax()].item() == pytest.approx(0.875, abs=0.01)
    assert best <= SQUASHED_GAUSSIAN_MAX_ENTROPY < best + 1e-5
    assert SQUASHED_GAUSSIAN_MAX_ENTROPY < math.log(2) - 0.009
    # the quadrature agrees with sampling the density ding_lite computes
    eps = torch.randn(400_000, 1, generator=gen(3), dtype=D64)
    _, log_prob = squashed_gaussian_sample(torch.zeros(1, dtype=D64), log_std=torch.full((1,), math.log(0.875),
                                                                                          dtype=D64), noise=eps)
    expected = squashed_gaussian_entropy(0.0, torch.tensor([0.875], dtype=D64)).item()
    assert -log_prob.mean().item() == pytest.approx(expected, abs=5e-3)


# ---------------------------------------------------------------------------------------------------------- mixed
def test_mixed_joint_log_prob_marginalises_to_the_continuous_density():
    B, D, K = 4, 2, 3
    mu, log_std, noise = randn(B, D, seed=34), 0.3 * randn(B, D, seed=35), randn(B, D, seed=36)
    a_c, lp_c = squashed_gaussian_sample(mu, log_std=log_std, low=-2.0, high=3.0, noise=noise)
    u = mu + log_std.exp() * noise
    q_sak = randn(B, K, seed=37) + a_c.sum(-1, keepdim=True)  # stands for Q(s, a_c, k)
    alpha_d = 0.5
    _, disc_log_probs = boltzmann_policy(q_sak, alpha_d)
    cont_density = [ref_log_prob_by_jacobian(u[b], mu[b], log_std[b].exp(), -2.0, 3.0).exp().item() for b in range(B)]
    total = [0.0] * B
    for k in range(K):
        joint = mixed_joint_log_prob(lp_c, disc_log_probs, torch.full((B, ), k))
        for b in range(B):
            z = sum(math.exp(q_sak[b, j].item() / alpha_d) for j in range(K))
            p_k = math.exp(q_sak[b, k].item() / alpha_d) / z
            assert math.isclose(joint[b].exp().item(), cont_density[b] * p_k, rel_tol=1e-9)
            total[b] += joint[b].exp().item()
    for b in range(B):  # summing the joint over k gives back the continuous density
        assert math.isclose(total[b], cont_density[b], rel_tol=1e-9)


def test_mixed_critic_target_matches_loop():
    N, B, K = 2, 5, 3
    reward, next_q = randn(B, seed=38), randn(N, B, K, seed=39)
    next_disc_lp = torch.log_softmax(randn(B, K, seed=40), -1)
    next_cont_lp = randn(B, seed=41)
    a_d, a_c, gamma = 0.3, 0.1, 0.9
    terminated = torch.tensor([False, True, False, False, False])
    y = mixed_sac_critic_target(reward, next_q, next_disc_lp, next_cont_lp, a_d, a_c, gamma, terminated)
    assert not y.requires_grad
    for b in range(B):
        v = -a_c * next_cont_lp[b].item()
        for k in range(K):
            p = math.exp(next_disc_lp[b, k].item())
            v += p * (ref_min([next_q[i, b, k].item() for i in range(N)]) - a_d * math.log(p))
        ref = reward[b].item() + (0.0 if terminated[b] else gamma * v)
        assert math.isclose(y[b].item(), ref, rel_tol=1e-10)
    # with a single discrete action and alpha_c = alpha_d it reduces to the continuous target
    y1 = mixed_sac_critic_target(reward, next_q[..., :1], torch.zeros(B, 1, dtype=D64), next_cont_lp, a_d, a_c, gamma,
                                 terminated)
    torch.testing.assert_close(y1, sac_critic_target(reward, next_q[..., 0], next_cont_lp, a_c, gamma, terminated))


def test_mixed_actor_loss_value_and_alf_gradient():
    """Value = mean(alpha_c log pi_c - sum_k p_k (Q_k - alpha_d log p_k)) with p Boltzmann; the gradient w.r.t. the
    continuous action equals ALF's: sum_k p_k dQ_k/da_c with p held fixed."""
    N, B, D, K = 2, 4, 3, 5
    torch.manual_seed(0)
    critic = torch.nn.Sequential(torch.nn.Linear(D, 16), torch.nn.Tanh(), torch.nn.Linear(16, N * K)).double()
    mu = randn(B, D, seed=42).requires_grad_(True)
    log_std = (0.2 * randn(B, D, seed=43)).requires_grad_(True)
    a_d, a_c = 0.3, 0.05

    def forward():
        action, lp = squashed_gaussian_sample(mu, log_std=log_std, noise=randn(B, D, seed=44))
        q = critic(action).view(B, N, K).transpose(0, 1)  # (N, B, K)
        return action, lp, q

    action, lp, q = forward()
    loss = mixed_sac_actor_loss(q, lp, a_d, a_c)
    ref = 0.0
    for b in range(B):
        qmin = [ref_min([q[i, b, k].item() for i in range(N)]) for k in range(K)]
        z = sum(math.exp(x / a_d) for x in qmin)
        ref += a_c * lp[b].item() - sum(math.exp(x / a_d) / z * (x - a_d * math.log(math.exp(x / a_d) / z))
                                        for x in qmin)
    assert math.isclose(loss.item(), ref / B, rel_tol=1e-10)
    g_mu, g_ls = torch.autograd.grad(loss, [mu, log_std])
    assert g_mu.abs().sum() > 0 and g_ls.abs().sum() > 0

    # ALF's form: probs detached, plus the continuous entropy term
    action, lp, q = forward()
    q_min = q.min(0).values
    probs = boltzmann_policy(q_min, a_d)[0].detach()
    alf_loss = (a_c * lp - (probs * q_min).sum(-1)).mean()
    g_mu_alf, g_ls_alf = torch.autograd.grad(alf_loss, [mu, log_std])
    torch.testing.assert_close(g_mu, g_mu_alf)
    torch.testing.assert_close(g_ls, g_ls_alf)


def test_ensemble_min_shapes():
    q = randn(3, 4, 5, seed=45)
    torch.testing.assert_close(ensemble_min(q), q.min(0).values)
    torch.testing.assert_close(ensemble_min(q, torch.zeros(4, 5)), q.min(0).values)
    assert torch.equal(ensemble_min(q[0], torch.zeros(4, 5)), q[0])  # already reduced: passed through
    with pytest.raises(ValueError):
        ensemble_min(q, torch.zeros(4))


def test_squashed_gaussian_action_is_the_sample_without_its_density():
    from ding_lite.rl_utils import sac as S
    mu, log_std = torch.randn(5, 3), torch.randn(5, 3).clamp(-2, 1)
    torch.manual_seed(7)
    action = S.squashed_gaussian_action(mu, log_std)
    torch.manual_seed(7)
    sampled, _ = S.squashed_gaussian_sample(mu, log_std=log_std)
    torch.testing.assert_close(action, sampled)
    torch.testing.assert_close(S.squashed_gaussian_action(mu, log_std, deterministic=True), torch.tanh(mu))
