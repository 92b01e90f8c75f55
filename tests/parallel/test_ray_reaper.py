"""The Ray reaper without Ray: a marked process and an unmarked child of it (as Ray 2.60's raylet starts its agents
without the owner token) both die when the reaper's stdin closes; a process outside the tree is left alone."""
import os
import subprocess
import sys
import time

import pytest

from ding_lite.parallel import ray_reaper
from ding_lite.parallel.ray_reaper import OWNER_ENV, new_token, start_reaper, stop_reaper

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the reaper reads /proc")

# A marked parent that starts a child with the token removed from its environment, prints the child's pid, and sleeps.
PARENT = ("import os, subprocess, sys, time\n"
          "env = {k: v for k, v in os.environ.items() if k != %r}\n"
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], env=env)\n"
          "print(child.pid, flush=True)\n"
          "time.sleep(120)\n") % OWNER_ENV


def _alive(pid: int) -> bool:
    stat = ray_reaper._stat(pid)
    if stat is None:
        return False
    with open(f"/proc/{pid}/stat", "rb") as f:  # a killed child not yet waited for is a zombie: dead
        return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"


def _wait_dead(pids, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_the_reaper_kills_an_unmarked_child_of_a_marked_process_and_nothing_else():
    token = new_token()
    reaper = start_reaper(token)
    parent = subprocess.Popen([sys.executable, "-c", PARENT], env={**os.environ, OWNER_ENV: token},
                              stdout=subprocess.PIPE, text=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        child = int(parent.stdout.readline())
        assert ray_reaper.marked_processes(token) == [parent.pid]  # the child does not carry the token
        assert child in ray_reaper.descendants([parent.pid])
        time.sleep(4 * ray_reaper.WATCH_S)  # the reaper records the tree while it waits
        stop_reaper(reaper)
        parent.wait(10)
        assert _wait_dead([child]) == []
        assert bystander.poll() is None
    finally:
        for p in (parent, bystander):
            p.kill()
            p.wait()
        reaper.kill()


def test_a_recorded_pid_that_is_another_process_now_is_left_alone():
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        start = ray_reaper._stat(other.pid)[1]
        ray_reaper.reap(new_token(), seen={other.pid: start + 1})  # recorded with another start time: a reused pid
        assert other.poll() is None
        ray_reaper.reap(new_token(), seen={other.pid: start})
        assert other.wait(10) == -9
    finally:
        other.kill()
        other.wait()
