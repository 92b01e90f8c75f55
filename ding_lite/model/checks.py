"""Argument checks shared by the actor-critic model templates (run by compile_config, before anything is built)."""
import math

from easydict import EasyDict

from ding_lite.torch_utils.conv import ENCODER_REGISTRY, MLP
from ding_lite.torch_utils.obs_encoder import AUTO, AUTO_CONV, encoder_choices
from ding_lite.torch_utils.network import ACTIVATIONS, LOG_SIGMA_MAX, LOG_SIGMA_MIN, SIGMA_TYPES
from ding_lite.utils import ConfigError
from ding_lite.utils.suggest import did_you_mean


def check_actor_critic_config(cfg: EasyDict, path: str) -> None:
    """Encoder, activation, Gaussian sigma settings and MLP sizes of a VAC-style model section at ``path``."""
    check_encoder_config(cfg, path)
    if cfg.activation not in ACTIVATIONS:
        raise ConfigError(f"{path}.activation='{cfg.activation}': choose one of {sorted(ACTIVATIONS)}")
    if cfg.sigma_type not in SIGMA_TYPES:
        raise ConfigError(f"{path}.sigma_type='{cfg.sigma_type}': must be 'independent' or 'conditioned'")
    sizes = list(cfg.encoder_hidden_size_list) + [cfg.actor_head_hidden_size, cfg.critic_head_hidden_size]
    if any(not isinstance(n, int) or n < 1 for n in sizes):
        raise ConfigError(f"{path}: hidden sizes must be positive ints, got encoder_hidden_size_list="
                          f"{list(cfg.encoder_hidden_size_list)}, actor_head_hidden_size="
                          f"{cfg.actor_head_hidden_size}, critic_head_hidden_size={cfg.critic_head_hidden_size}")
    if cfg.actor_head_layer_num < 0 or cfg.critic_head_layer_num < 0:
        raise ConfigError(f"{path}: actor_head_layer_num and critic_head_layer_num must be >= 0")
    low, high = math.exp(LOG_SIGMA_MIN), math.exp(LOG_SIGMA_MAX)
    if not low <= cfg.init_sigma <= high:  # outside, the clamp would start sigma elsewhere (or nowhere: <= 0)
        raise ConfigError(f"{path}.init_sigma={cfg.init_sigma}: the model clamps log(sigma) to [{LOG_SIGMA_MIN}, "
                          f"{LOG_SIGMA_MAX}], so init_sigma must be in [{low:.4g}, {high:.4g}]")


def check_encoder_config(cfg: EasyDict, path: str) -> None:
    """``encoder_type`` names an encoder ('auto', see ``ding_lite.torch_utils.obs_encoder``, or one of
    ``ding_lite.torch_utils.conv``); ``conv_channels`` and ``conv_hidden_size`` are None or positive ints, of the
    right length for the conv (for 'auto', the Nature conv its image leaves get). What needs the observation space
    ('mlp' on images, a conv without one) is checked when the model is built, from ``obs_space``."""
    choices = encoder_choices()
    if cfg.encoder_type not in choices:
        raise ConfigError(f"{path}.encoder_type={cfg.encoder_type!r}: unknown encoder"
                          f"{did_you_mean(str(cfg.encoder_type), choices)}; choose one of {choices}")
    channels = cfg.conv_channels
    if channels is not None and (not isinstance(channels, (list, tuple)) or not channels
                                 or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in channels)):
        raise ConfigError(f"{path}.conv_channels={channels!r}: must be None (the encoder's own) or a list of positive "
                          f"ints, one per conv layer (nature_conv: 3) or stage (impala_resnet: 3)")
    conv = AUTO_CONV if cfg.encoder_type == AUTO else cfg.encoder_type
    default = getattr(ENCODER_REGISTRY.get(conv), "DEFAULT_CHANNELS", None) if conv != MLP else None
    if channels is not None and default is not None and len(channels) != len(default):
        auto = f" (its image leaves get '{AUTO_CONV}')" if cfg.encoder_type == AUTO else ""
        raise ConfigError(f"{path}.conv_channels={list(channels)}: encoder '{cfg.encoder_type}'{auto} has "
                          f"{len(default)} conv layers/stages (its own channels: {list(default)})")
    size = cfg.conv_hidden_size
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise ConfigError(f"{path}.conv_hidden_size={size!r}: must be None (the encoder's own) or a positive int")
    if cfg.encoder_type == MLP and (channels is not None or size is not None):
        convs = [c for c in choices if c not in (MLP, AUTO)]
        raise ConfigError(f"{path}.conv_channels / {path}.conv_hidden_size are set but {path}.encoder_type='mlp' "
                          f"has no conv layers; choose 'auto' (a conv for image observations) or a conv encoder "
                          f"({convs}), or remove them")
