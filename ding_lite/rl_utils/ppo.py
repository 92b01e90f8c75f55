"""PPO's losses (Schulman et al., 2017, "Proximal Policy Optimization Algorithms", arXiv:1707.06347) and generalized
advantage estimation (Schulman et al., 2016, "High-Dimensional Continuous Control Using Generalized Advantage
Estimation", arXiv:1506.02438).

With the probability ratio r_t = pi(a_t|s_t) / pi_old(a_t|s_t) of the policy being trained to the one that collected
the data, PPO minimises

    policy    -L^CLIP = -E_t[min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t)]          (eq. 7 of the PPO paper)
    value     0.5 (V(s_t) - R_t)^2, optionally with the clipped variant of OpenAI baselines (see ppo_value_loss)
    entropy   -H(pi(.|s_t)), weighted by the caller: ``dist.entropy()`` of ding_lite.torch_utils.make_dist

with the GAE(gamma, lambda) advantages of eq. (16) of the GAE paper,

    A_t = sum_{l>=0} (gamma lambda)^l delta_{t+l},  delta_t = r_t + gamma V(s_{t+1}) - V(s_t),

and the targets R_t = A_t + V(s_t) (the TD(lambda) returns).

APPO (RLlib's asynchronous PPO) needs nothing more: :func:`ding_lite.rl_utils.from_importance_weights` gives the
V-trace targets ``vs`` and advantages ``pg_advantages``; :func:`ppo_policy_loss` with ``logp_old`` the *behaviour*
policy's log-probabilities (r_t = pi / mu) and ``advantages=pg_advantages`` is the clipped surrogate (with a target
network, ``logp_old`` is :func:`impact_old_log_prob`'s);
:func:`ppo_value_loss` against ``vs``; the KL term against the behaviour policy is
``weighted_mean(ding_lite.torch_utils.kl(behaviour_dist, dist), weights)``. With pi == mu, lambda_ = 1 and no
clipping, ``pg_advantages`` equals :func:`gae`'s advantages with lambda_ = 1 (the tests check it).

Conventions: time-major (T, B, ...) tensors; losses are 0-dim and to be **minimised**; advantages, targets and old
log-probabilities / values are constants (returned or used detached). ``weights`` (per-sample weights, or a 0/1 mask
of the real steps of padded LSTM sequences) turn every mean into sum(w x) / sum(w), so a mask gives the mean over the
kept entries; masked entries must still hold finite numbers (they are multiplied by 0).

Episode ends inside an unroll (for :func:`gae`): the trace is cut after step t when the episode ended at t and always
at t = T-1. Where it is cut, V(s_{t+1}) is 0 after a termination (the value after a terminal state is 0) and
``next_values_t`` otherwise: V(final_obs_t) after a truncation (the episode could have gone on; the next row of the
unroll already holds the reset observation) and V(x_T) at t = T-1. A step both terminated and truncated is terminated.
"""
import math
from collections import namedtuple
from typing import Optional

import torch

from .vtrace import _backward_sum

__all__ = ['GAEReturns', 'PPOPolicyLoss', 'gae', 'gae_next_value_rows', 'normalized_advantages', 'ppo_policy_loss',
           'ppo_value_loss', 'weighted_mean']

GAEReturns = namedtuple('GAEReturns', ['advantages', 'returns'])
PPOPolicyLoss = namedtuple('PPOPolicyLoss', ['loss', 'clip_fraction', 'approx_kl'])


def weighted_mean(x: torch.Tensor, weights: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The mean of ``x``, or sum(w x) / sum(w) with ``weights`` broadcast to x's shape (a 0/1 mask: the mean over the
    kept entries). All-zero weights give 0, not NaN. Returns a 0-dim tensor."""
    if weights is None:
        return x.mean()
    w = torch.broadcast_to(weights.to(x.dtype), x.shape)
    return (w * x).sum() / w.sum().clamp_min(torch.finfo(x.dtype).tiny)


def normalized_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """``advantages`` (any shape) shifted and scaled to mean 0 and standard deviation 1 over all their entries, as PPO
    normalises each minibatch's. The population std (a single entry gives 0, not NaN) plus 1e-8."""
    return (advantages - advantages.mean()) / (advantages.std(correction=0) + 1e-8)


def gae(
        rewards: torch.Tensor,
        values: torch.Tensor,
        next_values: torch.Tensor,
        *,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        gamma: float,
        lambda_: float,
) -> GAEReturns:
    """GAE(gamma, lambda) advantages and TD(lambda) returns over an unroll with episode ends inside it.

    Computed backwards as A_t = delta_t + gamma lambda (1 - cut_t) A_{t+1}, with delta_t and the cuts as in the module
    docstring. lambda_ = 0 gives the TD(0) advantages delta_t, lambda_ = 1 the discounted returns to the end of each
    episode (bootstrapped at truncations and at the end of the unroll) minus V(s_t).

    Arguments:
        - rewards: (T, B, ...) r_t.
        - values: (T, B, ...) V(s_t) of the unroll's observations.
        - next_values: (T, B, ...) V of the observation reached after step t, read only where the trace is cut without
          a termination: V(final_obs_t) at a truncation, V(x_T) at t = T-1 (the true final observation if that step
          ended the episode). Other rows are never read (they may hold anything, NaN included). The same layout as
          :func:`acer_trace_boundaries` takes and the unroll policies' ``UnrollBatch.next_values`` builds.
        - terminated: (T, B, ...) bool/0-1, step t reached a terminal state: no bootstrap.
        - truncated: (T, B, ...) bool/0-1, step t ended the episode by a time limit: bootstrap from ``next_values_t``.
          Both flags are keyword-only so that they cannot be swapped by position.
        - gamma: the discount factor.
        - lambda_: GAE's lambda in [0, 1].
    Returns:
        ``GAEReturns(advantages, returns)``, (T, B, ...) each, detached; returns = advantages + values.
    """
    shape = rewards.shape
    if rewards.dim() < 2 or not (values.shape == next_values.shape == terminated.shape == truncated.shape == shape):
        raise ValueError('rewards, values, next_values, terminated, truncated must all be (T, B, ...)')
    with torch.no_grad():
        terminated = terminated.bool()
        cut = terminated | truncated.bool()  # the recursion itself stops at t = T-1, after V(x_T) = next_values[-1]
        values_tp1 = torch.cat([values[1:], next_values[-1:]], dim=0)
        value_after = torch.where(cut, next_values, values_tp1).masked_fill(terminated, 0.0)
        deltas = rewards + gamma * value_after - values
        advantages = _backward_sum(deltas, (gamma * lambda_) * (~cut).to(deltas.dtype))
        return GAEReturns(advantages=advantages, returns=advantages + values)


def gae_next_value_rows(terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """(T, B) bool: the rows whose ``next_values`` :func:`gae` reads, where the trace is cut without a termination (a
    truncation, and the unroll's last step unless it terminated). Only these need the critic's value of the next
    observation."""
    read = truncated.bool() & ~terminated.bool()
    read[-1] = ~terminated[-1].bool()
    return read


def ppo_policy_loss(
        logp_new: torch.Tensor,
        logp_old: torch.Tensor,
        advantages: torch.Tensor,
        clip_ratio: float,
        weights: Optional[torch.Tensor] = None,
) -> PPOPolicyLoss:
    """The clipped surrogate -L^CLIP (eq. 7 of the PPO paper), to minimise, with two diagnostics.

    min(r A, clip(r, 1 - eps, 1 + eps) A) is r A where the ratio has not yet moved past the clip range in the
    direction that the advantage rewards, and the constant (1 +- eps) A beyond it: there the gradient is 0, so one
    batch cannot push the policy far from pi_old. For APPO pass the behaviour policy's log-probabilities as
    ``logp_old`` and V-trace's ``pg_advantages`` as ``advantages``.

    Arguments:
        - logp_new: (T, B, ...) or (N, ...) log pi(a|s) of the taken actions under the policy being trained.
        - logp_old: same shape, log pi_old(a|s) recorded at collection; detached here.
        - advantages: same shape, A (normalised or not, the caller's choice); detached here.
        - clip_ratio: eps > 0.
        - weights: optional per-sample weights or 0/1 mask, broadcastable to logp_new (see :func:`weighted_mean`).
    Returns:
        ``PPOPolicyLoss(loss, clip_fraction, approx_kl)``, 0-dim each: ``loss`` differentiable w.r.t. logp_new;
        ``clip_fraction`` the weighted fraction of samples with |r - 1| > eps (as CleanRL and SB3 count it, whichever
        side of the min is taken) and ``approx_kl`` the estimator mean((r - 1) - log r) of KL(pi_old || pi), unbiased
        and never negative (Schulman, "Approximating KL Divergence", 2020), both detached.
    """
    if not clip_ratio > 0:
        raise ValueError(f'clip_ratio must be > 0, got {clip_ratio}')
    advantages = advantages.detach()
    log_ratio = logp_new - logp_old.detach()
    ratio = torch.exp(log_ratio)
    surrogate = torch.minimum(ratio * advantages, ratio.clamp(1.0 - clip_ratio, 1.0 + clip_ratio) * advantages)
    loss = -weighted_mean(surrogate, weights)
    with torch.no_grad():
        clipped = ((ratio - 1.0).abs() > clip_ratio).to(ratio.dtype)
        clip_fraction = weighted_mean(clipped, weights)
        approx_kl = weighted_mean((ratio - 1.0) - log_ratio, weights)
    return PPOPolicyLoss(loss=loss, clip_fraction=clip_fraction, approx_kl=approx_kl)


def impact_old_log_prob(logp_behaviour: torch.Tensor, logp_target: torch.Tensor,
                        max_is_ratio: float = 2.0) -> torch.Tensor:
    """The log pi_old that makes PPO's ratio APPO's (IMPACT's, Luo et al. 2020, in RLlib's form) with a target network.

    APPO's surrogate ratio is r = min(mu / pi_target, max_is_ratio) * pi / mu: the ratio pi / pi_target against a
    slowly updated target network, with the importance weight of the behaviour policy mu over it clipped. Written
    as pi / pi_old, log pi_old = log mu - min(log mu - log pi_target, log max_is_ratio)
    = max(log pi_target, log mu - log max_is_ratio), so :func:`ppo_policy_loss` with it is APPO's loss.

    Arguments:
        - logp_behaviour: (T, B, ...) log mu(a|s) of the behaviour policy that collected the step.
        - logp_target: same shape, log pi_target(a|s) under the target network.
        - max_is_ratio: the clip of mu / pi_target (RLlib: 2).
    Returns:
        (T, B, ...) log pi_old, detached.
    """
    if not max_is_ratio > 0:
        raise ValueError(f"max_is_ratio must be > 0, got {max_is_ratio}")
    return torch.maximum(logp_target, logp_behaviour - math.log(max_is_ratio)).detach()


def ppo_value_loss(
        values: torch.Tensor,
        old_values: Optional[torch.Tensor],
        returns: torch.Tensor,
        clip_value: Optional[float],
        weights: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """The value loss 0.5 (V - R)^2, or with ``clip_value`` c OpenAI baselines' (and CleanRL's) clipped form

        0.5 max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2),

    which stops rewarding moves of V more than c away from the value V_old recorded at collection (the max keeps the
    larger, pessimistic error, so the gradient is 0 only where the clipped error is the larger one).

    Arguments:
        - values: (T, B, ...) or (N, ...) V(s) from the model being trained.
        - old_values: same shape, V_old(s) at collection, detached here; needed only with ``clip_value``.
        - returns: same shape, the targets R (e.g. :func:`gae`'s returns or V-trace's vs); detached here.
        - clip_value: c > 0, or None for the plain squared error.
        - weights: optional per-sample weights or 0/1 mask (see :func:`weighted_mean`).
    Returns:
        0-dim loss, differentiable w.r.t. ``values``.
    """
    returns = returns.detach()
    squared_error = (values - returns).pow(2)
    if clip_value is not None:
        if old_values is None or not clip_value > 0:
            raise ValueError('value clipping needs old_values and clip_value > 0')
        old_values = old_values.detach()
        clipped_values = old_values + (values - old_values).clamp(-clip_value, clip_value)
        squared_error = torch.maximum(squared_error, (clipped_values - returns).pow(2))
    return 0.5 * weighted_mean(squared_error, weights)
