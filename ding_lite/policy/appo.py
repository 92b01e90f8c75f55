"""APPO (RLlib's asynchronous PPO; IMPACT, Luo et al. 2020): IMPALA's V-trace with PPO's clipped surrogate and a
target network.

Everything but the policy-gradient term and V-trace's target policy is IMPALA's (:mod:`ding_lite.policy.impala`): the
unrolls, their collection and data flow, V-trace (:func:`ding_lite.rl_utils.from_importance_weights`) for the value
targets ``vs`` and the advantages ``pg_advantages``, the value and entropy losses and the KL(mu || pi) penalty
``learn.kl_weight``. As in RLlib's APPO:

* a target network pi_target, a copy of the model's weights taken every ``learn.target_update_freq`` updates, is
  V-trace's target policy (the importance weights rho_t = pi_target / mu);
* the policy term is PPO's clipped surrogate (:func:`ding_lite.rl_utils.ppo_policy_loss`) with the ratio
  r_t = min(mu / pi_target, 2) pi / mu (:func:`ding_lite.rl_utils.impact_old_log_prob`), so an update stops pushing a
  step's probability once it has moved more than ``clip_ratio`` from the target network's.

``target_update_freq=0`` drops the target network: V-trace's target policy is pi itself (IMPALA's) and the ratio is
r_t = pi / mu against the behaviour policy that collected the unroll.
"""
import copy
from typing import Any, Dict, List, Tuple

import torch

from ding_lite.rl_utils import impact_old_log_prob, ppo_policy_loss
from ding_lite.torch_utils import make_dist, tree_map
from ding_lite.torch_utils.precision import autocast
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .checks import check_positive
from .impala import IMPALAPolicy

# RLlib's clip of the importance weight mu / pi_target in APPO's surrogate ratio.
MAX_TARGET_IS_RATIO = 2.0


@POLICY_REGISTRY.register("appo")
class APPOPolicy(IMPALAPolicy):
    """APPO: IMPALA with PPO's clipped surrogate on V-trace's advantages and a target network (RLlib's defaults)."""

    config = dict(
        type="appo",
        learn=dict(
            # (float) PPO's epsilon: the surrogate is clipped where the ratio r_t (module docstring) leaves
            # [1 - eps, 1 + eps]. 0.4: RLlib APPO's default (the PPO paper's is 0.2).
            clip_ratio=0.4,
            # (int) Updates between copies of the model's weights into the target network; 0: no target network
            # (the ratio against the behaviour policy mu, V-trace's target policy pi). 4 = the default
            # update_per_collect: a serial run refreshes it once per collection.
            target_update_freq=4,
            # learn.normalize_advantage is IMPALA's (off, as in RLlib's APPO).
            # (float) Weight of the KL(mu || pi) penalty (IMPALA's learn.kl_weight). 0: RLlib APPO's default
            # (use_kl_loss=False).
            kl_weight=0.0,
        ),
    )

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        super().check_config(cfg, path)
        check_positive(cfg.learn, ("clip_ratio",), f"{path}.learn")
        freq = cfg.learn.target_update_freq
        if isinstance(freq, bool) or not isinstance(freq, int) or freq < 0:
            raise ConfigError(f"{path}.learn.target_update_freq={freq!r}: must be an int >= 0 (updates between "
                              f"target-network copies; 0: no target network)")

    def _init_learn(self) -> None:
        super()._init_learn()
        self._target_model = None
        if self._cfg.learn.target_update_freq:
            self._target_model = copy.deepcopy(self._model).requires_grad_(False)

    def _vtrace_log_prob(self, batch: Any, target_log_prob: torch.Tensor) -> torch.Tensor:
        """log pi_target(a_t|x_t) (T, B) of the target network, refreshed first every ``target_update_freq`` updates
        (the first update included); log pi, detached, without one."""
        if self._target_model is None:
            return target_log_prob.detach()
        if self._updates % self._cfg.learn.target_update_freq == 0:
            self._target_model.load_state_dict(self._model.state_dict())
        with torch.no_grad(), autocast(self._learn_autocast, self._device):
            out = self._forward_unroll(batch, "compute_actor", model=self._target_model)
        logit = tree_map(lambda x: batch.steps(x.float()), out["logit"])
        dist = make_dist(self._action_space, logit, self._nvec, batch.data.get("action_mask"))
        return dist.log_prob(batch.data["action"])

    def _policy_loss(self, target_log_prob: torch.Tensor, behaviour_log_prob: torch.Tensor,
                     pg_advantages: torch.Tensor,
                     vtrace_log_prob: torch.Tensor) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        """PPO's clipped surrogate on V-trace's ``pg_advantages`` with the ratio of the module docstring; logs the
        fraction of clipped steps and the approximate KL(pi_old || pi)."""
        old = behaviour_log_prob if self._target_model is None else \
            impact_old_log_prob(behaviour_log_prob, vtrace_log_prob, MAX_TARGET_IS_RATIO)
        policy = ppo_policy_loss(target_log_prob, old, pg_advantages, self._cfg.learn.clip_ratio)
        return policy.loss, {"clip_fraction": policy.clip_fraction, "approx_kl": policy.approx_kl}

    def _state_dict_learn(self) -> Dict[str, Any]:
        state = super()._state_dict_learn()
        if self._target_model is not None:  # IMPALA's state holds the update count: when it is next refreshed
            state["target_model"] = self._target_model.state_dict()
        return state

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        if self._target_model is not None and "target_model" in state:
            self._target_model.load_state_dict(state["target_model"])

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ["clip_fraction", "approx_kl"]
