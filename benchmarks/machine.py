"""What a benchmark's results file records about the machine it ran on (shared by the benchmark scripts, which run as
``python benchmarks/<name>.py`` or ``python benchmarks/studies/<name>.py`` and import this module by its file name,
with benchmarks/ on their path)."""
import contextlib
import datetime
import json
import os
import platform
import time
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")  # the suite's results (benchmarks/speed_suite.py)
STUDY_RESULTS = os.path.join(HERE, "studies", "results")  # the studies' results (benchmarks/studies/README.md)


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


def write_results(name: str, results_dir: str = RESULTS, **fields: Any) -> str:
    """Write ``<results_dir>/<name>.json`` (default ``benchmarks/results/``): ``fields`` plus the machine, the 1-minute
    load average after the run and the date; prints and returns its path."""
    out = {**fields, "machine": machine_info(), "loadavg_1min_after": os.getloadavg()[0],
           "date": time.strftime("%Y-%m-%d")}
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {path}")
    return path
