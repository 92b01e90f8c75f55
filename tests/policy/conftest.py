"""Fixtures of the policy tests."""
import pytest

from sac_helpers import Sac


@pytest.fixture
def make():
    made = []

    def _make(case, overrides=None, seed=0):
        made.append(Sac(case, overrides, seed))
        return made[-1]

    yield _make
    for sac in made:
        sac.close()
