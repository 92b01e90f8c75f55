"""Compiled kernels (numba) for :class:`~ding_lite.data.sum_tree.PriorityTree`: one call per sampled batch and one
per priority update, instead of ~15 NumPy/torch calls each.

Optional: ``pip install ding_lite[fast]`` installs numba; without it the tree keeps its NumPy path. Both give the
same slots for the same random numbers (the sums are added in a different order, so a fraction within rounding of a
boundary could go to the neighbouring slot; none did in 307,200 draws checked) and bit-identical importance weights.
Why compiled code pays here (docs/benchmarks.md#prioritised-
replay-at-1e6-transitions): NumPy's binary search takes one data-dependent branch per probe, which fresh random
queries mispredict, and every vectorised step is a separate call of a few µs. The kernel instead

* walks the sorted (stratified) queries and the block sums together in one forward pass (no cumulative-sum array,
  no search over the blocks),
* searches the B selected blocks *level by level for all B queries at once*, branch-free, so the cache misses of
  the B searches overlap instead of queueing behind each other,
* computes the importance weights in the same call.

The data layout is the tree's (see sum_tree.py): ``keys[b * K + j] = offsets[b] + sum_{i<j} leaves[b * K + i]``.
"""
from typing import Callable

import numpy as np
from numba import njit


def kernel(fn: Callable) -> Callable:
    """``fn`` compiled by numba (without the GIL, without bounds checks), cached on disk where numba finds a writable
    place (beside this file, or the user's cache directory); where it finds none (numba raises at decoration then),
    compiled anew in each process instead."""
    try:
        return njit(cache=True, nogil=True, boundscheck=False)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(nogil=True, boundscheck=False)(fn)


@kernel
def _total(block_sum: np.ndarray) -> float:
    """Sum of the block sums, in four interleaved partial sums (independent adds overlap)."""
    n = block_sum.size
    n4 = n - n % 4
    a0 = a1 = a2 = a3 = 0.0
    for b in range(0, n4, 4):
        a0 += block_sum[b]
        a1 += block_sum[b + 1]
        a2 += block_sum[b + 2]
        a3 += block_sum[b + 3]
    total = (a0 + a1) + (a2 + a3)
    for b in range(n4, n):
        total += block_sum[b]
    return total


@kernel
def locate_sorted(block_sum: np.ndarray, keys: np.ndarray, offsets: np.ndarray, leaves: np.ndarray,
                  fractions: np.ndarray, K: int, out: np.ndarray) -> bool:
    """Slots for increasing ``fractions`` in [0, 1) of the total mass (B,), written to ``out`` (B,) int64: slot i
    for a fraction in [sum_{j<i} v_j, sum_{j<=i} v_j) / total. Returns False when some found slot is empty (a
    rounding stray the caller repairs) or the tree holds no mass (``out`` then undefined)."""
    nb = block_sum.size
    total = _total(block_sum)
    if not total > 0.0:
        return False
    top = np.nextafter(total, 0.0)
    B = fractions.size
    u = np.empty(B)
    b = 0
    cum = 0.0  # mass of the blocks before b
    for i in range(B):
        q = min(fractions[i] * total, top)
        while b + 8 <= nb:  # skip 8 blocks at a time: their partial sum does not wait for cum
            s8 = ((block_sum[b] + block_sum[b + 1]) + (block_sum[b + 2] + block_sum[b + 3])) + \
                 ((block_sum[b + 4] + block_sum[b + 5]) + (block_sum[b + 6] + block_sum[b + 7]))
            if cum + s8 <= q:
                cum += s8
                b += 8
            else:
                break
        while b < nb - 1 and cum + block_sum[b] <= q:
            cum += block_sum[b]
            b += 1
        r = q - cum
        u[i] = (r if r > 0.0 else 0.0) + offsets[b]
        out[i] = b * K
    step = K // 2
    while step >= 1:  # the last key <= u in each block: one level for every query, then the next
        for i in range(B):
            j = out[i] + step
            out[i] = j if keys[j] <= u[i] else out[i]
        step //= 2
    ok = True
    for i in range(B):
        ok &= leaves[out[i]] > 0.0
    return ok


@kernel
def stratified_draw(block_sum: np.ndarray, block_min: np.ndarray, keys: np.ndarray, offsets: np.ndarray,
                    leaves: np.ndarray, uniform: np.ndarray, K: int, beta: float, out: np.ndarray,
                    weights: np.ndarray) -> bool:
    """``locate_sorted`` for the stratified fractions (i + uniform_i) / B, then, for ``beta`` >= 0, the importance
    weights (p_min / p_i)^beta (B,) float32 into ``weights``, with p_min the smallest nonzero value in the tree
    (from ``block_min``). Returns ``locate_sorted``'s flag (the weights are computed only when it is True)."""
    B = uniform.size
    fractions = np.empty(B)
    for i in range(B):
        fractions[i] = (i + uniform[i]) / B
    if not locate_sorted(block_sum, keys, offsets, leaves, fractions, K, out):
        return False
    if beta >= 0.0:
        is_weights(leaves, block_min, out, beta, weights)
    return True


@kernel
def is_weights(leaves: np.ndarray, block_min: np.ndarray, slots: np.ndarray, beta: float,
               weights: np.ndarray) -> None:
    """(p_min / p_i)^beta for the slots (B,) into ``weights`` (B,) float32, with p_min the smallest nonzero value
    in the tree; computed in float64 and rounded once, as the NumPy path does (so both give the same weights)."""
    n = block_min.size
    m0 = m1 = np.inf
    for b in range(0, n - 1, 2):
        m0 = min(m0, block_min[b])
        m1 = min(m1, block_min[b + 1])
    if n % 2:
        m0 = min(m0, block_min[n - 1])
    p_min = min(m0, m1)
    for i in range(slots.size):
        weights[i] = (p_min / leaves[slots[i]]) ** beta


@kernel
def rows(leaves: np.ndarray, keys: np.ndarray, offsets: np.ndarray, block_sum: np.ndarray, block_min: np.ndarray,
         blocks: np.ndarray, K: int, track_min: bool) -> float:
    """Recompute the keys, sums (and minima) of ``blocks`` from their leaves; returns the largest of their sums."""
    biggest = 0.0
    for t in range(blocks.size):
        b = blocks[t]
        base = b * K
        off = offsets[b]
        s = 0.0
        m = np.inf
        for j in range(K):
            keys[base + j] = off + s  # exclusive prefix sum (equal across empty slots)
            v = leaves[base + j]
            s += v
            if track_min and v > 0.0 and v < m:
                m = v
        block_sum[b] = s
        if track_min:
            block_min[b] = m
        if s > biggest:
            biggest = s
    return biggest
