"""Soft Actor-Critic losses for continuous, discrete and mixed action spaces (Haarnoja et al., 2018, "Soft
Actor-Critic Algorithms and Applications", arXiv:1812.05905; discrete form: Christodoulou, 2019, arXiv:1910.07207;
mixed form as in ALF's ``SacAlgorithm``).

SAC maximises the entropy-regularised return  E[sum_t gamma^t (r_t + alpha H(pi(.|s_t)))]. With N critics Q_i and
slowly moving target copies Q_i', the pieces are

    soft value      V(s)   = E_{a~pi}[min_i Q_i'(s, a) - alpha log pi(a|s)]
    critic target   y      = r + gamma (1 - terminated) V(s')                      (regression target, detached)
    critic loss            = sum_i mean_B (Q_i(s, a) - y)^2
    actor loss             = mean_B E_{a~pi}[alpha log pi(a|s) - min_i Q_i(s, a)]
    alpha loss             = -mean_B log_alpha (log pi(a|s) + H_target)            (log pi, H_target detached)

and the three action types differ only in how the expectation over a ~ pi is taken:

* continuous: a = scale * tanh(u) + shift, u ~ N(mu, std), one reparameterised sample (the expectation is a
  single-sample Monte Carlo estimate, the gradient flows through u into mu and std);
* discrete: pi(.|s) is a categorical over A actions and every expectation is an exact sum over the actions; the
  policy is either an actor's softmax or, as in ALF, the Boltzmann policy  pi(a|s) ∝ exp(Q(s, a) / alpha)  of the
  critics, which needs no actor and no actor loss (:func:`boltzmann_policy`);
* mixed, an action (k, a_c) in Tuple(Discrete(K), Box(D)): a_c comes from a squashed-Gaussian actor, k from the
  Boltzmann policy  p(k|s, a_c) ∝ exp(Q(s, a_c, k) / alpha_d)  of a Q network that takes a_c as an input and has K
  outputs. The joint policy is pi(a_c, k|s) = pi_c(a_c|s) p(k|s, a_c) and each part has its own temperature:

      V(s') = sum_k p(k|s', a_c') [min_i Q_i'(s', a_c', k) - alpha_d log p(k|s', a_c')] - alpha_c log pi_c(a_c'|s').

Shapes are batch-major: (B, ...) per sample; critics come as an ensemble tensor (N, B) (continuous, or the Q of the
taken discrete action) or (N, B, A) (all discrete actions); wherever an ensemble is accepted an already reduced
(B,) / (B, A) tensor is accepted too (see :func:`ensemble_min`).

Episode ends: only ``terminated`` (a true terminal state, whose value is 0) stops the bootstrap. A truncation (time
limit) is not a death: the transition's next observation is the real final observation and its value is bootstrapped
like any other, so pass ``terminated=False`` for it. A step that is both terminated and truncated is terminated.

Temperatures ``alpha`` may be Python floats or tensors; tensors are detached inside the critic targets and the actor
losses, so only :func:`sac_alpha_loss` / :func:`sac_alpha_loss_from_entropy` move ``log_alpha``.
"""
import math
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F

__all__ = [
    'squashed_gaussian_sample', 'squashed_gaussian_log_prob', 'log_one_minus_tanh_sq', 'ensemble_min', 'gather_q',
    'boltzmann_policy', 'discrete_entropy', 'discrete_soft_value', 'sac_critic_target', 'discrete_sac_critic_target',
    'mixed_sac_critic_target', 'sac_critic_loss', 'sac_actor_loss', 'discrete_sac_actor_loss', 'mixed_sac_actor_loss',
    'mixed_joint_log_prob', 'sac_alpha_loss', 'sac_alpha_loss_from_entropy', 'clamp_log_alpha_',
    'continuous_target_entropy', 'discrete_target_entropy', 'SQUASHED_GAUSSIAN_MAX_ENTROPY'
]

Number = Union[float, torch.Tensor]

_LOG_2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _const(x: Number) -> Number:
    """A temperature / discount as a constant: tensors are detached, numbers pass through."""
    return x.detach() if isinstance(x, torch.Tensor) else x


def _float_like(x: Union[bool, float, torch.Tensor], like: torch.Tensor) -> Union[float, torch.Tensor]:
    """``terminated`` (bool / 0-1 float, scalar or tensor) as a float in ``like``'s dtype."""
    if isinstance(x, torch.Tensor):
        return x.to(dtype=like.dtype)
    return float(x)


# ---------------------------------------------------------------------------------------------- squashed Gaussian
def log_one_minus_tanh_sq(u: torch.Tensor) -> torch.Tensor:
    """log(1 - tanh(u)^2), elementwise, in the stable form 2 (log 2 - u - softplus(-2u)).

    Since 1 - tanh(u)^2 = 4 e^{-2u} / (1 + e^{-2u})^2, the identity is exact; it is finite for every finite u
    (about -2|u| + 2 log 2 for large |u|), whereas the literal ``log(1 - tanh(u)**2)`` is -inf once tanh(u) rounds
    to +-1 (|u| > ~9 in float32).
    """
    return 2.0 * (_LOG_2 - u - F.softplus(-2.0 * u))


def _scale_shift(low: Number, high: Number, like: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(low, torch.Tensor) and not isinstance(high, torch.Tensor) and not high > low:
        raise ValueError(f'need high > low, got low={low}, high={high}')
    low = torch.as_tensor(low, dtype=like.dtype, device=like.device)
    high = torch.as_tensor(high, dtype=like.dtype, device=like.device)
    return (high - low) / 2.0, (high + low) / 2.0


def _sum_log_scale(scale: Number, like: torch.Tensor) -> torch.Tensor:
    """sum over the last dim of log(scale) broadcast to ``like`` (..., D): shape (...) or scalar."""
    log_scale = torch.log(torch.as_tensor(scale, dtype=like.dtype, device=like.device))
    return torch.broadcast_to(log_scale, like.shape).sum(dim=-1)


def squashed_gaussian_log_prob(
        u: torch.Tensor,
        mu: torch.Tensor,
        std: torch.Tensor,
        scale: Number = 1.0,
) -> torch.Tensor:
    """log-density of the action a = scale * tanh(u) + shift, evaluated from its pre-squash value u.

    By the change of variables for the elementwise map u -> a (Jacobian diag(scale (1 - tanh(u)^2))):

        log pi(a) = sum_d [log N(u_d; mu_d, std_d) - log(1 - tanh(u_d)^2) - log(scale_d)].

    The shift does not enter. tanh is never inverted: the environment action is not needed, and nothing is lost when
    tanh(u) rounds to +-1.

    Arguments:
        - u: (..., D) pre-squash sample.
        - mu, std: (..., D) mean and standard deviation (> 0) of the Gaussian on u.
        - scale: (high - low) / 2, a number or a tensor broadcastable to (..., D).
    Returns:
        (...) log pi(a), summed over the D action dims; differentiable w.r.t. u, mu, std.
    """
    z = (u - mu) / std
    gauss = -0.5 * z.pow(2) - torch.log(std) - _HALF_LOG_2PI
    return (gauss - log_one_minus_tanh_sq(u)).sum(dim=-1) - _sum_log_scale(scale, u)


def squashed_gaussian_sample(
        mu: torch.Tensor,
        std: Optional[torch.Tensor] = None,
        *,
        log_std: Optional[torch.Tensor] = None,
        low: Number = -1.0,
        high: Number = 1.0,
        deterministic: bool = False,
        noise: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised sample of a tanh-squashed diagonal Gaussian, rescaled to [low, high], and its log-density.

    u = mu + std * eps with eps ~ N(0, I) (u = mu when ``deterministic``), a = scale * tanh(u) + shift with
    scale = (high - low) / 2 and shift = (high + low) / 2, and log pi(a) as in :func:`squashed_gaussian_log_prob`.
    The Gaussian term is computed from eps itself ((u - mu) / std == eps), which is exact and has the same
    gradients as going through u.

    Arguments:
        - mu: (..., D) mean of the pre-squash Gaussian, usually (B, D).
        - std: (..., D) standard deviation > 0; give exactly one of ``std`` and ``log_std``.
        - log_std: (..., D) log standard deviation (used directly in the density, which is better conditioned than
          ``log(std)``). Clamping it (DI-engine uses [-20, 2]) is the model's business.
        - low, high: bounds of the action box, numbers or tensors broadcastable to (..., D); high > low.
        - deterministic: evaluate at the Gaussian mean (u = mu), e.g. for evaluation; ``log_prob`` is then the
          density at that point.
        - noise: (..., D) standard normal eps to use instead of drawing ``torch.randn_like(mu)``.
    Returns:
        ``(action, log_prob)``: action (..., D) in [low, high] and log_prob (...), both differentiable w.r.t. mu and
        std / log_std (the reparameterisation trick).
    """
    if (std is None) == (log_std is None):
        raise ValueError('give exactly one of std and log_std')
    if log_std is None:
        log_std = torch.log(std)
    else:
        std = torch.exp(log_std)
    if deterministic:
        eps = torch.zeros_like(mu)
    else:
        eps = torch.randn_like(mu) if noise is None else noise
    u = mu + std * eps
    gauss = -0.5 * eps.pow(2) - log_std - _HALF_LOG_2PI
    log_prob = (gauss - log_one_minus_tanh_sq(u)).sum(dim=-1)
    if not isinstance(low, torch.Tensor) and not isinstance(high, torch.Tensor) and (low, high) == (-1.0, 1.0):
        return torch.tanh(u), log_prob  # the unit box: scale 1, shift 0 (the common case; saves ~8 ops per call)
    scale, shift = _scale_shift(low, high, mu)
    return scale * torch.tanh(u) + shift, log_prob - _sum_log_scale(scale, u)


def squashed_gaussian_action(mu: torch.Tensor, log_std: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
    """Only the action tanh(u) in [-1, 1]^D, u = mu + exp(log_std) * eps (or mu), for acting: the density that
    :func:`squashed_gaussian_sample` also computes is not needed to pick an action. (..., D) -> (..., D)."""
    if deterministic:
        return torch.tanh(mu)
    return torch.tanh(torch.addcmul(mu, log_std.exp(), torch.randn_like(mu)))


# ------------------------------------------------------------------------------------------- ensembles, policies
def ensemble_min(q: torch.Tensor, like: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The pessimistic Q: min over the replica dim 0 of an ensemble (N, *S).

    With ``like`` (a tensor of shape S), ``q`` may also be already reduced (shape S, returned as it is): it is
    reduced only when ``q.dim() == like.dim() + 1``. Without ``like``, dim 0 is always the replica dim.
    """
    if like is not None and q.dim() == like.dim():
        return q
    if like is not None and q.dim() != like.dim() + 1:
        raise ValueError(f'q has shape {tuple(q.shape)}, expected {tuple(like.shape)} or (N, *{tuple(like.shape)})')
    return q.min(dim=0).values


def gather_q(q: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """Q of the taken discrete actions: q (N, B, A) or (B, A), action (B,) integer -> (N, B) or (B,)."""
    index = action.long().unsqueeze(-1)
    if q.dim() == action.dim() + 2:
        index = index.unsqueeze(0).expand(q.shape[0], *index.shape)
    return q.gather(-1, index).squeeze(-1)


def boltzmann_policy(q: torch.Tensor, alpha: Number) -> Tuple[torch.Tensor, torch.Tensor]:
    """The soft-greedy policy of a critic, pi(a|s) = exp(Q(s, a) / alpha) / sum_b exp(Q(s, b) / alpha).

    This is ALF's discrete policy (no actor network): it is the policy that maximises
    sum_a pi(a) (Q(s, a) - alpha log pi(a)), and that maximum is alpha logsumexp(Q(s, .) / alpha).

    Arguments:
        - q: (..., A) Q values, usually (B, A), already reduced over replicas (e.g. with :func:`ensemble_min`).
        - alpha: temperature > 0 (detached if a tensor).
    Returns:
        ``(probs, log_probs)``, both (..., A); rows of probs sum to 1 and log_probs are finite.
    """
    log_probs = torch.log_softmax(q / _const(alpha), dim=-1)
    return log_probs.exp(), log_probs


def _valid_only(log_probs: torch.Tensor, mask: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(pi, log pi), (..., A), each an exact constant 0 where ``mask`` (..., A) bool is False (no gradient there).

    A masked action's log pi is the most negative finite float or so (``torch_utils.mask_logits``): kept, alpha
    log pi would overflow to -inf for alpha > 1 and 0 * inf make a NaN."""
    if mask is None:
        return log_probs.exp(), log_probs
    log_probs = log_probs.masked_fill(~mask, 0.0)
    return log_probs.exp().masked_fill(~mask, 0.0), log_probs


def discrete_entropy(log_probs: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Exact entropy -sum_a pi(a) log pi(a) of categoricals given as (..., A) finite log-probabilities -> (...).
    ``mask`` (..., A) bool, True where the action is valid: the sum runs over the valid actions only."""
    probs, log_probs = _valid_only(log_probs, mask)
    return -(probs * log_probs).sum(dim=-1)


def discrete_soft_value(q: torch.Tensor, log_probs: torch.Tensor, alpha: Number,
                        mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Exact soft value sum_a pi(a|s) (min_i Q_i(s, a) - alpha log pi(a|s)).

    Arguments:
        - q: (N, B, A) ensemble or (B, A).
        - log_probs: (B, A) finite log pi(.|s) (e.g. ``log_softmax`` output; with a mask, of the masked logits).
        - alpha: temperature, detached if a tensor.
        - mask: (B, A) bool action mask, True where valid: the sum runs over the valid actions only (a masked
          action's Q, never trained, never enters; a row that allows nothing, a terminal state's, gives 0).
    Returns:
        (B,), differentiable w.r.t. q and log_probs (exactly 0 gradient at masked entries).
    """
    probs, log_probs = _valid_only(log_probs, mask)
    q = ensemble_min(q, log_probs)
    if mask is not None:
        q = q.masked_fill(~mask, 0.0)
    return (probs * (q - _const(alpha) * log_probs)).sum(dim=-1)


# ------------------------------------------------------------------------------------------------ critic targets
def _bootstrap(reward: torch.Tensor, next_value: torch.Tensor, gamma: Number,
               terminated: Union[bool, float, torch.Tensor]) -> torch.Tensor:
    return reward + _const(gamma) * (1.0 - _float_like(terminated, reward)) * next_value


def sac_critic_target(
        reward: torch.Tensor,
        next_q: torch.Tensor,
        next_log_prob: torch.Tensor,
        alpha: Number,
        gamma: Number,
        terminated: Union[bool, float, torch.Tensor],
) -> torch.Tensor:
    """Continuous SAC critic target y = r + gamma (1 - terminated) (min_i Q_i'(s', a') - alpha log pi(a'|s')).

    Arguments:
        - reward: (B,) r.
        - next_q: (N, B) target critics Q_i'(s', a') at a fresh a' ~ pi(.|s'), or (B,) already reduced.
        - next_log_prob: (B,) log pi(a'|s') of that same a'.
        - alpha: temperature.
        - gamma: discount, a number or (B,) (e.g. gamma^n for n-step transitions).
        - terminated: (B,) bool / 0-1 float, or a scalar. Truncated (time-limit) steps must have terminated=False:
          they bootstrap from the real final observation.
    Returns:
        (B,) y, detached: a regression target, never a path for gradients.
    """
    with torch.no_grad():
        next_v = ensemble_min(next_q, reward) - _const(alpha) * next_log_prob
        return _bootstrap(reward, next_v, gamma, terminated)


def discrete_sac_critic_target(
        reward: torch.Tensor,
        next_q: torch.Tensor,
        next_log_probs: torch.Tensor,
        alpha: Number,
        gamma: Number,
        terminated: Union[bool, float, torch.Tensor],
        next_mask: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Discrete SAC critic target with the exact expectation over next actions:

        y = r + gamma (1 - terminated) sum_a pi(a|s') (min_i Q_i'(s', a) - alpha log pi(a|s')).

    Arguments:
        - reward: (B,).
        - next_q: (N, B, A) target critics at s', or (B, A) already reduced.
        - next_log_probs: (B, A) log pi(.|s'): an actor's ``log_softmax`` (DI-engine ``discrete_sac``) or the
          Boltzmann policy of the critics (ALF, :func:`boltzmann_policy`).
        - alpha, gamma, terminated: as in :func:`sac_critic_target`.
        - next_mask: (B, A) bool action mask of s': the sum over its valid actions (:func:`discrete_soft_value`).
    Returns:
        (B,) y, detached.
    """
    with torch.no_grad():
        return _bootstrap(reward, discrete_soft_value(next_q, next_log_probs, alpha, next_mask), gamma, terminated)


def mixed_sac_critic_target(
        reward: torch.Tensor,
        next_q: torch.Tensor,
        next_discrete_log_probs: torch.Tensor,
        next_continuous_log_prob: torch.Tensor,
        alpha_discrete: Number,
        alpha_continuous: Number,
        gamma: Number,
        terminated: Union[bool, float, torch.Tensor],
) -> torch.Tensor:
    """Mixed (discrete k, continuous a_c) SAC critic target, exact over k and sampled over a_c:

        V(s') = sum_k p(k|s', a_c') [min_i Q_i'(s', a_c', k) - alpha_d log p(k|s', a_c')] - alpha_c log pi_c(a_c'|s')
        y     = r + gamma (1 - terminated) V(s').

    Arguments:
        - reward: (B,).
        - next_q: (N, B, K) target critics Q_i'(s', a_c', .) at a fresh a_c' ~ pi_c(.|s'), or (B, K).
        - next_discrete_log_probs: (B, K) log p(.|s', a_c'); ALF takes the Boltzmann policy (:func:`boltzmann_policy`
          with alpha_d) of the *online* critics' min at (s', a_c').
        - next_continuous_log_prob: (B,) log pi_c(a_c'|s').
        - alpha_discrete, alpha_continuous: the two temperatures alpha_d, alpha_c.
        - gamma, terminated: as in :func:`sac_critic_target`.
    Returns:
        (B,) y, detached.
    """
    with torch.no_grad():
        next_v = discrete_soft_value(next_q, next_discrete_log_probs, alpha_discrete) \
                 - _const(alpha_continuous) * next_continuous_log_prob
        return _bootstrap(reward, next_v, gamma, terminated)


# -------------------------------------------------------------------------------------------------------- losses
def sac_critic_loss(q: torch.Tensor, target: torch.Tensor, weight: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Sum over the N critics of each one's mean squared error, sum_i mean_B w (Q_i(s, a) - y)^2 (no factor 0.5;
    as DI-engine's ``F.mse_loss`` per twin critic, summed).

    Arguments:
        - q: (N, B) the critics at the taken action (for discrete / mixed actions use :func:`gather_q`), or (B,)
          for a single critic.
        - target: (B,) y; detached here.
        - weight: (B,) optional per-sample weights (e.g. prioritised-replay importance weights).
    Returns:
        0-dim loss; its gradient reaches only ``q``.
    """
    sq = (q - target.detach()).pow(2)
    if weight is not None:
        sq = sq * weight
    return sq.mean(dim=-1).sum() if q.dim() == target.dim() + 1 else sq.mean()


def sac_actor_loss(q: torch.Tensor, log_prob: torch.Tensor, alpha: Number) -> torch.Tensor:
    """Continuous actor loss mean_B (alpha log pi(a|s) - min_i Q_i(s, a)) at a reparameterised a ~ pi(.|s).

    Arguments:
        - q: (N, B) the online critics at (s, a) with a from :func:`squashed_gaussian_sample`, or (B,).
        - log_prob: (B,) log pi(a|s) of that a.
        - alpha: temperature, detached if a tensor.
    Returns:
        0-dim loss. Its gradient reaches mu / std through a and log_prob. It also reaches the critics' parameters
        (q is a function of them): step only the actor's optimizer with it, or freeze the critics.
    """
    return (_const(alpha) * log_prob - ensemble_min(q, log_prob)).mean()


def discrete_sac_actor_loss(q: torch.Tensor, log_probs: torch.Tensor, alpha: Number,
                            mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Discrete actor loss with the exact expectation, mean_B sum_a pi(a|s) (alpha log pi(a|s) - min_i Q_i(s, a)).

    Arguments:
        - q: (N, B, A) online critics at s, or (B, A); detached here (the critics are not trained by this loss).
        - log_probs: (B, A) the actor's log pi(.|s) (``log_softmax`` of its logits).
        - alpha: temperature, detached if a tensor.
        - mask: (B, A) bool action mask: the expectation over the valid actions only.
    Returns:
        0-dim loss = -mean_B :func:`discrete_soft_value`. With the Boltzmann policy (ALF) there is no actor and no
        actor loss.
    """
    return -discrete_soft_value(q.detach(), log_probs, alpha, mask).mean()


def mixed_sac_actor_loss(
        q: torch.Tensor,
        continuous_log_prob: torch.Tensor,
        alpha_discrete: Number,
        alpha_continuous: Number,
) -> torch.Tensor:
    """Actor loss for the continuous part of a mixed action, exact over the discrete part:

        loss = mean_B [alpha_c log pi_c(a_c|s) - sum_k p(k|s, a_c) (Q(s, a_c, k) - alpha_d log p(k|s, a_c))]
             = mean_B [alpha_c log pi_c(a_c|s) - alpha_d logsumexp_k(Q(s, a_c, k) / alpha_d)],

    with Q = min_i Q_i, a_c a reparameterised sample of the actor and p the Boltzmann policy of Q at (s, a_c). The
    second form is used: it is the same number, and its gradient w.r.t. a_c is sum_k p(k|s, a_c) dQ(s, a_c, k)/da_c,
    i.e. ALF's gradient with p held fixed (the dependence of the optimal p on a_c contributes nothing).

    Arguments:
        - q: (N, B, K) online critics Q_i(s, a_c, .) at the sampled a_c, or (B, K).
        - continuous_log_prob: (B,) log pi_c(a_c|s).
        - alpha_discrete, alpha_continuous: alpha_d, alpha_c (detached if tensors).
    Returns:
        0-dim loss; as in :func:`sac_actor_loss` the gradient also reaches the critics' parameters.
    """
    alpha_d = _const(alpha_discrete)
    soft_v = alpha_d * torch.logsumexp(ensemble_min(q, continuous_log_prob.unsqueeze(-1)) / alpha_d, dim=-1)
    return (_const(alpha_continuous) * continuous_log_prob - soft_v).mean()


def mixed_joint_log_prob(
        continuous_log_prob: torch.Tensor,
        discrete_log_probs: torch.Tensor,
        discrete_action: torch.Tensor,
) -> torch.Tensor:
    """log pi(a_c, k|s) = log pi_c(a_c|s) + log p(k|s, a_c), for p conditioned on this very a_c.

    Arguments:
        - continuous_log_prob: (B,) log pi_c(a_c|s), e.g. from :func:`squashed_gaussian_sample`.
        - discrete_log_probs: (B, K) log p(.|s, a_c), e.g. from :func:`boltzmann_policy` of Q(s, a_c, .).
        - discrete_action: (B,) integer k.
    Returns:
        (B,) joint log-density (density in a_c, probability in k).
    """
    return continuous_log_prob + gather_q(discrete_log_probs, discrete_action)


# ---------------------------------------------------------------------------------------------------- temperature
def sac_alpha_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """Temperature loss from sampled log-probabilities, -mean_B log_alpha (log pi(a|s) + H_target).

    d loss / d log_alpha = mean(-log pi) - H_target, the estimated entropy minus the target: gradient descent raises
    alpha while the entropy is below target, lowers it above, and stops at entropy == target. Learning log alpha
    keeps alpha > 0.

    Arguments:
        - log_alpha: 0-dim parameter.
        - log_prob: (B,) log pi(a|s) of fresh samples (detached here).
        - target_entropy: H_target (see :func:`continuous_target_entropy`).
    Returns:
        0-dim loss; its gradient reaches only ``log_alpha``.
    """
    return -(log_alpha * (log_prob + target_entropy).detach()).mean()


def sac_alpha_loss_from_entropy(log_alpha: torch.Tensor, entropy: torch.Tensor,
                                target_entropy: float) -> torch.Tensor:
    """Temperature loss from exact entropies (discrete actions), -mean_B log_alpha (H_target - H(pi(.|s))).

    Same sign convention and fixed point as :func:`sac_alpha_loss`, with the sampled -log pi replaced by the exact
    entropy (:func:`discrete_entropy`). ``entropy`` (B,) is detached here.
    """
    return -(log_alpha * (target_entropy - entropy).detach()).mean()


def clamp_log_alpha_(log_alpha: torch.Tensor, max_log_alpha: Optional[float],
                     min_log_alpha: Optional[float] = None) -> torch.Tensor:
    """Keep log_alpha in [``min_log_alpha``, ``max_log_alpha``] in place (None: no bound on that side), as ALF caps
    it after each update; returns it. Without a floor, a target entropy the policy stays above makes alpha decay
    towards 0 for ever (and exp(Q / alpha) overflow in a Boltzmann policy)."""
    if max_log_alpha is not None or min_log_alpha is not None:
        with torch.no_grad():
            log_alpha.clamp_(min=min_log_alpha, max=max_log_alpha)
    return log_alpha


# The largest entropy (nats) of a = tanh(u), u ~ N(mu, sigma^2), per dimension: 0.683635 at mu = 0, sigma = 0.875,
# rounded up. The uniform distribution on [-1, 1] has log 2 = 0.693147, which no squashed Gaussian reaches.
SQUASHED_GAUSSIAN_MAX_ENTROPY = 0.68364


def continuous_target_entropy(action_dim: int) -> float:
    """The usual heuristic target entropy -dim(A) for a D-dimensional continuous action."""
    if int(action_dim) != action_dim or action_dim < 1:
        raise ValueError(f'action_dim must be a positive integer, got {action_dim}')
    return -float(action_dim)


def discrete_target_entropy(n_actions: int, fraction: float) -> float:
    """fraction * log(n_actions): a fraction of the maximal (uniform) entropy of an n-way categorical.

    ``fraction`` must lie strictly between 0 and 1 (1 would ask for the uniform policy, 0 for a deterministic one);
    Christodoulou (2019) uses 0.98, lower values (e.g. 0.5-0.7) are often more stable.
    """
    if int(n_actions) != n_actions or n_actions < 2:
        raise ValueError(f'n_actions must be an integer >= 2, got {n_actions}')
    if not 0.0 < fraction < 1.0:
        raise ValueError(f'fraction must be in (0, 1), got {fraction}')
    return float(fraction * math.log(n_actions))
