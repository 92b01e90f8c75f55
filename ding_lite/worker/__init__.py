"""Workers: collector, evaluator, learner, and what a run writes (logs, checkpoints)."""
from .checkpoint import load_checkpoint, save_checkpoint
from .collector import SampleCollector
from .evaluator import Evaluator
from .learner import Learner
from .run_logger import RunLogger, Throughput
