"""Imports while a run directory from someone else is read: never from the working directory or the run directory.

``python -c`` and scripts put the working directory (``''`` or the script's folder) first on ``sys.path``; a module
file planted in a run directory that a user ``cd``-s into would then run at the first import of a name that no
installed package provides (an optional dependency imported lazily, a gymnasium plugin). ``isolated_imports`` takes
those entries off ``sys.path`` for the block and puts them back after, for ``ding_lite.load``, ``export`` and
``-m eval`` of a run's own config read as literals.
"""
import contextlib
import os
import sys
from typing import Iterator


def _same(entry: str, directories) -> bool:
    path = os.path.realpath(entry or os.curdir)
    return any(path == os.path.realpath(d) for d in directories)


@contextlib.contextmanager
def isolated_imports(*directories: str) -> Iterator[None]:
    """``sys.path`` without the working directory (``''``, ``'.'`` or its absolute path) and ``directories`` in the
    block; restored afterwards (entries added meanwhile are kept)."""
    places = (os.getcwd(), *directories)
    removed = [(i, entry) for i, entry in enumerate(sys.path) if _same(entry, places)]
    for i, _ in reversed(removed):
        del sys.path[i]
    try:
        yield
    finally:
        for i, entry in removed:
            sys.path.insert(min(i, len(sys.path)), entry)
