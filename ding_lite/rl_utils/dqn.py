"""DQN's targets and losses (Mnih et al. 2015) and the Rainbow parts ding_lite's DQN takes one by one: double
Q-learning (van Hasselt et al. 2016), the dueling aggregation (Wang et al. 2016), n-step targets (the transitions of
:mod:`ding_lite.rl_utils.nstep`), prioritised replay's importance weights (Schaul et al. 2016), and the
distributional QR-DQN (Dabney et al. 2018).

With a transition (s, a, G, s', d) where G is the (n-step) discounted reward sum and d = gamma^m its bootstrap
discount (gamma for one step), the target is

    y = G + d (1 - terminated) Q'(s', a*),     a* = argmax_a Q'(s', a)      (DQN)
                                               a* = argmax_a Q(s', a)       (double DQN: online net chooses)

Q' the target network; a truncation (time limit) is not a termination and bootstraps. With an action mask, a* is
the best *valid* action of s' (``next_mask``): an invalid action is never the max of a target.

Shapes: B transitions, A actions (a multi-discrete space has one set of Q-values per head, ``(B, H, A_max)`` is not
used: heads are handled by the policy), N quantiles. Losses are 0-dim, to be minimised; targets are detached.
"""
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F

__all__ = ["masked_argmax", "q_target", "dueling_q", "td_loss", "TDLoss", "quantile_midpoints",
           "quantile_target", "quantile_huber_loss"]


def masked_argmax(q: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """argmax over the last dim of ``q`` (B, A) among the entries where ``mask`` (B, A) bool is True; (B,) long."""
    if mask is not None:
        q = torch.where(mask, q, torch.finfo(q.dtype).min)
    return q.argmax(-1)


def q_target(next_q_target: torch.Tensor, reward: torch.Tensor, discount: torch.Tensor, terminated: torch.Tensor,
             next_q_online: Optional[torch.Tensor] = None, next_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The (double) DQN target y (B,), detached (module docstring).

    Arguments:
        - next_q_target: (B, A) Q'(s', .) of the target network.
        - reward: (B,) G, the (n-step) discounted reward sum.
        - discount: (B,) or a float, gamma^m of the bootstrap.
        - terminated: (B,) bool: the window ended in a terminal state (no bootstrap).
        - next_q_online: (B, A) Q(s', .) of the online network: double DQN's choice of a*; None: DQN's max.
        - next_mask: (B, A) bool, the valid actions of s'; None: all.
    """
    with torch.no_grad():
        chooser = next_q_target if next_q_online is None else next_q_online
        best = masked_argmax(chooser, next_mask)
        value = next_q_target.gather(-1, best.unsqueeze(-1)).squeeze(-1)
        return reward + discount * (~terminated.bool()).to(value.dtype) * value


def dueling_q(value: torch.Tensor, advantage: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a') (eq. 9 of the dueling paper), (B, A) from V (B, 1) and A (B, A);
    with ``mask`` the mean is over the valid actions only (invalid ones then never enter any value)."""
    if mask is None:
        return value + advantage - advantage.mean(-1, keepdim=True)
    weight = mask.to(advantage.dtype)
    mean = (advantage * weight).sum(-1, keepdim=True) / weight.sum(-1, keepdim=True).clamp_min(1.0)
    return value + advantage - mean


class TDLoss(NamedTuple):
    loss: torch.Tensor  # 0-dim, the (importance-weighted) mean of the per-sample losses
    td_error: torch.Tensor  # (B,) |y - Q(s, a)|, detached: prioritised replay's new priorities


def td_loss(q_taken: torch.Tensor, target: torch.Tensor, kind: str = "huber",
            weights: Optional[torch.Tensor] = None) -> TDLoss:
    """The regression of Q(s, a) (B,) onto y (B,): ``kind`` 'huber' (smooth L1 with delta 1, the Nature DQN's error
    clipping) or 'mse' (0.5 (y - Q)^2); ``weights`` (B,) prioritised replay's importance weights, the loss their
    weighted mean sum(w l) / B (Schaul et al.: the weights already normalised by their max)."""
    target = target.detach()
    if kind == "huber":
        per_sample = F.smooth_l1_loss(q_taken, target, reduction="none", beta=1.0)
    elif kind == "mse":
        per_sample = 0.5 * (q_taken - target).pow(2)
    else:
        raise ValueError(f"td loss kind must be 'huber' or 'mse', got {kind!r}")
    loss = per_sample.mean() if weights is None else (weights.detach() * per_sample).mean()
    return TDLoss(loss, (target - q_taken).abs().detach())


def quantile_midpoints(n: int, device=None) -> torch.Tensor:
    """QR-DQN's quantile fractions tau_i = (2i + 1) / (2N), i < N: the midpoints of N equal bins, (N,)."""
    return (torch.arange(n, dtype=torch.float32, device=device) * 2 + 1) / (2 * n)


def quantile_target(next_quantiles_target: torch.Tensor, reward: torch.Tensor, discount: torch.Tensor,
                    terminated: torch.Tensor, next_mask: Optional[torch.Tensor] = None,
                    next_quantiles_online: Optional[torch.Tensor] = None) -> torch.Tensor:
    """QR-DQN's target quantiles (B, N): G + d (1 - terminated) theta'_j(s', a*), a* the argmax of the mean over the
    quantiles (of the online net's with ``next_quantiles_online``: double), among the valid actions of s'.
    ``next_quantiles_target``: (B, A, N)."""
    with torch.no_grad():
        chooser = next_quantiles_target if next_quantiles_online is None else next_quantiles_online
        best = masked_argmax(chooser.mean(-1), next_mask)  # (B,)
        n = next_quantiles_target.shape[-1]
        chosen = next_quantiles_target.gather(1, best.view(-1, 1, 1).expand(-1, 1, n)).squeeze(1)  # (B, N)
        alive = (~terminated.bool()).to(chosen.dtype).unsqueeze(-1)
        disc = discount.unsqueeze(-1) if torch.is_tensor(discount) else discount
        return reward.unsqueeze(-1) + disc * alive * chosen


def quantile_huber_loss(quantiles: torch.Tensor, target: torch.Tensor, kappa: float = 1.0,
                        weights: Optional[torch.Tensor] = None) -> TDLoss:
    """QR-DQN's quantile Huber loss (eq. 10 of Dabney et al. 2018) of the quantiles theta_i (B, N) of Q(s, a) at the
    midpoints tau_i against the target samples T_j (B, N'):

        rho_i(u) = |tau_i - 1{u < 0}| L_kappa(u) / kappa,   u = T_j - theta_i,   loss = sum_i mean_j rho_i(u_ij)

    averaged over the batch (``weights``: importance weights per sample). ``td_error`` is |mean T - mean theta|."""
    target = target.detach()
    n = quantiles.shape[-1]
    tau = quantile_midpoints(n, quantiles.device).view(1, n, 1)
    u = target.unsqueeze(1) - quantiles.unsqueeze(-1)  # (B, N, N'), u_ij
    huber = F.huber_loss(quantiles.unsqueeze(-1).expand_as(u), target.unsqueeze(1).expand_as(u), reduction="none",
                         delta=kappa)
    rho = (tau - (u.detach() < 0).to(u.dtype)).abs() * huber / kappa
    per_sample = rho.mean(-1).sum(-1)  # (B,)
    loss = per_sample.mean() if weights is None else (weights.detach() * per_sample).mean()
    return TDLoss(loss, (target.mean(-1) - quantiles.mean(-1)).abs().detach())
