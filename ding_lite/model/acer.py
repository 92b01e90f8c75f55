"""ACER's actor-critic (Wang et al. 2017): a policy network and a Q critic, discrete or continuous.

* ``'discrete'`` (A actions): the actor maps x to the logits of pi(.|x), (B, A); the critic to Q(x, .), (B, A).
  V(x) = sum_a pi(a|x) Q(x, a) is the policy's business (``rl_utils.acer_state_values``).
* ``'continuous'`` (D dims): the actor maps x to a diagonal Gaussian ``{'mu', 'sigma'}``, (B, D) each; the critic is a
  *stochastic dueling network* (sec. 5.1 of the paper) with a V(x) head and an advantage head A(x, a), and estimates

      Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, u_i),   u_i ~ pi(.|x),  n = ``sdn_n_samples``,

  so that E_{a ~ pi} Q~(x, a) = V(x) in expectation, and both V and A learn from the Q_ret regression.

The actor and the critic are two sub-modules (``model.actor``, ``model.critic``): the policy gives each its own
optimiser and keeps an average copy of the actor for the trust region. With ``share_encoder=True`` they share one
observation encoder, which then belongs to the critic's parameters (``critic_parameters``). ``encoder_type`` picks
the encoder as VAC's does (:mod:`ding_lite.torch_utils.obs_encoder`): 'auto' (the default; from ``obs_space``: the
MLP for a float Box, exactly as 'mlp', the Nature conv for a uint8 image of at least 36x36, one-hots for discrete
leaves, a multi-input encoder for a Dict/Tuple), 'mlp', 'nature_conv' or 'impala_resnet'. Observations are tensors
``(B, *obs_shape)``, or nested dicts of tensors for a Dict/Tuple ``obs_space``.

``core='lstm'`` (:mod:`ding_lite.torch_utils.recurrent`) puts an LSTM of ``core_size`` units after each encoder: one,
shared, with ``share_encoder=True`` (it then belongs to the critic's parameters, as the shared encoder does); else
one for the actor and one for the critic (``actor.core``, ``critic.core``), both advanced at every step. The methods
then take ``state`` (B, *state_shape) (None: zeros), the actor's rows first, and return the next ``'state'``; with
``done`` (T, B) they replay B unrolls of T steps instead (the learner), see :meth:`VAC.forward_unroll
<ding_lite.model.vac.VAC.forward_unroll>`. The average actor carries a copy of the actor's core and replays from the
same stored states.
"""
import copy
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ding_lite.torch_utils.obs_encoder import ObsTree, build_obs_encoder
from ding_lite.torch_utils.network import flat_dim, gaussian_sigma, make_log_sigma, mlp
from ding_lite.torch_utils.recurrent import LSTMCore, check_core_config, replay_rows, replay_rows_paired
from ding_lite.utils import MODEL_REGISTRY, ConfigError

from .checks import check_actor_critic_config

Logit = Union[torch.Tensor, Dict[str, torch.Tensor]]


class ACERActor(nn.Module):
    """pi(.|x): observations (B, *obs_shape) or a nested dict -> logits (B, A), or ``{'mu', 'sigma'}`` (B, D) for a
    Gaussian."""

    def __init__(self, encoder: nn.Module, enc_dim: int, action_dim: int, continuous: bool, hidden: List[int],
                 act: str, sigma_type: str, init_sigma: float, core: Optional[LSTMCore] = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.core = core  # a recurrent core (policy.model.core) between the encoder and the heads, or None
        if core is not None:
            enc_dim = core.hidden_size
        self.continuous, self.sigma_type = continuous, sigma_type
        self.head = mlp(enc_dim, hidden, action_dim, act, 0.01)
        if continuous:  # log(sigma) starts at log(init_sigma): a parameter ('independent') or a head ('conditioned')
            setattr(self, "log_sigma" if sigma_type == "independent" else "sigma_head",
                    make_log_sigma(sigma_type, enc_dim, hidden, action_dim, act, init_sigma))

    def forward(self, obs: ObsTree) -> Logit:
        return self.heads(self.encoder(obs))

    def heads(self, feature: torch.Tensor) -> Logit:
        """The policy's statistics from the encoder's features (B, enc_dim)."""
        out = self.head(feature)
        if not self.continuous:
            return out
        log_sigma = self.log_sigma if self.sigma_type == "independent" else self.sigma_head
        return {"mu": out, "sigma": gaussian_sigma(log_sigma, feature, out)}


class ACERCritic(nn.Module):
    """Q(x, .) (B, A) for discrete actions; the stochastic dueling network's V(x) and A(x, a) for continuous ones."""

    def __init__(self, encoder: nn.Module, enc_dim: int, action_dim: int, continuous: bool, hidden: List[int],
                 act: str, sdn_n_samples: int, core: Optional[LSTMCore] = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.core = core
        if core is not None:
            enc_dim = core.hidden_size
        self.continuous, self.n_samples = continuous, sdn_n_samples
        if continuous:
            self.value_head = mlp(enc_dim, hidden, 1, act)
            self.adv_head = mlp(enc_dim + action_dim, hidden, 1, act)
        else:
            self.q_head = mlp(enc_dim, hidden, action_dim, act)

    def forward(self, obs: ObsTree, action: Optional[torch.Tensor] = None,
                policy: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, torch.Tensor]:
        """Discrete: ``{'q_value': (B, A)}``. Continuous: ``{'value': (B,)}``, plus ``'q_value'`` Q~(x, a) of shape
        (B,) for an ``action`` (B, D), or (K, B) for K actions per observation (K, B, D); the n samples u_i are
        drawn (without gradient) from ``policy`` = pi(.|x) as ``{'mu', 'sigma'}`` (B, D) and shared by the K."""
        return self.heads(self.encoder(obs), action, policy)

    def heads(self, feature: torch.Tensor, action: Optional[torch.Tensor] = None,
              policy: Optional[Dict[str, torch.Tensor]] = None) -> Dict[str, torch.Tensor]:
        """:meth:`forward` from the encoder's features (B, enc_dim)."""
        if not self.continuous:
            return {"q_value": self.q_head(feature)}
        out = {"value": self.value_head(feature).squeeze(-1)}
        if action is None:
            return out
        if policy is None:
            raise ValueError("the stochastic dueling network needs the policy's {'mu', 'sigma'} to sample u_i ~ pi")
        single = action.dim() == 2
        actions = action.unsqueeze(0) if single else action  # (K, B, D)
        with torch.no_grad():
            mu, sigma = policy["mu"].detach(), policy["sigma"].detach()
            u = mu + sigma * torch.randn((self.n_samples, *mu.shape), dtype=mu.dtype, device=mu.device)
        all_actions = torch.cat([actions, u], dim=0)  # (K + n, B, D)
        k = all_actions.shape[0]
        adv_in = torch.cat([feature.unsqueeze(0).expand(k, *feature.shape), all_actions], dim=-1)
        adv = self.adv_head(adv_in).squeeze(-1)  # (K + n, B)
        q = out["value"] + adv[:actions.shape[0]] - adv[actions.shape[0]:].mean(0)
        out["q_value"] = q[0] if single else q
        return out


@MODEL_REGISTRY.register("acer")
class ACER(nn.Module):
    """ACER's policy and critic (see the module docstring); ``obs_shape``, ``obs_space``, ``action_shape`` and
    ``action_space`` default to the env's."""

    def __init__(self, obs_shape: Union[int, Sequence[int]] = None, action_shape: Union[int, Sequence[int]] = None,
                 action_space: str = None, obs_space: dict = None, share_encoder: bool = False,
                 encoder_hidden_size_list: List[int] = (128, 128), actor_head_hidden_size: int = 64,
                 actor_head_layer_num: int = 1, critic_head_hidden_size: int = 64, critic_head_layer_num: int = 1,
                 activation: str = "relu", sigma_type: str = "conditioned", init_sigma: float = 1.0,
                 sdn_n_samples: int = 5, encoder_type: str = "auto", conv_channels: List[int] = None,
                 conv_hidden_size: int = None, core: str = None, core_size: int = 128) -> None:
        super().__init__()
        if obs_shape is None or action_shape is None or action_space is None:
            raise ValueError("ACER needs obs_shape, action_shape and action_space (the pipelines fill them from the "
                             "env)")
        if action_space not in ("discrete", "continuous"):
            raise ValueError(f"ACER: action_space must be 'discrete' or 'continuous', got '{action_space}'")
        self.action_space = action_space
        continuous = action_space == "continuous"
        action_dim = flat_dim(action_shape)
        self.encoder_type = encoder_type

        def encoder():
            return build_obs_encoder(encoder_type, obs_space, obs_shape, encoder_hidden_size_list, activation,
                                     conv_channels, conv_hidden_size)

        actor_encoder, enc_dim = encoder()
        critic_encoder = actor_encoder if share_encoder else encoder()[0]
        self.share_encoder = share_encoder
        actor_core = critic_core = None
        if core is not None:
            actor_core = LSTMCore(enc_dim, core_size)
            critic_core = actor_core if share_encoder else LSTMCore(enc_dim, core_size)
        self.actor = ACERActor(actor_encoder, enc_dim, action_dim, continuous,
                               [actor_head_hidden_size] * actor_head_layer_num, activation, sigma_type, init_sigma,
                               actor_core)
        self.critic = ACERCritic(critic_encoder, enc_dim, action_dim, continuous,
                                 [critic_head_hidden_size] * critic_head_layer_num, activation, sdn_n_samples,
                                 critic_core)

    @classmethod
    def check_config(cls, cfg, path: str) -> None:
        """Reject impossible arguments before any env or network is built (``cfg`` is the model section)."""
        if cfg.action_space not in (None, "discrete", "continuous"):
            raise ConfigError(f"{path}.action_space='{cfg.action_space}': ACER supports 'discrete' and 'continuous' "
                              f"action spaces")
        check_actor_critic_config(cfg, path)
        check_core_config(cfg, path)
        if not isinstance(cfg.sdn_n_samples, int) or cfg.sdn_n_samples < 1:
            raise ConfigError(f"{path}.sdn_n_samples={cfg.sdn_n_samples}: must be a positive int")

    @property
    def core(self) -> Optional[LSTMCore]:
        """The actor's recurrent core (shared with the critic under ``share_encoder``), or None."""
        return self.actor.core

    @property
    def state_shape(self) -> Tuple[int, int]:
        """The recurrent state of one env: (2, core_size) (h, c) of the shared core, or (4, core_size): the actor's
        then the critic's."""
        return (2 if self.share_encoder else 4, self.actor.core.hidden_size)

    def initial_state(self, batch: int, device=None) -> torch.Tensor:
        """The state of ``batch`` envs at an episode's start: zeros (batch, *state_shape)."""
        return torch.zeros((batch, *self.state_shape), device=device)

    def _core_features(self, obs: ObsTree, state: Optional[torch.Tensor], done: Optional[torch.Tensor] = None,
                       extra_state_index: Optional[torch.Tensor] = None, actor: Optional[nn.Module] = None,
                       critic: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor], torch.Tensor]:
        """Actor features, critic features (None when ``critic`` is False and the critic has a core of its own) and
        the next state (only the actor's rows without the critic), after the core(s): one step (``done`` None) or
        the replay of unrolls (:func:`ding_lite.torch_utils.recurrent.replay_rows`). ``actor``: the average copy."""
        actor = self.actor if actor is None else actor
        feature = actor.encoder(obs)
        if state is None:
            state = self.initial_state(feature.shape[0], feature.device)

        def run(core: LSTMCore, x: torch.Tensor, s: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
            return core(x, s) if done is None else replay_rows(core, x, s, done, extra_state_index)
        if done is not None and critic and not self.share_encoder:  # the learner: both LSTMs in one batched replay
            (actor_feature, critic_feature), final = replay_rows_paired(
                (actor.core, self.critic.core), (feature, self.critic.encoder(obs)), state, done, extra_state_index)
            return actor_feature, critic_feature, final
        actor_feature, actor_state = run(actor.core, feature, state[:, :2])
        if self.share_encoder:
            return actor_feature, actor_feature, actor_state
        if not critic:
            return actor_feature, None, actor_state
        critic_feature, critic_state = run(self.critic.core, self.critic.encoder(obs), state[:, 2:])
        return actor_feature, critic_feature, torch.cat([actor_state, critic_state], dim=1)

    def actor_parameters(self, include_shared_encoder: bool = False) -> List[nn.Parameter]:
        """The actor's own parameters: the shared encoder excluded (it belongs to the critic) unless
        ``include_shared_encoder``, which lists every parameter of the actor network in the order of
        ``make_average_actor().parameters()``."""
        if include_shared_encoder:
            return list(self.actor.parameters())
        shared = {id(p) for p in self.critic.parameters()}
        return [p for p in self.actor.parameters() if id(p) not in shared]

    def critic_parameters(self) -> List[nn.Parameter]:
        """The critic's parameters, the shared encoder included."""
        return list(self.critic.parameters())

    def make_average_actor(self) -> nn.Module:
        """A frozen copy of the actor network (its encoder included; no gradients; not part of this model's
        parameters or state), e.g. ACER's average policy: evaluate it with ``compute_actor(obs, actor=copy)`` and
        move it towards ``actor_parameters(include_shared_encoder=True)`` by Polyak averaging."""
        return copy.deepcopy(self.actor).requires_grad_(False)

    def compute_actor(self, obs: ObsTree, actor: Optional[nn.Module] = None, state: Optional[torch.Tensor] = None,
                      done: Optional[torch.Tensor] = None,
                      extra_state_index: Optional[torch.Tensor] = None) -> Dict[str, Logit]:
        """``obs`` (B, *obs_shape) or a nested dict -> ``{'logit'}``: logits (B, A) or ``{'mu', 'sigma'}`` (B, D) of
        pi(.|x), or of ``actor``, a copy from :meth:`make_average_actor`. The encoders take the observation as it
        comes (flattening, casts and 1/255 scaling are theirs). With a core also ``'state'``, the next state (one
        step of acting advances the critic's core too) or, replaying (``done``), the actor's state after the
        unrolls."""
        if self.core is None:
            return {"logit": (self.actor if actor is None else actor)(obs)}
        actor_net = self.actor if actor is None else actor
        feature, _, next_state = self._core_features(obs, state, done, extra_state_index, actor_net,
                                                     critic=done is None and actor is None)
        return {"logit": actor_net.heads(feature), "state": next_state}

    def _features(self, obs: ObsTree) -> Tuple[torch.Tensor, torch.Tensor]:
        """The actor's and the critic's encoder features (B, enc_dim) of observations: one pass of a shared
        encoder (MLP or conv) serves both."""
        actor_feature = self.actor.encoder(obs)
        return actor_feature, (actor_feature if self.share_encoder else self.critic.encoder(obs))

    def compute_actor_then_critic(self, obs: ObsTree, make_action: Callable[[Logit], torch.Tensor],
                                  state: Optional[torch.Tensor] = None, done: Optional[torch.Tensor] = None,
                                  extra_state_index: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        """Continuous actions: the actor's ``{'logit'}`` for ``obs`` (B, *obs_shape), then the critic's ``{'value'}``
        (B,) and Q~ ``'q_value'`` (K, B) of the actions ``make_action(logit)`` (K, B, D), which may depend on the
        policy's statistics (a' ~ pi); the u_i of the SDN are drawn from ``logit``. As 'compute_actor' then
        'compute_critic' with ``policy=logit``, but with one pass of a shared encoder."""
        if self.core is None:
            actor_feature, critic_feature = self._features(obs)
            logit = self.actor.heads(actor_feature)
            return {"logit": logit, **self.critic.heads(critic_feature, make_action(logit), logit)}
        actor_feature, critic_feature, next_state = self._core_features(obs, state, done, extra_state_index)
        logit = self.actor.heads(actor_feature)
        return {"logit": logit, **self.critic.heads(critic_feature, make_action(logit), logit), "state": next_state}

    def forward(self, obs: ObsTree, mode: str = "compute_actor_critic", action: Optional[torch.Tensor] = None,
                policy: Optional[Dict[str, torch.Tensor]] = None, state: Optional[torch.Tensor] = None,
                done: Optional[torch.Tensor] = None,
                extra_state_index: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        """``obs`` (B, *obs_shape) or a nested dict. ``mode``: 'compute_actor' -> ``{'logit'}``; 'compute_critic' ->
        ``{'q_value'}`` (discrete, (B, A)) or ``{'value'}`` (continuous, (B,)) plus Q~ ``'q_value'`` for ``action``
        (B, D) or (K, B, D), its u_i drawn from ``policy`` (``{'mu', 'sigma'}`` already computed for ``obs``; None:
        the actor runs); 'compute_actor_critic' -> both (the continuous SDN samples u_i from this ``logit``).
        With a core: ``state``, ``done`` and ``extra_state_index`` as the class docstring says, and ``'state'`` out."""
        if self.core is not None and mode in ("compute_critic", "compute_actor_critic"):
            actor_feature, critic_feature, next_state = self._core_features(obs, state, done, extra_state_index)
            logit = self.actor.heads(actor_feature)
            if mode == "compute_critic" and action is not None and self.action_space == "continuous" and policy is None:
                policy = logit
            if mode == "compute_actor_critic":
                policy = logit if self.action_space == "continuous" else None
            out = self.critic.heads(critic_feature, action, policy)
            return {**({"logit": logit} if mode == "compute_actor_critic" else {}), **out, "state": next_state}
        if mode == "compute_actor" and self.core is not None:
            return self.compute_actor(obs, state=state, done=done, extra_state_index=extra_state_index)
        if mode == "compute_actor":
            return self.compute_actor(obs)
        if mode == "compute_critic":
            if action is not None and self.action_space == "continuous" and policy is None:
                policy = self.actor(obs)
            return self.critic(obs, action, policy)
        if mode == "compute_actor_critic":
            actor_feature, critic_feature = self._features(obs)
            logit = self.actor.heads(actor_feature)
            policy = logit if self.action_space == "continuous" else None
            return {"logit": logit, **self.critic.heads(critic_feature, action, policy)}
        raise ValueError(f"ACER: unknown mode '{mode}'; use 'compute_actor', 'compute_critic' or "
                         f"'compute_actor_critic'")
