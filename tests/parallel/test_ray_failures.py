"""How the Ray backend names a lost worker: bad input stops the run, a lost actor restarts it."""
import pytest

from ding_lite.parallel.transport import USER_ERRORS
from ding_lite.utils.env_worker import EnvBuildError

exceptions = pytest.importorskip("ray.exceptions", reason="the Ray backend needs the extra: pip install 'ding_lite[ray]'")

from ding_lite.parallel.ray_backend import failure_reason  # noqa: E402


def test_a_user_error_raised_in_an_actor_keeps_its_name():
    err = exceptions.RayTaskError("collect", "Traceback ...", EnvBuildError("env 'x' could not be built: boom"))
    reason = failure_reason(err.as_instanceof_cause())  # what ray.get raises
    assert reason == "EnvBuildError: env 'x' could not be built: boom"
    assert reason.split(":", 1)[0] in USER_ERRORS  # so the run stops instead of restarting into the same failure


def test_a_crash_in_an_actor_is_a_restartable_failure():
    err = exceptions.RayTaskError("collect", "Traceback ...", RuntimeError("the env crashed\nsecond line"))
    reason = failure_reason(err.as_instanceof_cause())
    assert reason == "RuntimeError: the env crashed"
    assert reason.split(":", 1)[0] not in USER_ERRORS


def test_a_lost_actor_says_it_died():
    reason = failure_reason(exceptions.ActorDiedError())
    assert reason.startswith("ActorDiedError: ") and "died" in reason
    assert reason.split(":", 1)[0] not in USER_ERRORS
