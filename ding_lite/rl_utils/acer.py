"""ACER: actor-critic with experience replay (Wang et al., 2017, "Sample Efficient Actor-Critic with Experience
Replay", arXiv:1611.01224).

A behaviour policy mu generated an unroll x_0, a_0, r_0, ..., x_{T-1}, a_{T-1}, r_{T-1}; the learner improves the
policy pi. With the importance ratio rho_t = pi(a_t|x_t) / mu(a_t|x_t), ACER has three ingredients.

**Retrace targets** (sec. 3.1). The target for Q(x_t, a_t) is computed backwards in time,

    Q_ret_t = r_t + gamma [ c_{t+1} (Q_ret_{t+1} - Q(x_{t+1}, a_{t+1})) + V(x_{t+1}) ],

with the truncated trace coefficient c_t = min(1, rho_t) for discrete actions and c_t = min(1, rho_t^(1/d)) for a
d-dimensional continuous action (sec. 5.1). With every c = 1 the same recursion gives Q_opc, a target without
importance weights, which the paper prefers in the continuous policy gradient.

**Truncated importance sampling with bias correction** (sec. 3.2). With rho_bar_t = min(c, rho_t),

    g_t = rho_bar_t grad log pi(a_t|x_t) (Q_ret_t - V(x_t))
          + E_{a ~ pi} [ [1 - c / rho_t(a)]_+ grad log pi(a|x_t) (Q(x_t, a) - V(x_t)) ].

The first term has variance bounded by c; the second, weighted by how much each action's ratio exceeds c, gives back
exactly what the truncation removed, so (with the true Q) E_mu[g_t] = E_pi[grad log pi (Q - V)]. For discrete
actions the expectation over pi is a sum; for continuous ones it is estimated with one sample a' ~ pi.

**Efficient trust region** (sec. 3.3). Write the policy as a distribution f of statistics phi(x) produced by
the network, g = d(objective)/d(phi) per sample and k = d KL(f(phi_avg) || f(phi)) / d(phi), with phi_avg the
statistics of an exponential moving average of the policy's parameters. The linearised problem
min_z 0.5 ||g - z||^2 s.t. k^T z <= delta has the closed-form solution

    z* = g - max(0, (k^T g - delta) / ||k||^2) k,

which is then back-propagated from phi into the network in place of g.

**Stochastic dueling network** for continuous actions (sec. 5.1): Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, u_i),
u_i ~ pi (the model's job), and the target of its V head

    V_target(x_t) = min(1, rho_t) (Q_ret_t - Q~(x_t, a_t)) + V(x_t).

Conventions of this module:

* Time-major tensors: (T, B) per step, (T, B, A) for per-action statistics, (T, B, D) for continuous actions.
* Targets (Q_ret, Q_opc, V_target) and trust-region directions are returned detached: they are constants.
* Action masks (categorical policies, ``mask`` (..., A) bool, True where valid): pi, mu and V over the valid actions
  only; a masked action contributes exactly 0 to every sum and gradient (no 0 * log 0, no Q of a masked action).
* Every ``*_loss`` returned here is per step, (T, B), and is to be **minimised**; the caller reduces it (mean or
  weighted mean). ``grad`` fields are gradients of the **objective** (minus the loss) w.r.t. the statistics, the
  ``g`` of the paper, per sample.
* Statistics for the trust region: the **logits** for a categorical policy (as ChainerRL, whose softmax
  distribution's parameter is the logits) and (mu, sigma) -- or (mu, log sigma) -- for a diagonal Gaussian. The paper
  uses the probability vector for categorical policies; that treats the probabilities as free coordinates off the
  simplex and puts 1 / pi(a) factors into both g and k (k = -pi_avg / pi), which explode for rare actions. In logit
  coordinates g and k are bounded (k = pi - pi_avg), sum to zero over actions (softmax is shift invariant, so the
  projection never moves the logits along the all-ones direction) and the network outputs the logits directly.

Episode ends inside an unroll (for :func:`acer_retrace_targets`; :func:`acer_trace_boundaries` builds the inputs):
    The trace is *cut after step t* when the episode ended at t (terminated or truncated) and always at t = T-1.
    At a cut Q_ret_t = r_t + ``bootstrap_t``, where ``bootstrap_t`` is the already discounted value of the state
    reached after step t: 0 for a termination (the value after a terminal state is 0), gamma V(final_obs_t) for a
    truncation (the episode could have gone on; the next row of the unroll holds the reset observation, so the caller
    supplies the value of the true final one), and gamma V(x_T) at t = T-1 (0 if that step terminated). Nothing at or
    after step t+1 reaches Q_ret_s for s <= t.
"""
from collections import namedtuple
from typing import Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F

__all__ = [
    'AcerTraceBoundaries', 'AcerPolicyLoss', 'acer_trace_coef', 'acer_trace_boundaries', 'acer_retrace_targets',
    'acer_q_opc_targets', 'acer_state_values', 'acer_policy_loss_discrete', 'acer_policy_loss_continuous',
    'acer_kl_grad_categorical', 'acer_kl_grad_gaussian', 'acer_trust_region_update', 'acer_trust_region_loss',
    'acer_value_target', 'acer_critic_loss_discrete', 'acer_critic_loss_continuous'
]

Stats = Union[torch.Tensor, Sequence[torch.Tensor]]

AcerTraceBoundaries = namedtuple('AcerTraceBoundaries', ['discounts', 'bootstrap'])
AcerPolicyLoss = namedtuple('AcerPolicyLoss', ['loss', 'truncated_loss', 'correction_loss', 'grad'])

_LOG_2PI = 1.8378770664093453  # log(2 pi)


# --------------------------------------------------------------------------------------------------- retrace targets
def acer_trace_coef(ratios: torch.Tensor, action_dim: Optional[int] = None) -> torch.Tensor:
    """Truncated trace coefficients c_t, detached.

    Arguments:
        - ratios: (T, B, ...) importance ratios rho_t = pi(a_t|x_t) / mu(a_t|x_t) of the taken actions (joint over
          the action's dimensions).
        - action_dim: None for discrete actions: c_t = min(1, rho_t). The action dimension d for continuous actions:
          c_t = min(1, rho_t^(1/d)) (sec. 5.1 of the paper: a joint ratio over d dimensions behaves like a product of
          d per-dimension ratios, and its d-th root keeps the trace from collapsing as d grows).
    Returns:
        c (T, B, ...) in [0, 1].
    """
    with torch.no_grad():
        if action_dim is not None:
            if action_dim < 1:
                raise ValueError(f'action_dim must be >= 1, got {action_dim}')
            ratios = ratios.pow(1.0 / action_dim)
        return torch.clamp(ratios, max=1.0)


def acer_trace_boundaries(
        gamma: Union[float, torch.Tensor],
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        next_values: torch.Tensor,
) -> AcerTraceBoundaries:
    """Per-step ``discounts`` and ``bootstrap`` for :func:`acer_retrace_targets` from gymnasium's episode-end flags.

    Arguments:
        - gamma: the discount factor (a float or a tensor broadcastable to (T, B, ...)).
        - terminated: (T, B, ...) bool/0-1, step t reached a terminal state.
        - truncated: (T, B, ...) bool/0-1, step t ended the episode by a time limit (or other truncation). A step that
          is both terminated and truncated counts as terminated (no bootstrap).
        - next_values: (T, B, ...) V of the observation reached after step t, computed without gradient: at a
          truncation V(final_obs_t), at t = T-1 V(x_T) (the true final observation if that step ended the episode).
          Other rows are never read (they may hold anything, NaN included).
    Returns:
        ``AcerTraceBoundaries(discounts, bootstrap)``, (T, B, ...) each, detached:
        ``discounts_t`` = gamma where the trace continues into step t+1 and 0 where it is cut after t (any episode
        end and t = T-1); ``bootstrap_t`` = gamma V(next) where cut without termination, 0 elsewhere.
    """
    if not (terminated.shape == truncated.shape == next_values.shape):
        raise ValueError('terminated, truncated and next_values must all be (T, B, ...)')
    with torch.no_grad():
        terminated, truncated = terminated.bool(), truncated.bool()
        cut = terminated | truncated
        if cut.shape[0] > 0:
            cut[-1] = True
        bootstrapped = cut & ~terminated
        dtype = next_values.dtype
        discounts = gamma * (~cut).to(dtype)
        bootstrap = torch.where(bootstrapped, gamma * next_values, torch.zeros_like(next_values))
        return AcerTraceBoundaries(discounts=discounts.detach(), bootstrap=bootstrap.detach())


def acer_retrace_targets(
        rewards: torch.Tensor,
        q_taken: torch.Tensor,
        values: torch.Tensor,
        trace_coefs: torch.Tensor,
        discounts: torch.Tensor,
        bootstrap: torch.Tensor,
) -> torch.Tensor:
    """Retrace targets Q_ret (sec. 3.1 of the paper) with episode ends inside the unroll.

    Computed backwards from the last step:

        Q_ret_t = r_t + bootstrap_t + discounts_t [ c_{t+1} (Q_ret_{t+1} - Q(x_{t+1}, a_{t+1})) + V(x_{t+1}) ]

    for t < T-1, and Q_ret_{T-1} = r_{T-1} + bootstrap_{T-1} (``discounts_{T-1}`` is never read). Where
    ``discounts_t`` is 0 the bracket (anything from step t+1 on, even NaN) is dropped.

    Arguments:
        - rewards: (T, B, ...) r_t.
        - q_taken: (T, B, ...) Q(x_t, a_t) of the taken actions (Q~ of the SDN for continuous actions).
        - values: (T, B, ...) V(x_t): sum_a pi(a|x_t) Q(x_t, a) for discrete actions, the V head for continuous.
        - trace_coefs: (T, B, ...) c_t from :func:`acer_trace_coef` (all ones for Q_opc). Row 0 is never read: c_t
          scales the correction carried from step t back into step t-1.
        - discounts: (T, B, ...) gamma_t for carrying step t+1 back into step t: gamma (1 - done_t) inside the
          unroll; 0 where the trace is cut after t.
        - bootstrap: (T, B, ...) discounted value of the state after step t, added only where the trace is cut after
          t (see the module docstring); 0 where it continues. :func:`acer_trace_boundaries` builds ``discounts`` and
          ``bootstrap`` from ``terminated`` / ``truncated`` flags.
    Returns:
        Q_ret (T, B, ...), detached.
    """
    shape = rewards.shape
    if not (q_taken.shape == values.shape == trace_coefs.shape == discounts.shape == bootstrap.shape == shape):
        raise ValueError('rewards, q_taken, values, trace_coefs, discounts, bootstrap must all be (T, B, ...)')
    with torch.no_grad():
        out = torch.empty_like(rewards)
        T = shape[0]
        if T == 0:
            return out
        base = rewards + bootstrap
        out[-1] = base[-1]
        # Everything but the recursion itself, vectorised: carry_t = c_{t+1} Q_ret_{t+1} + offset_t.
        c_next = trace_coefs[1:]
        offset = values[1:] - c_next * q_taken[1:]
        cut = discounts[:-1] == 0  # where nothing after step t may reach it (even a NaN)
        # The rows as views, taken once (indexing T x 7 times in the loop cost more than its arithmetic)
        rows = zip(offset.unbind(0), c_next.unbind(0), discounts.unbind(0), cut.unbind(0), base.unbind(0))
        out_rows = out.unbind(0)
        for t, (offset_t, c_t, discount_t, cut_t, base_t) in reversed(list(enumerate(rows))):
            carry = torch.addcmul(offset_t, c_t, out_rows[t + 1])
            torch.add(base_t, (discount_t * carry).masked_fill_(cut_t, 0.0), out=out_rows[t])
    return out.detach()


def acer_q_opc_targets(
        rewards: torch.Tensor,
        q_taken: torch.Tensor,
        values: torch.Tensor,
        discounts: torch.Tensor,
        bootstrap: torch.Tensor,
) -> torch.Tensor:
    """Q_opc targets: the retrace recursion with every c_t = 1 (no importance weighting), as used by the paper for
    the continuous policy gradient (ChainerRL's ``use_Q_opc``). Arguments and result as
    :func:`acer_retrace_targets`; (T, B, ...) detached."""
    return acer_retrace_targets(rewards, q_taken, values, torch.ones_like(rewards), discounts, bootstrap)


def acer_state_values(logits: torch.Tensor, q_values: torch.Tensor, mask: Optional[torch.Tensor] = None
                      ) -> torch.Tensor:
    """V(x) = sum_a pi(a|x) Q(x, a) for a categorical policy: (..., A) logits and Q values -> (...).

    ``mask`` (..., A) bool, True where the action is valid: the sum runs over the valid actions only, pi the softmax
    over them (the Q of a masked action, never trained, never enters; a row that allows nothing, a terminal
    observation's, gives 0). Differentiable w.r.t. both inputs; detach it where it serves as a baseline or a target.
    """
    if mask is None:
        return (torch.softmax(logits, dim=-1) * q_values).sum(dim=-1)
    pi = torch.softmax(_masked(logits, mask), dim=-1).masked_fill(~mask, 0.0)
    return (pi * q_values.masked_fill(~mask, 0.0)).sum(dim=-1)


def _masked(logits: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """Logits with the most negative finite float where ``mask`` is False (``torch_utils.mask_logits``)."""
    return logits if mask is None else torch.where(mask, logits, torch.finfo(logits.dtype).min)


# ------------------------------------------------------------------------------------------------------ policy losses
def _truncation_weights(log_rhos: torch.Tensor, c_clip: Optional[float]) -> Tuple[torch.Tensor, torch.Tensor]:
    """From log rho: the truncated weight min(c, rho) and the correction weight [1 - c / rho]_+ (no NaN for rho = 0
    or rho = inf). ``c_clip=None``: no truncation, weights rho and 0."""
    rhos = torch.exp(log_rhos)
    if c_clip is None:
        return rhos, torch.zeros_like(rhos)
    if c_clip <= 0:
        raise ValueError(f'c_clip must be positive (or None), got {c_clip}')
    return torch.clamp(rhos, max=c_clip), torch.clamp(1.0 - c_clip * torch.exp(-log_rhos), min=0.0)


def acer_policy_loss_discrete(
        logits: torch.Tensor,
        behaviour_logits: torch.Tensor,
        actions: torch.Tensor,
        q_values: torch.Tensor,
        q_targets: torch.Tensor,
        c_clip: Optional[float] = 10.0,
        values: Optional[torch.Tensor] = None,
        normalized: bool = False,
        mask: Optional[torch.Tensor] = None,
) -> AcerPolicyLoss:
    """ACER policy loss for a categorical policy: truncated importance sampling plus the exact bias correction.

    With rho(a) = pi(a|x_t) / mu(a|x_t), V_t = sum_a pi(a) Q(x_t, a) and A(a) = Q(x_t, a) - V_t, the loss is minus the
    paper's objective (whose gradient is the paper's g_t of sec. 3.2, the expectation over pi summed exactly):

        truncated_loss_t  = - min(c, rho(a_t)) (Q_target_t - V_t) log pi(a_t|x_t)
        correction_loss_t = - sum_a pi(a) [1 - c / rho(a)]_+ A(a) log pi(a|x_t)

    where every factor except log pi is a constant (no gradient). With all rho(a) <= c the correction vanishes.

    Arguments:
        - logits: (T, B, A) the learner policy's logits (log-probabilities work as well); the gradient flows here.
        - behaviour_logits: (T, B, A) the behaviour policy's logits (or log-probabilities), stored at collection.
        - actions: (T, B) long, the taken actions a_t.
        - q_values: (T, B, A) Q(x_t, .) from the critic (detached here).
        - q_targets: (T, B) Q_ret from :func:`acer_retrace_targets` (or Q_opc from :func:`acer_q_opc_targets`).
        - c_clip: the truncation threshold c (paper: 10). None: untruncated importance sampling, no correction.
        - values: (T, B) V_t; None: computed as sum_a pi(a) Q(x_t, a) from ``logits`` and ``q_values``.
        - normalized: ``logits`` and ``behaviour_logits`` are already log-probabilities (``log_softmax`` outputs,
          e.g. the caller's, who needed them for the ratios): they are used as they are, not normalised again.
        - mask: (T, B, A) bool action mask, True where valid (the taken actions are). pi and mu are then the
          softmaxes over the valid actions (masked logits become the most negative finite float), the correction
          sums over the valid actions only and ``grad`` is exactly 0 at the masked ones; ``values`` default to V over
          the valid actions.
    Returns:
        ``AcerPolicyLoss(loss, truncated_loss, correction_loss, grad)``: three (T, B) per-step losses to minimise
        (loss = truncated_loss + correction_loss) and ``grad`` (T, B, A), detached: g of the paper, the gradient of
        the objective (= -d loss_t / d logits_t) w.r.t. the logits, the trust-region statistics of this module:

            g = min(c, rho(a_t)) (Q_target_t - V_t) (e_{a_t} - pi) + u - (sum_a u_a) pi,
            u_a = pi(a) [1 - c / rho(a)]_+ A(a).
    """
    if logits.dim() < 3 or behaviour_logits.shape != logits.shape or q_values.shape != logits.shape:
        raise ValueError('logits, behaviour_logits and q_values must be (T, B, A)')
    if actions.shape != logits.shape[:-1] or q_targets.shape != logits.shape[:-1]:
        raise ValueError('actions and q_targets must be (T, B)')
    log_pi = logits if normalized else F.log_softmax(_masked(logits, mask), dim=-1)
    idx = actions.long().unsqueeze(-1)
    with torch.no_grad():
        log_mu = behaviour_logits.detach()
        log_mu = log_mu if normalized else F.log_softmax(_masked(log_mu, mask), dim=-1)
        q_values = q_values.detach()
        if mask is not None:  # every masked entry an exact 0 (no 0 * huge, no Q of a masked action)
            log_mu, q_values = log_mu.masked_fill(~mask, 0.0), q_values.masked_fill(~mask, 0.0)
        pi = log_pi.exp() if mask is None else log_pi.exp().masked_fill(~mask, 0.0)
        v = (pi * q_values).sum(-1) if values is None else values.detach()
        log_rhos = log_pi - log_mu if mask is None else (log_pi - log_mu).masked_fill(~mask, 0.0)
        w_trunc_all, w_corr = _truncation_weights(log_rhos, c_clip)
        w_trunc = w_trunc_all.gather(-1, idx).squeeze(-1)
        coef_taken = w_trunc * (q_targets.detach() - v)  # (T, B)
        coef_all = pi * w_corr * (q_values - v.unsqueeze(-1))  # (T, B, A), u of the docstring (0 where masked)
        grad = coef_all - coef_all.sum(-1, keepdim=True) * pi
        grad.scatter_add_(-1, idx, coef_taken.unsqueeze(-1))
        grad -= coef_taken.unsqueeze(-1) * pi
    if mask is not None:  # log pi of a masked action: a constant 0 here (its weight is 0), not the huge negative
        log_pi = log_pi.masked_fill(~mask, 0.0)
    truncated_loss = -coef_taken * log_pi.gather(-1, idx).squeeze(-1)
    correction_loss = -(coef_all * log_pi).sum(-1)
    return AcerPolicyLoss(truncated_loss + correction_loss, truncated_loss, correction_loss, grad)


def _gaussian_log_prob(x: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    z = (x - mu) / sigma
    return (-0.5 * z * z - torch.log(sigma) - 0.5 * _LOG_2PI).sum(-1)


def _gaussian_score(x: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor,
                    wrt_log_sigma: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """d log N(x; mu, sigma) / d(mu, sigma) (or d(mu, log sigma)), per dimension."""
    z = (x - mu) / sigma
    d_log_sigma = z * z - 1.0
    return z / sigma, (d_log_sigma if wrt_log_sigma else d_log_sigma / sigma)


def acer_policy_loss_continuous(
        mu: torch.Tensor,
        sigma: torch.Tensor,
        behaviour_mu: torch.Tensor,
        behaviour_sigma: torch.Tensor,
        actions: torch.Tensor,
        q_targets: torch.Tensor,
        values: torch.Tensor,
        sampled_actions: torch.Tensor,
        q_sampled: torch.Tensor,
        c_clip: Optional[float] = 10.0,
        wrt_log_sigma: bool = False,
) -> AcerPolicyLoss:
    """ACER policy loss for a diagonal Gaussian policy (sec. 5 of the paper, one-sample bias correction).

    With rho(a) = pi(a|x_t) / mu(a|x_t) and one a'_t ~ pi(.|x_t) drawn by the caller (no reparametrisation):

        truncated_loss_t  = - min(c, rho(a_t)) (Q_target_t - V(x_t)) log pi(a_t|x_t)
        correction_loss_t = - [1 - c / rho(a'_t)]_+ (Q~(x_t, a'_t) - V(x_t)) log pi(a'_t|x_t)

    with constant weights and advantages. The paper uses Q_target = Q_opc (:func:`acer_q_opc_targets`) here; Q_ret
    works as well.

    Arguments:
        - mu, sigma: (T, B, D) the learner policy's mean and standard deviation; the gradient flows here.
        - behaviour_mu, behaviour_sigma: (T, B, D) the behaviour policy's, stored at collection.
        - actions: (T, B, D) the taken actions a_t.
        - q_targets: (T, B) Q_opc or Q_ret.
        - values: (T, B) V(x_t) (detached here).
        - sampled_actions: (T, B, D) a'_t ~ pi(.|x_t), drawn without gradient.
        - q_sampled: (T, B) Q~(x_t, a'_t) from the SDN (detached here).
        - c_clip: the truncation threshold c. None: untruncated importance sampling, no correction.
        - wrt_log_sigma: return the sigma part of ``grad`` w.r.t. log sigma instead of sigma (for a network whose
          statistic is log sigma; use the same choice in :func:`acer_kl_grad_gaussian`).
    Returns:
        ``AcerPolicyLoss(loss, truncated_loss, correction_loss, grad)``: three (T, B) per-step losses to minimise and
        ``grad = (g_mu, g_sigma)``, two (T, B, D) tensors, detached: the gradient of the objective (= -d loss_t / d
        statistics_t) w.r.t. mu and sigma (or log sigma).
    """
    shape = mu.shape
    if mu.dim() < 3 or not (sigma.shape == behaviour_mu.shape == behaviour_sigma.shape == actions.shape ==
                            sampled_actions.shape == shape):
        raise ValueError('mu, sigma, behaviour_mu, behaviour_sigma, actions, sampled_actions must be (T, B, D)')
    if not (q_targets.shape == values.shape == q_sampled.shape == shape[:-1]):
        raise ValueError('q_targets, values and q_sampled must be (T, B)')
    actions, sampled_actions = actions.detach(), sampled_actions.detach()
    log_pi_taken = _gaussian_log_prob(actions, mu, sigma)
    log_pi_sampled = _gaussian_log_prob(sampled_actions, mu, sigma)
    with torch.no_grad():
        b_mu, b_sigma = behaviour_mu.detach(), behaviour_sigma.detach()
        v = values.detach()
        w_trunc, _ = _truncation_weights(log_pi_taken - _gaussian_log_prob(actions, b_mu, b_sigma), c_clip)
        _, w_corr = _truncation_weights(log_pi_sampled - _gaussian_log_prob(sampled_actions, b_mu, b_sigma), c_clip)
        coef_taken = w_trunc * (q_targets.detach() - v)
        coef_sampled = w_corr * (q_sampled.detach() - v)
        s_mu, s_sigma = _gaussian_score(actions, mu, sigma, wrt_log_sigma)
        c_mu, c_sigma = _gaussian_score(sampled_actions, mu, sigma, wrt_log_sigma)
        g_mu = coef_taken.unsqueeze(-1) * s_mu + coef_sampled.unsqueeze(-1) * c_mu
        g_sigma = coef_taken.unsqueeze(-1) * s_sigma + coef_sampled.unsqueeze(-1) * c_sigma
    truncated_loss = -coef_taken * log_pi_taken
    correction_loss = -coef_sampled * log_pi_sampled
    return AcerPolicyLoss(truncated_loss + correction_loss, truncated_loss, correction_loss, (g_mu, g_sigma))


# ------------------------------------------------------------------------------------------------------ trust region
def acer_kl_grad_categorical(avg_logits: torch.Tensor, logits: torch.Tensor,
                             mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """k = d KL(pi_avg || pi) / d logits = pi - pi_avg, (T, B, A), detached.

    KL(pi_avg || pi) = sum_a pi_avg(a) (log pi_avg(a) - log pi(a)) with pi = softmax(logits); since
    d log pi(a) / d logits = e_a - pi, the gradient is -pi_avg + pi sum_a pi_avg(a) = pi - pi_avg. ``mask`` (T, B, A)
    bool: both policies are the softmaxes over the valid actions, and k is exactly 0 at the masked ones.
    """
    with torch.no_grad():
        k = torch.softmax(_masked(logits, mask), dim=-1) - torch.softmax(_masked(avg_logits, mask), dim=-1)
        return k if mask is None else k.masked_fill(~mask, 0.0)


def acer_kl_grad_gaussian(
        avg_mu: torch.Tensor,
        avg_sigma: torch.Tensor,
        mu: torch.Tensor,
        sigma: torch.Tensor,
        wrt_log_sigma: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """k = d KL(N(mu_avg, sigma_avg) || N(mu, sigma)) / d(mu, sigma) for diagonal Gaussians, detached.

    Per dimension KL = log(sigma / sigma_avg) + (sigma_avg^2 + (mu - mu_avg)^2) / (2 sigma^2) - 1/2, so

        dKL/dmu = (mu - mu_avg) / sigma^2,
        dKL/dsigma = 1/sigma - (sigma_avg^2 + (mu - mu_avg)^2) / sigma^3   (dKL/dlog sigma = sigma dKL/dsigma).

    Arguments: four (T, B, D) tensors; ``wrt_log_sigma`` as in :func:`acer_policy_loss_continuous`.
    Returns: ``(k_mu, k_sigma)``, two (T, B, D) tensors (k_sigma w.r.t. log sigma if ``wrt_log_sigma``).
    """
    with torch.no_grad():
        var = sigma * sigma
        diff = mu - avg_mu
        k_mu = diff / var
        k_log_sigma = 1.0 - (avg_sigma * avg_sigma + diff * diff) / var
        return k_mu, (k_log_sigma if wrt_log_sigma else k_log_sigma / sigma)


def _as_list(x: Stats) -> list:
    return [x] if isinstance(x, torch.Tensor) else list(x)


def acer_trust_region_update(g: Stats, k: Stats, delta: float) -> Stats:
    """Projected gradient of the efficient trust region (sec. 3.3 of the paper), per sample:

        z* = g - max(0, (k^T g - delta) / ||k||^2) k,

    the solution of min_z 0.5 ||g - z||^2 s.t. k^T z <= delta (z* = g where ||k|| = 0).

    Arguments:
        - g: the objective's gradient w.r.t. the statistics, a (T, B, ..., n) tensor or a list of tensors with the
          same leading dims (e.g. ``[g_mu, g_sigma]``); the statistics of one sample are the last dim of every
          tensor, concatenated.
        - k: the gradient of KL(avg || current) w.r.t. the same statistics, same structure and shapes as ``g``.
        - delta: the trust-region bound (paper: 1).
    Returns:
        z*, with the structure of ``g`` (a tensor or a list), detached.
    """
    gs, ks = _as_list(g), _as_list(k)
    if len(gs) != len(ks) or any(a.shape != b.shape for a, b in zip(gs, ks)):
        raise ValueError('g and k must have the same structure and shapes')
    with torch.no_grad():
        kg = sum((a * b).sum(-1) for a, b in zip(ks, gs))
        kk = sum((a * a).sum(-1) for a in ks)
        safe_kk = torch.where(kk > 0, kk, torch.ones_like(kk))
        scale = torch.where(kk > 0, torch.clamp((kg - delta) / safe_kk, min=0.0), torch.zeros_like(kk))
        z = [(a - scale.unsqueeze(-1) * b).detach() for a, b in zip(gs, ks)]
    return z[0] if isinstance(g, torch.Tensor) else z


def acer_trust_region_loss(stats: Stats, z: Stats) -> torch.Tensor:
    """Surrogate loss that back-propagates z* from the statistics into the network: -sum_i phi_i z_i per sample.

    Arguments:
        - stats: the statistics phi (with gradient), a (T, B, ..., n) tensor or a list, as ``g`` was.
        - z: :func:`acer_trust_region_update`'s result, same structure (treated as a constant).
    Returns:
        (T, B, ...) per-step loss to minimise: its gradient w.r.t. phi is -z*, i.e. a descent step on it moves phi
        along z*. Reduce it the same way as the policy loss it replaces; its value itself has no meaning.
    """
    ss, zs = _as_list(stats), _as_list(z)
    if len(ss) != len(zs) or any(a.shape != b.shape for a, b in zip(ss, zs)):
        raise ValueError('stats and z must have the same structure and shapes')
    return -sum((a * b.detach()).sum(-1) for a, b in zip(ss, zs))


# ------------------------------------------------------------------------------------------------------------ critic
def acer_value_target(
        q_targets: torch.Tensor, q_taken: torch.Tensor, values: torch.Tensor, ratios: torch.Tensor
) -> torch.Tensor:
    """Target of the SDN's V head: V_target_t = min(1, rho_t) (Q_ret_t - Q~(x_t, a_t)) + V(x_t), (T, B), detached.

    ``ratios`` are the full (joint) ratios rho_t, not their d-th root. All inputs (T, B).
    """
    with torch.no_grad():
        return (torch.clamp(ratios, max=1.0) * (q_targets - q_taken) + values).detach()


def acer_critic_loss_discrete(q_values: torch.Tensor, actions: torch.Tensor, q_targets: torch.Tensor) -> torch.Tensor:
    """0.5 (Q_ret_t - Q(x_t, a_t))^2, (T, B), to minimise; gradient flows into ``q_values`` (T, B, A) only.

    ``actions`` (T, B) long, ``q_targets`` (T, B) Q_ret."""
    q_taken = q_values.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    return 0.5 * (q_targets.detach() - q_taken).pow(2)


def acer_critic_loss_continuous(
        q_taken: torch.Tensor, values: torch.Tensor, q_targets: torch.Tensor, value_targets: torch.Tensor
) -> torch.Tensor:
    """0.5 (Q_ret_t - Q~(x_t, a_t))^2 + 0.5 (V_target_t - V(x_t))^2, (T, B), to minimise.

    Gradient flows into ``q_taken`` (the SDN's Q~, itself a function of V and A) and ``values``; the targets are
    constants (see :func:`acer_retrace_targets`, :func:`acer_value_target`)."""
    return 0.5 * (q_targets.detach() - q_taken).pow(2) + 0.5 * (value_targets.detach() - values).pow(2)
