"""A run's process-wide settings: torch's thread count, its float32 matmul precision and glibc's malloc.

Compiling a config changes nothing in the process (``compile_config``, ``entry.build.compile_input``); a run applies
these here once, when it starts: the serial and parallel pipelines and evaluation in their own process, each parallel
worker in its (``parallel/roles.py``). So a run never inherits the settings of an earlier run in the same process,
and a tool that only compiles a config (``ding_lite check-env``, the CLI's check of every seed before the first run)
leaves the process as it found it.
"""
import warnings
from typing import Any

import torch

from .malloc import apply_setting as apply_keep_freed_memory
from .precision import set_matmul_precision


def apply_process_settings(cfg: Any, threads: int, warn: bool = True) -> None:
    """``threads`` torch threads (the caller resolves ``cfg.torch_threads``, 'auto' included, for its role),
    ``cfg.matmul_precision`` and ``cfg.keep_freed_memory`` for this process; ``warn`` says once where
    ``keep_freed_memory=True`` cannot take effect (not glibc)."""
    torch.set_num_threads(threads)
    set_matmul_precision(cfg.matmul_precision)
    if not apply_keep_freed_memory(cfg.keep_freed_memory) and warn:
        warnings.warn("keep_freed_memory=True has no effect here: the C library is not glibc (no mallopt)")
