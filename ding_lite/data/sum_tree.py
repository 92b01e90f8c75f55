"""Per-slot priorities with their sum and minimum, sampled proportionally, vectorised over a batch (no per-sample
Python, no Python loop over levels).

A two-level sum tree: slots are grouped in blocks of K=128. Kept up to date by each batch update:

* ``leaves`` (one value per slot, 0 = empty), ``block_sum`` (n_blocks,) and, for importance weights, ``block_min``
  (the smallest nonzero value of each block);
* ``keys`` (one per slot): ``block * scale + the exclusive prefix sum of the slot's block up to the slot``, where
  ``scale`` is a power of two above every block's sum. The keys are sorted over the whole array, so finding B slots
  is two ``searchsorted`` calls: one over the cumulative block sums (B fractions of the total -> B blocks and a
  remainder u inside each), one over ``keys`` for ``block * scale + u``.

Measured (1e6 slots, B=256): a binary tree walked level by level for all B at once takes 20 levels of ~5 NumPy calls
(~100 us); a 16-ary tree with per-level (B, 16) gathers ~55 us; this layout ~30 us when the same fractions are searched
again and again, but ~95 us for fresh random fractions, as in sampling (``find`` is most of ``sample``'s cost; see
docs/benchmarks.md#replay-buffer). The difference is the CPU's branch prediction: NumPy's binary search takes one
data-dependent branch per probe, and fresh queries mispredict about half of them: the search over the 7,813 block sums
takes ~25 us and the one over the 1e6 keys ~45 us. Reading the 256 selected blocks' rows and searching each (torch's
batched ``searchsorted``), or counting ``row <= u`` branch-free, measured no faster (~85-105 us), nor did a
branch-free walk of an F-ary tree of prefix sums (109-161 us for F = 8 to 100). An update recomputes
the prefix sums of the touched blocks (B x K values, ``torch.cumsum``): ~70 us.

With numba installed (the ``fast`` extra) the same layout is searched by the kernels of ``sum_tree_kernels``: one
pass over the block sums for the sorted (stratified) fractions, then a branch-free search of the B blocks, level by
level for all B: ~25 us for fresh fractions instead of ~95, the importance weights in the same call, and an update in
one call (~70 us for update_priority(256) against ~150).

Exactness: an empty slot's key equals its successor's (adding 0 changes no float), and the search returns the *last*
slot whose key is <= the query, so an empty slot is never found; the one rounding case left (a query just at the end
of a block followed by empty slots) is caught by a final check and moved to the nearest nonempty slot. The keys hold
the prefix sums next to ``block * scale``: they resolve values down to ~1e-9 of the largest block sum; a slot whose
priority is smaller than that is drawn less often than it should be (never, for values below ~1e-16 of it).
"""
import math
from types import ModuleType
from typing import Optional, Tuple

import numpy as np
import torch

K = 128  # slots per block
FAST_EXTRA_HINT = "pip install 'ding_lite[fast]' (numba)"
_NO_WEIGHTS = np.empty(0, dtype=np.float32)  # the compiled draw's weights argument when none are wanted


def load_kernels() -> Optional[ModuleType]:
    """The compiled kernels (``sum_tree_kernels``), or None when numba is not installed."""
    try:
        from . import sum_tree_kernels
    except ImportError:
        return None
    return sum_tree_kernels


def _check_mass(total: float) -> None:
    if not total > 0:
        raise ValueError("PriorityTree.find: the tree holds no mass (every slot is empty); push samples first")


def _pow2_above(x: float) -> float:
    """A power of two > 4 x (headroom: a block sum may grow 4x before the keys are rebuilt)."""
    return 2.0 ** (math.floor(math.log2(x)) + 3) if x > 0 else 1.0


class PriorityTree:
    """Per-slot values ``v >= 0`` (0: empty) for ``capacity`` slots: their sum, proportional search (``find``) and,
    with ``track_min``, the minimum over nonzero values.

    ``compiled``: use the numba kernels of ``sum_tree_kernels`` (None: when numba is installed; True: require them).
    Both paths hold the same arrays and find the same slots."""

    def __init__(self, capacity: int, track_min: bool = True, compiled: Optional[bool] = None) -> None:
        self._kern = load_kernels() if compiled is None or compiled else None
        if compiled and self._kern is None:
            raise ImportError(f"PriorityTree(compiled=True) needs numba: {FAST_EXTRA_HINT}")
        self.capacity = int(capacity)
        self.n_blocks = math.ceil(self.capacity / K)
        n = self.n_blocks * K
        self._leaves = np.zeros(n)
        self.keys = np.zeros(n)
        self.block_sum = np.zeros(self.n_blocks)
        self.block_min: Optional[np.ndarray] = np.full(self.n_blocks, np.inf) if track_min else None
        self.scale = 1.0
        self._offsets = np.zeros(self.n_blocks)
        self._updates = 0
        self._rebuild()

    @property
    def nbytes(self) -> int:
        arrays = (self._leaves, self.keys, self.block_sum, self._offsets, self.block_min)
        return sum(a.nbytes for a in arrays if a is not None)

    @staticmethod
    def nbytes_for(capacity: int, track_min: bool = True) -> int:
        """Bytes of a tree for ``capacity`` slots."""
        n_blocks = math.ceil(capacity / K)
        return 8 * (2 * n_blocks * K + (3 if track_min else 2) * n_blocks)

    @property
    def leaves(self) -> np.ndarray:
        """The per-slot values (a view: write through ``update`` or ``set_all``)."""
        return self._leaves[:self.capacity]

    def total(self) -> float:
        return float(self.block_sum.sum())

    def min_nonzero(self) -> float:
        """The smallest nonzero value (inf when every slot is empty); needs ``track_min``."""
        return float(self.block_min.min())

    def clear(self) -> None:
        self._leaves[:] = 0.0
        self._rebuild()

    def set_all(self, values: np.ndarray) -> None:
        """Set every slot's value from ``values`` (capacity,) (loading a saved buffer)."""
        self._leaves[:] = 0.0
        self._leaves[:self.capacity] = values
        self._rebuild()

    @property
    def compiled(self) -> bool:
        """Whether the numba kernels do the work."""
        return self._kern is not None

    def _rows(self, blocks: Optional[np.ndarray]) -> float:
        """Recompute the keys, sums (and minima) of ``blocks`` (all of them for None) from their leaves; returns the
        largest of their sums."""
        if self._kern is not None:
            blocks = np.arange(self.n_blocks) if blocks is None else blocks
            block_min = self.block_min if self.block_min is not None else self.block_sum[:0]
            return self._kern.rows(self._leaves, self.keys, self._offsets, self.block_sum, block_min, blocks, K,
                                   self.block_min is not None)
        rows = self._leaves.reshape(-1, K) if blocks is None else np.take(self._leaves.reshape(-1, K), blocks, axis=0)
        cs = torch.cumsum(torch.from_numpy(rows), 1).numpy()  # ~5x faster than np.cumsum along rows
        keys = np.empty_like(rows)
        keys[:, 0] = 0.0
        keys[:, 1:] = cs[:, :-1]  # exclusive prefix sums, shifted (not cs - rows): equal across empty slots
        offsets = self._offsets if blocks is None else self._offsets[blocks]
        keys += offsets[:, None]
        sums = cs[:, -1]
        if blocks is None:
            self.keys.reshape(-1, K)[:] = keys
            self.block_sum[:] = sums
        else:
            self.keys.reshape(-1, K)[blocks] = keys
            self.block_sum[blocks] = sums
        if self.block_min is not None:
            mins = np.where(rows > 0, rows, np.inf).min(axis=1)
            if blocks is None:
                self.block_min[:] = mins
            else:
                self.block_min[blocks] = mins
        return float(sums.max(initial=0.0))

    def _rebuild(self) -> None:
        """Every block's keys, with ``scale`` above every block sum."""
        sums = self._leaves.reshape(-1, K).sum(axis=1)
        self.scale = _pow2_above(float(sums.max()))
        self._offsets = np.arange(self.n_blocks, dtype=np.float64) * self.scale
        self._rows(None)

    def update(self, slots: np.ndarray, values: np.ndarray) -> None:
        """Set ``values`` (>= 0; 0 empties a slot) at ``slots`` (a slot given twice gets one of its values), then the
        keys, sums and minima of their blocks."""
        slots = np.asarray(slots, dtype=np.int64)
        self._leaves[slots] = values
        blocks = slots // K
        biggest = self._rows(blocks)
        self._updates += 1
        if biggest >= self.scale:  # keys of one block would reach the next's
            self._rebuild()
        elif self._updates % 1024 == 0 and self.block_sum.max() < self.scale * 2.0 ** -20:
            self._rebuild()  # every value fell a millionfold: a smaller scale keeps the keys' resolution

    def find(self, fractions: np.ndarray) -> np.ndarray:
        """Slots for ``fractions`` in [0, 1) of the total mass (B,): slot i is found for a fraction in
        [sum_{j<i} v_j, sum_{j<=i} v_j) / total, so with uniform fractions slot i comes with probability v_i / total.
        Never an empty slot; the tree must hold some mass."""
        fractions = np.asarray(fractions, dtype=np.float64)
        if self._kern is not None:
            order = None if (fractions[1:] >= fractions[:-1]).all() else np.argsort(fractions, kind="stable")
            idx = np.empty(fractions.size, dtype=np.int64)
            ok = self._kern.locate_sorted(self.block_sum, self.keys, self._offsets, self._leaves,
                                          fractions if order is None else fractions[order], K, idx)
            if order is not None:
                idx[order] = idx.copy()
            return idx if ok else self._repaired(idx)
        sums = self.block_sum
        cs = torch.cumsum(torch.from_numpy(sums), 0).numpy()
        total = cs[-1]
        _check_mass(total)
        u = np.minimum(np.asarray(fractions, dtype=np.float64) * total, np.nextafter(total, 0.0))
        block = np.minimum(np.searchsorted(cs, u, side="right"), self.n_blocks - 1)
        u -= cs[block] - sums[block]
        np.maximum(u, 0.0, out=u)
        u += self._offsets[block]
        idx = np.searchsorted(self.keys, u, side="right") - 1
        if not self._leaves[idx].min() > 0:
            idx = self._nearest_nonempty(idx)
        return idx

    def sample(self, uniform: np.ndarray, beta: Optional[float] = None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """Stratified proportional draws for B uniform numbers in [0, 1) (B,): the slots of ``find`` at the fractions
        ``stratified_fractions(uniform)``, and with ``beta`` the importance weights (p_min / p_i)^beta (B,) float32
        (needs ``track_min``)."""
        if beta is not None and self.block_min is None:
            raise ValueError("PriorityTree.sample: importance weights (beta) need a tree built with track_min=True")
        if self._kern is None:
            slots = self.find(stratified_fractions(uniform))
            weights = None if beta is None else ((self.min_nonzero() / self._leaves[slots]) ** beta).astype(np.float32)
            return slots, weights
        slots = np.empty(uniform.size, dtype=np.int64)
        weights = None if beta is None else np.empty(uniform.size, dtype=np.float32)
        if not self._kern.stratified_draw(self.block_sum, self.block_min if beta is not None else self.block_sum,
                                          self.keys, self._offsets, self._leaves, uniform, K,
                                          -1.0 if beta is None else float(beta), slots,
                                          _NO_WEIGHTS if weights is None else weights):
            slots = self._repaired(slots)
            if weights is not None:
                self._kern.is_weights(self._leaves, self.block_min, slots, float(beta), weights)
        return slots, weights

    def _repaired(self, idx: np.ndarray) -> np.ndarray:
        """A compiled search's result that included an empty slot: the tree has no mass (an error) or rounding left
        a stray (moved to the nearest nonempty slot)."""
        _check_mass(self.total())
        return self._nearest_nonempty(idx)

    def _nearest_nonempty(self, idx: np.ndarray) -> np.ndarray:
        """``idx`` with each empty slot replaced by the nearest nonempty one (rounding's rare strays)."""
        nonempty = np.flatnonzero(self._leaves > 0)
        bad = self._leaves[idx] <= 0
        pos = np.clip(np.searchsorted(nonempty, idx[bad]), 1, nonempty.size) - 1
        after = np.minimum(pos + 1, nonempty.size - 1)
        left, right = nonempty[pos], nonempty[after]
        idx = idx.copy()
        idx[bad] = np.where(np.abs(idx[bad] - left) <= np.abs(right - idx[bad]), left, right)
        return idx


def stratified_fractions(uniform: np.ndarray) -> np.ndarray:
    """Stratified fractions (i + U_i) / B of B uniform draws U_i in [0, 1): one in each of B equal segments of the
    mass (Schaul et al.'s sampling), in increasing order."""
    b = uniform.size
    return (np.arange(b) + uniform) / b
