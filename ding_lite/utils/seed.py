"""Seeding and RNG-state capture, so the same seed gives the same run and a resumed run continues its streams.

This module owns the seeding scheme of envs and worker processes. Every seed a run uses besides its own ``seed`` is
derived with NumPy's ``SeedSequence`` from the run's seed and a key ``(role, rank, restarts, env_step, slot)``:
slot 0 seeds a worker process's generators, slot ``1 + i`` env ``i`` of its vector env. Distinct keys give
independent 63-bit seeds (two of a million coincide with probability below 1e-7), so the envs of a run (collectors of
any rank, restarted or resumed, and the evaluators) do not share seeds, as offset schemes do (``seed + 1000 * (rank +
1)`` reaches the evaluator's ``seed + 10000`` at rank 9).
"""
import random
from typing import Dict, List

import numpy as np
import torch

# The roles of the seed key. 'evaluator' rank 0 is the evaluator of serial runs, of ``-m eval`` and the parallel
# evaluator worker; rank 1 is the parallel pipeline's final evaluation in the learner process.
SEED_ROLES = {"collector": 0, "evaluator": 1}
_SEED_BITS = 63  # below 2**63: safe for int64 consumers (torch.manual_seed, envs that store their seed)


def derive_seed(seed: int, role: str, rank: int = 0, restarts: int = 0, env_step: int = 0, slot: int = 0) -> int:
    """The seed of ``slot`` (0: a worker's process, ``1 + i``: env i) of ``role`` worker ``rank`` after ``restarts``
    restarts, started at ``env_step``, in a run seeded ``seed``; the same arguments always give the same seed.

    A negative ``seed`` is taken modulo 2**128 (``SeedSequence`` needs a non-negative entropy)."""
    if role not in SEED_ROLES:
        raise ValueError(f"role must be one of {sorted(SEED_ROLES)}, got {role!r}")
    key = (SEED_ROLES[role], rank, restarts, env_step, slot)
    if min(key) < 0:
        raise ValueError(f"rank, restarts, env_step and slot must be >= 0, got {key[1:]}")
    state = np.random.SeedSequence(seed % 2 ** 128, spawn_key=key).generate_state(1, np.uint64)
    return int(state[0]) >> (64 - _SEED_BITS)


def env_seeds(seed: int, role: str, num_envs: int, rank: int = 0, restarts: int = 0, env_step: int = 0) -> List[int]:
    """The first-reset seeds of the ``num_envs`` envs of one vector env (see ``derive_seed``): one per env, so the
    envs of different vector envs never share a seed (``seed + i`` ranges of nearby base seeds would overlap)."""
    return [derive_seed(seed, role, rank, restarts, env_step, slot=1 + i) for i in range(num_envs)]


def contiguous_seed(seeds: List[int], limit: int = 2 ** 31) -> int:
    """One base seed ``b`` for a vector env that can only seed env i with ``b + i`` (envpool), derived from its
    ``env_seeds``: a multiple of ``len(seeds)`` below ``limit``, so two such ranges of one size are equal or
    disjoint (equal with probability ``len(seeds) / limit`` per pair)."""
    n = len(seeds)
    return (seeds[0] % (limit // n)) * n


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
