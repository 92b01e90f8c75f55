"""benchmarks/studies/sac_seed_spread.py: the exact permutation test and the bootstrap interval it reports."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks", "studies"))
import sac_seed_spread  # noqa: E402


def test_the_most_extreme_split_has_the_smallest_p_value():
    theirs = np.arange(10.0)
    # ours far above all of theirs: no other split of the 13 is as far from 0 (the mirror, the three smallest, is
    # 9.5 below the rest against ours 16.5 above), so the p-value is one split in 286
    assert sac_seed_spread.permutation_p(np.array([20.0, 21.0, 22.0]), theirs) == pytest.approx(1 / 286)
    # symmetric pool: the mirror split is exactly as far from 0 on the other side
    pool = np.array([-6.0, -5.0, -4.0, -1.0, -0.5, 0.0, 0.0, 0.0, 0.5, 1.0, 4.0, 5.0, 6.0])
    assert sac_seed_spread.permutation_p(pool[-3:], pool[:-3]) == pytest.approx(2 / 286)


def test_the_permutation_p_value_against_a_slow_count():
    rng = np.random.default_rng(3)
    ours, theirs = rng.normal(0, 1, 3), rng.normal(0.5, 1, 10)
    pooled = np.concatenate([ours, theirs])
    observed = abs(ours.mean() - theirs.mean())
    count = total = 0
    for i in range(13):
        for j in range(i + 1, 13):
            for k in range(j + 1, 13):
                chosen = [i, j, k]
                rest = [n for n in range(13) if n not in chosen]
                total += 1
                count += abs(pooled[chosen].mean() - pooled[rest].mean()) >= observed - 1e-9
    assert total == 286
    assert sac_seed_spread.permutation_p(ours, theirs) == pytest.approx(count / total)


def test_the_comparison_reports_the_difference_its_interval_and_ranks():
    row = sac_seed_spread.compare([5.0, 6.0, 7.0], list(range(10)), draws=2_000)
    assert row["difference"] == pytest.approx(6.0 - 4.5)
    assert row["ci95"][0] < 1.5 < row["ci95"][1]
    assert row["above"] == [5, 6, 7]
