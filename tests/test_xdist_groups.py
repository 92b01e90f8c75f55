"""The two-worker CI run (.ci/run) keeps each test file on one pytest-xdist worker (``--dist loadgroup``, groups set in
tests/conftest.py), so that a file's module and session fixtures are built once. pytest 9.2 broke this silently:
its node ids no longer carried the group, every test became a group of its own, and the suite only got slower
(hence ``pytest<9.2`` in setup.py's test extra). This test fails when that happens again."""
import pytest


def test_under_loadgroup_a_test_carries_its_files_group(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("checks a run with pytest-xdist's --dist loadgroup, as .ci/run's")
    assert request.node.nodeid.endswith("@test_xdist_groups.py"), (
        f"{request.node.nodeid}: pytest-xdist did not put the test in its file's group (tests/conftest.py), so the "
        f"files' tests are spread over the workers; pytest and pytest-xdist disagree on node ids (see setup.py)")
