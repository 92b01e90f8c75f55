"""SAC on a mixed action (k, a_c) in Tuple(Discrete(K), Box(D)), as ALF's ``SacAlgorithm`` does it.

a_c comes from a tanh-squashed Gaussian actor, k from the Boltzmann policy p(k|s, a_c) ∝ exp(min_i Q_i(s, a_c, k) /
alpha_d) of critics that take a_c as an input and have K outputs. Each part has its own temperature: ``log_alpha`` is
[discrete, continuous]. Shapes: B transitions, N critic replicas, K discrete choices, D continuous dims.
"""
from typing import Any, Dict, List

import torch
from torch import nn

from ding_lite.rl_utils import sac as S

from .action_space import SACActionSpace, SACLosses, Tensors


class MixedSAC(SACActionSpace):
    """Mixed SAC: actions ``{'discrete': (B,), 'continuous': (B, D)}``; critics Q(s, a_c, .) (N, B, K)."""

    n_alphas = 2
    heads = ("discrete", "continuous")  # the order of log_alpha and of the target entropies

    def _init_shape(self, shape: Any) -> None:
        self.n_discrete, self.action_dim = shape[0], shape[1]

    def act(self, obs: torch.Tensor, deterministic: bool) -> Dict[str, torch.Tensor]:
        """a_c = tanh(u) (or tanh(mu)), then k ~ p(.|s, a_c) (or its most likely choice)."""
        cont = self._squashed_action(obs, deterministic)
        alpha = self._alphas()[0]
        log_probs = S.boltzmann_policy(S.ensemble_min(self.model.compute_critic(obs, cont)), alpha)[1]
        return self.pack(self._pick(log_probs, deterministic), cont)

    def pack(self, discrete: torch.Tensor, continuous: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"discrete": discrete, "continuous": continuous}

    def losses(self, data: Tensors, alphas: torch.Tensor, target_critic: nn.Module,
               target_entropy: List[float]) -> SACLosses:
        """Critic, actor and the two alpha losses on B transitions: exact over k, one sample of a_c."""
        obs, action, next_obs, reward = data["obs"], data["action"], data["next_obs"], data["reward"]
        alpha_d, alpha_c, gamma = alphas[0], alphas[1], self._discount(data)
        # Critics: exact over k' (Boltzmann policy of the online critics at (s', a_c')), sampled over a_c'.
        terminated = self._terminated(data)
        with torch.no_grad():
            a2, logp2 = self._squashed_sample(next_obs)
            q2 = self.model.compute_critic(next_obs, a2, critic=target_critic)
            log_probs2 = S.boltzmann_policy(S.ensemble_min(self.model.compute_critic(next_obs, a2)), alpha_d)[1]
            target = S.mixed_sac_critic_target(reward, q2, log_probs2, logp2, alpha_d, alpha_c, gamma, terminated)
        q = S.gather_q(self.model.compute_critic(obs, action["continuous"]), action["discrete"])
        critic_loss = S.sac_critic_loss(q, target, data.get("weight"))
        # Actor (the continuous part, exact over k; its gradient reaches the actor through a_c, not the critics'
        # weights) and the two temperatures.
        a, logp = self._squashed_sample(obs)
        q_a = self.model.compute_critic(obs, a, detach_weights=True)
        actor_loss = S.mixed_sac_actor_loss(q_a, logp, alpha_d, alpha_c)
        entropy_d = S.discrete_entropy(S.boltzmann_policy(S.ensemble_min(q_a.detach()), alpha_d)[1])
        alpha_loss = (S.sac_alpha_loss_from_entropy(self.log_alpha[0], entropy_d, target_entropy[0])
                      + S.sac_alpha_loss(self.log_alpha[1], logp, target_entropy[1]))
        info = {"entropy": -logp.detach().mean(), "entropy_discrete": entropy_d.mean()}
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, info)

    def alpha_info(self, alphas: torch.Tensor) -> Tensors:
        return {"alpha": alphas[-1], "alpha_discrete": alphas[0]}
