"""Replay storage: the columnar ``ReplayBuffer`` (registered as buffer type 'columnar') and its tree helpers; the
``FIFOBuffer`` (type 'fifo': each sample used ``max_use`` times, oldest first) of IMPALA and APPO; the
``PrioritizedReplayBuffer`` that ``policy.priority=True`` builds on it; the buffer's content for checkpoints."""
from .buffer import ReplayBuffer, flatten_tree, stack_trees
from .fifo import FIFOBuffer
from .prioritized import PrioritizedReplayBuffer

__all__ = ["ReplayBuffer", "FIFOBuffer", "PrioritizedReplayBuffer", "flatten_tree", "stack_trees"]
