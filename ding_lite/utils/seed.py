"""Seeding and RNG-state capture, so the same seed gives the same run and a resumed run continues its streams."""
import random
from typing import Dict

import numpy as np
import torch

# The evaluator's envs are seeded ``seed + EVAL_SEED_OFFSET``, apart from every collector's (serial and parallel).
EVAL_SEED_OFFSET = 10_000


def set_seed(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def get_rng_state() -> Dict[str, torch.Tensor]:
    """The global RNG states as tensors (loadable with ``torch.load(weights_only=True)``)."""
    np_state = np.random.get_state()
    state = {
        "torch": torch.get_rng_state(),
        "numpy_keys": torch.from_numpy(np_state[1].astype(np.int64)),
        "numpy_pos": torch.tensor([np_state[2], np_state[3]], dtype=torch.int64),
        "numpy_gauss": torch.tensor(np_state[4], dtype=torch.float64),
        "python": torch.tensor(random.getstate()[1], dtype=torch.int64),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.stack(torch.cuda.get_rng_state_all())
    return state


def set_rng_state(state: Dict[str, torch.Tensor]) -> None:
    """Restore what ``get_rng_state`` captured."""
    torch.set_rng_state(state["torch"])
    pos, has_gauss = (int(v) for v in state["numpy_pos"])
    np.random.set_state(("MT19937", state["numpy_keys"].numpy().astype(np.uint32), pos, has_gauss,
                         float(state["numpy_gauss"])))
    random.setstate((3, tuple(int(v) for v in state["python"]), None))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(state["cuda"]))
