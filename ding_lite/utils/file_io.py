"""Atomic file writes: a reader (or a crash) never sees a half-written checkpoint, config or result file."""
import json
import os
import tempfile
from typing import Any

import torch


def _atomic_write(path: str, write) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def atomic_torch_save(obj: Any, path: str) -> None:
    """``torch.save`` to a temporary file in the same directory, then rename over ``path``."""
    _atomic_write(path, lambda f: torch.save(obj, f))


def atomic_write_text(text: str, path: str) -> None:
    """Write ``text`` (utf-8) to ``path`` atomically."""
    _atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_json(obj: Any, path: str) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    atomic_write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", path)
