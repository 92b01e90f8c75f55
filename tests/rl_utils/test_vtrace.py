"""from_importance_weights (the V-trace IMPALA uses) against the paper's formula, and the action distributions."""
import itertools

import pytest
import torch

from ding_lite.rl_utils import VTraceReturns, from_importance_weights
from ding_lite.torch_utils import MultiCategorical, greedy_action, make_dist, sample_action
from vtrace_reference import ref_from_importance_weights


def random_unroll(shape, dtype=torch.float64, seed=0, p_done=0.2, gamma=0.9):
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    done = (torch.rand(*shape, generator=g) < p_done).to(dtype)
    return dict(log_rhos=rnd(*shape), discounts=gamma * (1 - done), rewards=rnd(*shape), values=rnd(*shape),
                bootstrap_value=rnd(*shape[1:]))



# ------------------------------------------------------------------------------------------ from_importance_weights
@pytest.mark.parametrize('shape', [(7, 3), (6, 2, 4)])
@pytest.mark.parametrize('clips', [(1.0, 1.0, 1.0, 1.0), (None, None, None, 1.0), (1.5, 0.7, 0.9, 0.8)])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_from_importance_weights_matches_paper(shape, clips, dtype):
    x = random_unroll(shape, dtype)
    assert (x['discounts'] == 0).any()
    rho_clip, pg_clip, c_clip, lam = clips
    out = from_importance_weights(**x, clip_rho_threshold=rho_clip, clip_pg_rho_threshold=pg_clip,
                                  clip_c_threshold=c_clip, lambda_=lam)
    assert isinstance(out, VTraceReturns) and out.vs.shape == shape and out.vs.dtype == dtype
    vs, adv = ref_from_importance_weights(*x.values(), rho_clip, pg_clip, c_clip, lam)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(out.vs.double(), vs, rtol=tol, atol=tol)
    torch.testing.assert_close(out.pg_advantages.double(), adv, rtol=tol, atol=tol)


def test_on_policy_vs_is_discounted_nstep_return():
    T, B, gamma = 6, 4, 0.9
    x = random_unroll((T, B), p_done=0.0, gamma=gamma)
    x['log_rhos'].zero_()
    out = from_importance_weights(**x, lambda_=1.0)
    r, boot = x['rewards'], x['bootstrap_value']
    for s in range(T):
        expected = sum(gamma ** k * r[s + k] for k in range(T - s)) + gamma ** (T - s) * boot
        torch.testing.assert_close(out.vs[s], expected)
    torch.testing.assert_close(out.pg_advantages, out.vs - x['values'])  # on-policy: vs_s = r_s + gamma vs_{s+1}


def test_no_leak_across_episode_end():
    T, B, t_done = 8, 3, 3
    x = random_unroll((T, B), p_done=0.0)
    x['discounts'][t_done, 1] = 0.0
    base = from_importance_weights(**x, clip_rho_threshold=None, clip_pg_rho_threshold=None, clip_c_threshold=None)
    y = {k: v.clone() for k, v in x.items()}
    for k in ('values', 'rewards', 'log_rhos'):
        y[k][t_done + 1:, 1] += 5.0
    y['bootstrap_value'][1] -= 7.0
    out = from_importance_weights(**y, clip_rho_threshold=None, clip_pg_rho_threshold=None, clip_c_threshold=None)
    assert torch.equal(out.vs[:t_done + 1, 1], base.vs[:t_done + 1, 1])
    assert torch.equal(out.pg_advantages[:t_done + 1, 1], base.pg_advantages[:t_done + 1, 1])
    assert not torch.equal(out.vs[t_done + 1:, 1], base.vs[t_done + 1:, 1])
    assert torch.equal(out.vs[:, [0, 2]], base.vs[:, [0, 2]])  # other columns untouched


def test_from_importance_weights_is_detached_and_checks_ranks():
    x = {k: v.clone().requires_grad_() for k, v in random_unroll((4, 2)).items()}
    out = from_importance_weights(**x)
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad
    with pytest.raises(ValueError):
        from_importance_weights(x['log_rhos'], x['discounts'], x['rewards'], x['values'], x['values'])


# ---------------------------------------------------------------------------------------------- distributions
def test_multi_categorical_vs_enumeration():
    nvec = (2, 3)
    logits = torch.randn(4, 5, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    dist = make_dist('multi_discrete', logits, nvec=nvec)
    assert isinstance(dist, MultiCategorical)
    p0, p1 = torch.softmax(logits[:, :2], -1), torch.softmax(logits[:, 2:], -1)
    joint = (p0[:, :, None] * p1[:, None, :]).reshape(4, 6)  # enumeration order = itertools.product
    actions = torch.tensor(list(itertools.product(range(2), range(3))))  # (6, H)
    logp = torch.stack([dist.log_prob(a.expand(4, 2)) for a in actions], -1)
    torch.testing.assert_close(logp.exp(), joint)
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(dist.entropy(), -(joint * joint.log()).sum(-1))
    assert torch.equal(dist.mode, actions[joint.argmax(-1)])
    assert torch.equal(greedy_action('multi_discrete', logits, nvec), dist.mode)
    assert sample_action('multi_discrete', logits, nvec).shape == (4, 2)
    s = dist.sample((1000, ))
    assert s.shape == (1000, 4, 2) and s.dtype == torch.long
    assert s[..., 0].max() <= 1 and s[..., 1].max() <= 2 and s.min() >= 0
    freq = torch.stack([(s == a).all(-1).double().mean(0) for a in actions], -1)
    assert (freq - joint).abs().max() < 0.08


def test_make_dist_and_greedy_action_other_spaces():
    logits = torch.randn(2, 3, 4)
    d = make_dist('discrete', logits)
    assert d.log_prob(torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3)
    assert torch.equal(greedy_action('discrete', logits), logits.argmax(-1))
    a = sample_action('discrete', logits.requires_grad_())
    assert a.shape == (2, 3) and a.dtype == torch.long and a.max() < 4
    out = dict(mu=torch.randn(2, 3, 2), sigma=torch.ones(2, 3, 2))
    d = make_dist('continuous', out)
    assert d.log_prob(out['mu']).shape == (2, 3) and d.entropy().shape == (2, 3)
    assert torch.equal(greedy_action('continuous', out), out['mu'])
    assert sample_action('continuous', out).shape == (2, 3, 2)
    for bad in (lambda: make_dist('box', logits), lambda: make_dist('multi_discrete', logits),
                lambda: MultiCategorical(logits, (2, 3))):
        with pytest.raises(ValueError):
            bad()
