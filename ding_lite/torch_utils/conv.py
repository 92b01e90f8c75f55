"""Observation encoders of the actor-critic models, selected by ``policy.model.encoder_type``.

* ``'mlp'``: the flattened observation through the MLP of ``encoder_hidden_size_list``. (The models' default is
  ``'auto'``, which picks one of these per observation leaf from the observation space:
  :mod:`ding_lite.torch_utils.obs_encoder`.)
* ``'nature_conv'``: the Nature-DQN torso (Mnih et al. 2015): conv 32 8x8 stride 4, conv 64 4x4 stride 2,
  conv 64 3x3 stride 1, each followed by a ReLU, then a fully connected layer of 512 and a ReLU. Inputs of at least
  36x36 pixels (84x84 on Atari).
* ``'impala_resnet'``: the deep ResNet torso of IMPALA (Espeholt et al. 2018, fig. 3): 3 stages of 16, 32, 32
  channels, each a conv 3x3, a max-pool 3x3 stride 2 and two residual blocks (ReLU, conv 3x3, ReLU, conv 3x3, plus
  the input); then a ReLU, a fully connected layer of 256 and a ReLU.

Conv encoders take channels-first pixel observations ``(B, C, H, W)`` (a ``(B, H, W)`` one for an ``obs_shape`` of two
dims is given one channel). An integer input (uint8 frames) is cast to float and divided by 255 *inside* the encoder,
on the device its parameters live on, so that observations travel as uint8 from the env through the collector, the
replay buffer and the learner's batch (a quarter of float32's bytes); a float input is taken as already scaled. The MLP
encoder casts an integer input to float without scaling (what the collector did before observations stayed integer).

``conv_channels`` and ``conv_hidden_size`` (None: the architecture's own, as above) give smaller variants, e.g. for
tests on tiny frames. The conv encoders use ReLU as the papers do; ``activation`` applies to the MLP encoder and the
heads. Weights: orthogonal with gain sqrt(2), zero biases (as ``mlp``).

A user encoder registers in ``ENCODER_REGISTRY`` like the built-in conv encoders: a module class taking
``(obs_shape, channels=None, hidden_size=None)`` with an ``output_dim`` attribute.
"""
from typing import List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ding_lite.utils import Registry

from .network import flat_dim, mlp

ENCODER_REGISTRY = Registry("encoder")
MLP = "mlp"

Shape = Union[int, Sequence[int]]


def encoder_types() -> List[str]:
    """Every valid ``encoder_type``: 'mlp' and the registered encoders, sorted."""
    return sorted([MLP, *ENCODER_REGISTRY.keys()])


def pixels_to_float(x: torch.Tensor) -> torch.Tensor:
    """An integer (e.g. uint8) image batch -> float32 in [0, 1] (x / 255); a float one is returned as it is."""
    if x.is_floating_point():
        return x
    return x.to(torch.float32).div_(255.0)


def mlp_input(obs: torch.Tensor) -> torch.Tensor:
    """What an MLP encoder takes: ``(B, *obs_shape)`` flattened to ``(B, obs_dim)``, integers cast to float unscaled."""
    if not obs.is_floating_point():
        obs = obs.to(torch.float32)
    return obs.flatten(1) if obs.dim() > 2 else obs


def _conv(in_ch: int, out_ch: int, kernel: int, stride: int = 1, padding: int = 0) -> nn.Conv2d:
    conv = nn.Conv2d(in_ch, out_ch, kernel, stride=stride, padding=padding)
    nn.init.orthogonal_(conv.weight, gain=2 ** 0.5)
    nn.init.zeros_(conv.bias)
    return conv


def _image_shape(obs_shape: Shape, name: str) -> Tuple[int, int, int]:
    shape = [obs_shape] if isinstance(obs_shape, int) else [int(d) for d in obs_shape]
    if len(shape) == 2:
        shape = [1] + shape
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"encoder '{name}' needs image observations (C, H, W) or (H, W), got obs_shape={obs_shape}")
    return tuple(shape)


def _channels(channels: Optional[Sequence[int]], default: Tuple[int, ...], name: str) -> List[int]:
    channels = list(default if channels is None else channels)
    if len(channels) != len(default) or any(not isinstance(c, int) or c < 1 for c in channels):
        raise ValueError(f"encoder '{name}': conv_channels must be {len(default)} positive ints, got {channels}")
    return channels


class ConvEncoder(nn.Module):
    """Base of the conv encoders: input handling (rank, dtype, scaling) and the fc layer after the conv torso."""

    name = ""

    def __init__(self, obs_shape: Shape) -> None:
        super().__init__()
        self.obs_shape = _image_shape(obs_shape, self.name)
        self._add_channel = not isinstance(obs_shape, int) and len(obs_shape) == 2

    def _fc(self, torso: nn.Module, hidden_size: int) -> nn.Sequential:
        with torch.no_grad():
            flat = torso(torch.zeros(1, *self.obs_shape)).numel()
        self.output_dim = int(hidden_size)
        linear = nn.Linear(flat, self.output_dim)
        nn.init.orthogonal_(linear.weight, gain=2 ** 0.5)
        nn.init.zeros_(linear.bias)
        return nn.Sequential(nn.Flatten(), linear, nn.ReLU())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` (or ``(B, H, W)`` for an obs_shape of two dims), any integer or float dtype ->
        features ``(B, output_dim)``."""
        if self._add_channel and obs.dim() == 3:
            obs = obs.unsqueeze(1)
        if tuple(obs.shape[1:]) != self.obs_shape:
            raise ValueError(f"encoder '{self.name}' built for observations {self.obs_shape} got a batch of shape "
                             f"{tuple(obs.shape)}")
        return self.fc(self.torso(pixels_to_float(obs)))


@ENCODER_REGISTRY.register("nature_conv")
class NatureConvEncoder(ConvEncoder):
    """The Nature-DQN conv torso and fc layer (see the module docstring)."""

    name = "nature_conv"
    DEFAULT_CHANNELS = (32, 64, 64)
    DEFAULT_HIDDEN_SIZE = 512

    def __init__(self, obs_shape: Shape, channels: Optional[Sequence[int]] = None,
                 hidden_size: Optional[int] = None) -> None:
        super().__init__(obs_shape)
        c1, c2, c3 = _channels(channels, self.DEFAULT_CHANNELS, self.name)
        in_ch, height, width = self.obs_shape
        if min(height, width) < 36:
            raise ValueError(f"encoder 'nature_conv' needs frames of at least 36x36 pixels (8x8 stride 4, 4x4 "
                             f"stride 2, 3x3), got obs_shape={list(self.obs_shape)}; use 'impala_resnet' for smaller "
                             f"frames")
        self.torso = nn.Sequential(_conv(in_ch, c1, 8, 4), nn.ReLU(), _conv(c1, c2, 4, 2), nn.ReLU(),
                                   _conv(c2, c3, 3, 1), nn.ReLU())
        self.fc = self._fc(self.torso, self.DEFAULT_HIDDEN_SIZE if hidden_size is None else hidden_size)


class ResidualBlock(nn.Module):
    """x + conv(relu(conv(relu(x)))), 3x3 convs keeping the channels and the size."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = _conv(channels, channels, 3, padding=1)
        self.conv1 = _conv(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv0(torch.relu(x))
        return x + self.conv1(torch.relu(out))


class ImpalaStage(nn.Sequential):
    """conv 3x3, max-pool 3x3 stride 2 (padding 1: H -> ceil(H / 2)), two residual blocks."""

    def __init__(self, in_ch: int, out_ch: int) -> None:
        super().__init__(_conv(in_ch, out_ch, 3, padding=1), nn.MaxPool2d(3, stride=2, padding=1),
                         ResidualBlock(out_ch), ResidualBlock(out_ch))


@ENCODER_REGISTRY.register("impala_resnet")
class ImpalaResNetEncoder(ConvEncoder):
    """IMPALA's ResNet torso and fc layer (see the module docstring)."""

    name = "impala_resnet"
    DEFAULT_CHANNELS = (16, 32, 32)
    DEFAULT_HIDDEN_SIZE = 256

    def __init__(self, obs_shape: Shape, channels: Optional[Sequence[int]] = None,
                 hidden_size: Optional[int] = None) -> None:
        super().__init__(obs_shape)
        channels = _channels(channels, self.DEFAULT_CHANNELS, self.name)
        stages, in_ch = [], self.obs_shape[0]
        for out_ch in channels:
            stages.append(ImpalaStage(in_ch, out_ch))
            in_ch = out_ch
        self.torso = nn.Sequential(*stages, nn.ReLU())
        self.fc = self._fc(self.torso, self.DEFAULT_HIDDEN_SIZE if hidden_size is None else hidden_size)


def build_encoder(encoder_type: str, obs_shape: Shape, hidden_size_list: Sequence[int] = (), activation: str = "relu",
                  conv_channels: Optional[Sequence[int]] = None,
                  conv_hidden_size: Optional[int] = None) -> Tuple[nn.Module, int]:
    """The encoder named ``encoder_type`` for observations of ``obs_shape``, and its output size.

    'mlp' is ``mlp(flat_dim(obs_shape), hidden_size_list, act=activation)`` (the models' encoder before conv
    encoders existed: same modules, same parameter creation order); other names are looked up in
    ``ENCODER_REGISTRY`` and built with ``(obs_shape, channels=conv_channels, hidden_size=conv_hidden_size)``.
    """
    if encoder_type == MLP:
        obs_dim = flat_dim(obs_shape)
        hidden = list(hidden_size_list)
        return mlp(obs_dim, hidden, act=activation), (hidden[-1] if hidden else obs_dim)
    encoder = ENCODER_REGISTRY.build(encoder_type, obs_shape, channels=conv_channels, hidden_size=conv_hidden_size)
    return encoder, int(encoder.output_dim)
