"""A private Ray instance goes with the learner that started it, also when the learner is killed (``kill -9``).

Ray's GCS and raylet share the fate of the driver that started them, but the processes under the raylet (the
dashboard and runtime-env agents, idle and actor workers) only notice later: after a ``kill -9`` of the learner they
stayed alive, re-parented to init, for minutes (~220 MB). So a learner that starts a private instance first starts
this small reaper: every process of the instance inherits the environment variable ``OWNER_ENV`` with a token of
its own, and when the reaper's stdin closes (the learner released the instance, or died: the kernel closes its end)
the reaper kills every process whose environment holds that token, then exits. Ray's raylet does not always hand
the environment on to the agents it starts (seen with Ray 2.60: the agents of one start in three lacked the token),
so the reaper also records, every ``WATCH_S`` while it waits, the descendants of the marked processes, and kills
those too (each checked by its start time, so a recycled pid is left alone).

The reaper runs as a script (``python ray_reaper.py TOKEN``), from the standard library only: it imports neither
ding_lite nor torch, and it starts in a session of its own, so a Ctrl-C in the terminal does not reach it.
"""
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from typing import Dict, List, Optional

OWNER_ENV = "DING_LITE_RAY_OWNER"
WATCH_S = 0.5  # how often the reaper records the marked processes' descendants while it waits


def new_token() -> str:
    """A token no other instance on this machine has: this process's id and a random part."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def start_reaper(token: str) -> subprocess.Popen:
    """The reaper of the instance whose processes carry ``token``; close its stdin to make it reap and exit."""
    return subprocess.Popen([sys.executable, "-S", os.path.abspath(__file__), token], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            close_fds=True)


def stop_reaper(reaper: subprocess.Popen, timeout: float = 5.0) -> None:
    """Make ``reaper`` kill what is left of its instance (after ``ray.shutdown``, usually nothing) and wait for it."""
    try:
        reaper.stdin.close()
        reaper.wait(timeout)
    except (OSError, subprocess.TimeoutExpired):
        reaper.kill()


def marked_processes(token: str) -> List[int]:
    """The processes (other than this one) whose environment holds ``OWNER_ENV=token`` (read from /proc)."""
    mark, me, found = f"{OWNER_ENV}={token}".encode(), os.getpid(), []
    for entry in (os.listdir("/proc") if os.path.isdir("/proc") else []):  # no /proc (macOS): nothing to reap
        if entry.isdigit() and int(entry) != me:
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if mark in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:  # gone, or not ours
                continue
    return found


def _stat(pid: int) -> Optional[tuple]:
    """(parent pid, start time in clock ticks) of ``pid`` from /proc/<pid>/stat; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def descendants(roots: List[int]) -> Dict[int, int]:
    """Every living descendant of ``roots``: pid -> start time."""
    children: Dict[int, List[int]] = {}
    starts: Dict[int, int] = {}
    for entry in (os.listdir("/proc") if os.path.isdir("/proc") else []):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry))
                starts[int(entry)] = stat[1]
    found, todo = {}, list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found[child] = starts[child]
                todo.append(child)
    return found


def reap(token: str, passes: int = 5, seen: Optional[Dict[int, int]] = None) -> None:
    """SIGKILL every marked process and every descendant of one ``seen`` while waiting (pid -> start time, killed
    only if it is still that process), again until none is left (a raylet may start a worker meanwhile)."""
    seen = dict(seen or {})
    for _ in range(passes):
        marked = marked_processes(token)
        seen.update(descendants(marked))
        pids = marked + [pid for pid, start in seen.items() if (_stat(pid) or (None, None))[1] == start]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)


def main(token: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seen: Dict[int, int] = {}
    stdin = sys.stdin.buffer.raw
    while True:  # until EOF: the owner closed it, or exited; meanwhile the marked processes' descendants are recorded
        ready, _, _ = select.select([stdin], [], [], WATCH_S)
        if ready and not stdin.read(4096):
            break
        seen.update(descendants(marked_processes(token)))
    reap(token, seen=seen)


if __name__ == "__main__":
    main(sys.argv[1])
