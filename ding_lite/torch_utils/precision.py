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
from typing import ContextManager, Optional, Tuple

import torch

MATMUL_PRECISIONS = ("highest", "high", "medium")
AUTOCAST_DTYPES = {"bfloat16": torch.bfloat16}
AUTOCAST_SETTINGS = (None, "bfloat16", "auto")  # what a config's autocast key may be
# CPU flags (Linux /proc/cpuinfo) of native bfloat16 matmuls through oneDNN: Intel AMX, AVX-512 BF16 (Intel Cooper
# Lake and later, AMD Zen 4 and later). Without them torch emulates bfloat16 on a CPU, slower than float32.
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_flags(path: str = "/proc/cpuinfo") -> Tuple[str, frozenset]:
    """``(model name, flags)`` of this machine's CPU from ``path``; ('', empty) where it cannot be read."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return "", frozenset()
    model, flags = "", frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not model:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = frozenset(value.split())
    return model, flags


def native_bf16(device: torch.device, flags: Optional[frozenset] = None) -> bool:
    """Whether ``device`` runs bfloat16 matmuls natively: a CUDA GPU that supports them, or a CPU with one of
    :data:`CPU_BF16_FLAGS` (``flags`` given, or read from /proc/cpuinfo)."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    return bool(set(CPU_BF16_FLAGS) & (cpu_flags()[1] if flags is None else flags))


def has_conv(model: torch.nn.Module) -> bool:
    return any(isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)) for m in model.modules())


def resolve_autocast(setting: Optional[str], device: torch.device, model: torch.nn.Module,
                     flags: Optional[frozenset] = None) -> Optional[str]:
    """The autocast dtype a config's ``autocast`` setting means for ``model`` on ``device``: None (float32),
    'bfloat16', or for 'auto' bfloat16 where it pays (a conv encoder on a device with native bfloat16 matmuls,
    ``native_bf16``; the small MLPs of vector tasks gain nothing) and None elsewhere. 'bfloat16' on a device without
    native support is kept: the user asked for it (torch emulates it)."""
    if setting == "auto":
        return "bfloat16" if has_conv(model) and native_bf16(device, flags) else None
    return setting


def describe_autocast(learn: Optional[str], act: Optional[str]) -> str:
    """'learner bfloat16, acting float32' and the like, for the run's first line."""
    return f"learner {learn or 'float32'}, acting {act or 'float32'}"


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
