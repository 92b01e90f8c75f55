"""SAC on a Box (Haarnoja et al. 2018): a tanh-squashed Gaussian actor acting in [-1, 1]^D, and the paper's three
losses J_Q, J_pi and J(alpha) with autograd (:meth:`ContinuousSAC.losses`): the reference update, which the fast
update engines (:mod:`.manual_update`, :mod:`.compiled_update`) are tested against.

Shapes: B transitions, N critic replicas, D action dims.
"""
from typing import Any, List

import torch
from torch import nn

from ding_lite.rl_utils import sac as S

from .action_space import SACActionSpace, SACLosses, Tensors
from .acting import ActingActor


class ContinuousSAC(SACActionSpace):
    """SAC on a Box: a tanh-squashed Gaussian actor acting in [-1, 1]^D (the library rescales onto the Box)."""

    def _init_shape(self, shape: Any) -> None:
        self.action_dim = shape
        self._acting = ActingActor.of(self.model)  # the built-in actor, layer by layer: fewer calls per action

    def act(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """a = tanh(u), u ~ N(mu(s), std(s)) (or u = mu(s)), (B, D)."""
        if self._acting is not None:
            return self._acting(obs, deterministic)
        return self._squashed_action(obs, deterministic)

    def pack(self, discrete: torch.Tensor, continuous: torch.Tensor) -> torch.Tensor:
        return continuous

    def losses(self, data: Tensors, alphas: torch.Tensor, target_critic: nn.Module,
               target_entropy: List[float]) -> SACLosses:
        """Critic, actor and alpha losses on B transitions: the paper's J_Q, J_pi and J(alpha), one action sample."""
        obs, action, next_obs, reward = data["obs"], data["action"], data["next_obs"], data["reward"]
        alpha, gamma = alphas[0], self._discount(data)
        # Critics: y = r + gamma (1 - terminated) (min_i Q_i'(s', a') - alpha log pi(a'|s')), a' ~ pi(.|s');
        # every replica regresses y.
        terminated = self._terminated(data)
        with torch.no_grad():
            a2, logp2 = self._squashed_sample(next_obs)
            q2 = self.model.compute_critic(next_obs, a2, critic=target_critic)
            target = S.sac_critic_target(reward, q2, logp2, alpha, gamma, terminated)
        q = self.model.compute_critic(obs, action)
        critic_loss = S.sac_critic_loss(q, target, data.get("weight"))
        # Actor: alpha log pi(a|s) - min_i Q_i(s, a), a ~ pi(.|s) reparameterised; its gradient reaches the actor
        # through a, not the critics' weights. Temperature: towards entropy -log pi = target entropy.
        a, logp = self._squashed_sample(obs)
        actor_loss = S.sac_actor_loss(self.model.compute_critic(obs, a, detach_weights=True), logp, alpha)
        alpha_loss = S.sac_alpha_loss(self.log_alpha[0], logp, target_entropy[0])
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, {"entropy": -logp.detach().mean()})
