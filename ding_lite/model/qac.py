"""QAC: SAC's actor and critic ensemble, for continuous, discrete and mixed (Tuple(Discrete, Box)) action spaces.

Critic replicas are evaluated together as one ensemble network (one batched matmul per layer), so N critics cost
about as much as one at the batch sizes of SAC.

Observations: a tensor ``(B, *obs_shape)`` or, for a Dict/Tuple ``obs_space``, a nested dict of tensors. QAC has no
encoder: the actor and the critics take the observation flattened without parameters
(:class:`ding_lite.torch_utils.obs_encoder.ObsFlattener`): a Box flattened (exactly as before ``obs_space``), a
Discrete leaf one-hot (of ``x - start``), MultiDiscrete one-hots, MultiBinary as float, the leaves of a Dict/Tuple
concatenated depth first. Image-like leaves (uint8 frames of at least 36x36) are refused: SAC from pixels is not
supported yet.
"""
import copy
from typing import Dict, List, Optional, Sequence, Union

import torch
from torch import nn

from ding_lite.torch_utils.network import ACTIVATIONS, INITS, EnsembleMLP, mlp
from ding_lite.torch_utils.obs_encoder import ObsTree, build_obs_flattener
from ding_lite.utils import MODEL_REGISTRY, ConfigError
from ding_lite.utils.suggest import did_you_mean

ActionShape = Union[int, Sequence[int], Dict[str, int]]


@MODEL_REGISTRY.register("qac")
class QAC(nn.Module):
    """Actor and ``num_critics`` Q networks.

    ``num_critics`` replicas (DI-engine's ``twin_critic``: True is 2, False is 1; None leaves ``num_critics``).
    ``obs_space``: the env's observation space description (None: a float Box of ``obs_shape``), flattened as in the
    module docstring. ``init``: how the linear layers start (:data:`ding_lite.torch_utils.network.INITS`):
    'orthogonal' (the default; the actor's output layer with gain 0.01) or 'torch' (nn.Linear's own init, which
    Tianshou's, SB3's and CleanRL's SAC networks keep).

    * 'continuous' (action_shape D): actor -> ``{'mu', 'log_std'}`` (B, D); critic(obs, action) -> (N, B).
    * 'discrete' (action_shape A): actor -> ``{'logit'}`` (B, A) (absent with ``actor=False``: ALF's Boltzmann
      policy over Q); critic(obs) -> (N, B, A).
    * 'mixed' (action_shape ``[K, D]``: K discrete choices, D continuous dims): actor -> ``{'mu', 'log_std'}``
      (B, D); critic(obs, continuous action) -> (N, B, K), the Q of every discrete choice given the continuous one.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]] = None, action_shape: ActionShape = None,
                 action_space: str = None, obs_space: dict = None, num_critics: int = 2, twin_critic: bool = None,
                 actor: bool = True, actor_head_hidden_size: int = 256, actor_head_layer_num: int = 2,
                 critic_head_hidden_size: int = 256, critic_head_layer_num: int = 2, activation: str = "relu",
                 log_std_min: float = -20.0, log_std_max: float = 2.0, init: str = "orthogonal") -> None:
        super().__init__()
        if obs_shape is None or action_shape is None or action_space is None:
            raise ValueError("QAC needs obs_shape, action_shape and action_space (the pipelines fill them from the "
                             "env)")
        self.action_space = action_space
        if twin_critic is not None:  # DI-engine's name: True is two critics, False one
            num_critics = 2 if twin_critic else 1
        self.flatten_obs = build_obs_flattener(obs_space, obs_shape, "SAC (QAC)")
        obs_dim = self.flatten_obs.output_dim
        if action_space == "mixed":
            n_discrete, act_dim = int(action_shape[0]), int(action_shape[1])
        elif action_space == "continuous":
            n_discrete, act_dim = 0, int(action_shape)
        elif action_space == "discrete":
            n_discrete, act_dim = int(action_shape), 0
        else:
            raise ValueError(f"QAC: action_space must be 'continuous', 'discrete' or 'mixed', got '{action_space}'")
        self.log_std_min, self.log_std_max = log_std_min, log_std_max
        actor_hidden = [actor_head_hidden_size] * actor_head_layer_num
        critic_hidden = [critic_head_hidden_size] * critic_head_layer_num
        self.actor = None
        if action_space != "discrete":
            self.actor = mlp(obs_dim, actor_hidden, 2 * act_dim, activation, 0.01, init)
        elif actor:
            self.actor = mlp(obs_dim, actor_hidden, n_discrete, activation, 0.01, init)
        critic_in = obs_dim + (act_dim if action_space != "discrete" else 0)
        critic_out = 1 if action_space == "continuous" else n_discrete
        self.critic = EnsembleMLP(num_critics, critic_in, critic_hidden, critic_out, activation, init=init)

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        """Reject impossible arguments before any env or network is built (``cfg`` is the model section)."""
        if cfg.num_critics < 1:
            raise ConfigError(f"{path}.num_critics={cfg.num_critics}: must be at least 1")
        if cfg.twin_critic is not None and cfg.num_critics != 2:
            raise ConfigError(f"{path}.twin_critic={cfg.twin_critic} and {path}.num_critics={cfg.num_critics} both "
                              f"set the number of critics; keep one (twin_critic is DI-engine's name for 2 or 1)")
        if cfg.activation not in ACTIVATIONS:
            raise ConfigError(f"{path}.activation='{cfg.activation}': choose one of {sorted(ACTIVATIONS)}")
        if cfg.init not in INITS:
            raise ConfigError(f"{path}.init='{cfg.init}': unknown{did_you_mean(str(cfg.init), INITS)}; choose one of "
                              f"{list(INITS)} ('torch': nn.Linear's own init, as Tianshou's, SB3's and CleanRL's SAC)")
        if min(cfg.actor_head_hidden_size, cfg.critic_head_hidden_size) < 1 or \
                min(cfg.actor_head_layer_num, cfg.critic_head_layer_num) < 0:
            raise ConfigError(f"{path}: hidden sizes must be positive and layer numbers >= 0")
        if cfg.log_std_min >= cfg.log_std_max:
            raise ConfigError(f"{path}.log_std_min={cfg.log_std_min} must be below log_std_max={cfg.log_std_max}")

    def compute_actor(self, obs: ObsTree) -> Dict[str, torch.Tensor]:
        """(B, *obs_shape) or a nested dict -> ``{'mu', 'log_std'}`` (continuous, mixed) or ``{'logit'}``
        (discrete)."""
        out = self.actor(self.flatten_obs(obs))
        if self.action_space == "discrete":
            return {"logit": out}
        mu, log_std = out.chunk(2, dim=-1)
        return {"mu": mu, "log_std": log_std.clamp(self.log_std_min, self.log_std_max)}

    def compute_critic(self, obs: ObsTree, action: Optional[torch.Tensor] = None,
                       critic: Optional[nn.Module] = None, detach_weights: bool = False) -> torch.Tensor:
        """Q of every replica: (N, B) for continuous; (N, B, A) discrete; (N, B, K) mixed (given the continuous
        action (B, D)). ``obs`` is (B, *obs_shape) or a nested dict. ``critic``: a copy of ``self.critic`` (e.g. the
        target critics of :meth:`make_target_critic`) to evaluate the same way instead of the model's own.
        ``detach_weights``: the critics' weights as constants, gradients flow to ``action`` only (SAC's actor loss)."""
        x = self.flatten_obs(obs)
        if self.action_space != "discrete":
            x = torch.cat([x, action], dim=-1)
        net = self.critic if critic is None else critic
        q = net(x, detach_weights=True) if detach_weights else net(x)
        return q.squeeze(-1) if self.action_space == "continuous" else q

    def make_target_critic(self) -> nn.Module:
        """A frozen copy of the critic ensemble (no gradients; not part of this model's parameters or state) to be
        evaluated with ``compute_critic(..., critic=copy)`` and moved towards :meth:`critic_parameters` (in the same
        order as ``copy.parameters()``) by Polyak averaging."""
        return copy.deepcopy(self.critic).requires_grad_(False)

    def actor_parameters(self) -> List[nn.Parameter]:
        """The actor's parameters; empty without an actor (discrete actions with ``actor=False``)."""
        return list(self.actor.parameters()) if self.actor is not None else []

    def critic_parameters(self) -> List[nn.Parameter]:
        """The parameters of the critic ensemble (every replica)."""
        return list(self.critic.parameters())

    def forward(self, obs: ObsTree, mode: str = "compute_actor",
                action: Optional[torch.Tensor] = None) -> Union[Dict[str, torch.Tensor], torch.Tensor]:
        """``mode`` 'compute_actor' -> :meth:`compute_actor`; 'compute_critic' -> :meth:`compute_critic`."""
        if mode == "compute_actor":
            return self.compute_actor(obs)
        if mode == "compute_critic":
            return self.compute_critic(obs, action)
        raise ValueError(f"QAC: unknown mode '{mode}'")
