"""Experiment trackers (W&B offline, MLflow on a local file store): the same scalars as TensorBoard at the same steps,
the compiled config, one tracker run continued by --resume, and a missing package named before anything is built."""
import glob
import json
import os
import struct
from typing import Dict, List, Tuple

import pytest

from entry_helpers import all_scalars, assert_user_error

wandb = pytest.importorskip("wandb")
pytest.importorskip("mlflow")

from ding_lite.config import compile_config  # noqa: E402
from ding_lite.utils.errors import ConfigError  # noqa: E402
from ding_lite.run import trackers  # noqa: E402

RUN = "cartpole_impala_seed0"
# Learner, speed and buffer scalars every 2 train iterations, so a short run writes every kind of scalar.
OFTEN = ["--set", "policy.learn.learner.hook.log_show_after_iter=2"]


@pytest.fixture
def offline(in_tmp, monkeypatch):
    """W&B offline into a temporary WANDB_DIR (never the network); MLflow's file store in the test's directory."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(in_tmp / "wandb_dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_API_KEY", "")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    os.makedirs(in_tmp / "wandb_dir")
    return in_tmp


def tracker_args(tmp, wandb_on: bool = True, mlflow_on: bool = True) -> List[str]:
    args = []
    if wandb_on:
        args += ["--set", "tracker.wandb.enable=True"]
    if mlflow_on:
        args += ["--set", "tracker.mlflow.enable=True", "--set", f"tracker.mlflow.tracking_uri=file:{tmp}/mlruns"]
    return args


# ---- readers --------------------------------------------------------------------------------------------------------
def wandb_records(path: str) -> list:
    """The protobuf records of an offline run's ``.wandb`` file (LevelDB log framing: a 7-byte file header, then
    32 KiB blocks of chunks, each with a 7-byte header crc32 / length / type: 1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b":W&B", path
    records, pos, pending = [], 7, b""
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:  # the rest of a block too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            pos += left - 7 - length
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def wandb_runs(wandb_dir) -> List[str]:
    return sorted(glob.glob(os.path.join(str(wandb_dir), "wandb", "offline-run-*", "run-*.wandb")))


def item_key(item) -> str:
    """A history or config item's key: ``key``, or ``nested_key`` (wandb-core writes either)."""
    return item.key or ".".join(item.nested_key)


def wandb_scalars(path: str) -> Tuple[List[Tuple[str, int, float]], Dict[str, object], str, int]:
    """(tag, step, value) of every scalar logged to an offline run, with the step of its step metric (define_metric);
    the run's config; its id; its exit code."""
    records = wandb_records(path)
    step_metric, config, run_id, exit_code, scalars = {}, {}, "", None, []
    for record in records:
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run_id = record.run.run_id
        elif kind == "metric" and record.metric.step_metric:
            step_metric[record.metric.name] = record.metric.step_metric
        elif kind == "config":
            config.update({item_key(item): json.loads(item.value_json) for item in record.config.update})
        elif kind == "exit":
            exit_code = record.exit.exit_code
        elif kind == "history":
            row = {item_key(item): json.loads(item.value_json) for item in record.history.item}
            for key, value in row.items():
                if not key.startswith("_") and key not in ("env_step", "train_iter"):
                    scalars.append((key, int(row[step_metric[key]]), float(value)))
    return scalars, config, run_id, exit_code


def mlflow_scalars(uri: str, run_id: str) -> List[Tuple[str, int, float]]:
    from mlflow.tracking import MlflowClient
    client = MlflowClient(uri)
    return [(key, m.step, m.value) for key in client.get_run(run_id).data.metrics
            for m in client.get_metric_history(run_id, key)]


def same_scalars(got, expected) -> None:
    """The same (tag, step) pairs, each value equal up to TensorBoard's float32."""
    got, expected = sorted(got), sorted(expected)
    assert [s[:2] for s in got] == [s[:2] for s in expected]
    for (tag, step, a), (_, _, b) in zip(got, expected):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-6), (tag, step, a, b)


# ---- tests ----------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_trackers_get_every_tensorboard_scalar_and_the_config(cli, offline):
    result = cli.train(*OFTEN, *tracker_args(offline), env_step=1500)
    assert result.exit_code == 0, result.output
    tb = all_scalars(RUN)
    tags = {tag.split("/")[0] for tag, _, _ in tb}
    assert {"learner", "speed", "buffer", "collector", "evaluator_step", "evaluator_iter"} <= tags, tags
    ids = json.load(open(os.path.join(RUN, "trackers.json")))

    (path,) = wandb_runs(offline / "wandb_dir")
    scalars, config, run_id, exit_code = wandb_scalars(path)
    assert run_id == ids["wandb"]["run_id"] and exit_code == 0
    same_scalars(scalars, tb)
    assert config["policy.learn.batch_size"] == 32 and config["tracker.wandb.enable"] is True
    assert config["env.env_id"] == "CartPole-v1"

    from mlflow.tracking import MlflowClient
    uri = f"file:{offline}/mlruns"
    same_scalars(mlflow_scalars(uri, ids["mlflow"]["run_id"]), tb)
    run = MlflowClient(uri).get_run(ids["mlflow"]["run_id"])
    assert run.info.status == "FINISHED" and run.info.run_name == RUN
    assert run.data.params["policy.learn.batch_size"] == "32" and run.data.params["env.env_id"] == "CartPole-v1"


@pytest.mark.slow
def test_resume_continues_the_same_tracker_runs(cli, offline):
    first = cli.train(*OFTEN, *tracker_args(offline), env_step=1500)
    assert first.exit_code == 0, first.output
    ids = json.load(open(os.path.join(RUN, "trackers.json")))
    steps_before = max(step for _, step, _ in all_scalars(RUN))
    resumed = cli.train(*OFTEN, *tracker_args(offline), "--resume", env_step=3000)
    assert resumed.exit_code == 0, resumed.output
    assert json.load(open(os.path.join(RUN, "trackers.json"))) == ids

    # Two offline runs of one id (one directory per process); their names' timestamps need not order them.
    runs = [wandb_scalars(path) for path in wandb_runs(offline / "wandb_dir")]
    assert len(runs) == 2 and runs[0][2] == runs[1][2] == ids["wandb"]["run_id"]
    first_steps, later_steps = sorted(sorted(step for tag, step, _ in run[0] if tag.startswith("collector/"))
                                      for run in runs)
    assert first_steps[0] < 1000 and first_steps[-1] < later_steps[0]  # the resumed run goes on from its checkpoint

    from mlflow.tracking import MlflowClient
    uri = f"file:{offline}/mlruns"
    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "ding_lite"]
    assert [r.info.run_id for r in client.search_runs([experiment.experiment_id])] == [ids["mlflow"]["run_id"]]
    steps = [step for tag, step, _ in mlflow_scalars(uri, ids["mlflow"]["run_id"]) if tag.startswith("collector/")]
    assert max(steps) > steps_before and min(steps) < 1500
    assert client.get_run(ids["mlflow"]["run_id"]).info.status == "FINISHED"


def test_an_enabled_tracker_without_its_package_names_the_extra(cli, offline, monkeypatch):
    real = trackers.importlib.util.find_spec
    monkeypatch.setattr(trackers.importlib.util, "find_spec",
                        lambda name, *a: None if name == "wandb" else real(name, *a))
    result = cli.train(*tracker_args(offline, mlflow_on=False), env_step=1500)
    assert_user_error(result, "tracker.wandb.enable=True", 'pip install -e ".[wandb]"')
    assert not os.path.exists(RUN)  # refused while compiling the config: no env, no run directory


def test_tracker_values_are_checked():
    import runpy
    config = runpy.run_path(os.path.join(os.path.dirname(__file__), "..", "..", "dizoo_configs", "cartpole_impala.py"))
    main, create = config["main_config"], config["create_config"]
    assert compile_config(main, create).tracker == trackers.TRACKER_DEFAULTS
    with pytest.raises(ConfigError) as err:
        compile_config(main, create, ["tracker.wandb.mode=sometimes", "tracker.mlflow.tracking_uri=3",
                                      "tracker.wandb.projekt=x"])
    text = str(err.value)
    assert "tracker.wandb.mode='sometimes'" in text and "tracker.mlflow.tracking_uri=3" in text
    assert "tracker.wandb.projekt" in text


def test_mlflow_params_fit_its_limits(offline):
    """Values over MLflow's length limit are cut, keys too; more params than one batch takes all arrive."""
    from mlflow.tracking import MlflowClient
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
    config = {f"section.key_{i}": i for i in range(250)}
    config.update({"long.value": "x" * (MAX_PARAM_VAL_LENGTH + 100), "k" * 300: True, "a.list": [1, None, "b"],
                   "none": None})
    uri = f"file:{offline}/mlruns"
    os.makedirs("run")
    section = {"tracking_uri": uri, "experiment": "limits"}
    tracker = trackers.MlflowTracker(section, "run", trackers.flatten_config(config), None)
    tracker.log({"a/b": 1.5}, 7, "env_step")
    tracker.close("FAILED")
    run = MlflowClient(uri).get_run(tracker.run_id)
    params = run.data.params
    assert len(params) == len(config) and run.info.status == "FAILED"
    assert len(params["long.value"]) == MAX_PARAM_VAL_LENGTH and params["long.value"].endswith("...")
    assert params["k" * 247 + "..."] == "True" and params["a.list"] == '[1, null, "b"]' and params["none"] == "None"
    assert mlflow_scalars(uri, tracker.run_id) == [("a/b", 7, 1.5)]


def test_flatten_config_and_status():
    flat = trackers.flatten_config({"a": {"b": 1, "c": {"d": (1, 2)}, "e": {}}, "f": object})
    assert flat == {"a.b": 1, "a.c.d": [1, 2], "a.e": {}, "f": repr(object)}
    assert [trackers.status_of(r) for r in (None, "error: ValueError", "interrupted", "max_env_step")] == [
        "FAILED", "FAILED", "KILLED", "FINISHED"]


@pytest.mark.parametrize("error,status", [(KeyboardInterrupt, "KILLED"), (RuntimeError, "FAILED")])
def test_a_stopped_run_closes_its_trackers(offline, monkeypatch, error, status):
    """Ctrl-C (SIGTERM too) and a crash close the tracker runs, with the status that says so."""
    from mlflow.tracking import MlflowClient

    from ding_lite.config import read_config_file
    from ding_lite.entry import serial_pipeline
    from ding_lite.worker.learner import Learner
    from entry_helpers import CARTPOLE, SMALL_DICT
    original, calls = Learner.train, []

    def train(self, batch):
        calls.append(1)
        if len(calls) > 3:
            raise error("stop")
        return original(self, batch)

    monkeypatch.setattr(Learner, "train", train)
    uri = f"file:{offline}/mlruns"
    overrides = {**SMALL_DICT, "tracker.wandb.enable": True, "tracker.mlflow.enable": True,
                 "tracker.mlflow.tracking_uri": uri}
    with pytest.raises(error):
        serial_pipeline(read_config_file(CARTPOLE), 0, max_env_step=10_000, overrides=overrides, quiet=True)
    ids = json.load(open(os.path.join(RUN, "trackers.json")))
    assert MlflowClient(uri).get_run(ids["mlflow"]["run_id"]).info.status == status
    (path,) = wandb_runs(offline / "wandb_dir")
    assert wandb_scalars(path)[3] == 1


def test_a_tracker_that_cannot_start_leaves_no_run(cli, offline):
    """A fresh run whose tracker fails to open stops with a user error and leaves nothing: it can start again."""
    result = cli.train("--set", "tracker.mlflow.enable=True", "--set", "tracker.mlflow.tracking_uri=nope://x",
                       env_step=1500)
    assert_user_error(result, "tracker.mlflow: cannot open the MLflow run at tracking_uri='nope://x'")
    assert not os.path.exists(RUN)
    again = cli.train(*tracker_args(offline, wandb_on=False), env_step=1500)
    assert again.exit_code == 0, again.output
