"""The training step: one update of the learner on a batch drawn from the replay buffer, with prioritised replay's
new priorities handed back to the buffer."""
from typing import Any, Callable, Dict, Optional

from ding_lite.data.buffer import Tree


def train_on_sample(buffer: Any, batch_size: int, train_iter: int,
                    train: Callable[[Tree], Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """One update on a batch from ``buffer`` (``train``: the learner's or a learn mode's forward); with prioritised
    replay the batch's new priorities (``info['priority']``) go back to the buffer. None when the buffer has no
    batch to give."""
    batch = buffer.sample(batch_size, train_iter)
    if batch is None:
        return None
    index = getattr(buffer, "last_index", None)  # prioritised replay: where the batch came from
    info = train(batch)
    if index is not None:
        buffer.update_priority(index, info["priority"])
    return info
