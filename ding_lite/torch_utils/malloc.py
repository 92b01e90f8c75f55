"""The top-level config key ``keep_freed_memory``: glibc's malloc keeps freed memory in the process for reuse.

By default glibc serves each allocation over its mmap threshold (128 kB, raised dynamically up to 32 MB) with fresh
pages from the kernel, and gives them back when freed. A learner update on pixels allocates and frees activations of
tens to hundreds of MB (the float copy of 672 uint8 Atari frame stacks alone is 76 MB), so every update asks the
kernel for new pages, which it zero-fills on first touch: that system time was about half of an IMPALA
``nature_conv`` update on 2 CPU cores and 2 threads (benchmarks/studies/atari_learner_speed.py: 2.69 -> 4.77 updates/s with it
on).

On, every allocation comes from the heap (no mmap'd chunks) and the heap is never trimmed, the same as starting the
process with ``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2147483647``. The cost: the process keeps its peak
memory until it exits. It cannot be turned back off in the same process (a later run there keeps it), and it does
nothing where the C library is not glibc (``keep_freed_memory`` then returns False and the run says so).

The key's default, None, leaves it to the update: one that allocates fresh buffers on every call asks for it with
:func:`keep_freed_memory_on_request` (SAC's compiled update on a CPU, whose intermediate results inductor allocates
afresh each call: 60-330 page faults per update at [256, 256] without it, see docs/sac.md#speed). True turns it on
for the whole run from the start; False refuses every request.
"""
import ctypes
import ctypes.util
from typing import Optional

_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc's mallopt parameters (malloc.h)
_MAX_INT = 2 ** 31 - 1
_setting: Optional[bool] = None  # this process's run's keep_freed_memory (apply_setting)


def keep_freed_memory() -> bool:
    """Make glibc serve every allocation from the heap and never trim it; False where that is not possible."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, _MAX_INT))


def apply_setting(value: Optional[bool]) -> bool:
    """Take a run's top-level ``keep_freed_memory`` in this process: True turns it on now; None lets an update that
    needs it turn it on (:func:`keep_freed_memory_on_request`); False refuses those requests. Returns False only
    where True cannot take effect (not glibc)."""
    global _setting
    _setting = value
    return keep_freed_memory() if value else True


def keep_freed_memory_on_request() -> bool:
    """For an update that allocates fresh buffers on every call: :func:`keep_freed_memory`, unless the run set
    ``keep_freed_memory=False``. Returns whether it is on."""
    return _setting is not False and keep_freed_memory()
