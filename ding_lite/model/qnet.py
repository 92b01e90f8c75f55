"""QNet: the Q-network of DQN (Nature DQN's head on ding_lite's observation encoders), with the dueling head and
QR-DQN's quantile outputs as options."""
from typing import Dict, List, Sequence, Union

import torch
from torch import nn

from ding_lite.torch_utils.obs_encoder import ObsTree, build_obs_encoder
from ding_lite.torch_utils.network import mlp
from ding_lite.utils import MODEL_REGISTRY, ConfigError


@MODEL_REGISTRY.register("qnet")
class QNet(nn.Module):
    """Maps observations ``(B, *obs_shape)`` (or a nested dict, as VAC's encoders take them) to ``q``: ``(B, A)`` for a
    discrete space, ``(B, sum(nvec))`` for a multi-discrete one (each head's Q-values side by side, acted on and
    trained per head); with ``num_quantiles`` N > 0, the quantiles ``(B, A, N)`` (QR-DQN) and ``q`` their mean.

    ``dueling``: separate value and advantage streams (one hidden layer of ``head_hidden_size`` each) combined as
    V + A - mean A (per head); else one MLP head of ``head_layer_num`` hidden layers. ``encoder_type`` and the conv
    and MLP sizes are VAC's (:mod:`ding_lite.torch_utils.obs_encoder`): 'auto' gives the Nature conv on frames.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]] = None, action_shape: Union[int, Sequence[int]] = None,
                 action_space: str = "discrete", obs_space: dict = None,
                 encoder_hidden_size_list: List[int] = (128, 128), head_hidden_size: int = 128,
                 head_layer_num: int = 1, dueling: bool = False, num_quantiles: int = 0, activation: str = "relu",
                 encoder_type: str = "auto", conv_channels: List[int] = None, conv_hidden_size: int = None) -> None:
        super().__init__()
        if obs_shape is None or action_shape is None:
            raise ValueError("QNet needs obs_shape and action_shape (the pipelines fill them from the env)")
        if action_space not in ("discrete", "multi_discrete"):
            raise ConfigError(f"policy.model.action_space='{action_space}': DQN's Q-network takes discrete or "
                              f"multi-discrete actions; for this env's use 'sac' (continuous or mixed) or 'ppo'")
        self.action_space = action_space
        self.nvec = list(action_shape) if action_space == "multi_discrete" else [int(action_shape)]
        self.num_actions = sum(self.nvec)
        self.num_quantiles = int(num_quantiles)
        self.dueling = bool(dueling)
        self.encoder, dim = build_obs_encoder(encoder_type, obs_space, obs_shape, encoder_hidden_size_list, activation,
                                              conv_channels, conv_hidden_size)
        atoms = max(self.num_quantiles, 1)
        if self.dueling:
            self.advantage_head = mlp(dim, [head_hidden_size], self.num_actions * atoms, activation)
            self.value_head = mlp(dim, [head_hidden_size], len(self.nvec) * atoms, activation)
        else:
            self.q_head = mlp(dim, [head_hidden_size] * head_layer_num, self.num_actions * atoms, activation)

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        n = cfg.num_quantiles
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ConfigError(f"{path}.num_quantiles={n!r}: must be an int >= 0 (0: expected Q-values, DQN; N > 0: "
                              f"N quantiles, QR-DQN)")

    def forward(self, obs: ObsTree, mode: str = "compute_q") -> Dict[str, torch.Tensor]:
        feature = self.encoder(obs)
        B, atoms = feature.shape[0], max(self.num_quantiles, 1)
        if self.dueling:
            adv = self.advantage_head(feature).view(B, self.num_actions, atoms)
            value = self.value_head(feature).view(B, len(self.nvec), atoms)
            # per head and atom: V + A - mean over the head's actions (rl_utils.dqn.dueling_q's aggregation; the
            # models sit below rl_utils in the layering, docs/architecture.md#layering)
            heads = [value[:, h:h + 1] + chunk - chunk.mean(1, keepdim=True)
                     for h, chunk in enumerate(adv.split(self.nvec, dim=1))]
            out = torch.cat(heads, dim=1)  # (B, A, atoms)
        else:
            out = self.q_head(feature).view(B, self.num_actions, atoms)
        if self.num_quantiles:
            return {"quantiles": out, "q": out.mean(-1)}
        return {"q": out.squeeze(-1)}
