"""VAC: a value-actor-critic network (shared encoder, policy head, value head), the IMPALA default model."""
from typing import Dict, List, Optional, Sequence, Union

import torch
from torch import nn

from ding_lite.torch_utils.obs_encoder import ObsTree, build_obs_encoder
from ding_lite.torch_utils.network import gaussian_sigma, make_log_sigma, mlp
from ding_lite.torch_utils.recurrent import LSTMCore, check_core_config, replay_rows, replay_rows_paired
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

    ``core='lstm'`` puts an LSTM of ``core_size`` units between the encoder and the heads, as the IMPALA paper's
    agent (with ``share_encoder=False`` the critic has an encoder and an LSTM of its own, and both run at every step):
    ``forward`` then takes ``state`` (B, *state_shape) (None: zeros, an episode's start) and adds the next
    ``'state'`` to its output; :meth:`forward_unroll` replays unrolls (:mod:`ding_lite.torch_utils.recurrent`).
    ``core=None`` (the default) builds exactly the feed-forward network.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]] = None, action_shape: Union[int, Sequence[int]] = None,
                 action_space: str = "discrete", obs_space: dict = None, share_encoder: bool = True,
                 encoder_hidden_size_list: List[int] = (128, 128), actor_head_hidden_size: int = 64,
                 actor_head_layer_num: int = 1, critic_head_hidden_size: int = 64, critic_head_layer_num: int = 1,
                 activation: str = "relu", sigma_type: str = "independent", init_sigma: float = 1.0,
                 encoder_type: str = "auto", conv_channels: List[int] = None, conv_hidden_size: int = None,
                 core: str = None, core_size: int = 128) -> None:
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
        self.core = self.critic_core = None
        if core is not None:  # the actor's (or shared) LSTM; with share_encoder=False the critic has its own
            self.core = LSTMCore(enc_dim, core_size)
            if not share_encoder:
                self.critic_core = LSTMCore(enc_dim, core_size)
            enc_dim = core_size
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
        check_core_config(cfg, path)

    def _logit(self, feature: torch.Tensor) -> Union[torch.Tensor, Dict[str, torch.Tensor]]:
        out = self.actor_head(feature)
        if self.action_space != "continuous":
            return out
        log_sigma = self.log_sigma if self.sigma_type == "independent" else self.sigma_head
        return {"mu": out, "sigma": gaussian_sigma(log_sigma, feature, out)}

    def forward(self, obs: ObsTree, mode: str = "compute_actor_critic",
                state: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        """``mode`` is 'compute_actor' (logit), 'compute_critic' (value) or 'compute_actor_critic' (both).
        ``obs`` is ``(B, *obs_shape)`` or a nested dict of such tensors, float or integer (uint8 stays uint8 up to
        the encoder). With a core: ``state`` (B, 2, core_size) (None: zeros) in, the next ``'state'`` out."""
        if self.core is None:
            return self._heads(self.actor_encoder(obs), obs, mode)
        actor_feature, critic_feature, next_state = self._core_features(obs, state)
        return {**self._heads(actor_feature, obs, mode, critic_feature), "state": next_state}

    @property
    def state_shape(self):
        """The recurrent state of one env: (2, core_size) (h, c), (4, core_size) with a critic core of its own."""
        return (2 * (1 + (self.critic_core is not None)), self.core.hidden_size)

    def initial_state(self, batch: int, device=None) -> torch.Tensor:
        """The state of ``batch`` envs at an episode's start: zeros (batch, *state_shape)."""
        return torch.zeros((batch, *self.state_shape), device=device)

    def _core_features(self, obs: ObsTree, state: Optional[torch.Tensor], done: Optional[torch.Tensor] = None,
                       extra_state_index: Optional[torch.Tensor] = None):
        """Actor and critic features after the core(s), and the next state: one step (``done`` None) or the
        learner's replay of unrolls (:func:`ding_lite.torch_utils.recurrent.replay_rows`)."""
        feature = self.actor_encoder(obs)
        if state is None:
            state = self.initial_state(feature.shape[0], feature.device)

        def run(core, x, s):
            return core(x, s) if done is None else replay_rows(core, x, s, done, extra_state_index)
        if done is not None and self.critic_core is not None:  # the learner: both LSTMs in one batched replay
            (actor_feature, critic_feature), final = replay_rows_paired(
                (self.core, self.critic_core), (feature, self.critic_encoder(obs)), state, done, extra_state_index)
            return actor_feature, critic_feature, final
        actor_feature, actor_state = run(self.core, feature, state[:, :2])
        if self.critic_core is None:
            return actor_feature, actor_feature, actor_state
        critic_feature, critic_state = run(self.critic_core, self.critic_encoder(obs), state[:, 2:])
        return actor_feature, critic_feature, torch.cat([actor_state, critic_state], dim=1)

    def forward_unroll(self, obs: ObsTree, state: torch.Tensor, done: torch.Tensor,
                       extra_state_index: Optional[torch.Tensor] = None,
                       mode: str = "compute_actor_critic") -> Dict[str, torch.Tensor]:
        """The learner's pass over B unrolls of T steps (model with a core): ``obs`` rows t*B + b (T*B rows), then
        E more rows each continuing from the state after step ``extra_state_index[e]`` (a flat t*B + b) before any
        reset (bootstrap observations); ``state`` (B, 2, H) the unrolls' initial states; ``done`` (T, B) the
        episode ends, after which the state is zeroed. Outputs as :meth:`forward`, one row per ``obs`` row, and
        ``'state'`` the state after the unrolls."""
        actor_feature, critic_feature, final_state = self._core_features(obs, state, done, extra_state_index)
        return {**self._heads(actor_feature, obs, mode, critic_feature), "state": final_state}

    def _heads(self, actor_feature: torch.Tensor, obs: ObsTree, mode: str,
               critic_feature: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        out = {}
        if mode in ("compute_actor", "compute_actor_critic"):
            out["logit"] = self._logit(actor_feature)
        if mode in ("compute_critic", "compute_actor_critic"):
            if critic_feature is None:
                critic_feature = actor_feature if self.critic_encoder is self.actor_encoder else self.critic_encoder(obs)
            out["value"] = self.critic_head(critic_feature).squeeze(-1)
        return out
