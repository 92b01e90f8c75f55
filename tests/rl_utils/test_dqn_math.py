"""DQN's targets and losses against slow references written from the papers' equations: the (double) DQN target with
termination stopping and truncation bootstrapping through the n-step discount, action masks in the target's max, the
dueling aggregation, the Huber / MSE TD loss with prioritised replay's importance weights (and their gradient), and
QR-DQN's quantile Huber loss."""
import itertools

import pytest
import torch

from ding_lite.rl_utils.dqn import (dueling_q, masked_argmax, q_target, quantile_huber_loss, quantile_midpoints,
                                    quantile_target, td_loss)


def reference_target(next_q_target, reward, discount, terminated, next_q_online=None, mask=None):
    out = []
    for b in range(reward.shape[0]):
        valid = [a for a in range(next_q_target.shape[1]) if mask is None or mask[b, a]]
        chooser = next_q_target if next_q_online is None else next_q_online
        best = max(valid, key=lambda a: float(chooser[b, a]))
        bootstrap = 0.0 if terminated[b] else float(discount[b]) * float(next_q_target[b, best])
        out.append(float(reward[b]) + bootstrap)
    return torch.tensor(out)


@pytest.mark.parametrize("double", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_the_target_is_the_papers(double, masked):
    g = torch.Generator().manual_seed(0)
    B, A = 16, 5
    nq_t, nq_o = torch.randn(B, A, generator=g), torch.randn(B, A, generator=g)
    reward, discount = torch.randn(B, generator=g), 0.99 ** torch.randint(1, 4, (B,), generator=g).float()
    terminated = torch.rand(B, generator=g) < 0.3  # a truncation is just not terminated: it bootstraps
    mask = (torch.rand(B, A, generator=g) < 0.6) if masked else None
    if masked:
        mask[:, 0] = True
    got = q_target(nq_t, reward, discount, terminated, nq_o if double else None, mask)
    want = reference_target(nq_t, reward, discount, terminated, nq_o if double else None, mask)
    torch.testing.assert_close(got, want)
    assert not got.requires_grad


def test_double_dqn_lets_the_online_net_choose_and_the_target_net_evaluate():
    nq_t = torch.tensor([[1.0, 5.0]])  # the target net would choose action 1 (5.0)
    nq_o = torch.tensor([[2.0, 0.0]])  # the online net chooses action 0
    r, d, t = torch.zeros(1), torch.ones(1), torch.zeros(1, dtype=torch.bool)
    assert q_target(nq_t, r, d, t).item() == 5.0
    assert q_target(nq_t, r, d, t, nq_o).item() == 1.0


def test_an_invalid_action_is_never_the_max_of_a_target():
    nq = torch.tensor([[9.0, 1.0, 2.0]])
    mask = torch.tensor([[False, True, True]])
    assert masked_argmax(nq, mask).item() == 2
    assert q_target(nq, torch.zeros(1), torch.ones(1), torch.zeros(1, dtype=torch.bool), next_mask=mask).item() == 2


def test_dueling_is_v_plus_centred_advantages():
    v = torch.tensor([[1.5], [-2.0]])
    adv = torch.tensor([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0]])
    want = torch.tensor([[1.5 + 1 - 3, 1.5 + 2 - 3, 1.5 + 6 - 3], [-2 - 1.0, -2 - 1.0, -2 + 2.0]])
    torch.testing.assert_close(dueling_q(v, adv), want)
    mask = torch.tensor([[True, True, False], [True, True, True]])  # the mean over the valid ones: (1 + 2) / 2
    torch.testing.assert_close(dueling_q(v, adv, mask)[0], torch.tensor([1.5 - 0.5, 1.5 + 0.5, 1.5 + 4.5]))


@pytest.mark.parametrize("kind", ["huber", "mse"])
def test_td_loss_and_its_gradient_through_the_importance_weights(kind):
    q = torch.tensor([0.0, 1.0, 3.0, -2.0], requires_grad=True)
    y = torch.tensor([0.5, -1.0, 3.2, 2.0])
    w = torch.tensor([1.0, 0.5, 0.25, 0.1])

    def per_sample(e):  # the Nature DQN's clipped error (Huber, delta 1) or half the squared error
        return (0.5 * e ** 2 if abs(e) <= 1 else abs(e) - 0.5) if kind == "huber" else 0.5 * e ** 2

    out = td_loss(q, y, kind, w)
    errors = (y - q).tolist()
    assert out.loss.item() == pytest.approx(sum(wi * per_sample(e) for wi, e in zip(w.tolist(), errors)) / 4)
    torch.testing.assert_close(out.td_error, (y - q).abs().detach())
    (grad,) = torch.autograd.grad(out.loss, q)

    def dl(e):  # d l / d q at error e = y - q
        return (-e if abs(e) <= 1 else -float(torch.sign(torch.tensor(e)))) if kind == "huber" else -e

    torch.testing.assert_close(grad, torch.tensor([wi * dl(e) / 4 for wi, e in zip(w.tolist(), errors)]))
    with pytest.raises(ValueError, match="huber' or 'mse'"):
        td_loss(q, y, "l1")


def test_quantile_huber_loss_is_eq_10_of_qr_dqn():
    g = torch.Generator().manual_seed(1)
    B, N = 3, 4
    theta = torch.randn(B, N, generator=g, requires_grad=True)
    target = torch.randn(B, N, generator=g) * 2
    kappa = 1.0
    tau = [(2 * i + 1) / (2 * N) for i in range(N)]
    want = 0.0
    for b in range(B):
        total = 0.0
        for i, j in itertools.product(range(N), range(N)):
            u = float(target[b, j] - theta.detach()[b, i])
            huber = 0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
            total += abs(tau[i] - (1.0 if u < 0 else 0.0)) * huber / kappa / N
        want += total / B
    out = quantile_huber_loss(theta, target, kappa)
    assert out.loss.item() == pytest.approx(want, rel=1e-5)
    torch.testing.assert_close(quantile_midpoints(4), torch.tensor([0.125, 0.375, 0.625, 0.875]))
    # its gradient pushes each quantile towards the tau_i-quantile of the targets: for a single target value T and
    # theta far below it, d loss / d theta_i = -tau_i / B (the upper branch of the Huber loss)
    theta = torch.full((1, N), -10.0, requires_grad=True)
    (grad,) = torch.autograd.grad(quantile_huber_loss(theta, torch.zeros(1, N)).loss, theta)
    torch.testing.assert_close(grad[0], -torch.tensor(tau))


def test_quantile_target_bootstraps_the_chosen_actions_quantiles():
    q = torch.tensor([[[0.0, 2.0], [5.0, 5.0]], [[1.0, 1.0], [0.0, 0.0]]])  # (B=2, A=2, N=2): means 1, 5 | 1, 0
    got = quantile_target(q, torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5]), torch.tensor([False, True]))
    torch.testing.assert_close(got, torch.tensor([[1.0 + 2.5, 1.0 + 2.5], [0.0, 0.0]]))
    mask = torch.tensor([[True, False], [True, True]])
    got = quantile_target(q, torch.zeros(2), torch.ones(2), torch.zeros(2, dtype=torch.bool), mask)
    torch.testing.assert_close(got[0], torch.tensor([0.0, 2.0]))  # action 1 (mean 5) is invalid
