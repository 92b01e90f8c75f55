"""Entry points: the serial pipeline, checkpoint evaluation and the CLI."""
from ding_lite.config import compile_config

from .eval import eval_pipeline
from .serial import serial_pipeline
