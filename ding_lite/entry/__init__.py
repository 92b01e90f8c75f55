"""Entry points: the serial and parallel pipelines and checkpoint evaluation (the command that runs them is
``ding_lite.cli``).

The pipelines load on first use (PEP 562 ``__getattr__``), so that importing this package does not import torch or
gymnasium.
"""
from typing import Any

__all__ = ["compile_config", "eval_pipeline", "parallel_pipeline", "serial_pipeline"]


def __getattr__(name: str) -> Any:
    if name == "compile_config":
        from ding_lite.config import compile_config
        return compile_config
    if name == "eval_pipeline":
        from .eval import eval_pipeline
        return eval_pipeline
    if name == "parallel_pipeline":
        from .parallel import parallel_pipeline
        return parallel_pipeline
    if name == "serial_pipeline":
        from .serial import serial_pipeline
        return serial_pipeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
