"""Action masks beside the observation: taking the mask out of a Dict observation before the model sees it.

An env gives the mask as the ``policy.action_mask_key`` entry of its Dict observation (the pipeline fills the key
from ``env.action_mask_key``; the env checker's conventions, :mod:`ding_lite.envs.check_mask`): (N, n) for a
Discrete action space, (N, sum(nvec)) for MultiDiscrete, or a Tuple of one (N, nvec[h]) mask per head (a dict
``{'0': ..., '1': ...}`` as a tensor tree), which is concatenated. The mask is stored in transitions and unrolls as
``action_mask`` (bool, shaped like the logits), so the learner masks the target policy with the mask the actor used;
ACER and discrete SAC also store ``next_action_mask``, the next observation's, for the values they bootstrap from.
"""
from typing import Any, List, Optional, Tuple

import torch

from ding_lite.utils import UserError


class EmptyActionMask(UserError):
    """A state whose action mask allows no action; ``rows`` the env indices within the batch. The workers re-raise
    it with :meth:`where` naming the env and the step."""

    def __init__(self, rows: list, key: str, where: str = "") -> None:
        self.rows = rows
        self.key = key
        at = where or f"env {rows[0]} of the batch"
        super().__init__(f"{at}: the action mask obs[{key!r}] allows no action; an env must allow at least one action "
                         f"in every state (end the episode when none is left)")

    def where(self, env: str, role: str, envstep: int) -> "EmptyActionMask":
        """The same error naming the env id, its index in the vector env and the ``role``'s env step."""
        return EmptyActionMask(self.rows, self.key, f"env '{env}', env index {self.rows[0]}, {role} env step {envstep}")


def split_mask(obs: Any, key: Optional[str], nvec: Optional[Tuple[int, ...]] = None,
               check: bool = True) -> Tuple[Any, Optional[torch.Tensor]]:
    """``obs`` (a tensor tree, leading dim N) -> (the observation without the mask, the mask (N, A) bool or None).

    ``key`` None, or a tree without it: ``(obs, None)``. ``check``: a row that allows nothing (in any head, given
    ``nvec``) is an :class:`EmptyActionMask` naming the row."""
    if key is None or not isinstance(obs, dict) or key not in obs:
        return obs, None
    rest = {k: v for k, v in obs.items() if k != key}
    mask = obs[key]
    if isinstance(mask, dict):  # a Tuple of one mask per head
        mask = torch.cat([mask[str(i)] for i in range(len(mask))], dim=-1)
    mask = mask.to(torch.bool)
    if check:
        heads = mask.split(list(nvec), dim=-1) if nvec else (mask,)
        empty = torch.zeros(mask.shape[:-1], dtype=torch.bool, device=mask.device)
        for head in heads:
            empty |= ~head.any(-1)
        if empty.any():
            raise EmptyActionMask(torch.nonzero(empty.reshape(-1)).flatten().tolist(), key)
    return rest, mask


def strip_mask_space(obs_space: dict, key: str) -> dict:
    """The observation description (``ding_lite.envs.obs_space``) the model takes: without the mask entry."""
    return dict(obs_space, spaces={k: v for k, v in obs_space["spaces"].items() if k != key})


def mask_space_problem(mask_space: dict, spec: Any) -> str:
    """What is wrong with the described mask space (``ding_lite.envs.obs_space``) for the action space of ``spec``
    (an ``EnvSpec``), or '' when it fits: a MultiBinary or integer Box of shape (n,) / (sum(nvec),), or for
    MultiDiscrete a Tuple of one such mask per head."""
    sizes: List[int] = list(spec.nvec) if spec.nvec else [int(spec.action_shape)]

    def flat(leaf: dict) -> Optional[int]:
        integer = leaf.get("space") == "multi_binary" or (leaf.get("space") == "box" and leaf.get("dtype", "").startswith(
            ("int", "uint", "bool")))
        shape = leaf.get("shape", [])
        return int(shape[0]) if integer and len(shape) == 1 else None
    if mask_space.get("space") == "tuple":
        heads = [flat(sub) for sub in mask_space["spaces"].values()]
        if heads == sizes and len(sizes) > 1:
            return ""
        return f"is a Tuple of masks of sizes {heads}; the action space's heads have sizes {sizes}"
    if flat(mask_space) == sum(sizes):
        return ""
    return (f"is {mask_space}; it must be a MultiBinary (or integer Box) of shape ({sum(sizes)},)"
            + (f" or a Tuple of one per head, sizes {sizes}" if len(sizes) > 1 else ""))
