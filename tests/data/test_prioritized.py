"""Prioritised replay against slow references: the sum tree's sums and searches, sampling frequencies (chi-square),
importance weights by formula, beta's schedule, and the buffer's rules (max_use, staleness, overwrites, new items at
the maximum priority). Every test runs twice: on the sum tree's NumPy path and on its numba kernels (the ``fast``
extra; skipped where numba is not installed)."""
import numpy as np
import pytest
import torch

from ding_lite.data import sum_tree
from ding_lite.data.prioritized import PrioritizedReplayBuffer
from ding_lite.data.sum_tree import K, PriorityTree, stratified_fractions
from ding_lite.utils import ConfigError

KERNELS = sum_tree.load_kernels()


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def path(request, monkeypatch):
    """Which path trees built with the default ``compiled=None`` take: NumPy's (as without numba) or the kernels."""
    if request.param == "numpy":
        monkeypatch.setattr(sum_tree, "load_kernels", lambda: None)
    elif KERNELS is None:
        pytest.skip("numba is not installed (the fast extra)")
    return request.param

# Upper 0.1% points of the chi-square distribution (tables; scipy.stats.chi2.ppf(0.999, df)).
CHI2_999 = {19: 43.82, 49: 85.35}


def items(ids):
    ids = torch.as_tensor(ids, dtype=torch.int64)
    return {"id": ids.clone(), "obs": ids.float().unsqueeze(-1).repeat(1, 3)}


def per(size=50, seed=0, IS_weight=True, **kw):
    return PrioritizedReplayBuffer(dict(replay_buffer_size=size, **kw), seed=seed, IS_weight=IS_weight)


def slot_of(buf, batch):
    """The slots of a batch, read back from its ids (items were pushed with id == slot)."""
    return batch["id"].numpy()


@pytest.mark.parametrize("capacity", [1, 7, 128, 129, 4097, 70_000, 300_001])
def test_tree_sums_min_and_levels_after_random_updates(capacity, path):
    rng = np.random.default_rng(capacity)
    tree = PriorityTree(capacity)
    assert tree.compiled == (path == "compiled")
    ref = np.zeros(capacity)
    for _ in range(30):
        slots = rng.integers(0, capacity, size=rng.integers(1, 300))
        values = rng.random(slots.size) * (rng.random(slots.size) > 0.2)  # some zeros: emptied slots
        tree.update(slots, values)
        # a slot given twice gets one of its values: mirror what the tree stored
        ref[slots] = tree.leaves[slots]
        assert set(np.round(tree.leaves[slots], 12)) <= set(np.round(values, 12))
    assert np.array_equal(tree.leaves, ref)
    assert tree.total() == pytest.approx(ref.sum(), rel=1e-12)
    nonzero = ref[ref > 0]
    assert tree.min_nonzero() == (nonzero.min() if nonzero.size else np.inf)
    padded = np.zeros(tree.n_blocks * K)
    padded[:capacity] = ref
    rows = padded.reshape(-1, K)
    np.testing.assert_allclose(tree.block_sum, rows.sum(1), rtol=1e-12, atol=0)
    assert np.array_equal(tree.block_min, np.where(rows > 0, rows, np.inf).min(1))
    # keys: block * scale + exclusive prefix sum in the block; sorted; scale above every block sum
    excl = np.concatenate([np.zeros((rows.shape[0], 1)), np.cumsum(rows, 1)[:, :-1]], 1)
    np.testing.assert_allclose(tree.keys, (excl + np.arange(tree.n_blocks)[:, None] * tree.scale).ravel(),
                               rtol=1e-12, atol=1e-12 * tree.scale)
    assert (np.diff(tree.keys) >= 0).all() and tree.block_sum.max() < tree.scale


@pytest.mark.parametrize("capacity", [5, 128, 4096, 100_000])
def test_find_matches_a_searchsorted_reference_and_never_an_empty_slot(capacity):
    rng = np.random.default_rng(1)
    values = rng.random(capacity) * (rng.random(capacity) > 0.5)
    values[rng.integers(capacity)] = 0.5  # some mass
    tree = PriorityTree(capacity)
    tree.update(np.arange(capacity), values)
    fractions = np.concatenate([rng.random(5000), [0.0, 1 - 1e-17, np.nextafter(1.0, 0.0)]])
    got = tree.find(fractions)
    assert (values[got] > 0).all()
    cs = np.cumsum(values)
    ref = np.minimum(np.searchsorted(cs, fractions * cs[-1], side="right"), capacity - 1)
    ok = values[ref] > 0
    # Identical except where the reference itself lands on a boundary within rounding (none here, or nearly).
    assert (got[ok] == ref[ok]).mean() > 0.999


def test_find_with_boundaries_at_trailing_empty_slots():
    tree = PriorityTree(40)
    values = np.zeros(40)
    values[[3, 17, 18]] = [1e-300, 1.0, 2.0]  # tiny and trailing-empty masses
    tree.update(np.arange(40), values)
    got = tree.find(np.linspace(0, np.nextafter(1.0, 0), 10001))
    assert set(got.tolist()) <= {3, 17, 18}


@pytest.mark.parametrize("alpha", [0.6, 1.0])
def test_sampling_frequencies_follow_p_alpha_by_chi_square(alpha):
    n = 50
    buf = per(n, seed=3, priority_alpha=alpha, IS_weight=False)
    buf.push(items(range(n)), 0)
    raw = np.linspace(0.05, 3.0, n)  # |TD errors|
    buf.update_priority(buf.index_for(np.arange(n)), raw)
    p = (raw + buf.eps) ** alpha
    expected_p = p / p.sum()
    counts = np.zeros(n)
    draws = 0
    for _ in range(2000):
        batch = buf.sample(64, 0, min_valid=1)
        counts += np.bincount(batch["id"].numpy(), minlength=n)
        draws += 64
    expected = expected_p * draws
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < CHI2_999[n - 1], (chi2, counts[:5], expected[:5])


def test_is_weights_by_formula_and_beta_schedule():
    n = 20
    buf = per(n, seed=0, priority_alpha=0.7, priority_beta=0.4, priority_beta_anneal_steps=1000)
    buf.push(items(range(n)), 0)
    raw = np.arange(1, n + 1) / 7.0
    buf.update_priority(buf.index_for(np.arange(n)), raw)
    assert buf.beta(0) == pytest.approx(0.4)
    assert buf.beta(500) == pytest.approx(0.7)
    assert buf.beta(5000) == pytest.approx(1.0)
    p = (raw + buf.eps) ** 0.7
    P = p / p.sum()
    for it in (0, 500, 2000):
        beta = buf.beta(it)
        batch = buf.sample(16, it)
        ids = batch["id"].numpy()
        w = (n * P) ** (-beta)
        ref = w[ids] / w.max()  # normalised by the largest weight in the buffer
        np.testing.assert_allclose(batch["weight"].numpy(), ref, rtol=1e-5)
        assert batch["weight"].dtype == torch.float32
    assert per(n, priority_beta_anneal_steps=0).beta(10 ** 9) == pytest.approx(0.4)


def test_new_items_enter_at_the_running_max_priority():
    buf = per(10, priority_alpha=1.0, priority_eps=1e-6)
    buf.push(items(range(4)), 0)
    assert np.allclose(buf.priorities()[:4], 1.0)  # 1 at the start
    buf.update_priority(buf.index_for(np.arange(4)), np.array([0.1, 5.0, 0.2, 0.3]))
    buf.push(items(range(4, 6)), 0)
    assert np.allclose(buf.priorities()[4:6], 5.0 + 1e-6)
    assert (buf.priorities()[6:] == 0).all()


def test_max_use_removes_items_for_good():
    buf = per(30, seed=1, max_use=1)
    buf.push(items(range(30)), 0)
    seen = set()
    while len(buf):
        batch = buf.sample(4, 0, min_valid=1)
        ids = set(batch["id"].tolist())
        assert not ids & seen  # a removed item is never drawn again
        seen |= ids
        index = buf.last_index
        buf.update_priority(index, np.full(4, 9.0))  # removed slots are skipped: they stay at 0
        assert (buf.priorities()[list(seen)] == 0).all()
    assert seen == set(range(30))


def test_staleness_removes_and_zeroes_priorities():
    buf = per(10, max_staleness=2)
    buf.push(items(range(5)), 0, collect_iter=0)
    buf.push(items(range(5, 10)), 0, collect_iter=3)
    batch = buf.sample(200, 3, min_valid=1)
    assert set(batch["id"].tolist()) <= set(range(5, 10))
    assert (buf.priorities()[:5] == 0).all() and (buf.priorities()[5:] > 0).all()


def test_update_skips_slots_overwritten_since_the_draw():
    buf = per(8, priority_alpha=1.0)
    buf.push(items(range(8)), 0)
    buf.sample(8, 0)
    index = buf.last_index
    buf.push(items(range(8, 11)), 0)  # overwrites slots 0, 1, 2 (new items at max priority 1)
    buf.update_priority(index, np.full(8, 4.0))
    pr = buf.priorities()
    for slot in index.slots:
        assert pr[slot] == pytest.approx(1.0 if slot < 3 else 4.0 + 1e-6)


def test_update_priority_refuses_bad_values():
    buf = per(8)
    buf.push(items(range(8)), 0)
    buf.sample(4, 0)
    with pytest.raises(ValueError, match="finite"):
        buf.update_priority(buf.last_index, np.array([1.0, np.nan, 1.0, 1.0]))
    with pytest.raises(ValueError, match="4 priorities"):
        buf.update_priority(buf.index_for(np.arange(3)), np.ones(4))


def test_clear_and_ring_overwrite_keep_the_tree_in_step():
    buf = per(6)
    buf.push(items(range(10)), 0)  # more than capacity: the last 6 kept
    assert (buf.priorities() > 0).sum() == 6
    buf.clear()
    assert buf.priorities().sum() == 0 and len(buf) == 0
    assert buf.sample(1, 0) is None


def test_reproducible_with_a_seed_and_no_weight_without_IS():
    a, b = per(40, seed=5), per(40, seed=5)
    for buf in (a, b):
        buf.push(items(range(40)), 0)
    assert torch.equal(a.sample(32, 0)["id"], b.sample(32, 0)["id"])
    c = per(40, IS_weight=False)
    c.push(items(range(40)), 0)
    assert "weight" not in c.sample(8, 0)


@pytest.mark.parametrize("key,value", [("priority_alpha", -1), ("priority_beta", 1.5), ("priority_eps", 0),
                                       ("priority_beta_anneal_steps", -3), ("save_replay_buffer", 1)])
def test_bad_priority_config_is_refused(key, value):
    with pytest.raises(ConfigError, match=key):
        per(4, **{key: value})


def test_stratified_fractions_cover_each_segment_once():
    f = stratified_fractions(np.random.default_rng(0).random(8))
    assert ((f * 8).astype(int) == np.arange(8)).all()


def test_keys_rescale_when_values_grow_or_fall_a_millionfold():
    tree = PriorityTree(1000)
    tree.update(np.arange(1000), np.full(1000, 1e6))
    assert tree.block_sum.max() < tree.scale
    for _ in range(1024):
        tree.update(np.arange(1000), np.full(1000, 1e-3))
    assert tree.scale < 1e6  # rebuilt with a smaller scale
    got = tree.find(stratified_fractions(np.random.default_rng(0).random(1000)))
    assert np.bincount(got, minlength=1000).max() <= 3  # ~uniform over equal values


@pytest.mark.parametrize("path", ["compiled"], indirect=True)  # builds one tree of each path itself
@pytest.mark.parametrize("capacity", [129, 300_001])
def test_numpy_path_and_kernels_hold_the_same_tree_and_draw_the_same_slots_and_weights(capacity, path):
    rng = np.random.default_rng(7)
    trees = [PriorityTree(capacity, compiled=False), PriorityTree(capacity, compiled=True)]
    for _ in range(20):
        slots = rng.integers(0, capacity, size=rng.integers(1, 500))
        values = rng.random(slots.size) ** 4 * (rng.random(slots.size) > 0.3)
        for tree in trees:
            tree.update(slots, values)
    numpy_tree, kernel_tree = trees
    assert np.array_equal(numpy_tree.leaves, kernel_tree.leaves)
    np.testing.assert_allclose(kernel_tree.keys, numpy_tree.keys, rtol=1e-12, atol=1e-12 * numpy_tree.scale)
    np.testing.assert_allclose(kernel_tree.block_sum, numpy_tree.block_sum, rtol=1e-12, atol=0)
    assert np.array_equal(kernel_tree.block_min, numpy_tree.block_min)
    same = 0
    for _ in range(50):
        uniform = rng.random(256)
        (a, wa), (b, wb) = (tree.sample(uniform, beta=0.6) for tree in trees)
        assert (numpy_tree.leaves[b] > 0).all() and wb.dtype == np.float32
        same += (a == b).sum()
        assert np.array_equal(wb[a == b], wa[a == b])  # bit for bit: a run's updates then match too
    assert same >= 0.999 * 50 * 256  # equal but where rounding moves a draw across a boundary (~never)


@pytest.mark.parametrize("path", ["numpy"], indirect=True)  # as without numba
def test_compiled_tree_without_numba_names_the_extra(path):
    with pytest.raises(ImportError, match=r"ding_lite\[fast\]"):
        PriorityTree(10, compiled=True)
    assert not PrioritizedReplayBuffer(dict(replay_buffer_size=10)).compiled


def test_weights_from_a_tree_without_minima_are_refused():
    tree = PriorityTree(10, track_min=False)
    tree.update(np.arange(10), np.ones(10))
    assert tree.sample(np.array([0.5]))[1] is None
    with pytest.raises(ValueError, match="track_min=True"):
        tree.sample(np.array([0.5]), beta=0.4)


def test_a_tree_without_mass_is_refused():
    tree = PriorityTree(300)
    with pytest.raises(ValueError, match="no mass"):
        tree.find(np.array([0.5]))
    tree.update(np.array([3]), np.array([2.0]))
    tree.update(np.array([3]), np.array([0.0]))
    with pytest.raises(ValueError, match="no mass"):
        tree.sample(np.array([0.1, 0.7]), beta=0.5)


@pytest.mark.parametrize("path", ["compiled"], indirect=True)
def test_kernels_compile_where_numba_has_nowhere_to_cache(path):
    """numba refuses ``cache=True`` for code it cannot place a cache file for (here: code without a file; also a
    read-only install with no writable user cache); the kernels are then compiled in each process instead."""
    namespace = {}
    exec("def twice(x):\n    return 2 * x\n", namespace)  # no source file: numba has no cache locator for it
    with pytest.raises(RuntimeError, match="no locator"):
        __import__("numba").njit(cache=True)(namespace["twice"])
    assert KERNELS.kernel(namespace["twice"])(21) == 42


def test_refuses_sampling_without_replacement():
    with pytest.raises(ConfigError, match="replacement=False"):
        PrioritizedReplayBuffer(dict(replay_buffer_size=8, replacement=False))
