"""Checkpoints: plain dicts of tensors and numbers, written atomically, loadable with ``weights_only=True``."""
import os
from typing import Any, Dict

import torch

from ding_lite.utils import UserError
from ding_lite.utils.file_io import atomic_torch_save


def save_checkpoint(state: Dict[str, Any], path: str) -> None:
    """Write ``state`` to ``path`` via a temporary file and a rename: a crash never leaves half a checkpoint."""
    atomic_torch_save(state, path)


def load_checkpoint(path: str, map_location: str = "cpu") -> Dict[str, Any]:
    """Load a checkpoint written by ``save_checkpoint``; a missing or unreadable file is a ``UserError``."""
    if not os.path.isfile(path):
        raise UserError(f"checkpoint '{path}' not found; checkpoints live in <run_dir>/ckpt/ (ckpt_best.pth.tar, "
                        f"ckpt_last.pth.tar, iteration_<N>.pth.tar)")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises several types for corrupt or foreign files
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise UserError(f"checkpoint '{path}' cannot be read ({type(err).__name__}: {first_line[:200]}); is it a "
                        f"ding_lite checkpoint?") from None
    if not isinstance(state, dict) or "policy" not in state:
        raise UserError(f"'{path}' is not a ding_lite checkpoint (no 'policy' entry)")
    return state
