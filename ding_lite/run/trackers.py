"""Experiment trackers besides TensorBoard: Weights & Biases and MLflow (the extras ``wandb`` and ``mlflow``).

Off by default; the top-level config section ``tracker`` turns them on (``--set tracker.wandb.enable=True``). An
enabled tracker receives every scalar the run writes to TensorBoard, under the same name (``learner/total_loss``,
``evaluator_step/return_mean``, ...) and against the same step: env steps, or train iterations for the scalars of
TensorBoard's ``log/train_iter/`` (W&B: ``define_metric`` with the step metric ``env_step`` or ``train_iter``; MLflow:
the metric's ``step``). The compiled config goes along as flattened dotted keys (W&B config, MLflow params).

The tracker's run id is kept in ``<run_dir>/trackers.json``: a ``--resume`` continues the same tracker run.
"""
import importlib.util
import json
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional

from ding_lite.utils.errors import UserError
from ding_lite.utils.file_io import atomic_write_json

TRACKERS_FILE = "trackers.json"
# The defaults of the top-level config section ``tracker``.
TRACKER_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "wandb": {"enable": False, "project": "ding_lite", "entity": None, "mode": None, "group": None, "tags": []},
    "mlflow": {"enable": False, "tracking_uri": None, "experiment": "ding_lite"},
}
WANDB_MODES = ("online", "offline", "disabled")
# tracker -> (module it needs, the extra of setup.py that installs it)
PACKAGES = {"wandb": ("wandb", "wandb"), "mlflow": ("mlflow", "mlflow")}
MLFLOW_BATCH = 100  # params / metrics per log_batch call (the REST API's limit for params)


def install_hint(tracker: str) -> str:
    return f'pip install -e ".[{PACKAGES[tracker][1]}]"'


def check_tracker_config(tracker: Mapping[str, Any]) -> List[str]:
    """The problems of a compiled ``tracker`` section, each starting with its key (for ``compile_config``): wrong
    values, and an enabled tracker whose package is not installed (naming the extra that installs it)."""
    problems = []

    def str_or_none(path: str, value: Any, non_empty: bool = False) -> None:
        if value is None and not non_empty:
            return
        if not isinstance(value, str) or (non_empty and not value):
            problems.append(f"{path}={value!r}: expected {'a non-empty str' if non_empty else 'a str or None'}")

    wandb, mlflow = tracker["wandb"], tracker["mlflow"]
    str_or_none("tracker.wandb.project", wandb["project"], non_empty=True)
    str_or_none("tracker.wandb.entity", wandb["entity"])
    str_or_none("tracker.wandb.group", wandb["group"])
    if wandb["mode"] is not None and wandb["mode"] not in WANDB_MODES:
        problems.append(f"tracker.wandb.mode={wandb['mode']!r}: must be None (wandb's own default: the WANDB_MODE "
                        f"environment variable, else 'online') or one of {', '.join(map(repr, WANDB_MODES))}")
    if not all(isinstance(t, str) for t in wandb["tags"]):
        problems.append(f"tracker.wandb.tags={wandb['tags']!r}: expected a list of str")
    str_or_none("tracker.mlflow.tracking_uri", mlflow["tracking_uri"])
    str_or_none("tracker.mlflow.experiment", mlflow["experiment"], non_empty=True)
    for name in PACKAGES:
        if tracker[name]["enable"] and importlib.util.find_spec(PACKAGES[name][0]) is None:
            problems.append(f"tracker.{name}.enable=True: the {PACKAGES[name][0]} package is not installed; install "
                            f"the extra with {install_hint(name)} (or --set tracker.{name}.enable=False)")
    return problems


def flatten_config(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``{'policy.learn.batch_size': 64, ...}``: every leaf of the nested ``tree`` under its dotted key. Values stay
    bool, int, float, str or None; lists of those stay lists; anything else becomes its ``repr``."""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten_config(value, path + "."))
        else:
            flat[path] = _plain(value)
    return flat


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    if isinstance(value, Mapping) and not value:
        return {}
    return repr(value)


def mlflow_params(flat: Mapping[str, Any], max_key: int = 250, max_value: int = 6000) -> Dict[str, str]:
    """MLflow params from a flattened config: every value a string (JSON for lists, 'None' for None), values longer
    than ``max_value`` cut to fit with a trailing '...', keys longer than ``max_key`` cut likewise (MLflow refuses
    longer ones)."""
    params = {}
    for key, value in flat.items():
        text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
        if len(text) > max_value:
            text = text[:max_value - 3] + "..."
        if len(key) > max_key:
            key = key[:max_key - 3] + "..."
        params[key] = text
    return params


# ---- trackers.json ----------------------------------------------------------------------------------------------
def read_tracker_ids(run_dir: str) -> Dict[str, Dict[str, Any]]:
    """What ``<run_dir>/trackers.json`` records: tracker -> {'run_id': ..., where the run lives}; {} if none."""
    path = os.path.join(run_dir, TRACKERS_FILE)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record_tracker_id(run_dir: str, name: str, entry: Dict[str, Any]) -> None:
    data = read_tracker_ids(run_dir)
    data[name] = entry
    atomic_write_json(data, os.path.join(run_dir, TRACKERS_FILE))


# ---- the trackers -----------------------------------------------------------------------------------------------
class Tracker:
    """One tracker run: ``log`` scalars at a step of an axis ('env_step' or 'train_iter'); ``close`` with the run's
    status ('FINISHED', 'FAILED' or 'KILLED')."""

    name = ""
    run_id = ""

    def log(self, values: Dict[str, float], step: int, axis: str) -> None:
        raise NotImplementedError

    def close(self, status: str) -> None:
        raise NotImplementedError


class WandbTracker(Tracker):
    name = "wandb"

    def __init__(self, section: Mapping[str, Any], run_dir: str, config: Dict[str, Any],
                 run_id: Optional[str]) -> None:
        import wandb
        self._defined: Dict[str, str] = {}
        directory = os.environ.get("WANDB_DIR") or run_dir  # W&B's files: <run_dir>/wandb/ unless WANDB_DIR says
        try:
            self.run = wandb.init(project=section["project"], entity=section["entity"], group=section["group"],
                                  tags=list(section["tags"]) or None, mode=section["mode"], dir=directory,
                                  name=os.path.basename(os.path.abspath(run_dir)), id=run_id,
                                  resume="allow" if run_id else None, reinit="create_new")
            self.run.config.update(config, allow_val_change=True)
            for axis in ("env_step", "train_iter"):
                self.run.define_metric(axis, hidden=True)
        except Exception as err:  # wandb's own errors (no API key, no network, ...)
            raise UserError(f"tracker.wandb: wandb.init failed: {type(err).__name__}: {err} (without network, "
                            f"--set tracker.wandb.mode=offline and 'wandb sync' later)") from None
        self.run_id = self.run.id

    def log(self, values: Dict[str, float], step: int, axis: str) -> None:
        for key in values:
            if key not in self._defined:
                self.run.define_metric(key, step_metric=axis)
                self._defined[key] = axis
        self.run.log({**values, axis: step})

    def close(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == "FINISHED" else 1)


class MlflowTracker(Tracker):
    name = "mlflow"

    def __init__(self, section: Mapping[str, Any], run_dir: str, config: Dict[str, Any],
                 run_id: Optional[str]) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient
        from mlflow.utils import validation
        uri = section["tracking_uri"]
        if uri is not None and uri.startswith("file:"):
            # MLflow 3 keeps its file store in maintenance mode and refuses it unless opted in: a file: URI given
            # explicitly is that opt-in (MLflow's default store, sqlite, needs sqlalchemy, which mlflow-skinny lacks).
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        try:
            self.client = MlflowClient(uri)
            if run_id:
                self.client.update_run(run_id, status="RUNNING")
                logged = self.client.get_run(run_id).data.params
            else:
                experiment = self.client.get_experiment_by_name(section["experiment"])
                experiment_id = (experiment.experiment_id if experiment is not None
                                 else self.client.create_experiment(section["experiment"]))
                run_id = self.client.create_run(experiment_id, run_name=os.path.basename(os.path.abspath(run_dir)),
                                                tags={"ding_lite.run_dir": os.path.abspath(run_dir)}).info.run_id
                logged = {}
            params = mlflow_params(config, getattr(validation, "MAX_ENTITY_KEY_LENGTH", 250),
                                   getattr(validation, "MAX_PARAM_VAL_LENGTH", 6000))
            # Params cannot change once logged: a resumed run adds the ones it lacks; a changed value is a tag.
            new = [Param(k, v) for k, v in params.items() if k not in logged]
            for i in range(0, len(new), MLFLOW_BATCH):
                self.client.log_batch(run_id, params=new[i:i + MLFLOW_BATCH])
            changed = {k: v for k, v in params.items() if k in logged and logged[k] != v}
            for key, value in list(changed.items())[:MLFLOW_BATCH]:
                self.client.set_tag(run_id, f"resumed.{key}"[:250], value)
        except Exception as err:
            raise UserError(f"tracker.mlflow: cannot open the MLflow run at tracking_uri="
                            f"{section['tracking_uri']!r}: {type(err).__name__}: {str(err).strip()} (set "
                            f"tracker.mlflow.tracking_uri to a tracking server, 'http://host:5000', or a local file "
                            f"store, 'file:./mlruns')") from None
        self.run_id = run_id

    def log(self, values: Dict[str, float], step: int, axis: str) -> None:
        from mlflow.entities import Metric
        now = int(time.time() * 1000)
        metrics = [Metric(key, float(value), now, int(step)) for key, value in values.items()]
        for i in range(0, len(metrics), MLFLOW_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i:i + MLFLOW_BATCH])

    def close(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)


TRACKER_CLASSES = {"wandb": WandbTracker, "mlflow": MlflowTracker}


def open_trackers(cfg: Optional[Mapping[str, Any]], run_dir: str, resume: bool,
                  log: Callable[[str], None] = print) -> List[Tracker]:
    """The trackers ``cfg.tracker`` enables, each opened on a new run (recorded in trackers.json) or, when
    ``resume`` and trackers.json has one, on that same run. A failure closes those already opened and raises
    ``UserError``."""
    section = (cfg or {}).get("tracker")
    if not section:
        return []
    for problem in check_tracker_config(section):  # compile_config checks this too; a hand-made cfg may not be
        if ".enable=True" in problem:
            raise UserError(problem)
    ids = read_tracker_ids(run_dir) if resume else {}
    flat = flatten_config(cfg)
    opened: List[Tracker] = []
    try:
        for name, cls in TRACKER_CLASSES.items():
            if not section[name]["enable"]:
                continue
            previous = ids.get(name, {}).get("run_id")
            tracker = cls(section[name], run_dir, flat, previous)
            opened.append(tracker)
            _record_tracker_id(run_dir, name, _where(name, section[name], tracker.run_id))
            log(f"{name}: {'continuing' if previous else 'logging to'} run {tracker.run_id}")
    except BaseException:
        close_trackers(opened, "FAILED", log)
        raise
    return opened


def _where(name: str, section: Mapping[str, Any], run_id: str) -> Dict[str, Any]:
    if name == "wandb":
        return {"run_id": run_id, "project": section["project"], "entity": section["entity"]}
    return {"run_id": run_id, "tracking_uri": section["tracking_uri"], "experiment": section["experiment"]}


def close_trackers(trackers: List[Tracker], status: str, log: Callable[[str], None] = print) -> None:
    """Close every tracker with ``status``; one that fails to close is reported, never raised."""
    for tracker in trackers:
        try:
            tracker.close(status)
        except Exception as err:  # noqa: BLE001 - the run's own outcome matters more
            log(f"{tracker.name}: closing run {tracker.run_id} failed: {type(err).__name__}: {err}")


def log_to_trackers(trackers: List[Tracker], values: Dict[str, float], step: int, axis: str,
                    log: Callable[[str], None] = print) -> List[Tracker]:
    """Send ``values`` to every tracker; one that raises is reported once and dropped (the run goes on, TensorBoard
    keeps every scalar). Returns the trackers still working."""
    working = []
    for tracker in trackers:
        try:
            tracker.log(values, step, axis)
            working.append(tracker)
        except Exception as err:  # noqa: BLE001
            log(f"{tracker.name}: logging failed ({type(err).__name__}: {err}); the rest of this run's scalars go to "
                f"TensorBoard only")
    return working


def status_of(stop_reason: Optional[str]) -> str:
    """The tracker status of a run that stopped for ``stop_reason`` (None: it never got to write result.json)."""
    if stop_reason is None or stop_reason.startswith("error"):
        return "FAILED"
    return "KILLED" if stop_reason == "interrupted" else "FINISHED"
