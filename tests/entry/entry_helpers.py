"""Shared helpers for the entry-point tests (imported as ``entry_helpers``; fixtures live in conftest.py)."""
import csv
import glob
import json
import os
import struct
import sys
from typing import Dict, List, Optional, Tuple

import torch
from click.testing import CliRunner

from ding_lite.cli import main as cli_main

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
CARTPOLE = os.path.join(REPO, "dizoo_configs", "cartpole_impala.py")
MY_IMPALA = os.path.join(REPO, "docs", "examples", "cartpole_my_impala.py")

# The smallest useful run: 2 collector envs, 1 evaluator env and episode.
SMALL = ["--set", "env.collector_env_num=2", "--set", "env.evaluator_env_num=1", "--set", "env.n_evaluator_episode=1"]
SMALL_DICT = {"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1}
EVAL_HEADER = ["train_iter", "env_step", "wall_time", "return_mean", "return_std", "return_min", "return_max",
               "episodes"]
RESULT_KEYS = {"stop_reason", "env_step", "train_iter", "best_return", "final_return", "wall_time", "batch_age"}


class Cli:
    """Invokes ``ding_lite.cli.main`` in-process; ``sys.path`` edits made by the CLI are undone per test."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str):
        saved = list(sys.path)
        try:
            return self.runner.invoke(cli_main, [str(a) for a in args], catch_exceptions=False)
        finally:
            sys.path[:] = saved

    def train(self, *args: str, config: str = CARTPOLE, env_step: Optional[int] = 1500, mode: str = "serial"):
        budget = ["--env-step", str(env_step)] if env_step is not None else []
        return self("-m", mode, "-c", config, "-q", *budget, *SMALL, *args)


# ---- readers --------------------------------------------------------------------------------------------------------
def read_result(run_dir) -> dict:
    with open(os.path.join(run_dir, "result.json")) as f:
        return json.load(f)


def read_eval_csv(run_dir) -> Tuple[List[str], List[Dict[str, str]]]:
    with open(os.path.join(run_dir, "eval.csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return header, [dict(zip(header, row)) for row in body]


def load_ckpt(path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def flatten(tree, prefix: str = "") -> Dict[str, object]:
    """Leaves of nested dicts/lists keyed by their path."""
    out: Dict[str, object] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(tree, (list, tuple)):
        for i, value in enumerate(tree):
            out.update(flatten(value, f"{prefix}{i}."))
    else:
        out[prefix.rstrip(".")] = tree
    return out


def assert_trees_equal(a, b, what: str = "") -> None:
    fa, fb = flatten(a), flatten(b)
    assert fa.keys() == fb.keys(), f"{what}: keys differ: {sorted(set(fa) ^ set(fb))[:10]}"
    for key in fa:
        x, y = fa[key], fb[key]
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape, f"{what}: {key}"
            assert torch.equal(x, y), f"{what}: {key} differs"
        else:
            assert x == y or (x != x and y != y), f"{what}: {key}: {x!r} != {y!r}"


def snapshot(directory) -> Dict[str, Tuple[int, int, bytes]]:
    """(size, mtime_ns, content) of every file under ``directory``, keyed by relative path."""
    snap = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            st = os.stat(path)
            with open(path, "rb") as f:
                snap[os.path.relpath(path, directory)] = (st.st_size, st.st_mtime_ns, f.read())
    return snap


def event_files(run_dir, axis: str = "env_step") -> List[str]:
    """The TensorBoard events files of one x axis: 'env_step' (log/) or 'train_iter' (log/train_iter/)."""
    folder = os.path.join(run_dir, "log") if axis == "env_step" else os.path.join(run_dir, "log", "train_iter")

    def created(path: str):  # RunLogger's suffix ends in time.time_ns(): the order of creation, also within a second
        stamp = path.rsplit(".", 1)[-1]
        return (int(stamp) if stamp.isdigit() else 0, path)

    return sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")), key=created)


def all_scalars(run_dir) -> List[Tuple[str, int, float]]:
    """(tag, step, value) of every scalar of a run, both axes, every file (empty if no reader is available)."""
    return [s for axis in ("env_step", "train_iter") for path in event_files(run_dir, axis)
            for s in (read_scalars(path) or [])]


def read_scalars(path: str) -> Optional[List[Tuple[str, int, float]]]:
    """(tag, step, value) of every scalar in one TensorBoard events file; None if no reader is available.

    Uses tensorboard's EventAccumulator when installed, else parses the TFRecord framing with tensorboardX's protos.
    """
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        event_accumulator = None
    if event_accumulator is not None:
        acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        return [(tag, e.step, e.value) for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag)]
    try:
        from tensorboardX.proto import event_pb2
    except ImportError:
        return None
    with open(path, "rb") as f:
        data = f.read()
    scalars, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        event = event_pb2.Event.FromString(data[pos + 12:pos + 12 + length])
        pos += 12 + length + 4  # length, its crc, the record, its crc
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars.append((value.tag, event.step, value.simple_value))
    return scalars


def assert_user_error(result, *fragments: str) -> str:
    """Exit code 2 and exactly one stderr line ``ding_lite: error: ...`` containing ``fragments``; no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("ding_lite: error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def run_dirs(base) -> List[str]:
    return sorted(p for p in os.listdir(base) if os.path.isdir(os.path.join(base, p)))
