"""How the Ray backend names a lost worker (so bad input stops the run and a lost actor restarts it), and how a
parallel run decides which side was its bottleneck."""
import pytest

from ding_lite.parallel.transport import USER_ERRORS, bottleneck
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


@pytest.mark.parametrize("learner, collectors, expected", [
    ({"train_s": 9.0, "wait_s": 0.2, "ingest_s": 0.5, "publish_s": 0.3}, {"collect_s": 4.0, "wait_s": 5.0}, "learner"),
    ({"train_s": 3.0, "wait_s": 6.0, "ingest_s": 0.5}, {"collect_s": 9.0, "wait_s": 0.1}, "collectors"),
    ({"train_s": 8.0, "wait_s": 1.5, "ingest_s": 0.5}, {"collect_s": 8.0, "wait_s": 1.0}, "balanced"),
    ({"train_s": 9.0, "wait_s": 0.5}, {"collect_s": 9.0, "wait_s": 1.0}, "balanced"),  # neither waits much
])
def test_bottleneck_from_where_the_time_went(learner, collectors, expected):
    assert bottleneck(learner, collectors) == expected
