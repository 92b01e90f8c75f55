"""The top-level config key ``matmul_precision``: torch's float32 matmul precision for the run's processes.

* ``'highest'`` (the default): float32 matmuls in true float32, the same numbers as torch's own default.
* ``'high'``: torch may use TF32 (10-bit mantissa inputs, float32 accumulation) where the hardware has it (NVIDIA
  Ampere and later); the same as 'highest' on CPUs.
* ``'medium'``: torch may also use bfloat16 inputs (8-bit mantissa) with float32 accumulation and float32 outputs;
  on a CPU with AVX512-BF16 (oneDNN) this about doubles the matmul rate (measured on 2 cores of an AMD EPYC: 210 ->
  450 GFLOP/s for SAC's 256-wide layers, benchmarks/studies/sac_update_profile.py). Parameters, gradients, optimiser state
  and everything outside matmuls stay float32.

It is process-global in torch (``torch.set_float32_matmul_precision``): each run sets it in the learner's process
and in every parallel worker, so a run never inherits the setting of an earlier run in the same process.
"""
import contextlib
from typing import ContextManager, Optional

import torch

MATMUL_PRECISIONS = ("highest", "high", "medium")
AUTOCAST_DTYPES = {"bfloat16": torch.bfloat16}


def set_matmul_precision(precision: str) -> None:
    """Apply ``matmul_precision`` (one of :data:`MATMUL_PRECISIONS`) to this process."""
    if precision not in MATMUL_PRECISIONS:
        raise ValueError(f"matmul_precision={precision!r}: must be one of {MATMUL_PRECISIONS}")
    torch.set_float32_matmul_precision(precision)


def autocast(dtype: Optional[str], device: torch.device) -> ContextManager:
    """A context in which the model's forward runs under ``torch.autocast`` with ``dtype`` (a name of
    :data:`AUTOCAST_DTYPES`) on ``device``'s type, or a no-op context for None. Autocast runs convolutions and matmuls
    in bfloat16 (on a CPU with AMX or AVX512-BF16 through oneDNN, on CUDA through tensor cores) and keeps reductions,
    softmaxes and losses in float32; the parameters, their gradients and the optimiser state stay float32."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=AUTOCAST_DTYPES[dtype])
