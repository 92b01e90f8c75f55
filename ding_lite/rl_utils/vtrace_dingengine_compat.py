"""DI-engine 0.5.3's V-trace API (``ding.rl_utils.vtrace`` and ``ding.rl_utils.isw``), kept for DI-engine users: the
same names, signatures and numbers (tested against values DI-engine produced).

These functions use one scalar gamma for the whole unroll, so they do not know about episode ends inside it; no
ding_lite policy uses them. ding_lite's IMPALA uses :func:`ding_lite.rl_utils.vtrace.from_importance_weights`, which
takes per-step discounts. Shapes are time-major: T steps, B unrolls, N action dims or logits.
"""
from collections import namedtuple
from typing import Union

import torch
import torch.nn.functional as F

from ding_lite.torch_utils.distributions import make_dist

from .vtrace import _backward_sum

__all__ = [
    'vtrace_data', 'vtrace_loss', 'vtrace_nstep_return', 'vtrace_advantage', 'compute_importance_weights',
    'vtrace_error_discrete_action', 'vtrace_error_continuous_action'
]

vtrace_data = namedtuple('vtrace_data', ['target_output', 'behaviour_output', 'action', 'value', 'reward', 'weight'])
vtrace_loss = namedtuple('vtrace_loss', ['policy_loss', 'value_loss', 'entropy_loss'])


def vtrace_nstep_return(
        clipped_rhos: torch.Tensor,
        clipped_cs: torch.Tensor,
        reward: torch.Tensor,
        bootstrap_values: torch.Tensor,
        gamma: float = 0.99,
        lambda_: float = 0.95,
) -> torch.Tensor:
    """V-trace targets vs (T, B) with one scalar discount, as DI-engine computes them.

    Arguments:
        - clipped_rhos, clipped_cs, reward: (T, B).
        - bootstrap_values: (T+1, B), V(x_0) ... V(x_T).
    Returns:
        vs (T, B) = V(x_t) + sum_k (gamma lambda)^(k-t) (prod c) delta_k; differentiable w.r.t. the inputs.
    """
    deltas = clipped_rhos * (reward + gamma * bootstrap_values[1:] - bootstrap_values[:-1])
    return bootstrap_values[:-1] + _backward_sum(deltas, (gamma * lambda_) * clipped_cs)


def vtrace_advantage(
        clipped_pg_rhos: torch.Tensor, reward: torch.Tensor, return_: torch.Tensor, bootstrap_values: torch.Tensor,
        gamma: float
) -> torch.Tensor:
    """Policy-gradient advantage rho_pg (r + gamma v_{t+1} - V(x_t)), all (T, B).

    ``return_`` holds v_{t+1} (the targets shifted by one step) and ``bootstrap_values`` holds V(x_t).
    """
    return clipped_pg_rhos * (reward + gamma * return_ - bootstrap_values)


def compute_importance_weights(
        target_output: Union[torch.Tensor, dict],
        behaviour_output: Union[torch.Tensor, dict],
        action: torch.Tensor,
        action_space_type: str = 'discrete',
        requires_grad: bool = False,
) -> torch.Tensor:
    """Importance ratios pi(a|x) / mu(a|x), shape (T, B).

    Arguments:
        - target_output, behaviour_output: logits (T, B, N) for ``'discrete'``; dicts of ``'mu'`` and ``'sigma'``
          (T, B, N) for ``'continuous'``.
        - action: (T, B) long, or (T, B, N) float for ``'continuous'``.
        - requires_grad: build the graph back to the outputs, even inside ``no_grad`` (off by default: the ratios
          are usually constants).
    """
    assert isinstance(action, torch.Tensor)
    assert action_space_type in ('discrete', 'continuous'), action_space_type
    with torch.set_grad_enabled(requires_grad):
        log_ratio = (make_dist(action_space_type, target_output).log_prob(action) -
                     make_dist(action_space_type, behaviour_output).log_prob(action))
        return torch.exp(log_ratio)


def _vtrace_error(
        data: vtrace_data, action_space_type: str, gamma: float, lambda_: float, rho_clip_ratio: float,
        c_clip_ratio: float, rho_pg_clip_ratio: float
) -> vtrace_loss:
    target_output, behaviour_output, action, value, reward, weight = data
    with torch.no_grad():
        rhos = compute_importance_weights(target_output, behaviour_output, action, action_space_type)
        return_ = vtrace_nstep_return(
            torch.clamp(rhos, max=rho_clip_ratio), torch.clamp(rhos, max=c_clip_ratio), reward, value, gamma, lambda_
        )
        return_t_plus_1 = torch.cat([return_[1:], value[-1:]], dim=0)
        adv = vtrace_advantage(torch.clamp(rhos, max=rho_pg_clip_ratio), reward, return_t_plus_1, value[:-1], gamma)
    if weight is None:
        weight = torch.ones_like(reward)
    dist = make_dist(action_space_type, target_output)
    policy_loss = -(dist.log_prob(action) * adv * weight).mean()
    value_loss = (F.mse_loss(value[:-1], return_, reduction='none') * weight).mean()
    entropy_loss = (dist.entropy() * weight).mean()
    return vtrace_loss(policy_loss, value_loss, entropy_loss)


def vtrace_error_discrete_action(
        data: vtrace_data,
        gamma: float = 0.99,
        lambda_: float = 0.95,
        rho_clip_ratio: float = 1.0,
        c_clip_ratio: float = 1.0,
        rho_pg_clip_ratio: float = 1.0,
) -> vtrace_loss:
    """IMPALA losses for a categorical policy.

    ``data`` is a :data:`vtrace_data` with target_output / behaviour_output logits (T, B, N), action (T, B) long,
    value (T+1, B) (the last row is the bootstrap), reward (T, B) and weight (T, B) or None (all ones).
    The targets (vs, advantages) are computed without gradient, so ``policy_loss`` only moves the policy through
    log pi(a_t) and ``value_loss`` = mean(weight (V(x_t) - vs_t)^2) only moves V(x_0..x_{T-1}).
    Returns ``vtrace_loss(policy_loss, value_loss, entropy_loss)``, three 0-dim tensors; entropy_loss is the mean
    entropy (to be maximised, i.e. subtracted with a weight by the caller).
    """
    return _vtrace_error(data, 'discrete', gamma, lambda_, rho_clip_ratio, c_clip_ratio, rho_pg_clip_ratio)


def vtrace_error_continuous_action(
        data: vtrace_data,
        gamma: float = 0.99,
        lambda_: float = 0.95,
        rho_clip_ratio: float = 1.0,
        c_clip_ratio: float = 1.0,
        rho_pg_clip_ratio: float = 1.0,
) -> vtrace_loss:
    """IMPALA losses for a diagonal Gaussian policy.

    As :func:`vtrace_error_discrete_action`, except that target_output / behaviour_output are dicts with ``'mu'``
    and ``'sigma'`` (T, B, N) and action is (T, B, N) float; log-probabilities and entropies sum over N.
    """
    return _vtrace_error(data, 'continuous', gamma, lambda_, rho_clip_ratio, c_clip_ratio, rho_pg_clip_ratio)
