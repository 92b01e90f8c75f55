"""Small network builders shared by the model templates."""
import math
from typing import Sequence, Union

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}


def activation(name: str) -> nn.Module:
    """The activation module called ``name`` (one of ``ACTIVATIONS``)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{name}'; choose one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


# How linear layers start. 'orthogonal': orthogonal weights (gain sqrt(2) in hidden layers, a given gain in output
# layers) and zero biases, ding_lite's default. 'torch': PyTorch's own nn.Linear init (weights and biases uniform in
# +-1/sqrt(fan_in)), which Tianshou's, SB3's and CleanRL's SAC networks keep; for comparing with them.
INITS = ("orthogonal", "torch")


def check_init(init: str) -> None:
    """Refuse an ``init`` that is not one of ``INITS`` (a config reaches this through the model's ConfigError first,
    which names the key)."""
    if init not in INITS:
        raise ValueError(f"unknown init '{init}'; choose one of {list(INITS)}")


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int = 0, act: str = "relu", out_gain: float = 1.0,
        init: str = "orthogonal") -> nn.Sequential:
    """Linear layers of sizes ``hidden`` with ``act`` after each, then an optional linear output of ``out_dim``.

    ``init`` 'orthogonal': hidden layers orthogonal with gain sqrt(2), the output layer with ``out_gain`` (small for
    policy heads), zero biases. 'torch': nn.Linear's default everywhere (``out_gain`` unused). See ``INITS``.
    """
    check_init(init)

    def linear(size_in: int, size_out: int, gain: float) -> nn.Linear:
        layer = nn.Linear(size_in, size_out)
        if init == "orthogonal":
            nn.init.orthogonal_(layer.weight, gain=gain)
            nn.init.zeros_(layer.bias)
        return layer

    layers, dim = [], in_dim
    for size in hidden:
        layers += [linear(dim, size, 2 ** 0.5), activation(act)]
        dim = size
    if out_dim:
        layers.append(linear(dim, out_dim, out_gain))
    return nn.Sequential(*layers)


def flat_dim(shape) -> int:
    """Number of elements of an observation of ``shape`` (int or sequence)."""
    if isinstance(shape, int):
        return shape
    return int(torch.tensor(list(shape)).prod().item())


# log(sigma) of the Gaussian policies (VAC, ACER) is clamped to this range: sigma in [0.0067, 7.39].
LOG_SIGMA_MIN, LOG_SIGMA_MAX = -5.0, 2.0
SIGMA_TYPES = ("independent", "conditioned")


def make_log_sigma(sigma_type: str, in_dim: int, hidden: Sequence[int], action_dim: int, act: str,
                   init_sigma: float) -> Union[nn.Parameter, nn.Sequential]:
    """The learnable log(sigma) of a diagonal Gaussian policy, starting at sigma = ``init_sigma``.

    'independent': a state-independent (action_dim,) parameter filled with log(init_sigma). 'conditioned': an MLP
    head on the encoder's features (``hidden`` layers) whose output layer has small weights (gain 0.01) and a bias
    of log(init_sigma), so that sigma(x) ~= init_sigma for every x at the start. Evaluate it with
    :func:`gaussian_sigma`.
    """
    if init_sigma <= 0:
        raise ValueError(f"init_sigma must be positive, got {init_sigma}")
    log_init = math.log(init_sigma)
    if sigma_type == "independent":
        return nn.Parameter(torch.full((action_dim,), log_init))
    if sigma_type == "conditioned":
        head = mlp(in_dim, hidden, action_dim, act, 0.01)
        with torch.no_grad():
            head[-1].bias.fill_(log_init)
        return head
    raise ValueError(f"sigma_type must be one of {SIGMA_TYPES}, got '{sigma_type}'")


def gaussian_sigma(log_sigma: Union[nn.Parameter, nn.Module], feature: torch.Tensor,
                   mu: torch.Tensor) -> torch.Tensor:
    """sigma (B, D) like ``mu`` from a :func:`make_log_sigma` parameter or head (evaluated on ``feature`` (B, F)),
    log(sigma) clamped to [LOG_SIGMA_MIN, LOG_SIGMA_MAX]."""
    raw = log_sigma.expand_as(mu) if isinstance(log_sigma, nn.Parameter) else log_sigma(feature)
    return raw.clamp(LOG_SIGMA_MIN, LOG_SIGMA_MAX).exp()


class EnsembleLinear(nn.Module):
    """``n`` independent linear layers applied as one batched matmul: ``(n, B, in) -> (n, B, out)``.

    Each member is initialised on its own as an ``nn.Linear(in_dim, out_dim)`` would be by :func:`mlp` with the same
    ``init``: 'orthogonal' (weight with ``gain``, zero bias) or 'torch' (nn.Linear's default; ``gain`` unused).
    """

    def __init__(self, n: int, in_dim: int, out_dim: int, gain: float = 2 ** 0.5, init: str = "orthogonal") -> None:
        super().__init__()
        check_init(init)
        self.weight = nn.Parameter(torch.empty(n, in_dim, out_dim))
        self.bias = nn.Parameter(torch.zeros(n, 1, out_dim))
        with torch.no_grad():
            for i in range(n):
                if init == "orthogonal":
                    self.weight[i] = nn.init.orthogonal_(torch.empty(out_dim, in_dim), gain=gain).T
                else:
                    member = nn.Linear(in_dim, out_dim)
                    self.weight[i], self.bias[i, 0] = member.weight.T, member.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


class EnsembleMLP(nn.Module):
    """``n`` MLPs of the same shape evaluated together (e.g. SAC's critic replicas): ``(B, in)`` or ``(n, B, in)``
    -> ``(n, B, out)``. One batched matmul per layer instead of ``n`` small ones."""

    def __init__(self, n: int, in_dim: int, hidden: Sequence[int], out_dim: int, act: str = "relu",
                 out_gain: float = 1.0, init: str = "orthogonal") -> None:
        super().__init__()
        self.n = n
        layers, dim = [], in_dim
        for size in hidden:
            layers += [EnsembleLinear(n, dim, size, init=init), activation(act)]
            dim = size
        layers.append(EnsembleLinear(n, dim, out_dim, gain=out_gain, init=init))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, detach_weights: bool = False) -> torch.Tensor:
        """``detach_weights``: the weights as constants, so that a loss on the output sends gradients to ``x`` only
        (SAC's actor loss through the critics), and no backward time goes to weight gradients nobody wants."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.n, *x.shape)
        # The layers applied directly (not through nn.Module calls): this runs several times per SAC update, where
        # the per-call overhead of the modules costs more than the small matmuls themselves.
        for layer in self.net:
            if isinstance(layer, EnsembleLinear):
                bias, weight = (layer.bias.detach(), layer.weight.detach()) if detach_weights else \
                    (layer.bias, layer.weight)
                x = torch.baddbmm(bias, x, weight)
            else:
                x = layer(x)
        return x
