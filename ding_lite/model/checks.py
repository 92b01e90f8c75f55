"""Argument checks shared by the actor-critic model templates (run by compile_config, before anything is built)."""
from easydict import EasyDict

from ding_lite.torch_utils.network import ACTIVATIONS
from ding_lite.utils import ConfigError


def check_actor_critic_config(cfg: EasyDict, path: str) -> None:
    """Activation, Gaussian sigma settings and MLP sizes of a VAC-style model section at ``path``."""
    if cfg.activation not in ACTIVATIONS:
        raise ConfigError(f"{path}.activation='{cfg.activation}': choose one of {sorted(ACTIVATIONS)}")
    if cfg.sigma_type not in ("independent", "conditioned"):
        raise ConfigError(f"{path}.sigma_type='{cfg.sigma_type}': must be 'independent' or 'conditioned'")
    sizes = list(cfg.encoder_hidden_size_list) + [cfg.actor_head_hidden_size, cfg.critic_head_hidden_size]
    if any(not isinstance(n, int) or n < 1 for n in sizes):
        raise ConfigError(f"{path}: hidden sizes must be positive ints, got encoder_hidden_size_list="
                          f"{list(cfg.encoder_hidden_size_list)}, actor_head_hidden_size="
                          f"{cfg.actor_head_hidden_size}, critic_head_hidden_size={cfg.critic_head_hidden_size}")
    if cfg.actor_head_layer_num < 0 or cfg.critic_head_layer_num < 0:
        raise ConfigError(f"{path}: actor_head_layer_num and critic_head_layer_num must be >= 0")
    if cfg.init_sigma <= 0:
        raise ConfigError(f"{path}.init_sigma={cfg.init_sigma}: must be positive")
