"""Replay storage: the columnar ``ReplayBuffer`` (registered as buffer type 'columnar') and its tree helpers."""
from .buffer import ReplayBuffer, flatten_tree, stack_trees

__all__ = ["ReplayBuffer", "flatten_tree", "stack_trees"]
