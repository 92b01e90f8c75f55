"""The ``ding_lite`` command (click): training (``-m serial``, ``-m parallel``), ``-m eval``, ``summary``, ``plot``,
``port``, ``export``, ``check-env`` and ``tune``, in ``main.py``. Only click and the standard library load at import;
each command imports the room it drives (``entry``'s pipelines, ``deploy``, ``port``, ``tune``, ``analysis``) when
it runs. ``python -m ding_lite.cli`` is the same command."""
from .main import main

__all__ = ["main"]
