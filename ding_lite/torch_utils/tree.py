"""Nested-dict tensor helpers: map and stack over the leaves of ``{key: tensor | nested dict}`` structures."""
from typing import Any, Callable, Dict, List, Union

import torch

Tree = Union[torch.Tensor, Dict[str, Any]]


def tree_map(fn: Callable[..., torch.Tensor], tree: Tree, *others: Tree) -> Tree:
    """Apply ``fn`` to every tensor leaf of a nested dict (or to a bare tensor); with ``others`` (trees of the same
    structure), ``fn(leaf, other_leaf, ...)``."""
    if isinstance(tree, dict):
        if others:
            return {k: tree_map(fn, v, *(o[k] for o in others)) for k, v in tree.items()}
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree, *others)


def tree_leaves(tree: Tree) -> List[torch.Tensor]:
    """The tensor leaves of a nested dict (or ``[tree]`` for a bare tensor), depth first in key order."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in tree_leaves(v)]
    return [tree]


def tree_stack(trees: List[Tree], dim: int = 0) -> Tree:
    """Stack a list of same-shaped nested dicts leaf by leaf: N trees of ``(...)`` -> one tree of ``(N, ...)``."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_stack([t[k] for t in trees], dim) for k in first}
    return torch.stack(trees, dim)


def tree_cat(trees: List[Tree], dim: int = 0) -> Tree:
    """Concatenate a list of same-structured nested dicts leaf by leaf along ``dim``."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_cat([t[k] for t in trees], dim) for k in first}
    return torch.cat(trees, dim)


def leading_dim(tree: Tree) -> int:
    """Size of the leading (batch or sample) dim of a tensor or of the first leaf of a nested dict of tensors."""
    while isinstance(tree, dict):
        tree = next(iter(tree.values()))
    return tree.shape[0]
