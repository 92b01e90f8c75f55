"""V-trace off-policy value targets and advantages (Espeholt et al., 2018, "IMPALA", arXiv:1802.01561).

An actor follows a behaviour policy mu; the learner improves a target policy pi from the actor's trajectory. With the
importance ratio rho_t = pi(a_t|x_t) / mu(a_t|x_t), clipped versions rho_bar_t = min(rho_clip, rho_t) and
c_t = lambda * min(c_clip, rho_t), the V-trace target of eq. (1) of the paper is

    v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t,
    delta_t = rho_bar_t (r_t + gamma_t V(x_{t+1}) - V(x_t)),

which is computed backwards in time as  v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})).  The policy
gradient uses the advantage  rho_pg_s (r_s + gamma_s v_{s+1} - V(x_s)).

Two APIs live here:

* :func:`from_importance_weights`, the general form: per-step discounts gamma_t (T, B, ...), any number of trailing
  dims, optional clipping, lambda. Returns :class:`VTraceReturns` (vs, pg_advantages), detached.
* the DI-engine 0.5.3 compatible functions (``vtrace_data``, ``vtrace_loss``, ``vtrace_nstep_return``,
  ``vtrace_advantage``, ``compute_importance_weights``, ``vtrace_error_discrete_action``,
  ``vtrace_error_continuous_action``) with the same names, signatures and numbers. They use one scalar gamma and so
  do not know about episode ends inside an unroll.

Episode ends (for callers of :func:`from_importance_weights`):
    Pass ``discounts = gamma * (1 - done)`` where ``done_t`` is true when step t ended the episode for either reason.
    A zero discount cuts the trace: nothing at or after step t+1 (values, rewards, ratios, the bootstrap) can
    reach v_s or the advantage for s <= t.
    * terminated at t (a true terminal state): leave ``r_t`` as it is; the value after a terminal state is 0.
    * truncated at t (time limit, the episode could have gone on): the return should bootstrap through the real
      final observation, which the next row of the unroll (already the reset observation) does not hold. Add
      ``gamma * V(final_obs_t)`` (computed without gradient) to ``r_t``; with the zero discount this is exactly
      r_t + gamma V(x_{t+1}) for the true next state.
"""
from collections import namedtuple
from typing import Optional, Sequence, Union

import torch
import torch.nn.functional as F

from ding_lite.torch_utils.distributions import make_dist

__all__ = [
    'VTraceReturns', 'from_importance_weights', 'log_rhos_from_log_probs', 'vtrace_data', 'vtrace_loss',
    'vtrace_nstep_return', 'vtrace_advantage', 'compute_importance_weights', 'vtrace_error_discrete_action',
    'vtrace_error_continuous_action'
]

VTraceReturns = namedtuple('VTraceReturns', ['vs', 'pg_advantages'])
vtrace_data = namedtuple('vtrace_data', ['target_output', 'behaviour_output', 'action', 'value', 'reward', 'weight'])
vtrace_loss = namedtuple('vtrace_loss', ['policy_loss', 'value_loss', 'entropy_loss'])


def _backward_sum(deltas: torch.Tensor, decays: torch.Tensor) -> torch.Tensor:
    """acc_t = deltas_t + decays_t * acc_{t+1} with acc_T = 0, for all t; inputs and output (T, B, ...).

    Everything except this first-order recursion is computed vectorised by the callers; the loop only writes rows
    of a preallocated output. Differentiable when the inputs are.
    """
    out = torch.empty_like(deltas)
    if deltas.shape[0] == 0:
        return out
    acc = deltas[-1]
    out[-1] = acc
    for t in range(deltas.shape[0] - 2, -1, -1):
        acc = deltas[t] + decays[t] * acc
        out[t] = acc
    return out


def _clip(x: torch.Tensor, threshold: Optional[float]) -> torch.Tensor:
    return x if threshold is None else torch.clamp(x, max=threshold)


def from_importance_weights(
        log_rhos: torch.Tensor,
        discounts: torch.Tensor,
        rewards: torch.Tensor,
        values: torch.Tensor,
        bootstrap_value: torch.Tensor,
        clip_rho_threshold: Optional[float] = 1.0,
        clip_pg_rho_threshold: Optional[float] = 1.0,
        clip_c_threshold: Optional[float] = 1.0,
        lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages from log importance ratios.

    Arguments:
        - log_rhos: (T, B, ...) log pi(a_t|x_t) - log mu(a_t|x_t); working in log space keeps large ratios finite
          until they are clipped.
        - discounts: (T, B, ...) gamma_t, usually ``gamma * (1 - done_t)`` (see the module docstring).
        - rewards: (T, B, ...) r_t.
        - values: (T, B, ...) V(x_t) from the learner's value function.
        - bootstrap_value: (B, ...) V(x_T), the value after the last step.
        - clip_rho_threshold: rho_bar of the paper, bounds rho in the deltas (sets the fixed point). None: no clip.
        - clip_pg_rho_threshold: bounds rho in the policy-gradient advantage. None: no clip.
        - clip_c_threshold: c_bar of the paper, bounds the trace coefficients (sets the contraction speed). None: no
          clip.
        - lambda_: extra factor on every c_t, mixing 1-step (0) and full V-trace (1) targets.
    Returns:
        ``VTraceReturns(vs, pg_advantages)``, both (T, B, ...) and detached: they are regression / advantage
        targets, never paths for gradients.
    """
    rank = log_rhos.dim()
    if not (discounts.dim() == rewards.dim() == values.dim() == rank and bootstrap_value.dim() == rank - 1):
        raise ValueError('log_rhos, discounts, rewards, values must be (T, B, ...) and bootstrap_value (B, ...)')
    with torch.no_grad():
        rhos = torch.exp(log_rhos)
        clipped_rhos = _clip(rhos, clip_rho_threshold)
        cs = lambda_ * _clip(rhos, clip_c_threshold)
        bootstrap = bootstrap_value.unsqueeze(0)
        values_tp1 = torch.cat([values[1:], bootstrap], dim=0)
        deltas = clipped_rhos * (rewards + discounts * values_tp1 - values)
        vs = values + _backward_sum(deltas, discounts * cs)
        vs_tp1 = torch.cat([vs[1:], bootstrap], dim=0)
        pg_advantages = _clip(rhos, clip_pg_rho_threshold) * (rewards + discounts * vs_tp1 - values)
    return VTraceReturns(vs=vs.detach(), pg_advantages=pg_advantages.detach())


def log_rhos_from_log_probs(
        target_log_probs: Union[torch.Tensor, Sequence[torch.Tensor]],
        behaviour_log_probs: Union[torch.Tensor, Sequence[torch.Tensor]],
) -> torch.Tensor:
    """Log importance ratios (T, B, ...) from action log-probabilities.

    A tensor is taken as the joint log-probability of the whole action. A list holds one (T, B, ...) tensor per head
    of a multi-discrete action; the heads are independent, so the joint log-ratio is the sum of the heads' log-ratios.
    """
    if isinstance(target_log_probs, torch.Tensor):
        return target_log_probs - behaviour_log_probs
    return (torch.stack(list(target_log_probs)) - torch.stack(list(behaviour_log_probs))).sum(dim=0)


# ---------------------------------------------------------------------------------------------------------------------
# DI-engine 0.5.3 compatible API (ding.rl_utils.vtrace, ding.rl_utils.isw)
# ---------------------------------------------------------------------------------------------------------------------


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
