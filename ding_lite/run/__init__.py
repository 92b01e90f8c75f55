"""What a training run writes in its directory and reads back: the logs (``logger``: TensorBoard, train.log,
eval.csv, progress lines), the experiment trackers (``trackers``: W&B, MLflow) and the checkpoints (``checkpoint``)."""
from .checkpoint import load_checkpoint, save_checkpoint
from .logger import RunLogger, Throughput
