"""The suite's seed selection (tests/conftest.py): a learning test runs on its first listed seed unless --all-seeds."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREE_SEEDS = "tests/learning/test_acer_pendulum_learning.py"  # parametrized over seeds 0, 1, 2


def _collected(*args: str) -> list:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", *args],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "::" in line]


@pytest.mark.slow
def test_a_learning_test_runs_its_first_seed_and_all_seeds_runs_every_one():
    assert _collected(THREE_SEEDS) == [f"{THREE_SEEDS}::test_pendulum_acer_reaches_minus_200_within_100k_steps[0]"]
    assert [line.rsplit("[", 1)[1] for line in _collected("--all-seeds", THREE_SEEDS)] == ["0]", "1]", "2]"]
