"""A user policy, registered without touching ding_lite: IMPALA that clips rewards as the IMPALA paper does on Atari.

It shows the three things a custom policy usually needs: a registry entry, extra config keys with defaults and
checks, and a hook override (``_process_transition`` decides what each step stores).
"""
from typing import Any, Dict

import torch
from easydict import EasyDict

from ding_lite.policy import IMPALAPolicy
from ding_lite.utils import POLICY_REGISTRY, ConfigError


@POLICY_REGISTRY.register("my_impala")
class RewardClippedIMPALAPolicy(IMPALAPolicy):
    """IMPALA whose stored rewards are clipped to [-reward_clip, reward_clip]."""

    config = dict(
        type="my_impala",
        # (float) Rewards are clipped to [-reward_clip, reward_clip] before they are stored; None disables it.
        reward_clip=1.0,
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        if cfg.reward_clip is not None and cfg.reward_clip <= 0:
            raise ConfigError(f"{path}.reward_clip={cfg.reward_clip}: must be positive (or None to disable)")

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        transition = super()._process_transition(obs, policy_output, timestep)
        if self._cfg.reward_clip is not None:
            transition["reward"] = transition["reward"].clamp(-self._cfg.reward_clip, self._cfg.reward_clip)
        return transition
