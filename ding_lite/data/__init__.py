"""Replay storage: the columnar ``ReplayBuffer`` (registered as buffer type 'columnar') and its tree helpers; the
``PrioritizedReplayBuffer`` that ``policy.priority=True`` builds on it; the buffer's content for checkpoints."""
from .buffer import ReplayBuffer, flatten_tree, stack_trees
from .prioritized import PrioritizedReplayBuffer

__all__ = ["ReplayBuffer", "PrioritizedReplayBuffer", "flatten_tree", "stack_trees"]
