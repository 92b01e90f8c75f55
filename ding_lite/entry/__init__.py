"""Entry points: the serial and parallel pipelines, checkpoint evaluation and the CLI."""
from ding_lite.config import compile_config

from .eval import eval_pipeline
from .parallel import parallel_pipeline
from .serial import serial_pipeline
