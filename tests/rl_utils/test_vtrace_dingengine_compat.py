"""DI-engine 0.5.3's V-trace API (rl_utils.vtrace_dingengine_compat): against the paper's reference, against values
DI-engine produced, against from_importance_weights, and its gradients."""
import math

import pytest
import torch

from ding_lite.rl_utils import from_importance_weights
from ding_lite.rl_utils.vtrace_dingengine_compat import (
    compute_importance_weights, vtrace_advantage, vtrace_data, vtrace_error_continuous_action,
    vtrace_error_discrete_action, vtrace_nstep_return
)
from vtrace_reference import ref_from_importance_weights, ref_vtrace_1d


# -------------------------------------------------------------------------------------- DI-engine compatible API
def test_vtrace_nstep_return_and_advantage_vs_reference():
    g = torch.Generator().manual_seed(1)
    T, B, gamma, lam = 5, 3, 0.95, 0.9
    rhos, cs = torch.rand(T, B, generator=g, dtype=torch.float64) * 1.5, torch.rand(T, B, generator=g).double()
    reward, values = torch.randn(T, B, generator=g).double(), torch.randn(T + 1, B, generator=g).double()
    ret = vtrace_nstep_return(rhos, cs, reward, values, gamma, lam)
    for b in range(B):
        vs, _ = ref_vtrace_1d(rhos[:, b].tolist(), (lam * cs[:, b]).tolist(), [0.0] * T, [gamma] * T,
                              reward[:, b].tolist(), values[:-1, b].tolist(), values[-1, b].item())
        torch.testing.assert_close(ret[:, b], torch.tensor(vs, dtype=torch.float64))
    adv = vtrace_advantage(rhos, reward, ret, values[:-1], gamma)
    torch.testing.assert_close(adv, rhos * (reward + gamma * ret - values[:-1]))


def discrete_case(T=4, B=3, N=5, seed=0, dtype=torch.float64, weight=True):
    g = torch.Generator().manual_seed(seed)
    return vtrace_data(torch.randn(T, B, N, generator=g, dtype=dtype), torch.randn(T, B, N, generator=g, dtype=dtype),
                       torch.randint(0, N, (T, B), generator=g), torch.randn(T + 1, B, generator=g, dtype=dtype),
                       torch.randn(T, B, generator=g, dtype=dtype),
                       torch.rand(T, B, generator=g, dtype=dtype) if weight else None)


def continuous_case(T=4, B=3, N=2, seed=0, dtype=torch.float64, weight=True):
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    weight = torch.rand(T, B, generator=g, dtype=dtype) if weight else None
    return vtrace_data(dict(mu=rnd(T, B, N), sigma=rnd(T, B, N).exp()), dict(mu=rnd(T, B, N), sigma=rnd(T, B, N).exp()),
                       rnd(T, B, N), rnd(T + 1, B), rnd(T, B), weight)


def ref_losses(data, logp_t, logp_b, entropy, gamma, lambda_, rho_clip, c_clip, pg_clip):
    """The DI-engine definitions written out: targets from the paper's reference with a constant discount."""
    T, B = data.reward.shape
    vs, adv = ref_from_importance_weights((logp_t - logp_b).detach(), torch.full((T, B), gamma), data.reward,
                                          data.value[:-1], data.value[-1], rho_clip, pg_clip, c_clip, lambda_)
    w = torch.ones(T, B, dtype=torch.float64) if data.weight is None else data.weight
    return (-(logp_t * adv * w).mean(), ((data.value[:-1] - vs) ** 2 * w).mean(), (entropy * w).mean()), vs, adv


KWARGS = [{}, dict(gamma=0.9, lambda_=0.8, rho_clip_ratio=1.2, c_clip_ratio=0.9, rho_pg_clip_ratio=1.5)]


def full_kwargs(kw):
    return dict(gamma=kw.get('gamma', 0.99), lambda_=kw.get('lambda_', 0.95), rho_clip=kw.get('rho_clip_ratio', 1.0),
                c_clip=kw.get('c_clip_ratio', 1.0), pg_clip=kw.get('rho_pg_clip_ratio', 1.0))


@pytest.mark.parametrize('kw', KWARGS)
@pytest.mark.parametrize('weight', [True, False])
def test_vtrace_error_discrete_vs_reference(kw, weight):
    d = discrete_case(weight=weight)
    lsm = torch.log_softmax(d.target_output, -1)
    logp_t = lsm.gather(-1, d.action[..., None])[..., 0]
    logp_b = torch.log_softmax(d.behaviour_output, -1).gather(-1, d.action[..., None])[..., 0]
    expected, _, _ = ref_losses(d, logp_t, logp_b, -(lsm.exp() * lsm).sum(-1), **full_kwargs(kw))
    for got, exp in zip(vtrace_error_discrete_action(d, **kw), expected):
        torch.testing.assert_close(got, exp)


@pytest.mark.parametrize('kw', KWARGS)
@pytest.mark.parametrize('weight', [True, False])
def test_vtrace_error_continuous_vs_reference(kw, weight):
    d = continuous_case(weight=weight)

    def gauss_logp(o):
        z = (d.action - o['mu']) / o['sigma']
        return (-0.5 * z ** 2 - o['sigma'].log() - 0.5 * math.log(2 * math.pi)).sum(-1)

    entropy = (0.5 + 0.5 * math.log(2 * math.pi) + d.target_output['sigma'].log()).sum(-1)
    expected, _, _ = ref_losses(d, gauss_logp(d.target_output), gauss_logp(d.behaviour_output), entropy,
                                **full_kwargs(kw))
    for got, exp in zip(vtrace_error_continuous_action(d, **kw), expected):
        torch.testing.assert_close(got, exp)


# Values produced by DI-engine 0.5.3 (torch 2.13.0 CPU, float32) for these inputs; policy, value, entropy losses.
DI = {
    'tgt': [[[1.76, 0.4, 0.98], [2.24, 1.87, -0.98]], [[0.95, -0.15, -0.1], [0.41, 0.14, 1.45]],
            [[0.76, 0.12, 0.44], [0.33, 1.49, -0.21]]],
    'beh': [[[0.31, -0.85, -2.55], [0.65, 0.86, -0.74]], [[2.27, -1.45, 0.05], [-0.19, 1.53, 1.47]],
            [[0.15, 0.38, -0.89], [-1.98, -0.35, 0.16]]],
    'act': [[2, 2], [2, 0], [2, 1]],
    'value': [[-0.21, -0.08], [0.41, 0.12], [1.25, 1.42], [-0.74, -2.52]],
    'reward': [[0.62, 0.34], [0.67, 0.32], [0.78, 0.95]],
    'weight': [[0.66, 0.01], [0.62, 0.67], [0.97, 0.88]],
    'mu_t': [[[-0.69, 0.01], [-0.38, -0.04]], [[0.37, -0.04], [-0.3, -2.22]], [[0.72, 0.36], [1.08, 0.19]]],
    'sig_t': [[[1.53, 1.01], [1.24, 1.65]], [[0.78, 1.43], [1.74, 0.34]], [[0.81, 0.59], [1.12, 0.57]]],
    'mu_b': [[[-1.05, 1.01], [1.54, -0.4]], [[0.86, -0.23], [0.81, 0.29]], [[-0.54, 1.91], [-0.48, 1.44]]],
    'sig_b': [[[0.56, 1.5], [2.41, 1.63]], [[0.46, 1.1], [2.23, 0.49]], [[0.29, 0.36], [0.61, 1.66]]],
    'cact': [[[1.4, -0.65], [-0.26, -0.71]], [[-0.5, 0.06], [-0.49, -0.38]], [[0.26, -1.68], [-0.92, -0.12]]],
    'discrete_default': [-0.4232672154903412, 2.3807761669158936, 0.9209814071655273],
    'continuous_default': [-1.037953495979309, 1.1881128549575806, 2.762585401535034],
    'discrete_custom': [-0.47993922233581543, 2.375917911529541, 0.6058838367462158],
    'continuous_custom': [-1.5601787567138672, 1.1243774890899658, 1.6185979843139648],
    # vtrace_nstep_return(IS.clamp(max=1), IS.clamp(max=0.9), reward, value, 0.9, 0.8), IS of the discrete inputs
    'nstep_return': [[1.4094691276550293, -0.00757676362991333], [1.058872103691101, -0.17622411251068115],
                     [0.11399996280670166, -1.3179999589920044]],
}


@pytest.mark.parametrize('space', ['discrete', 'continuous'])
@pytest.mark.parametrize('name', ['default', 'custom'])
def test_matches_dingengine_fixtures(space, name):
    f = lambda k: torch.tensor(DI[k], dtype=torch.float32)  # noqa: E731
    kw, w = (KWARGS[1], f('weight')) if name == 'custom' else ({}, None)
    if space == 'discrete':
        d = vtrace_data(f('tgt'), f('beh'), torch.tensor(DI['act']), f('value'), f('reward'), w)
        losses = vtrace_error_discrete_action(d, **kw)
    else:
        d = vtrace_data(dict(mu=f('mu_t'), sigma=f('sig_t')), dict(mu=f('mu_b'), sigma=f('sig_b')), f('cact'),
                        f('value'), f('reward'), w)
        losses = vtrace_error_continuous_action(d, **kw)
    torch.testing.assert_close(torch.stack(list(losses)), f(f'{space}_{name}'), rtol=1e-6, atol=1e-6)
    if space == 'discrete':
        rho = compute_importance_weights(f('tgt'), f('beh'), torch.tensor(DI['act']))
        ret = vtrace_nstep_return(rho.clamp(max=1.0), rho.clamp(max=0.9), f('reward'), f('value'), 0.9, 0.8)
        torch.testing.assert_close(ret, f('nstep_return'), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('case', [discrete_case, continuous_case])
def test_dingengine_targets_equal_general_form(case):
    d, kw = case(), full_kwargs(KWARGS[1])
    space = 'discrete' if case is discrete_case else 'continuous'
    rho = compute_importance_weights(d.target_output, d.behaviour_output, d.action, space)
    ret = vtrace_nstep_return(rho.clamp(max=kw['rho_clip']), rho.clamp(max=kw['c_clip']), d.reward, d.value,
                              kw['gamma'], kw['lambda_'])
    out = from_importance_weights(rho.log(), torch.full_like(d.reward, kw['gamma']), d.reward, d.value[:-1],
                                  d.value[-1], kw['rho_clip'], kw['pg_clip'], kw['c_clip'], kw['lambda_'])
    torch.testing.assert_close(ret, out.vs)
    adv = vtrace_advantage(rho.clamp(max=kw['pg_clip']), d.reward, torch.cat([ret[1:], d.value[-1:]]), d.value[:-1],
                           kw['gamma'])
    torch.testing.assert_close(adv, out.pg_advantages)


# ------------------------------------------------------------------------------------------------------ gradients
def test_policy_and_value_gradients_by_hand():
    d = discrete_case(T=5, B=4, N=3)
    d = d._replace(target_output=d.target_output.clone().requires_grad_(), value=d.value.clone().requires_grad_())
    loss = vtrace_error_discrete_action(d, rho_clip_ratio=1.3)
    logits_grad, = torch.autograd.grad(loss.policy_loss, d.target_output)
    value_grad, = torch.autograd.grad(loss.value_loss, d.value)
    kw = full_kwargs(dict(rho_clip_ratio=1.3))
    lsm = torch.log_softmax(d.target_output.detach(), -1)
    logp_t, logp_b = (torch.log_softmax(o.detach(), -1).gather(-1, d.action[..., None])[..., 0]
                      for o in (d.target_output, d.behaviour_output))
    _, vs, adv = ref_losses(d._replace(value=d.value.detach()), logp_t, logp_b, logp_t, **kw)
    n = d.reward.numel()
    dlogp = torch.nn.functional.one_hot(d.action, 3).double() - lsm.exp()  # d log softmax(a) / d logits
    torch.testing.assert_close(logits_grad, -(adv * d.weight)[..., None] * dlogp / n)
    torch.testing.assert_close(value_grad[:-1], 2 * d.weight * (d.value[:-1].detach() - vs) / n)
    assert torch.all(value_grad[-1] == 0)  # the bootstrap row only enters the (gradient-free) targets


def test_gradcheck_building_blocks():
    g = torch.Generator().manual_seed(3)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).requires_grad_()  # noqa: E731
    rhos, cs, reward, values = r(4, 2).exp().detach().requires_grad_(), r(4, 2), r(4, 2), r(5, 2)
    assert torch.autograd.gradcheck(lambda *a: vtrace_nstep_return(*a, 0.9, 0.8), (rhos, cs, reward, values))
    tgt, beh, act = r(4, 2, 3), r(4, 2, 3), torch.randint(0, 3, (4, 2), generator=g)
    assert torch.autograd.gradcheck(lambda t: compute_importance_weights(t, beh, act, requires_grad=True), (tgt, ))
    with torch.no_grad():  # requires_grad=True builds the graph even inside no_grad, as in DI-engine
        assert compute_importance_weights(tgt, beh, act, requires_grad=True).requires_grad


@pytest.mark.parametrize('space', ['discrete', 'continuous'])
def test_gradcheck_losses_where_rhos_are_clipped(space):
    """The targets are constants of the loss (semi-gradient). Where every ratio is clipped (rho >> 1) they are also
    locally constant in the target output, so the numerical gradient of the whole loss must equal autograd's."""
    if space == 'discrete':
        d = discrete_case(N=3)
        tgt = torch.nn.functional.one_hot(d.action, 3).double() * 4.0 + 0.1 * d.target_output
        d = d._replace(behaviour_output=-tgt.detach())
        fn = lambda t: tuple(vtrace_error_discrete_action(d._replace(target_output=t)))  # noqa: E731
        inputs, target_output = (tgt.requires_grad_(), ), tgt
    else:
        d = continuous_case()
        mu, sigma = d.action + 0.1 * d.target_output['mu'], 0.5 + 0.1 * d.target_output['sigma']
        d = d._replace(behaviour_output=dict(mu=d.action + 3.0, sigma=torch.full_like(sigma, 2.0)))
        fn = lambda m, s: tuple(  # noqa: E731
            vtrace_error_continuous_action(d._replace(target_output=dict(mu=m, sigma=s))))
        inputs, target_output = (mu.requires_grad_(), sigma.requires_grad_()), dict(mu=mu, sigma=sigma)
    rho = compute_importance_weights(target_output, d.behaviour_output, d.action, space)
    assert rho.min() > 1.5  # far above every clip threshold (1.0), so eps-perturbations keep them clipped
    assert torch.autograd.gradcheck(fn, inputs)
