"""The replay buffer's content as a checkpoint entry (``policy.other.replay_buffer.save_replay_buffer``).

``buffer_content(buffer)`` is a plain dict of tensors and numbers (loadable with ``torch.load(weights_only=True)``):
the written part of every column (slots ``[0, min(pushed, capacity))``), the per-slot bookkeeping (collect_iter,
use counts, validity, the live list in its order), head and counters, the sampling generator's state and, for the
prioritised buffer, the priority of each slot and the running maximum. ``load_buffer_content`` puts it back into a
buffer built from the same config, so sampling continues exactly where it stopped (same draws from the same items).

Not compressed: measured with ``benchmarks/studies/per_buffer.py`` (docs/benchmarks.md), zlib gains little on float
observations and costs more time than it saves on disk; ``torch.save`` writes the columns at disk speed.
"""
from typing import Any, Dict

import numpy as np
import torch

from ding_lite.utils import UserError

from .buffer import INF, ReplayBuffer

FORMAT = 1


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def buffer_content(buffer: ReplayBuffer) -> Dict[str, Any]:
    """Everything ``load_buffer_content`` needs to restore ``buffer`` exactly (tensors share no storage with it:
    the columns' written part is copied, as ``torch.save`` would)."""
    filled = min(buffer.pushed, buffer.capacity) if buffer._paths is not None else 0
    n = buffer._n
    out: Dict[str, Any] = {
        "format": FORMAT,
        "type": type(buffer).__name__,
        "capacity": buffer.capacity,
        "paths": [list(p) for p in buffer._paths or []],
        "columns": [col[:filled].clone() for col in buffer._cols],
        "filled": filled,
        "head": buffer._head,
        "n": n,
        "min_iter": -1 if buffer._min_iter == INF else int(buffer._min_iter),
        "collect_iter": _t(buffer._iter[:filled].copy()),
        # use counts are kept only with a finite max_use (else all 0); the live list fits int32 below 2**31 slots
        "use": _t(buffer._use[:filled].copy()) if buffer.max_use != INF else None,
        "valid": _t(buffer._valid[:filled].copy()),
        "live": _t(buffer._live[:n].astype(np.int32 if buffer.capacity < 2 ** 31 else np.int64)),
        "state": buffer.state_dict(),
    }
    priorities = getattr(buffer, "priorities", None)
    if priorities is not None:
        out["priorities"] = _t(priorities()[:filled])
    if hasattr(buffer, "content_extra"):  # the FIFO buffer's queue of uses
        out["extra"] = buffer.content_extra()
    return out


def load_buffer_content(buffer: ReplayBuffer, content: Dict[str, Any], where: str = "the saved buffer") -> None:
    """Restore ``buffer`` (built from the same config, empty) from ``buffer_content``'s dict."""
    if content.get("format") != FORMAT:
        raise UserError(f"{where}: unknown replay-buffer format {content.get('format')!r}")
    if content["capacity"] != buffer.capacity:
        raise UserError(f"{where} holds a buffer of capacity {content['capacity']:,}, but this config's "
                        f"policy.other.replay_buffer.replay_buffer_size is {buffer.capacity:,}; set it back, or "
                        f"set save_replay_buffer=False to resume with an empty buffer")
    prioritized = hasattr(buffer, "update_priority")
    if prioritized != ("priorities" in content):
        raise UserError(f"{where} was saved {'with' if 'priorities' in content else 'without'} prioritised replay, "
                        f"this config has policy.priority={prioritized}; set it back, or set save_replay_buffer=False "
                        f"to resume with an empty buffer")
    if hasattr(buffer, "content_extra") != ("extra" in content):
        raise UserError(f"{where} was saved by a {content.get('type')} buffer, this config builds a "
                        f"{type(buffer).__name__} (policy.other.replay_buffer.type); set it back, or set "
                        f"save_replay_buffer=False to resume with an empty buffer")
    filled = int(content["filled"])
    buffer.clear()
    if content["paths"]:
        cols = content["columns"]
        buffer._allocate([(tuple(p), torch.empty((1, *c.shape[1:]), dtype=c.dtype))
                          for p, c in zip(content["paths"], cols)])
        for col, saved in zip(buffer._cols, cols):
            col[:filled] = saved
    buffer._iter[:filled] = content["collect_iter"].numpy()
    buffer._use[:filled] = 0 if content["use"] is None else content["use"].numpy()
    buffer._valid[:] = False
    buffer._valid[:filled] = content["valid"].numpy()
    n = int(content["n"])
    live = content["live"].numpy().astype(np.int64)
    buffer._live[:n] = live
    buffer._pos[live] = np.arange(n)
    buffer._n = n
    buffer._head = int(content["head"])
    buffer._min_iter = INF if content["min_iter"] < 0 else int(content["min_iter"])
    buffer.load_state_dict(content["state"])
    if prioritized:
        values = np.zeros(buffer.capacity)
        values[:filled] = content["priorities"].numpy()
        buffer._tree.set_all(values)
    if "extra" in content:
        buffer.load_content_extra(content["extra"])
