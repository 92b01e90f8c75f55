"""A private Ray instance goes with the learner that started it, also when the learner is killed (``kill -9``).

Ray's GCS and raylet share the fate of the driver that started them, but the processes under the raylet (the
dashboard and runtime-env agents, idle and actor workers) only notice later: after a ``kill -9`` of the learner they
stayed alive, re-parented to init, for minutes (~220 MB). So a learner that starts a private instance first starts
this small reaper: every process of the instance inherits the environment variable ``OWNER_ENV`` with a token of
its own, and when the reaper's stdin closes (the learner released the instance, or died: the kernel closes its end)
the reaper kills every process whose environment holds that token, then exits.

The reaper runs as a script (``python ray_reaper.py TOKEN``), from the standard library only: it imports neither
ding_lite nor torch, and it starts in a session of its own, so a Ctrl-C in the terminal does not reach it.
"""
import os
import signal
import subprocess
import sys
import time
import uuid
from typing import List

OWNER_ENV = "DING_LITE_RAY_OWNER"


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


def reap(token: str, passes: int = 5) -> None:
    """SIGKILL every marked process, again until none is left (a raylet may start a worker meanwhile)."""
    for _ in range(passes):
        pids = marked_processes(token)
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
    while sys.stdin.buffer.read(4096):  # until EOF: the owner closed it, or exited
        pass
    reap(token)


if __name__ == "__main__":
    main(sys.argv[1])
