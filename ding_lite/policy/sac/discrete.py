"""SAC on a Discrete action space (Christodoulou 2019; ALF): every expectation over actions is an exact sum.

The policy is the actor's softmax (``learn.discrete_policy='actor'``, DI-engine's ``discrete_sac``) or ALF's
Boltzmann policy p(a|s) ∝ exp(min_i Q_i(s, a) / alpha) of the online critics (``'boltzmann'``), which has no actor
and no actor loss. Shapes: B transitions, N critic replicas, A actions.

Action masks (``env.action_mask_key``; (B, A) bool, True where valid): the policy is the softmax over the valid
actions (a masked logit, or Q / alpha, becomes the most negative finite float), so acting, evaluating and the random
warm-up never take a masked action. Transitions store ``action_mask`` and ``next_action_mask`` (that of s', for the
target V(s')); the soft values, the actor loss and the entropy sum over the valid actions only, and the temperature
is tuned per state towards the target scaled to the state's valid actions (:func:`.temperature.masked_target_entropy`).
"""
from typing import Any, List, Optional

import torch
from torch import nn

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils import mask_logits

from .action_space import SACActionSpace, SACLosses, Tensors
from .temperature import masked_target_entropy


class DiscreteSAC(SACActionSpace):
    """Discrete SAC: critics Q(s, .) (N, B, A), a softmax actor or the critics' Boltzmann policy."""

    heads = ("discrete",)

    def _init_shape(self, shape: Any) -> None:
        self.n_discrete = shape
        self.boltzmann = self.cfg.learn.discrete_policy == "boltzmann"

    def _log_probs(self, obs: torch.Tensor, q: Optional[torch.Tensor], alpha: torch.Tensor,
                   mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """log pi(.|s) (B, A): the Boltzmann policy of ``q`` (N, B, A), or the actor's log-softmax; with ``mask``
        (B, A) bool, over the valid actions (a masked action's log pi is hugely negative, its pi exactly 0)."""
        if self.boltzmann:
            logits = S.ensemble_min(q) / alpha
        else:
            logits = self.model.compute_actor(obs)["logit"]
        return torch.log_softmax(mask_logits("discrete", logits, mask), dim=-1)

    def act(self, obs: torch.Tensor, deterministic: bool, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """a ~ pi(.|s), or its most likely action, (B,); with ``mask`` (B, A) bool a valid one."""
        alpha = self._alphas()[0]
        q = self.model.compute_critic(obs) if self.boltzmann else None
        return self._pick(self._log_probs(obs, q, alpha, mask), deterministic)

    def pack(self, discrete: torch.Tensor, continuous: torch.Tensor) -> torch.Tensor:
        return discrete

    def losses(self, data: Tensors, alphas: torch.Tensor, target_critic: nn.Module,
               target_entropy: List[float]) -> SACLosses:
        """Critic, actor (None for the Boltzmann policy) and alpha losses on B transitions, exact over the A actions."""
        obs, action, next_obs, reward = data["obs"], data["action"], data["next_obs"], data["reward"]
        mask, next_mask = data.get("action_mask"), data.get("next_action_mask")  # (B, A) bool, or None
        alpha, gamma = alphas[0], self._discount(data)
        # Critics: y = r + gamma (1 - terminated) sum_a pi(a|s') (min_i Q_i'(s', a) - alpha log pi(a|s')).
        terminated = self._terminated(data)
        with torch.no_grad():
            q2 = self.model.compute_critic(next_obs, critic=target_critic)
            online_q2 = self.model.compute_critic(next_obs) if self.boltzmann else None
            log_probs2 = self._log_probs(next_obs, online_q2, alpha, next_mask)
            target = S.discrete_sac_critic_target(reward, q2, log_probs2, alpha, gamma, terminated, next_mask)
        q_all = self.model.compute_critic(obs)  # (N, B, A)
        q = S.gather_q(q_all, action)
        critic_loss = S.sac_critic_loss(q, target, data.get("weight"))
        # Actor (none for the Boltzmann policy) and the exact entropy alpha is tuned on, from the same Q(s, .).
        q_now = q_all.detach()
        log_probs = self._log_probs(obs, q_now, alpha, mask)
        actor_loss = None if self.boltzmann else S.discrete_sac_actor_loss(q_now, log_probs, alpha, mask)
        entropy = S.discrete_entropy(log_probs.detach(), mask)
        goal = target_entropy[0] if mask is None else masked_target_entropy(target_entropy[0], self.n_discrete, mask)
        alpha_loss = S.sac_alpha_loss_from_entropy(self.log_alpha[0], entropy, goal)
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, {"entropy": entropy.mean()})
