"""A training run's directory: what a run writes there and reads back. The logs (``logger``: TensorBoard, train.log,
eval.csv, progress lines), the experiment trackers (``trackers``: W&B, MLflow), the checkpoints (``checkpoint``) and
the directory itself (``run_dir``: its name, its lock, which checkpoint ``--resume`` takes, the stop request)."""
from .checkpoint import load_checkpoint, save_checkpoint
from .logger import RunLogger, Throughput
