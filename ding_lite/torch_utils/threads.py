"""How many CPU threads torch's matmuls get: ``torch_threads='auto'`` picks it from the network width and the cores.

Measured on a 2-core VM (torch 2.13, SAC on Pendulum, batch 256, ms per update, 1 vs 2 threads): [64, 64] 1.62 vs 1.81
(a second thread costs more in hand-off than it saves), [128, 128] 3.19 vs 2.56, [256, 256] 9.33 vs 5.87 (1.59x).
Acting (batch 1) is the same either way. So: one thread for networks narrower than 128 units or batches of fewer than
128 rows; otherwise every core this process may use, up to 4 (more than 2 is not measured here). A conv encoder
(``model.encoder_type`` other than 'mlp') counts as wide whatever its layer sizes: its convolutions are the bulk of
the work (IMPALA with either conv encoder on (4, 84, 84) frames: see benchmarks/atari_learner_speed.py).
"""
import os
from typing import Any, Mapping

WIDE = 128  # units in the widest hidden layer from which a second thread pays
ROWS = 128  # rows per matmul (batch_size x unroll_len) from which a second thread pays
MAX_AUTO_THREADS = 4


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, which containers and job schedulers set)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def widest_layer(model_cfg: Mapping[str, Any]) -> int:
    """The largest hidden size named in a model section (keys containing 'hidden_size': an int or a list)."""
    widths = [0]
    for key, value in model_cfg.items():
        if "hidden_size" in str(key):
            values = value if isinstance(value, (list, tuple)) else [value]
            widths += [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    return max(widths)


def auto_threads(policy_cfg: Mapping[str, Any], cores: int) -> int:
    """The thread count ``torch_threads='auto'`` gives a learner on ``cores`` free cores (see the module doc)."""
    rows = int(policy_cfg["learn"]["batch_size"]) * int(policy_cfg["unroll_len"])
    conv = policy_cfg["model"].get("encoder_type", "mlp") not in (None, "mlp")
    if (widest_layer(policy_cfg["model"]) < WIDE and not conv) or rows < ROWS:
        return 1
    return max(1, min(cores, MAX_AUTO_THREADS))


def worker_threads(setting) -> int:
    """A parallel collector's or evaluator's thread count: under 'auto' one (acting is one small forward at a time,
    and the cores go to the processes); a number is the user's choice."""
    return 1 if setting == "auto" else int(setting)
