"""Which side limited a parallel run, and how many collectors one learner keeps up with (result.json's
``parallel.bottleneck`` and ``parallel.learner_capacity``, and the run's last log line)."""
import pytest

from ding_lite.parallel.worker_transport import bottleneck, learner_capacity


@pytest.mark.parametrize("learner, collectors, expected", [
    ({"train_s": 9.0, "wait_s": 0.2, "ingest_s": 0.5, "publish_s": 0.3}, {"collect_s": 4.0, "wait_s": 5.0}, "learner"),
    ({"train_s": 3.0, "wait_s": 6.0, "ingest_s": 0.5}, {"collect_s": 9.0, "wait_s": 0.1}, "collectors"),
    ({"train_s": 8.0, "wait_s": 1.5, "ingest_s": 0.5}, {"collect_s": 8.0, "wait_s": 1.0}, "balanced"),
    ({"train_s": 9.0, "wait_s": 0.5}, {"collect_s": 9.0, "wait_s": 1.0}, "balanced"),  # neither waits much
])
def test_bottleneck_from_where_the_time_went(learner, collectors, expected):
    assert bottleneck(learner, collectors) == expected


def test_learner_capacity_from_per_segment_costs():
    learner = {"train_s": 6.0, "ingest_s": 1.5, "publish_s": 0.5, "wait_s": 9.0}  # waiting is not work
    collectors = {"collect_s": 3.0, "sync_s": 1.0, "wait_s": 7.0}
    got = learner_capacity(learner, collectors, segments=400)
    assert got == {"learner_ms_per_segment": 20.0, "collector_ms_per_segment": 10.0, "collectors_absorbed": 0.5}
    assert learner_capacity(learner, collectors, segments=0) is None


@pytest.mark.slow
def test_the_run_says_which_side_limited_it(tmp_path, monkeypatch):
    from ding_lite.config import read_config_file
    from ding_lite.entry import parallel_pipeline
    from entry_helpers import CARTPOLE, SMALL_DICT

    monkeypatch.chdir(tmp_path)
    result = parallel_pipeline(read_config_file(CARTPOLE), seed=0, max_env_step=3000, quiet=True,
                               overrides={**SMALL_DICT, "parallel.collector_num": 1, "env.stop_value": None})
    par = result["parallel"]
    assert par["segments"] > 0 and par["bottleneck"] in ("learner", "collectors", "balanced")
    capacity = par["learner_capacity"]
    assert capacity["collectors_absorbed"] == pytest.approx(
        capacity["collector_ms_per_segment"] / capacity["learner_ms_per_segment"], rel=0.02)
    log = (tmp_path / "cartpole_impala_seed0" / "log" / "train.log").read_text()
    assert f"keeps up with about {capacity['collectors_absorbed']:.1f} collector(s)" in log
