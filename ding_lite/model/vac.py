"""VAC: a value-actor-critic network (shared encoder, policy head, value head), the IMPALA default model."""
from typing import Dict, List, Sequence, Union

import torch
from torch import nn

from ding_lite.torch_utils.obs_encoder import ObsTree, build_obs_encoder
from ding_lite.torch_utils.network import gaussian_sigma, make_log_sigma, mlp
from ding_lite.utils import MODEL_REGISTRY

from .checks import check_actor_critic_config


@MODEL_REGISTRY.register("vac")
class VAC(nn.Module):
    """Maps observations ``(B, *obs_shape)`` to ``logit`` and ``value`` ``(B,)``.

    ``logit`` is ``(B, A)`` for 'discrete', ``(B, sum(nvec))`` for 'multi_discrete' (heads concatenated), and a dict
    ``{'mu', 'sigma'}`` of ``(B, A)`` for 'continuous' (state-independent log-std when ``sigma_type='independent'``,
    a head output when 'conditioned'). ``obs_shape``/``obs_space``/``action_shape`` default to the env's.

    ``obs`` is a tensor ``(B, *obs_shape)``, or a nested dict of tensors for a Dict/Tuple ``obs_space`` (the env's
    description, :mod:`ding_lite.envs.obs_space`; None reads as a float Box of ``obs_shape``).

    ``encoder_type`` picks the observation encoder (:mod:`ding_lite.torch_utils.obs_encoder`): 'auto' (the default)
    from ``obs_space``: a float Box (or a uint8 one under 36x36 pixels) flattened through the MLP of
    ``encoder_hidden_size_list`` (exactly 'mlp'), a uint8 image ``(C, H, W)`` or ``(H, W, C)`` (C <= 4, H, W >= 36)
    the Nature conv, Discrete/MultiDiscrete one-hot and MultiBinary then the MLP, a Dict/Tuple each image through its
    own Nature conv and the other leaves flattened, concatenated, then the MLP. 'mlp' (refuses images),
    'nature_conv' or 'impala_resnet' (images, uint8 scaled by 1/255 in the model) choose explicitly;
    ``conv_channels``/``conv_hidden_size`` (None: the paper's sizes) apply to every conv.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]] = None, action_shape: Union[int, Sequence[int]] = None,
                 action_space: str = "discrete", obs_space: dict = None, share_encoder: bool = True,
                 encoder_hidden_size_list: List[int] = (128, 128), actor_head_hidden_size: int = 64,
                 actor_head_layer_num: int = 1, critic_head_hidden_size: int = 64, critic_head_layer_num: int = 1,
                 activation: str = "relu", sigma_type: str = "independent", init_sigma: float = 1.0,
                 encoder_type: str = "auto", conv_channels: List[int] = None, conv_hidden_size: int = None) -> None:
        super().__init__()
        if obs_shape is None or action_shape is None:
            raise ValueError("VAC needs obs_shape and action_shape (the pipelines fill them from the env)")
        if action_space not in ("discrete", "continuous", "multi_discrete"):
            raise ValueError(f"VAC: unknown action_space '{action_space}'")
        self.action_space = action_space
        self.nvec = list(action_shape) if action_space == "multi_discrete" else None
        out_dim = sum(self.nvec) if self.nvec else int(action_shape)
        self.encoder_type = encoder_type

        def encoder():
            return build_obs_encoder(encoder_type, obs_space, obs_shape, encoder_hidden_size_list, activation,
                                     conv_channels, conv_hidden_size)

        self.actor_encoder, enc_dim = encoder()
        self.critic_encoder = self.actor_encoder if share_encoder else encoder()[0]
        self.actor_head = mlp(enc_dim, [actor_head_hidden_size] * actor_head_layer_num, out_dim, activation, 0.01)
        self.critic_head = mlp(enc_dim, [critic_head_hidden_size] * critic_head_layer_num, 1, activation, 1.0)
        self.sigma_type = sigma_type
        if action_space == "continuous":  # log(sigma) starts at log(init_sigma), whatever sigma_type
            setattr(self, "log_sigma" if sigma_type == "independent" else "sigma_head",
                    make_log_sigma(sigma_type, enc_dim, [actor_head_hidden_size], out_dim, activation, init_sigma))

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        """Reject impossible arguments before any env or network is built (``cfg`` is the model section)."""
        check_actor_critic_config(cfg, path)

    def _logit(self, feature: torch.Tensor) -> Union[torch.Tensor, Dict[str, torch.Tensor]]:
        out = self.actor_head(feature)
        if self.action_space != "continuous":
            return out
        log_sigma = self.log_sigma if self.sigma_type == "independent" else self.sigma_head
        return {"mu": out, "sigma": gaussian_sigma(log_sigma, feature, out)}

    def forward(self, obs: ObsTree, mode: str = "compute_actor_critic") -> Dict[str, torch.Tensor]:
        """``mode`` is 'compute_actor' (logit), 'compute_critic' (value) or 'compute_actor_critic' (both).
        ``obs`` is ``(B, *obs_shape)`` or a nested dict of such tensors, float or integer (uint8 stays uint8 up to
        the encoder)."""
        out = {}
        actor_feature = self.actor_encoder(obs)
        if mode in ("compute_actor", "compute_actor_critic"):
            out["logit"] = self._logit(actor_feature)
        if mode in ("compute_critic", "compute_actor_critic"):
            critic_feature = actor_feature if self.critic_encoder is self.actor_encoder else self.critic_encoder(obs)
            out["value"] = self.critic_head(critic_feature).squeeze(-1)
        return out
