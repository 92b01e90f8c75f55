"""Masked action distributions (``mask=``): probability exactly 0 for masked actions in sampling, greedy, log_prob
and entropy; no NaN (values or gradients) even with -inf logits; checked against a slow reference."""
import math

import pytest
import torch

from ding_lite.torch_utils import greedy_action, kl, make_dist, mask_logits, sample_action

torch.set_num_threads(1)


def reference_probs(logit: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the valid entries only, one row at a time, in float64 (the slow reference)."""
    out = torch.zeros(logit.shape, dtype=torch.float64)
    for i in range(logit.shape[0]):
        valid = [a for a in range(logit.shape[1]) if mask[i, a]]
        z = sum(math.exp(float(logit[i, a])) for a in valid)
        for a in valid:
            out[i, a] = math.exp(float(logit[i, a])) / z
    return out


def reference_entropy(probs: torch.Tensor) -> torch.Tensor:
    return torch.tensor([-sum(float(p) * math.log(float(p)) for p in row if p > 0) for row in probs],
                        dtype=torch.float64)


@pytest.fixture
def case():
    g = torch.Generator().manual_seed(0)
    logit = torch.randn(6, 5, generator=g) * 3
    mask = torch.rand(6, 5, generator=g) < 0.5
    mask[:, 2] = True  # at least one valid action per row
    mask[0] = False
    mask[0, 4] = True  # a row with a single valid action
    return logit, mask


def test_log_prob_entropy_match_the_reference(case):
    logit, mask = case
    probs = reference_probs(logit, mask)
    dist = make_dist("discrete", logit, mask=mask)
    assert torch.allclose(dist.probs.double(), probs, atol=1e-6)
    assert (dist.probs[~mask] == 0).all()
    for a in range(5):
        action = torch.full((6,), a)
        lp = dist.log_prob(action)
        valid = mask[:, a]
        assert torch.allclose(lp[valid].double(), probs[valid, a].log(), atol=1e-5)
        assert (lp[~valid] < -1e30).all() and torch.isfinite(lp).all()
    assert torch.allclose(dist.entropy().double(), reference_entropy(probs), atol=1e-5)
    assert dist.entropy()[0] == 0  # one valid action: no uncertainty


def test_sampling_and_greedy_never_pick_a_masked_action(case):
    logit, mask = case
    torch.manual_seed(0)
    draws = sample_action("discrete", logit.unsqueeze(1).expand(6, 4000, 5), mask=mask.unsqueeze(1).expand(6, 4000, 5))
    assert mask.gather(1, draws).all()
    freq = torch.stack([torch.bincount(row, minlength=5) for row in draws]).double() / 4000
    assert (freq - reference_probs(logit, mask)).abs().max() < 0.05
    big = logit.clone()
    big[~mask] = 1e9  # the most likely action is masked
    assert mask.gather(1, greedy_action("discrete", big, mask=mask).unsqueeze(1)).all()


def test_minus_inf_logits_give_no_nan_values_or_gradients(case):
    logit, mask = case
    raw = logit.clone()
    raw[~mask] = -math.inf
    raw.requires_grad_(True)
    dist = make_dist("discrete", raw, mask=mask)
    action = greedy_action("discrete", raw.detach(), mask=mask)
    loss = -(dist.log_prob(action) + dist.entropy()).sum()
    behaviour = make_dist("discrete", torch.zeros_like(logit), mask=mask)
    loss = loss + kl(behaviour, dist).sum()
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(raw.grad).all()
    assert (raw.grad[~mask] == 0).all()


def test_multi_discrete_flat_mask():
    logit = torch.zeros(2, 5)  # heads of 3 and 2
    mask = torch.tensor([[1, 0, 1, 0, 1], [0, 1, 0, 1, 1]], dtype=torch.bool)
    torch.manual_seed(0)
    draws = sample_action("multi_discrete", logit.repeat(500, 1), (3, 2), mask=mask.repeat(500, 1))
    assert set(draws[0::2, 0].tolist()) == {0, 2} and set(draws[0::2, 1].tolist()) == {1}
    assert set(draws[1::2, 0].tolist()) == {1} and set(draws[1::2, 1].tolist()) == {0, 1}
    dist = make_dist("multi_discrete", logit, (3, 2), mask=mask)
    assert torch.allclose(dist.entropy(), torch.tensor([math.log(2), math.log(2)]))
    assert greedy_action("multi_discrete", logit, (3, 2), mask=mask).tolist() == [[0, 1], [1, 0]]


def test_mask_refused_for_continuous_and_wrong_shape():
    with pytest.raises(ValueError, match="continuous"):
        mask_logits("continuous", torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="shape"):
        mask_logits("discrete", torch.zeros(2, 3), torch.ones(2, 4, dtype=torch.bool))
