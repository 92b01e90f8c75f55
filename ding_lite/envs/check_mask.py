"""The env checker's action-mask checks: where an env gives a mask, and whether it fits the action space.

An env gives a mask (1 or True: the action is valid) in one of three ways, looked for in this order: a key of its Dict
observation (``action_mask``, or the name in the env's ``action_mask_key`` attribute), ``env.action_masks()`` (the
sb3-contrib MaskablePPO convention) or ``info['action_mask']`` (PettingZoo's). A ``Discrete(n)`` action space takes a
mask of shape ``(n,)``; a ``MultiDiscrete(nvec)`` one a flat mask of ``sum(nvec)`` entries (MaskablePPO's) or one
mask per head. Masks are bool or integer 0/1 arrays, and every state must allow at least one action.
"""
from typing import Any, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np

from .check import Finding, error

MASK_KEY = "action_mask"
MASK_FIX = "return a bool (or np.int8 0/1) array, 1 where the action is valid"


def mask_key(env: gym.Env) -> str:
    """The Dict observation key of the env's mask: its ``action_mask_key`` attribute, else 'action_mask'."""
    try:
        return str(env.get_wrapper_attr("action_mask_key"))
    except AttributeError:
        return MASK_KEY


def find_mask(env: gym.Env, obs: Any, info: Any, key: Optional[str] = None) -> Optional[Tuple[str, Any]]:
    """``(source, mask)`` of the mask the env gives with this ``obs`` and ``info`` (module docstring), or None.
    ``key``: the Dict observation key a run's config names (``env.action_mask_key``); None: :func:`mask_key`."""
    key = key or mask_key(env)
    if isinstance(obs, dict) and key in obs:
        return f"obs[{key!r}]", obs[key]
    try:
        action_masks = env.get_wrapper_attr("action_masks")
    except AttributeError:
        action_masks = None
    if callable(action_masks):
        return "env.action_masks()", action_masks()
    if isinstance(info, dict) and MASK_KEY in info:
        return f"info[{MASK_KEY!r}]", info[MASK_KEY]
    return None


def mask_heads(mask: Any, action_space: gym.Space) -> Tuple[Optional[List[np.ndarray]], str]:
    """The mask split into one array per head (one head for Discrete), or ``(None, what is wrong)``."""
    if isinstance(action_space, gym.spaces.Discrete):
        sizes: Sequence[int] = [int(action_space.n)]
    elif isinstance(action_space, gym.spaces.MultiDiscrete) and np.ndim(action_space.nvec) == 1:
        sizes = [int(n) for n in action_space.nvec]
    else:
        return None, (f"a mask only applies to Discrete and MultiDiscrete (1-D) action spaces, and this one is "
                      f"{action_space}")
    if isinstance(mask, (list, tuple)) and len(sizes) > 1 and len(mask) == len(sizes):
        heads = [np.asarray(m) for m in mask]
    else:
        flat = np.asarray(mask)
        if flat.shape != (sum(sizes),):
            per_head = f" or one mask per head of sizes {sizes}" if len(sizes) > 1 else ""
            return None, f"it has shape {flat.shape}; the action space {action_space} takes ({sum(sizes)},){per_head}"
        heads = np.split(flat, np.cumsum(sizes)[:-1])
    for i, (head, size) in enumerate(zip(heads, sizes)):
        if head.shape != (size,):
            return None, f"head {i} has shape {head.shape}, its action size is {size}"
    return heads, ""


def mask_findings(mask: Any, action_space: gym.Space, source: str, where: str) -> List[Finding]:
    """Whether the mask from ``source`` (seen ``where``) fits the action space: shape, a bool or 0/1 integer dtype,
    and at least one valid action (in every head)."""
    heads, problem = mask_heads(mask, action_space)
    if heads is None:
        fix = ("drop the mask, or use a Discrete/MultiDiscrete action space" if problem.startswith("a mask")
               else "give one entry per action (MultiDiscrete: the heads' masks one after another)")
        return [error("mask", f"the action mask in {source} {where}: {problem}", fix)]
    dtype = heads[0].dtype
    if dtype.kind not in "biu" or any(not np.isin(h, (0, 1)).all() for h in heads):
        return [error("mask", f"the action mask in {source} {where} is {dtype} with values "
                              f"{sorted(set(np.concatenate(heads).tolist()))[:5]}, not bools or 0/1", MASK_FIX)]
    empty = [i for i, h in enumerate(heads) if not h.any()]
    if empty:
        head = f" (head {empty[0]})" if len(heads) > 1 else ""
        return [error("mask", f"the action mask in {source} {where} allows no action{head}",
                      "allow at least one action in every state (end the episode when none is left)")]
    return []


def masked_sample(action_space: gym.Space, mask: Any) -> Any:
    """A random action, valid under ``mask`` when it fits the space (else any action)."""
    heads, _ = mask_heads(mask, action_space) if mask is not None else (None, "")
    if heads is None or any(np.asarray(h).dtype.kind not in "biu" or not np.any(h) for h in heads):
        return action_space.sample()
    int8 = [np.asarray(h, dtype=np.int8) for h in heads]
    return action_space.sample(mask=int8[0] if isinstance(action_space, gym.spaces.Discrete) else tuple(int8))
