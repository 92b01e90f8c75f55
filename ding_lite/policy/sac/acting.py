"""Continuous SAC's acting with the built-in actor MLP, layer by layer (:class:`ActingActor`), and the activation
helpers that it and the hand-written update (:mod:`.manual_update`) share.

Shapes: B observations, O observation features, D action dims; the actor's layers are ``nn.Linear``
(weight (out, in)).
"""
from typing import List, Optional

import torch
from torch import nn

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils.network import EnsembleLinear

ACTIVATIONS = {nn.ReLU: "relu", nn.Tanh: "tanh"}


def activation_name(layers: List[nn.Module]) -> Optional[str]:
    """The one activation between a stack's linear layers, if it is ReLU or tanh everywhere; else None."""
    names = {ACTIVATIONS.get(type(m)) for m in layers if not isinstance(m, (nn.Linear, EnsembleLinear))}
    return names.pop() if len(names) == 1 and None not in names else None


def mlp_actor_activation(model: nn.Module) -> Optional[str]:
    """The activation of ``model.actor`` if it is an MLP ending in a linear layer with one activation (ReLU or tanh)
    between its layers; else None."""
    actor = list(model.actor)
    return activation_name(actor) if actor and isinstance(actor[-1], nn.Linear) else None


def act_(x: torch.Tensor, name: str) -> torch.Tensor:
    """The activation ``name`` ('relu' or 'tanh') applied to ``x`` in place."""
    return x.clamp_min_(0.0) if name == "relu" else x.tanh_()


class ActingActor:
    """The built-in actor MLP for acting, layer by layer with ``addmm`` and in-place activations: the same action
    and random draws as ``ContinuousSAC``'s module path (``compute_actor``, then the squashed Gaussian), without a
    module call per layer. Acting runs between updates with cold caches, where each call costs more: right after a
    [256, 256] update, 189 against 285 us per action on 2 CPU threads (docs/sac.md#speed). Built by :meth:`of` for
    the built-in QAC on a continuous action space."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.layers: List[nn.Linear] = [m for m in model.actor if isinstance(m, nn.Linear)]
        self.act = activation_name(list(model.actor))
        self.log_std_min, self.log_std_max = model.log_std_min, model.log_std_max

    @classmethod
    def of(cls, model: nn.Module) -> Optional["ActingActor"]:
        """One for ``model`` where it applies (an MLP actor of the built-in QAC, ReLU or tanh), else None."""
        from ding_lite.model.qac import QAC
        if type(model) is not QAC or model.action_space != "continuous" or not isinstance(model.actor, nn.Sequential):
            return None
        return cls(model) if mlp_actor_activation(model) is not None else None

    def __call__(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """tanh(mu + std eps) (or tanh(mu)) for observations (B, ...) or a nested dict of them, (B, D)."""
        x = self.model.flatten_obs(obs)  # (B, O)
        for layer in self.layers[:-1]:
            x = act_(torch.addmm(layer.bias, x, layer.weight.t()), self.act)
        last = self.layers[-1]
        mu, log_std = torch.addmm(last.bias, x, last.weight.t()).chunk(2, dim=-1)
        return S.squashed_gaussian_action(mu, log_std.clamp(self.log_std_min, self.log_std_max), deterministic)
