"""The run directory: one run at a time (an OS lock), never overwritten, and the checkpoint a resume starts from.

The lock is ``flock`` on ``<run_dir>/.lock``: the OS releases it when the process dies, however it dies (SIGKILL,
OOM), so a crashed run never leaves a stale lock. The file holds the PID of the run that holds it, for the message
a second run gets.
"""
import errno
import fcntl
import glob
import math
import os
import re
import shutil
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .checkpoint import load_checkpoint
from .trackers import TRACKERS_FILE
from ding_lite.utils import RunLockedError, UserError
from ding_lite.utils.file_io import current_umask, find_symlink, io_error, remove_temp_files, symlink_error

LOCK_NAME = ".lock"
_LOCK_RETRY_S = 0.2  # a brief retry: a pre-check of another starting run may hold the lock for microseconds


# A file in the run directory that asks the run to stop cleanly (the training loop checks every 0.1 s, between
# updates):
# its first line is the stop reason result.json records ('pruned' from ``ding_lite tune``), 'stop_request' if empty.
STOP_REQUEST = "stop_request"


def stop_request(run_dir: str) -> Optional[str]:
    """The stop reason a ``STOP_REQUEST`` file in ``run_dir`` asks for, or None when there is none."""
    try:
        with open(os.path.join(run_dir, STOP_REQUEST)) as f:
            text = f.read(200)
    except OSError:
        return None
    words = text.split()
    return words[0] if words else "stop_request"

def run_dir_name(exp_name: str, seed: int) -> str:
    """Every run lives in ``<exp_name>_seed<N>``, so seeds of one experiment sit side by side. An exp_name that
    already ends in ``_seed<N>`` (DI-engine configs often do) is used as it is, not as ``..._seed0_seed0``."""
    suffix = f"_seed{seed}"
    return exp_name if exp_name.endswith(suffix) else exp_name + suffix


def ckpt_dir(run_dir: str) -> str:
    return os.path.join(run_dir, "ckpt")


def _is_run(run_dir: str) -> bool:
    """Whether ``run_dir`` holds a run's outputs (anything besides the lock file)."""
    try:
        return any(name != LOCK_NAME for name in os.listdir(run_dir))
    except (FileNotFoundError, NotADirectoryError):
        return False


def checkpoint_candidates(run_dir: str) -> List[str]:
    """The checkpoint files of a run, most promising first: ckpt_last, ckpt_best, then iteration_<N> by N
    descending."""
    folder = ckpt_dir(run_dir)
    named = [os.path.join(folder, n) for n in ("ckpt_last.pth.tar", "ckpt_best.pth.tar")]

    def iteration(path: str) -> int:
        match = re.search(r"iteration_(\d+)\.pth\.tar$", path)
        return int(match.group(1)) if match else -1

    periodic = sorted(glob.glob(os.path.join(folder, "iteration_*.pth.tar")), key=iteration, reverse=True)
    return [p for p in named + periodic if os.path.isfile(p)]


def find_resume_checkpoint(run_dir: str) -> Tuple[str, Dict[str, Any], List[str]]:
    """The checkpoint of ``run_dir`` with the most progress (train_iter, then env_step) among those that load.

    Returns ``(path, state, skipped)``: ``skipped`` says which files could not be read and why. ckpt_last,
    ckpt_best and the newest periodic checkpoint are compared; older periodic ones are tried only when none of those
    loads. A run with no loadable checkpoint is a ``UserError`` that names every file tried.
    """
    candidates = checkpoint_candidates(run_dir)
    if not candidates:
        raise UserError(f"--resume: run '{run_dir}' has no checkpoint in {ckpt_dir(run_dir)}/ (it stopped before "
                        f"writing one); run without --resume and with another --exp-name to start again")
    periodic = [p for p in candidates if os.path.basename(p).startswith("iteration_")]
    first_round = [p for p in candidates if p not in periodic] + periodic[:1]
    skipped: List[str] = []
    for group in (first_round, periodic[1:]):
        loaded = []
        for path in group:
            try:
                loaded.append((path, load_checkpoint(path)))
            except UserError as err:
                skipped.append(f"{os.path.basename(path)}: {err}")
        if loaded:
            def progress(item):
                counters = item[1].get("counters", {})
                return int(counters.get("train_iter", -1)), int(counters.get("env_step", -1))
            path, state = max(loaded, key=progress)
            return path, state, skipped
    raise UserError(f"--resume: no checkpoint of run '{run_dir}' can be read: {' | '.join(skipped)}")


class RunDirLock:
    """An exclusive lock on a run directory, held for the run's lifetime; ``release`` (or process death) frees it."""

    def __init__(self, run_dir: str, fd: int, created: bool) -> None:
        self.run_dir, self._fd, self._created = run_dir, fd, created

    @property
    def path(self) -> str:
        return os.path.join(self.run_dir, LOCK_NAME)

    def release(self, remove_if_unused: bool = False) -> None:
        """Unlock. ``remove_if_unused``: a run that failed before writing anything removes the directory it made."""
        if self._fd is None:
            return
        if remove_if_unused and self._created and not _is_run(self.run_dir):
            try:
                os.remove(self.path)
                os.rmdir(self.run_dir)
            except OSError:
                pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def _holder(lock_path: str) -> str:
    try:
        with open(lock_path) as f:
            pid = f.read().strip()
    except OSError:
        pid = ""
    return f"PID {pid}" if pid.isdigit() else "another process"


def _try_lock(fd: int, lock_path: str, run_dir: str) -> None:
    deadline = time.monotonic() + _LOCK_RETRY_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            os.close(fd)
            raise RunLockedError(_locked_message(run_dir, lock_path))
        time.sleep(0.01)


def _open_lock(run_dir: str) -> int:
    path = os.path.join(run_dir, LOCK_NAME)
    if os.path.islink(path):  # O_NOFOLLOW below refuses it too; this says why in one line
        raise symlink_error(path)
    try:  # O_NOFOLLOW: a link planted between the check and the open is refused, never truncated through
        return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                       0o666 & ~current_umask() | 0o600)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise symlink_error(path) from None
        raise io_error(err, "create the lock file", path) from None


def _locked_message(run_dir: str, lock_path: str) -> str:
    return (f"run directory '{run_dir}' is in use by {_holder(lock_path)} (it holds {lock_path}); wait for that run "
            f"to finish or stop it, or choose another --exp-name")


def _probe_lock(run_dir: str) -> None:
    """Raise ``RunLockedError`` if a live run holds ``run_dir``'s lock (a shared lock taken and dropped at once)."""
    path = os.path.join(run_dir, LOCK_NAME)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        raise RunLockedError(_locked_message(run_dir, path)) from None
    finally:
        os.close(fd)


def check_run_dir(run_dir: str, resume: bool, probe_lock: bool = True) -> None:
    """Fail early, without creating anything, when a run could not start in ``run_dir`` (the CLI checks every
    seed before the first run starts): in use by a live run, missing or without checkpoint (``resume``), or already
    a run (fresh). ``acquire_run_dir`` repeats the checks under the lock."""
    if probe_lock:
        _probe_lock(run_dir)
    if resume:
        if not os.path.isdir(run_dir):
            raise UserError(f"--resume: run directory '{run_dir}' not found; run without --resume to start it")
        link = find_symlink(run_dir)  # a copied run's links would take the resumed run's writes outside it
        if link is not None:
            raise symlink_error(link)
        if not checkpoint_candidates(run_dir):
            raise UserError(f"--resume: run '{run_dir}' has no checkpoint in {ckpt_dir(run_dir)}/ (it stopped "
                            f"before writing one); run without --resume and with another --exp-name to start again")
    elif _is_run(run_dir):
        raise UserError(f"run directory '{run_dir}' already exists; continue it with --resume, or choose another "
                        f"name with --exp-name (it is never overwritten)")


def acquire_run_dir(run_dir: str, resume: bool) -> RunDirLock:
    """Create (fresh run) or open (``resume``) ``run_dir`` and take its lock, or fail with one clear message:
    the run is locked by another process (naming its PID), it already exists (fresh), it is missing or has no
    checkpoint (resume), or the directory cannot be created or written."""
    created = False
    if resume:
        if not os.path.isdir(run_dir):
            raise UserError(f"--resume: run directory '{run_dir}' not found; run without --resume to start it")
    elif not os.path.isdir(run_dir):
        try:
            os.makedirs(run_dir)
            created = True
        except FileExistsError:
            pass  # another run made it a moment ago: its lock decides below
        except OSError as err:
            raise io_error(err, "create the run directory", os.path.abspath(run_dir)) from None
    fd = _open_lock(run_dir)
    _try_lock(fd, os.path.join(run_dir, LOCK_NAME), run_dir)
    lock = RunDirLock(run_dir, fd, created)
    try:
        check_run_dir(run_dir, resume, probe_lock=False)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        if resume:  # under the lock no live writer is left: a temporary file here is a killed run's half write
            for path in remove_temp_files(run_dir):
                print(f"ding_lite: --resume: removed {path}, a write the previous run was killed in the middle of "
                      f"(the file it was replacing is intact)", file=sys.stderr, flush=True)
    except OSError as err:
        lock.release(remove_if_unused=True)
        raise io_error(err, "write the lock file", lock.path) from None
    except BaseException:
        lock.release(remove_if_unused=True)
        raise
    return lock


def resumable(run_dir: str) -> Tuple[str, Dict[str, Any]]:
    """The checkpoint ``--resume`` continues from (see ``find_resume_checkpoint``); unreadable ones are reported on
    stderr, as the run's log is not open yet."""
    path, state, skipped = find_resume_checkpoint(run_dir)
    for line in skipped:
        print(f"ding_lite: --resume: skipped {line}", file=sys.stderr, flush=True)
    return path, state


def last_good_checkpoint(run_dir: str) -> Optional[str]:
    """The checkpoint ``--resume`` would continue from, with its counters; None if none can be read."""
    try:
        path, state, _ = find_resume_checkpoint(run_dir)
        counters = state["counters"]
        return f"{path} (train_iter {int(counters['train_iter']):,}, env_step {int(counters['env_step']):,})"
    except (UserError, KeyError, TypeError, ValueError):
        return None


def best_return_on_disk(run_dir: str, resumed: str) -> float:
    """The return of ckpt_best.pth.tar (-inf if there is none or it is ``resumed``, the checkpoint resumed from): it
    stays the best policy seen even when it is newer than the checkpoint resumed from (a killed run's evaluation after
    its last ckpt_last), so a worse one never replaces it."""
    best = os.path.join(run_dir, "ckpt", "ckpt_best.pth.tar")
    if os.path.abspath(best) == os.path.abspath(resumed) or not os.path.isfile(best):
        return -math.inf
    try:
        return float(load_checkpoint(best)["counters"]["best_return"])
    except (UserError, KeyError, TypeError, ValueError):
        return -math.inf


def remove_fresh_outputs(run_dir: str) -> None:
    """Remove what a fresh run wrote when it opened ``run_dir`` (nothing else was there: the lock's checks saw to
    that), so a fresh run that failed to open can be started again without --resume."""
    for name in ("ckpt", "log"):
        shutil.rmtree(os.path.join(run_dir, name), ignore_errors=True)
    for name in ("total_config.py", "eval.csv", TRACKERS_FILE):
        try:
            os.remove(os.path.join(run_dir, name))
        except OSError:
            pass
