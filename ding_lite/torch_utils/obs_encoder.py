"""Observation encoders built from the observation space (``policy.model.obs_space``), ``encoder_type='auto'``.

The description of a space is plain config data (:mod:`ding_lite.envs.obs_space`); ``None`` (a model built by hand)
reads as ``dict(space='box', shape=<obs_shape>, dtype='float32')``. ``'auto'`` picks per leaf:

* a float Box (any rank), or an integer Box that is not image-like: the flattened observation (integers cast to
  float, unscaled) through ``mlp(flat_dim, encoder_hidden_size_list)``. Alone, this is exactly ``encoder_type='mlp'``
  (same modules, parameter order and state_dict keys: CartPole/Pendulum runs are unchanged).
* an *image-like* Box: uint8, 3 dims, channels-first ``(C, H, W)`` or channels-last ``(H, W, C)``. The channel dim is
  the smaller of the first and the last dim (the first on a tie) and must be <= 4; the other two are (H, W) and both
  must be >= 36 (the smallest frame the Nature conv takes). Alone, a CHW image gets the Nature conv encoder exactly as
  ``encoder_type='nature_conv'`` builds it; an HWC one the same encoder behind :class:`ChannelsLast` (a permute).
  Smaller uint8 grids (MiniGrid's 7x7x3 object codes), 2-dim and float frames are not image-like: they take the MLP
  path (pass an explicit conv ``encoder_type`` for those).
* Discrete: the one-hot of ``x - start`` over n; MultiDiscrete: the one-hots of every entry, concatenated;
  MultiBinary: cast to float. Then the MLP.
* a Dict/Tuple nesting (SB3's ``CombinedExtractor``): each image-like leaf through its own Nature conv
  (``conv_channels``/``conv_hidden_size`` apply to each), every other leaf flattened as above, all concatenated depth
  first in the description's key order, then ``mlp(concat_dim, encoder_hidden_size_list)``.

An explicit conv ``encoder_type`` (``'nature_conv'``, ``'impala_resnet'``, a registered one) is built as before on a
plain Box (an image-like HWC one behind :class:`ChannelsLast`); on a nesting it replaces the Nature conv of the
image-like leaves. ``'mlp'`` refuses image-like leaves (a ConfigError naming the leaf and the fix).

Inputs: a tensor ``(B, *shape)`` for a plain space, a nested dict of tensors (a Tuple's items keyed '0', '1', ...)
for a nesting; uint8 leaves stay uint8 up to their encoder (conv encoders scale them by 1/255 on their device).
"""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ding_lite.utils import ConfigError

from .conv import MLP, build_encoder, encoder_types, mlp_input
from .network import flat_dim, mlp

AUTO = "auto"
AUTO_CONV = "nature_conv"  # the conv 'auto' gives an image-like leaf
IMAGE_DTYPES = ("uint8",)
MAX_CHANNELS = 4
MIN_IMAGE_SIZE = 36
KEY = "policy.model"  # where the models' arguments live in the config, for messages

ObsTree = Union[torch.Tensor, Dict[str, Any]]


def encoder_choices() -> List[str]:
    """Every valid ``encoder_type`` of VAC and ACER: 'auto', 'mlp' and the registered encoders."""
    return [AUTO, *encoder_types()]


def box_description(obs_shape: Union[int, Sequence[int]]) -> dict:
    """What a model reads when ``obs_space`` is None: a float32 Box of ``obs_shape``."""
    if isinstance(obs_shape, dict):
        raise ValueError(f"obs_shape={obs_shape} is nested: pass the model obs_space (the pipelines fill it)")
    shape = [obs_shape] if isinstance(obs_shape, int) else [int(d) for d in obs_shape]
    return dict(space="box", shape=shape, dtype="float32")


class Leaf(NamedTuple):
    keys: Tuple[str, ...]  # where its tensor is in the observation dict (empty: the observation itself)
    path: str  # for messages: obs['image'], obs[0], obs
    spec: dict


def obs_leaves(description: dict, keys: Tuple[str, ...] = (), path: str = "obs") -> List[Leaf]:
    """Every leaf of a description, depth first in its key order."""
    space = description["space"]
    if space not in ("dict", "tuple"):
        return [Leaf(keys, path, description)]
    out = []
    for key, sub in description["spaces"].items():
        out += obs_leaves(sub, keys + (str(key),), f"{path}[{key}]" if space == "tuple" else f"{path}[{key!r}]")
    return out


def image_layout(leaf: dict) -> Optional[str]:
    """'CHW' or 'HWC' for an image-like leaf (module docstring), else None."""
    if leaf["space"] != "box" or leaf.get("dtype") not in IMAGE_DTYPES or len(leaf["shape"]) != 3:
        return None
    first, height, last = (int(d) for d in leaf["shape"])
    if min(first, last) > MAX_CHANNELS:
        return None
    layout, (height, width) = ("CHW", (height, last)) if first <= last else ("HWC", (first, height))
    return layout if min(height, width) >= MIN_IMAGE_SIZE else None


def chw_shape(leaf: dict) -> List[int]:
    """The channels-first shape of an image-like leaf."""
    shape = [int(d) for d in leaf["shape"]]
    return shape if image_layout(leaf) == "CHW" else [shape[2], shape[0], shape[1]]


def leaf_flat_dim(leaf: dict) -> int:
    """Size of a leaf flattened to float features (:class:`LeafFlattener`)."""
    if leaf["space"] == "discrete":
        return int(leaf["n"])
    if leaf["space"] == "multi_discrete":
        return sum(int(n) for n in leaf["nvec"])
    return flat_dim(list(leaf["shape"]))


class LeafFlattener(nn.Module):
    """One leaf ``(B, *shape)`` (Discrete: ``(B,)``) -> float features ``(B, leaf_flat_dim)``, no parameters: Box and
    MultiBinary flattened and cast to float (unscaled), Discrete one-hot of ``x - start``, MultiDiscrete the one-hots
    of its entries concatenated (of ``x - start`` where the description has a flattened ``start``, else of ``x``)."""

    def __init__(self, leaf: dict) -> None:
        super().__init__()
        self.space = leaf["space"]
        self.output_dim = leaf_flat_dim(leaf)
        self.start = int(leaf.get("start", 0)) if self.space == "discrete" else 0
        if self.space == "multi_discrete":  # entry i (value in [start_i, start_i + n_i)) is one-hot from offsets[i]
            nvec = torch.tensor([int(n) for n in leaf["nvec"]])
            start = torch.tensor([int(s) for s in leaf.get("start", [0] * len(nvec))])
            self.register_buffer("offsets", torch.cumsum(nvec, 0) - nvec - start, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        if self.space == "discrete":
            return F.one_hot((x.long() - self.start).reshape(batch), self.output_dim).to(torch.float32)
        if self.space == "multi_discrete":
            index = x.long().reshape(batch, -1) + self.offsets
            return torch.zeros(batch, self.output_dim, device=x.device).scatter_(1, index, 1.0)
        return mlp_input(x).reshape(batch, -1)


class ChannelsLast(nn.Module):
    """A conv encoder for channels-last frames: ``(B, H, W, C)`` -> permuted (a view, dtype kept) -> ``(B, F)``."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.output_dim = int(encoder.output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x.permute(0, 3, 1, 2))


def build_image_encoder(encoder_type: str, leaf: dict, conv_channels: Optional[Sequence[int]] = None,
                        conv_hidden_size: Optional[int] = None) -> nn.Module:
    """The conv ``encoder_type`` of an image-like leaf, channels-last frames behind :class:`ChannelsLast`."""
    encoder, _ = build_encoder(encoder_type, chw_shape(leaf), conv_channels=conv_channels,
                               conv_hidden_size=conv_hidden_size)
    return ChannelsLast(encoder) if image_layout(leaf) == "HWC" else encoder


class ObsFlattener(nn.Module):
    """Every leaf of an observation to features, concatenated depth first: ``(B, ...)`` or a nested dict ->
    ``(B, output_dim)``. Image-like leaves go through ``image_encoder(leaf)`` when one is given (else they are
    flattened); without it this has no parameters (QAC's input)."""

    def __init__(self, description: dict, image_encoder: Optional[Callable[[dict], nn.Module]] = None) -> None:
        super().__init__()
        self.keys = [leaf.keys for leaf in obs_leaves(description)]
        self.leaf_encoders = nn.ModuleList(
            image_encoder(leaf.spec) if image_encoder is not None and image_layout(leaf.spec) else
            LeafFlattener(leaf.spec) for leaf in obs_leaves(description))
        self.output_dim = sum(int(encoder.output_dim) for encoder in self.leaf_encoders)

    def forward(self, obs: ObsTree) -> torch.Tensor:
        parts = []
        for keys, encoder in zip(self.keys, self.leaf_encoders):
            x = obs
            for key in keys:
                x = x[key]
            parts.append(encoder(x))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)


class MultiInputEncoder(nn.Module):
    """:class:`ObsFlattener` (a conv per image-like leaf) then ``mlp(output_dim, hidden_size_list)``: ``(B, ...)`` or
    a nested dict -> ``(B, output_dim)``, output_dim the last hidden size (the concatenation's with none)."""

    def __init__(self, description: dict, conv_type: Optional[str], hidden_size_list: Sequence[int] = (),
                 activation: str = "relu", conv_channels: Optional[Sequence[int]] = None,
                 conv_hidden_size: Optional[int] = None) -> None:
        super().__init__()
        image = None if conv_type is None else \
            (lambda leaf: build_image_encoder(conv_type, leaf, conv_channels, conv_hidden_size))
        self.inputs = ObsFlattener(description, image)
        hidden = list(hidden_size_list)
        self.mlp = mlp(self.inputs.output_dim, hidden, act=activation)
        self.output_dim = hidden[-1] if hidden else self.inputs.output_dim

    def forward(self, obs: ObsTree) -> torch.Tensor:
        return self.mlp(self.inputs(obs))


class FlatMLPEncoder(nn.Sequential):
    """The MLP encoder of a plain Box: ``(B, *shape)`` -> ``mlp_input`` (flattened, integers cast to float) ->
    ``(B, F)``. The modules of ``build_encoder('mlp', ...)`` themselves, so the state_dict keys are those of before."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return super().forward(mlp_input(obs))


def build_obs_encoder(encoder_type: str, obs_space: Optional[dict], obs_shape: Any,
                      hidden_size_list: Sequence[int] = (), activation: str = "relu",
                      conv_channels: Optional[Sequence[int]] = None,
                      conv_hidden_size: Optional[int] = None) -> Tuple[nn.Module, int]:
    """The encoder of VAC/ACER for ``encoder_type`` on ``obs_space`` (None: a float Box of ``obs_shape``), and its
    output size; it takes the model's observation as it comes (tensor or nested dict), see the module docstring.
    A ConfigError naming ``policy.model.encoder_type`` where the space rules the choice out."""
    description = box_description(obs_shape) if obs_space is None else obs_space
    leaves = obs_leaves(description)
    images = [leaf for leaf in leaves if image_layout(leaf.spec)]
    if encoder_type == MLP and images:
        listed = ", ".join(f"{leaf.path} (uint8 {list(leaf.spec['shape'])})" for leaf in images)
        raise ConfigError(f"{KEY}.encoder_type='mlp' cannot take the image observation {listed}: an MLP over raw "
                          f"pixels does not learn; set {KEY}.encoder_type='auto' (a Nature conv for each image, the "
                          f"MLP for the rest) or 'nature_conv'")
    nested = description["space"] in ("dict", "tuple")
    if not nested and description["space"] == "box":
        if encoder_type == MLP or (encoder_type == AUTO and not images):
            shape = obs_shape if obs_space is None else list(description["shape"])
            encoder, dim = build_encoder(MLP, shape, hidden_size_list, activation)
            return FlatMLPEncoder(*encoder), dim
        conv_type = AUTO_CONV if encoder_type == AUTO else encoder_type
        if images:
            encoder = build_image_encoder(conv_type, description, conv_channels, conv_hidden_size)
            return encoder, int(encoder.output_dim)
        shape = obs_shape if obs_space is None else list(description["shape"])  # as before obs spaces: its checks
        return build_encoder(conv_type, shape, conv_channels=conv_channels, conv_hidden_size=conv_hidden_size)
    if encoder_type not in (AUTO, MLP) and not images:
        raise ConfigError(f"{KEY}.encoder_type={encoder_type!r} is a conv encoder but the observation has no "
                          f"image-like leaf (uint8, (C, H, W) or (H, W, C), C <= {MAX_CHANNELS}, H and W >= "
                          f"{MIN_IMAGE_SIZE}): {_describe_leaves(leaves)}; set {KEY}.encoder_type='auto'")
    conv_type = None if encoder_type == MLP else (AUTO_CONV if encoder_type == AUTO else encoder_type)
    encoder = MultiInputEncoder(description, conv_type, hidden_size_list, activation, conv_channels, conv_hidden_size)
    return encoder, encoder.output_dim


def build_obs_flattener(obs_space: Optional[dict], obs_shape: Any, model: str) -> ObsFlattener:
    """A parameter-free :class:`ObsFlattener` of ``obs_space`` (None: a float Box of ``obs_shape``) for a model
    without an encoder (``model`` names it in messages); image-like leaves are a ConfigError."""
    description = box_description(obs_shape) if obs_space is None else obs_space
    images = [leaf for leaf in obs_leaves(description) if image_layout(leaf.spec)]
    if images:
        listed = ", ".join(f"{leaf.path} (uint8 {list(leaf.spec['shape'])})" for leaf in images)
        raise ConfigError(f"{KEY}.obs_space: {model} from pixels is not supported yet, and the observation has the "
                          f"image {listed}; turn the frames into features with a gymnasium.ObservationWrapper in "
                          f"env.wrappers (or drop them), or learn from pixels with IMPALA or ACER (conv encoders)")
    return ObsFlattener(description)


def has_conv(encoder_type: Optional[str], obs_space: Optional[dict]) -> bool:
    """Whether VAC/ACER build a conv encoder: an explicit conv ``encoder_type``, or 'auto' on an image-like leaf (what
    ``torch_threads='auto'`` counts as wide)."""
    if encoder_type in (None, MLP):
        return False
    if encoder_type != AUTO:
        return True
    return obs_space is not None and any(image_layout(leaf.spec) for leaf in obs_leaves(obs_space))


def _describe_leaves(leaves: List[Leaf]) -> str:
    return ", ".join(f"{leaf.path} is {dict(leaf.spec)}" for leaf in leaves)
