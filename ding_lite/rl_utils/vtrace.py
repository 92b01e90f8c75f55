"""V-trace off-policy value targets and advantages (Espeholt et al., 2018, "IMPALA", arXiv:1802.01561).

An actor follows a behaviour policy mu; the learner improves a target policy pi from the actor's trajectory. With the
importance ratio rho_t = pi(a_t|x_t) / mu(a_t|x_t), clipped versions rho_bar_t = min(rho_clip, rho_t) and
c_t = lambda * min(c_clip, rho_t), the V-trace target of eq. (1) of the paper is

    v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t,
    delta_t = rho_bar_t (r_t + gamma_t V(x_{t+1}) - V(x_t)),

which is computed backwards in time as  v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})).  The policy
gradient uses the advantage  rho_pg_s (r_s + gamma_s v_{s+1} - V(x_s)).

:func:`from_importance_weights` is the general form IMPALA uses: per-step discounts gamma_t (T, B, ...), any number
of trailing dims, optional clipping, lambda. It returns :class:`VTraceReturns` (vs, pg_advantages), detached.
DI-engine 0.5.3's functions (``vtrace_error_discrete_action`` and friends: one scalar gamma, so they do not know about
episode ends inside an unroll) are in :mod:`ding_lite.rl_utils.vtrace_dingengine_compat`.

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
from typing import Optional

import torch

__all__ = ['VTraceReturns', 'from_importance_weights']

VTraceReturns = namedtuple('VTraceReturns', ['vs', 'pg_advantages'])


def _backward_sum(deltas: torch.Tensor, decays: torch.Tensor) -> torch.Tensor:
    """acc_t = deltas_t + decays_t * acc_{t+1} with acc_T = 0, for all t; inputs and output (T, B, ...).

    Everything except this first-order recursion is computed vectorised by the callers; the loop only adds and
    multiplies rows, stacked once at the end. Differentiable when the inputs are.
    """
    if deltas.shape[0] == 0:
        return torch.empty_like(deltas)
    deltas_t, decays_t = deltas.unbind(0), decays.unbind(0)  # the rows as views, taken once
    acc = deltas_t[-1]
    accs = [acc]
    for t in range(deltas.shape[0] - 2, -1, -1):
        acc = deltas_t[t] + decays_t[t] * acc
        accs.append(acc)
    return torch.stack(accs[::-1])


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
