"""Target networks: slowly moving copies of a network (SAC's target critics, ACER's average actor)."""
from typing import Iterable

import torch

__all__ = ['polyak_update']


def polyak_update(target_params: Iterable[torch.Tensor], params: Iterable[torch.Tensor], theta: float) -> None:
    """Soft target update  target <- (1 - theta) target + theta online, in place and without autograd.

    ``theta`` is the weight of the online parameters (DI-engine's ``theta``, ALF's ``tau``): 0 keeps the target,
    1 copies the online network. Done as one fused ``torch._foreach_lerp_`` over all tensors.

    Arguments:
        - target_params, params: matching sequences of tensors, e.g. ``target_net.parameters()`` and
          ``net.parameters()`` (buffers such as running statistics are the caller's choice).
        - theta: in [0, 1].
    """
    if not 0.0 <= theta <= 1.0:
        raise ValueError(f'theta must be in [0, 1], got {theta}')
    target_params, params = list(target_params), list(params)
    if len(target_params) != len(params):
        raise ValueError(f'{len(target_params)} target tensors for {len(params)} online tensors')
    for t, p in zip(target_params, params):
        if t.shape != p.shape:
            raise ValueError(f'shape mismatch: target {tuple(t.shape)} vs online {tuple(p.shape)}')
    if not target_params:
        return
    with torch.no_grad():
        torch._foreach_lerp_(target_params, params, float(theta))
