"""Action distributions: sampling frequencies (Gumbel-max, multi-discrete), greedy actions, MultiCategorical maths."""
import itertools

import pytest
import torch

from ding_lite.torch_utils import MultiCategorical, epsilon_greedy, greedy_action, make_dist, sample_action

DRAWS = 20_000
# chi-square quantiles at p = 1e-3 (a correct sampler fails with probability 0.1%; the seeds are fixed anyway)
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}


def chi_square(counts: torch.Tensor, probs: torch.Tensor) -> float:
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_discrete_sample_frequencies_per_row():
    torch.manual_seed(0)
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.7, 0.05, 0.05, 0.2]])
    logit = probs.log() + torch.tensor([[3.0], [-2.0]])  # unnormalised: a shift per row changes nothing
    action = sample_action("discrete", logit.unsqueeze(1).expand(2, DRAWS, 4))
    assert action.shape == (2, DRAWS) and action.dtype == torch.int64
    for row in range(2):
        counts = torch.bincount(action[row], minlength=4).float()
        assert chi_square(counts, probs[row]) < CHI2_999[3], counts


def test_discrete_sample_never_picks_a_masked_action_and_handles_large_logits():
    torch.manual_seed(1)
    logit = torch.tensor([0.0, float("-inf"), 0.0, float("-inf")]).expand(DRAWS, 4)
    action = sample_action("discrete", logit)
    counts = torch.bincount(action, minlength=4).float()
    assert counts[1] == counts[3] == 0
    assert chi_square(counts[[0, 2]], torch.tensor([0.5, 0.5])) < CHI2_999[1]
    big = torch.tensor([1e4, 1e4 + 1.0]).expand(DRAWS, 2)  # softmax ratio e : 1, no overflow
    counts = torch.bincount(sample_action("discrete", big), minlength=2).float()
    p = torch.tensor([1.0, torch.e]) / (1 + torch.e)
    assert chi_square(counts, p) < CHI2_999[1]


def test_sample_action_has_no_gradient():
    logit = torch.randn(5, 3, requires_grad=True)
    assert not sample_action("discrete", logit).requires_grad
    mu = torch.randn(5, 2, requires_grad=True)
    assert not sample_action("continuous", {"mu": mu, "sigma": torch.ones(5, 2)}).requires_grad


def test_multi_discrete_sample_joint_frequencies():
    torch.manual_seed(2)
    nvec = (3, 2)
    p0, p1 = torch.tensor([0.2, 0.5, 0.3]), torch.tensor([0.75, 0.25])
    logit = torch.cat([p0.log() + 1.0, p1.log() - 4.0]).expand(DRAWS, 5)
    action = sample_action("multi_discrete", logit, nvec)
    assert action.shape == (DRAWS, 2) and action.dtype == torch.int64
    assert action[:, 0].max() < 3 and action[:, 1].max() < 2 and action.min() >= 0
    # the heads are independent: the joint frequencies follow the product of the marginals
    joint = torch.bincount(action[:, 0] * 2 + action[:, 1], minlength=6).float()
    assert chi_square(joint, torch.outer(p0, p1).reshape(-1)) < CHI2_999[5], joint
    # nvec given as a list works the same (policies pass the model's action_shape list)
    assert sample_action("multi_discrete", logit[:3], list(nvec)).shape == (3, 2)


def test_multi_discrete_heads_read_their_own_logits():
    """Head 1 must use logits[3:5], not a slice shifted by one: a near one-hot logit pins each head."""
    logit = torch.full((100, 5), -30.0)
    logit[:, 2] = 0.0  # head 0 -> 2
    logit[:, 3] = 0.0  # head 1 -> 0
    assert (sample_action("multi_discrete", logit, (3, 2)) == torch.tensor([2, 0])).all()
    assert torch.equal(greedy_action("multi_discrete", logit[:1], (3, 2)), torch.tensor([[2, 0]]))


def test_continuous_sample_moments():
    torch.manual_seed(3)
    mu = torch.tensor([0.5, -2.0])
    sigma = torch.tensor([0.1, 3.0])
    action = sample_action("continuous", {"mu": mu.expand(DRAWS, 2), "sigma": sigma.expand(DRAWS, 2)})
    assert action.shape == (DRAWS, 2)
    se = sigma / DRAWS ** 0.5
    assert ((action.mean(0) - mu).abs() < 5 * se).all()
    assert ((action.std(0) / sigma - 1).abs() < 0.03).all()  # unclipped, unsquashed


def test_greedy_actions():
    logit = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 2.9]])
    assert greedy_action("discrete", logit).tolist() == [1, 0]
    mu = torch.randn(4, 2)
    assert torch.equal(greedy_action("continuous", {"mu": mu, "sigma": torch.ones(4, 2)}), mu)
    md = torch.tensor([[0.0, 1.0, 0.5, 2.0, 1.0], [5.0, 1.0, 0.5, -2.0, 1.0]])
    assert greedy_action("multi_discrete", md, (3, 2)).tolist() == [[1, 0], [0, 1]]
    assert greedy_action("multi_discrete", md.view(1, 2, 5), [3, 2]).shape == (1, 2, 2)
    with pytest.raises(ValueError):
        greedy_action("multi_discrete", md)
    with pytest.raises(ValueError):
        greedy_action("box", md)


def test_multi_categorical_matches_enumeration():
    torch.manual_seed(4)
    nvec = (3, 2, 4)
    logit = torch.randn(7, sum(nvec))
    dist = MultiCategorical(logit, nvec)
    heads = [torch.softmax(chunk, -1) for chunk in logit.split(nvec, dim=-1)]
    actions = torch.tensor(list(itertools.product(*[range(n) for n in nvec])))  # (24, 3)
    # log_prob of every joint action, batched over (24, 7)
    lp = dist.log_prob(actions.unsqueeze(1).expand(len(actions), 7, 3))
    assert lp.shape == (len(actions), 7)
    expected = torch.stack([heads[0][:, a] * heads[1][:, b] * heads[2][:, c] for a, b, c in actions.tolist()])
    torch.testing.assert_close(lp.exp(), expected)
    torch.testing.assert_close(lp.exp().sum(0), torch.ones(7))
    # entropy of the joint distribution by enumeration
    torch.testing.assert_close(dist.entropy(), -(expected * expected.log()).sum(0))
    # the mode is the joint argmax
    assert torch.equal(dist.mode, actions[expected.argmax(0)])
    # sample shape and range
    s = dist.sample((11,))
    assert s.shape == (11, 7, 3) and (s < torch.tensor(nvec)).all() and (s >= 0).all()
    # make_dist builds the same thing
    torch.testing.assert_close(make_dist("multi_discrete", logit, nvec).log_prob(actions[:7]),
                               dist.log_prob(actions[:7]))


def test_multi_categorical_gradient_flows_to_logits():
    logit = torch.randn(4, 5, requires_grad=True)
    MultiCategorical(logit, (3, 2)).log_prob(torch.tensor([[0, 1]] * 4)).sum().backward()
    assert logit.grad is not None and logit.grad.abs().sum() > 0


def test_make_dist_continuous_sums_over_dims_and_checks():
    mu, sigma = torch.randn(3, 2), torch.rand(3, 2) + 0.5
    a = torch.randn(3, 2)
    d = make_dist("continuous", {"mu": mu, "sigma": sigma})
    torch.testing.assert_close(d.log_prob(a), torch.distributions.Normal(mu, sigma).log_prob(a).sum(-1))
    torch.testing.assert_close(d.entropy(), torch.distributions.Normal(mu, sigma).entropy().sum(-1))
    with pytest.raises(ValueError):
        MultiCategorical(torch.randn(2, 4), (3, 2))
    with pytest.raises(ValueError):
        make_dist("multi_discrete", torch.randn(2, 5))
    with pytest.raises(ValueError):
        make_dist("gaussian", torch.randn(2, 5))


def test_epsilon_greedy_discrete_frequencies():
    """With probability eps a row is replaced by a uniform draw over all A actions (the greedy one included), so the
    greedy action has probability 1 - eps + eps / A and each other eps / A."""
    torch.manual_seed(3)
    eps, A = 0.2, 4
    greedy = torch.full((DRAWS,), 2, dtype=torch.int64)
    action = epsilon_greedy(greedy, [A], eps)
    assert action.shape == (DRAWS,) and action.dtype == torch.int64
    counts = torch.bincount(action, minlength=A).float()
    assert counts.numel() == A
    expected = torch.full((A,), eps / A)
    expected[2] += 1 - eps
    assert chi_square(counts, expected) < CHI2_999[3], counts


def test_epsilon_greedy_multi_discrete_replaces_whole_rows():
    """A replaced row draws every head anew: the joint law is (1 - eps) on the greedy row plus eps times uniform over
    the 3 x 2 joint actions. Heads replaced independently would give the greedy row (1 - eps + eps/3)(1 - eps + eps/2)."""
    torch.manual_seed(4)
    eps, nvec = 0.3, (3, 2)
    greedy = torch.tensor([[1, 0]]).expand(DRAWS, 2)
    action = epsilon_greedy(greedy, nvec, eps)
    assert action.shape == (DRAWS, 2) and action.dtype == torch.int64
    joint = torch.bincount(action[:, 0] * 2 + action[:, 1], minlength=6).float()
    assert joint.numel() == 6
    expected = torch.full((6,), eps / 6)
    expected[1 * 2 + 0] += 1 - eps
    assert chi_square(joint, expected) < CHI2_999[5], joint


def test_epsilon_greedy_zero_is_greedy_and_one_is_uniform():
    torch.manual_seed(5)
    greedy = torch.zeros(DRAWS, dtype=torch.int64)
    state = torch.get_rng_state()
    assert epsilon_greedy(greedy, [6], 0.0) is greedy
    assert torch.equal(torch.get_rng_state(), state)  # epsilon 0 draws nothing: a greedy run's streams are untouched
    counts = torch.bincount(epsilon_greedy(greedy, [6], 1.0), minlength=6).float()
    assert chi_square(counts, torch.full((6,), 1 / 6)) < CHI2_999[5], counts
