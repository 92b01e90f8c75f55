"""SAC on a Discrete action space (Christodoulou 2019; ALF): every expectation over actions is an exact sum.

The policy is the actor's softmax (``learn.discrete_policy='actor'``, DI-engine's ``discrete_sac``) or ALF's
Boltzmann policy p(a|s) ∝ exp(min_i Q_i(s, a) / alpha) of the online critics (``'boltzmann'``), which has no actor
and no actor loss. Shapes: B transitions, N critic replicas, A actions.
"""
from typing import Any, List, Optional

import torch
from torch import nn

from ding_lite.rl_utils import sac as S

from .action_space import SACActionSpace, SACLosses, Tensors


class DiscreteSAC(SACActionSpace):
    """Discrete SAC: critics Q(s, .) (N, B, A), a softmax actor or the critics' Boltzmann policy."""

    heads = ("discrete",)

    def _init_shape(self, shape: Any) -> None:
        self.n_discrete = shape
        self.boltzmann = self.cfg.learn.discrete_policy == "boltzmann"

    def _log_probs(self, obs: torch.Tensor, q: Optional[torch.Tensor], alpha: torch.Tensor) -> torch.Tensor:
        """log pi(.|s) (B, A): the Boltzmann policy of ``q`` (N, B, A), or the actor's log-softmax."""
        if self.boltzmann:
            return S.boltzmann_policy(S.ensemble_min(q), alpha)[1]
        return torch.log_softmax(self.model.compute_actor(obs)["logit"], dim=-1)

    def act(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """a ~ pi(.|s), or its most likely action, (B,)."""
        alpha = self._alphas()[0]
        q = self.model.compute_critic(obs) if self.boltzmann else None
        return self._pick(self._log_probs(obs, q, alpha), deterministic)

    def pack(self, discrete: torch.Tensor, continuous: torch.Tensor) -> torch.Tensor:
        return discrete

    def losses(self, data: Tensors, alphas: torch.Tensor, target_critic: nn.Module,
               target_entropy: List[float]) -> SACLosses:
        """Critic, actor (None for the Boltzmann policy) and alpha losses on B transitions, exact over the A actions."""
        obs, action, next_obs, reward = data["obs"], data["action"], data["next_obs"], data["reward"]
        alpha, gamma = alphas[0], self._discount(data)
        # Critics: y = r + gamma (1 - terminated) sum_a pi(a|s') (min_i Q_i'(s', a) - alpha log pi(a|s')).
        terminated = self._terminated(data)
        with torch.no_grad():
            q2 = self.model.compute_critic(next_obs, critic=target_critic)
            online_q2 = self.model.compute_critic(next_obs) if self.boltzmann else None
            log_probs2 = self._log_probs(next_obs, online_q2, alpha)
            target = S.discrete_sac_critic_target(reward, q2, log_probs2, alpha, gamma, terminated)
        q_all = self.model.compute_critic(obs)  # (N, B, A)
        q = S.gather_q(q_all, action)
        critic_loss = S.sac_critic_loss(q, target, data.get("weight"))
        # Actor (none for the Boltzmann policy) and the exact entropy alpha is tuned on, from the same Q(s, .).
        q_now = q_all.detach()
        log_probs = self._log_probs(obs, q_now, alpha)
        actor_loss = None if self.boltzmann else S.discrete_sac_actor_loss(q_now, log_probs, alpha)
        entropy = S.discrete_entropy(log_probs.detach())
        alpha_loss = S.sac_alpha_loss_from_entropy(self.log_alpha[0], entropy, target_entropy[0])
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, {"entropy": entropy.mean()})
