"""Small network builders shared by the model templates."""
from typing import Sequence

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}


def activation(name: str) -> nn.Module:
    """The activation module called ``name`` (one of ``ACTIVATIONS``)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}'; choose one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int = 0, act: str = "relu", out_gain: float = 1.0) -> nn.Sequential:
    """Linear layers of sizes ``hidden`` with ``act`` after each, then an optional linear output of ``out_dim``.

    Hidden layers use orthogonal init with gain sqrt(2); the output layer uses ``out_gain`` (small for policy heads).
    """
    layers, dim = [], in_dim
    for size in hidden:
        linear = nn.Linear(dim, size)
        nn.init.orthogonal_(linear.weight, gain=2 ** 0.5)
        nn.init.zeros_(linear.bias)
        layers += [linear, activation(act)]
        dim = size
    if out_dim:
        linear = nn.Linear(dim, out_dim)
        nn.init.orthogonal_(linear.weight, gain=out_gain)
        nn.init.zeros_(linear.bias)
        layers.append(linear)
    return nn.Sequential(*layers)


def flat_dim(shape) -> int:
    """Number of elements of an observation of ``shape`` (int or sequence)."""
    if isinstance(shape, int):
        return shape
    return int(torch.tensor(list(shape)).prod().item())
