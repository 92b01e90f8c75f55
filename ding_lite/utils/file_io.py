"""Atomic file writes: a reader (or a crash) never sees a half-written checkpoint, config or result file.

Files get the permissions an ordinary ``open`` would give (0666 less the umask), not the 0600 of a temporary file,
so a run's outputs stay readable by the user's group when their umask says so. A failed write (disk full, read-only
directory) leaves the previous file intact and raises ``RunIOError`` naming the path and the reason. A stop signal
(Ctrl-C, SIGTERM) that arrives during a write takes effect once the file is in place: raised inside ``torch.save``'s
writer callback, it would come out as a RuntimeError, i.e. a failed write (``signals.deferred_interrupts``).
"""
import json
import os
import tempfile
from typing import Any, Callable, IO, List, Optional

import torch

from .errors import RunIOError, UserError
from .signals import deferred_interrupts

TEMP_PREFIX = ".tmp_"  # an atomic write's file before its rename; one a killed process left behind is never read


def current_umask() -> int:
    """The process's umask: from /proc on Linux (thread-safe), else by setting it and putting it back."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def io_error(err: OSError, action: str, path: str) -> RunIOError:
    """One clear line for an OS error on ``path`` (e.g. 'cannot write checkpoint X: No space left on device')."""
    reason = err.strerror or str(err) or type(err).__name__
    return RunIOError(f"cannot {action} '{path}': {reason} (errno {err.errno}); check that the directory exists, is "
                      f"writable and has free space")


def nofollow_opener(path: str, flags: int) -> int:
    """An ``open(..., opener=)`` that refuses a symbolic link as the last component (``O_NOFOLLOW``: ELOOP), so a
    link planted in a run directory cannot redirect a write outside it."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)


def symlink_error(path: str, what: str = "a run directory's files") -> UserError:
    """The one line for a symbolic link where ding_lite writes (``path``)."""
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return UserError(f"{path} is a symbolic link{target}: {what} must be its own, never links, since a run writes to "
                     f"them; remove the link, or copy the file it points to in its place if you meant to keep it")


def find_symlink(directory: str) -> Optional[str]:
    """The first symbolic link inside ``directory`` (files and folders, not following any), or None. The directory
    itself may be a link (a user's runs folder on another disk)."""
    for root, dirs, files in os.walk(directory, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            if os.path.islink(path):
                return path
    return None


def fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (its entry reaches the disk); a no-op where directories cannot be
    opened (Windows) or fsynced."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, write: Callable[[IO[bytes]], None], what: str = "write") -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, fsync it, rename it over ``path`` and fsync the
    directory: a crash leaves the old file or the new one, never half of one. ``what`` names the action in errors."""
    with deferred_interrupts():
        _atomic_write(path, write, what)


def _atomic_write(path: str, write: Callable[[IO[bytes]], None], what: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=os.path.basename(path), dir=directory)
        os.chmod(tmp, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_directory(directory)
    except OSError as err:
        raise io_error(err, what, path) from None
    except RuntimeError as err:  # torch.save reports a failed write of its zip stream as a RuntimeError
        raise RunIOError(f"cannot {what} '{path}': {' '.join(str(err).split())[:300]}; check that the directory "
                         f"is writable and has free space") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)


def atomic_torch_save(obj: Any, path: str) -> None:
    """``torch.save`` to a temporary file in the same directory, then rename over ``path``."""
    atomic_write(path, lambda f: torch.save(obj, f), "write checkpoint")


def atomic_write_text(text: str, path: str) -> None:
    """Write ``text`` (utf-8) to ``path`` atomically."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_json(obj: Any, path: str) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    atomic_write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", path)


def remove_temp_files(directory: str) -> List[str]:
    """Delete the temporary files of atomic writes under ``directory`` (any depth) and return their paths.

    A process killed mid-write (SIGKILL, OOM) cannot clean up its temporary file; the file it was replacing is intact.
    Call this only while no live process writes under ``directory`` (e.g. holding the run directory's lock).
    """
    removed = []
    for root, _, files in os.walk(directory):
        for name in files:
            if name.startswith(TEMP_PREFIX):
                path = os.path.join(root, name)
                try:
                    os.remove(path)
                    removed.append(path)
                except OSError:  # gone already, or not ours to remove: harmless either way, as nothing reads it
                    pass
    return sorted(removed)
