"""What SAC's action spaces share: the interface of the per-action-space part of :class:`~.policy.SACPolicy`
(:class:`SACActionSpace`: acting and the losses) and one update's losses (:class:`SACLosses`). The continuous part is
:class:`~.continuous.ContinuousSAC`; the discrete and mixed ones are in :mod:`.discrete` and :mod:`.mixed`.

Shapes are batch-major: B transitions, N critic replicas, D continuous action dims, A (or K) discrete actions.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import torch
from easydict import EasyDict
from torch import nn

from ding_lite.rl_utils import sac as S

Tensors = Dict[str, torch.Tensor]


@dataclass
class SACLosses:
    """One update's losses (0-dim) and what is logged of it.

    Each loss depends on its own parameters only, so that the policy takes all gradients in one backward pass of
    their sum: ``critic`` on the critics (its target detached), ``actor`` on the actor (the critics it goes through
    evaluated with ``detach_weights=True`` or detached), ``alpha`` on ``log_alpha`` (the log-probabilities detached).
    ``q`` (N, B) the critics at the taken actions and ``target`` (B,) their regression target; ``actor`` is None
    where there is no actor (ALF's Boltzmann policy); ``info`` the action space's own logged scalars (entropies)
    and, once the update has taken its step, the gradient norm ``grad_norm``."""

    critic: torch.Tensor
    actor: Optional[torch.Tensor]
    alpha: torch.Tensor
    q: torch.Tensor
    target: torch.Tensor
    info: Tensors = field(default_factory=dict)


class SACActionSpace:
    """The part of SAC that depends on the action space: how it acts, its parts (one temperature each) and its losses.

    Built once per policy on the policy's model (a QAC-like model with ``compute_actor``, ``compute_critic``) and
    its temperature parameter ``log_alpha`` (one entry per alpha, :attr:`n_alphas`).
    """

    n_alphas = 1
    heads: Tuple[str, ...] = ("continuous",)  # the action's parts, one temperature each: 'discrete', 'continuous'

    def __init__(self, model: nn.Module, cfg: EasyDict, log_alpha: torch.Tensor) -> None:
        self.model, self.cfg, self.log_alpha = model, cfg, log_alpha
        shape = cfg.model.action_shape
        self.n_discrete: Optional[int] = None  # A (or K) discrete choices, for random actions and the target entropy
        self.action_dim: Optional[int] = None  # D continuous dims
        self._init_shape(shape)

    def _init_shape(self, shape: Any) -> None:
        raise NotImplementedError

    # ---- acting ------------------------------------------------------------------------------------------------
    def act(self, obs: torch.Tensor, deterministic: bool) -> Any:
        """The action for (B, *obs_shape) observations: sampled, or the deterministic one (evaluation)."""
        raise NotImplementedError

    def pack(self, discrete: torch.Tensor, continuous: torch.Tensor) -> Any:
        """The env's action from a discrete (B,) and a continuous (B, D) part (uniformly random warm-up actions)."""
        raise NotImplementedError

    # ---- learning ----------------------------------------------------------------------------------------------
    def head_sizes(self) -> Dict[str, int]:
        """``{part: size}`` for each temperature, in order: n choices for 'discrete', D dims for 'continuous'."""
        return {h: self.n_discrete if h == "discrete" else self.action_dim for h in self.heads}

    def losses(self, data: Tensors, alphas: torch.Tensor, target_critic: nn.Module,
               target_entropy: List[float]) -> SACLosses:
        """The critic, actor and alpha losses of one update on a batch of B transitions (float reward and
        terminated, (B,); prioritised replay's importance weights ``weight`` (B,), if any, on the critics' loss
        only); ``alphas`` (n_alphas,) detached; ``target_critic`` a copy of the critics."""
        raise NotImplementedError

    def alpha_info(self, alphas: torch.Tensor) -> Tensors:
        """The temperatures to log."""
        return {"alpha": alphas[-1]}

    # ---- helpers -----------------------------------------------------------------------------------------------
    def _alphas(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def _discount(self, data: Tensors) -> Any:
        """The discount of each transition's bootstrap: (B,) gamma^m of n-step samples (``policy.nstep`` > 1, which
        carry ``discount``), else ``learn.discount_factor``."""
        return data["discount"] if "discount" in data else self.cfg.learn.discount_factor

    def _terminated(self, data: Tensors) -> torch.Tensor:
        """(B,) 1 where the target stops (terminated); all 0 with DI-engine's ``learn.ignore_done``."""
        return torch.zeros_like(data["reward"]) if self.cfg.learn.ignore_done else data["terminated"]

    def _squashed_action(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """A tanh-squashed Gaussian action in [-1, 1]^D (B, D) without its density (acting needs none)."""
        out = self.model.compute_actor(obs)
        return S.squashed_gaussian_action(out["mu"], out["log_std"], deterministic)

    def _squashed_sample(self, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised squashed-Gaussian action (B, D) in [-1, 1]^D and its log-density (B,)."""
        out = self.model.compute_actor(obs)
        return S.squashed_gaussian_sample(out["mu"], log_std=out["log_std"], deterministic=False)

    @staticmethod
    def _pick(log_probs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """A discrete action (B,) from log-probabilities (B, A): the most likely one, or a sample (Gumbel-max)."""
        if deterministic:
            return log_probs.argmax(-1)
        return (log_probs - torch.empty_like(log_probs).exponential_().log()).argmax(-1)
