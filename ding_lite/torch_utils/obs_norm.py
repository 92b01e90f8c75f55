"""Observation normalisation (``env.normalize_obs``): running mean and variance of float observation leaves.

What SB3's ``VecNormalize`` and RLlib's ``MeanStdFilter`` do, kept with the policy instead of the env: the statistics
are buffers of an :class:`ObsNormalizer` attached to the model (``model.obs_normalizer``), so they are in every
checkpoint, reach parallel and Ray workers with the weights, move with the model to a GPU, and anything that runs the
policy later (``-m eval``, a resumed run) normalises as training did. The replay buffer keeps raw observations; the
policy normalises at its inputs (acting and learning) with the statistics of the moment, so samples collected early
are not stuck with early statistics.

The statistics are updated from the observations of each batch of train samples as it reaches the learner's buffer
(serial and parallel alike, so the order of updates is the order of pushes: reproducible), never by evaluation.
``x -> clip((x - mean) / sqrt(var + epsilon), -clip, clip)`` per element; before any update mean 0 and var 1 (the
identity, up to the clip). The update merges a batch's mean and variance into the running ones exactly (Chan et al.'s
parallel algorithm), in float64.
"""
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import nn

Tree = Any  # a tensor or a nested dict of tensors


class ObsNormalizer(nn.Module):
    """Running mean/var of the leaves at ``paths`` (key tuples into the observation tree; ``()`` is a plain tensor
    observation), each of per-observation ``shapes``; see the module docstring."""

    def __init__(self, paths: List[Tuple[str, ...]], shapes: List[List[int]], clip: Optional[float] = 10.0,
                 epsilon: float = 1e-8) -> None:
        super().__init__()
        self.paths, self.shapes = [tuple(p) for p in paths], [list(s) for s in shapes]
        self.clip, self.epsilon = clip, float(epsilon)
        for i, shape in enumerate(self.shapes):
            self.register_buffer(f"mean_{i}", torch.zeros(shape, dtype=torch.float64))
            self.register_buffer(f"var_{i}", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def _stats(self, i: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return getattr(self, f"mean_{i}"), getattr(self, f"var_{i}")

    @torch.no_grad()
    def update(self, obs: Tree) -> None:
        """Merge every observation in ``obs`` (each leaf ``(..., *shape)``: any leading dims) into the statistics."""
        n = None
        for i, (path, shape) in enumerate(zip(self.paths, self.shapes)):
            x = _get(obs, path).to(self.count.device, torch.float64).reshape(-1, *shape)
            n = x.shape[0]
            if n == 0:
                return
            mean, var = self._stats(i)
            batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
            total = self.count + n
            delta = batch_mean - mean
            mean.add_(delta * (n / total))
            var.copy_((var * self.count + batch_var * n + delta.square() * (self.count * n / total)) / total)
        if n:
            self.count.add_(n)

    def forward(self, obs: Tree) -> Tree:
        """``obs`` with its normalised leaves replaced: float32 ``(x - mean) / sqrt(var + eps)``, clipped."""
        for i, path in enumerate(self.paths):
            mean, var = self._stats(i)
            x = _get(obs, path)
            y = ((x - mean.to(x.dtype)) * torch.rsqrt(var.to(x.dtype) + self.epsilon))
            if self.clip is not None:
                y = y.clamp(-self.clip, self.clip)
            obs = _set(obs, path, y)
        return obs


def _get(tree: Tree, path: Tuple[str, ...]) -> torch.Tensor:
    for key in path:
        tree = tree[key]
    return tree


def _set(tree: Tree, path: Tuple[str, ...], value: torch.Tensor) -> Tree:
    """A copy of ``tree`` (new dicts along ``path`` only) with ``value`` at ``path``."""
    if not path:
        return value
    out: Dict[str, Any] = dict(tree)
    out[path[0]] = _set(tree[path[0]], path[1:], value)
    return out


# ---- which leaves: marked in the observation space's description (``policy.model.obs_space``) ------------------------
FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")


def mark_normalized(description: dict, clip: Optional[float]) -> dict:
    """A copy of an observation-space description (``ding_lite.envs.obs_space``) whose float Box leaves carry
    ``normalize=dict(clip=clip)``: what ``env.normalize_obs`` does to ``policy.model.obs_space``."""
    if description.get("space") in ("dict", "tuple"):
        return {**description, "spaces": {k: mark_normalized(v, clip) for k, v in description["spaces"].items()}}
    if description.get("space") == "box" and description.get("dtype") in FLOAT_DTYPES:
        return {**description, "normalize": dict(clip=clip)}
    return dict(description)


def normalized_leaves(description: Optional[dict],
                      prefix: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], List[int], Optional[float]]]:
    """(key path, shape, clip) of every leaf marked by :func:`mark_normalized`, depth first in key order."""
    if not description:
        return []
    if description.get("space") in ("dict", "tuple"):
        return [leaf for key, sub in description["spaces"].items()
                for leaf in normalized_leaves(sub, prefix + (str(key),))]
    if description.get("normalize"):
        return [(prefix, list(description["shape"]), description["normalize"].get("clip"))]
    return []


def make_obs_normalizer(description: Optional[dict]) -> Optional[ObsNormalizer]:
    """The normaliser of the leaves marked in ``description``, or None when none is."""
    leaves = normalized_leaves(description)
    if not leaves:
        return None
    return ObsNormalizer([p for p, _, _ in leaves], [s for _, s, _ in leaves], clip=leaves[0][2])
