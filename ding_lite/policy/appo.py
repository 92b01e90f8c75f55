"""APPO (RLlib's asynchronous PPO): IMPALA's V-trace targets and advantages with PPO's clipped surrogate.

Everything but the policy-gradient term is IMPALA's (:mod:`ding_lite.policy.impala`): the unrolls, their asynchronous
collection and replay, V-trace (:func:`ding_lite.rl_utils.from_importance_weights`) for the value targets ``vs`` and
the advantages ``pg_advantages``, the value and entropy losses and the KL(mu || pi) penalty ``learn.kl_weight``. The
policy term is PPO's clipped surrogate (:func:`ding_lite.rl_utils.ppo_policy_loss`) with the ratio
r_t = pi(a_t|x_t) / mu(a_t|x_t) against the *behaviour* policy mu that collected the unroll (its logits travel with
it), so an update on a replayed unroll stops pushing a step's probability once it has moved more than ``clip_ratio``
from the behaviour policy's. At r_t = 1 (on-policy) its gradient is IMPALA's.
"""
from typing import Dict, List, Tuple

import torch

from ding_lite.rl_utils import ppo_policy_loss
from ding_lite.utils import POLICY_REGISTRY

from .checks import check_positive
from .impala import IMPALAPolicy


@POLICY_REGISTRY.register("appo")
class APPOPolicy(IMPALAPolicy):
    """APPO: IMPALA with PPO's clipped surrogate on V-trace's advantages, asynchronous (off-policy) like IMPALA."""

    config = dict(
        type="appo",
        learn=dict(
            # (float) PPO's epsilon: the surrogate is clipped where pi(a|x) / mu(a|x) leaves [1 - eps, 1 + eps],
            # mu the behaviour policy of the unroll. 0.2: the PPO paper's (RLlib's APPO defaults to 0.4).
            clip_ratio=0.2,
            # learn.normalize_advantage is IMPALA's (off, as in RLlib's APPO: V-trace's advantages are already on the
            # value scale).
            # (float) Weight of the KL(mu || pi) penalty (IMPALA's learn.kl_weight; 0 there). The clip only stops the
            # gradient of steps already outside the range, it does not pull them back; the KL term does, which
            # matters when each unroll is replayed many times (max_use). 1.0 is RLlib APPO's kl_coeff, which RLlib
            # applies only with use_kl_loss=True (off by default, and adapted towards a kl_target there); set 0 for
            # RLlib's default loss.
            kl_weight=1.0,
        ),
    )

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        super().check_config(cfg, path)
        check_positive(cfg.learn, ("clip_ratio",), f"{path}.learn")

    def _policy_loss(self, target_log_prob: torch.Tensor, behaviour_log_prob: torch.Tensor,
                     pg_advantages: torch.Tensor) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        """PPO's clipped surrogate with pi_old = mu (the behaviour policy) and V-trace's ``pg_advantages``; logs the
        fraction of clipped steps and the approximate KL(mu || pi)."""
        policy = ppo_policy_loss(target_log_prob, behaviour_log_prob, pg_advantages, self._cfg.learn.clip_ratio)
        return policy.loss, {"clip_fraction": policy.clip_fraction, "approx_kl": policy.approx_kl}

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ["clip_fraction", "approx_kl"]
