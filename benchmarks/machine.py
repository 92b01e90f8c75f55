"""What a benchmark's results file records about the machine it ran on (shared by the benchmark scripts, which run as
``python benchmarks/<name>.py`` and so import this module by its file name)."""
import contextlib
import datetime
import os
import platform
from typing import Any, Dict


def machine_info(**versions: str) -> Dict[str, Any]:
    """CPU model and counts, Python, platform and the UTC date, plus ``versions`` (package -> version)."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        **versions,
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
