"""eval.csv is appended to, one fsynced row per evaluation, not rewritten whole (issue 44, item 7), with the crash
guarantees it had: a last line a crash cut short is dropped when the run opens again (and by the analysis reader),
and a resume still moves the rows past its checkpoint to eval_discarded.csv."""
import csv
import os

import numpy as np

from ding_lite.analysis.runs import read_eval_csv
from ding_lite.run import RunLogger

RESULT = dict(return_mean=1.0, return_std=0.0, return_min=1.0, return_max=1.0, episodes=1)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def logger(run_dir, resume_at=None):
    return RunLogger(str(run_dir), "t", quiet=True, resume_at=resume_at)


def test_each_evaluation_appends_one_row(tmp_path):
    log = logger(tmp_path)
    path = tmp_path / "eval.csv"
    inode = os.stat(path).st_ino
    before = b""
    for i in range(1, 4):
        log.eval_row(10 * i, 100 * i, RESULT)
        now = path.read_bytes()
        assert now.startswith(before) and now.endswith(b"\n") and now.count(b"\n") == i + 1
        before = now
    assert os.stat(path).st_ino == inode  # the same file, appended to (a rewrite renames a new one in)
    log.close()
    assert [r["train_iter"] for r in rows(path)] == ["10", "20", "30"]


def test_a_torn_last_line_is_dropped_when_the_run_opens_again(tmp_path):
    log = logger(tmp_path)
    log.eval_row(10, 100, RESULT)
    log.eval_row(20, 200, RESULT)
    log.close()
    path = tmp_path / "eval.csv"
    with open(path, "a") as f:
        f.write("30,300,1.5,-2")  # a crash in the middle of the third append
    assert read_eval_csv(str(path))["train_iter"].tolist() == [10.0, 20.0]  # curves of the crashed run still draw
    log = logger(tmp_path, resume_at=(20, 200, 20))
    assert [r["train_iter"] for r in log.eval_rows] == ["10", "20"]
    log.eval_row(30, 300, RESULT)
    log.close()
    assert [(r["train_iter"], r["return_mean"]) for r in rows(path)] == [("10", "1.0"), ("20", "1.0"), ("30", "1.0")]
    assert not os.path.exists(tmp_path / "eval_discarded.csv")


def test_a_resume_still_moves_rows_past_its_checkpoint(tmp_path):
    log = logger(tmp_path)
    for i in range(1, 4):
        log.eval_row(10 * i, 100 * i, RESULT)
    log.close()
    with open(tmp_path / "eval.csv", "a") as f:
        f.write("40,4")  # and a torn line after them
    log = logger(tmp_path, resume_at=(10, 100, 10))
    log.eval_row(20, 200, RESULT)
    log.close()
    assert [r["train_iter"] for r in rows(tmp_path / "eval.csv")] == ["10", "20"]
    assert [r["train_iter"] for r in rows(tmp_path / "eval_discarded.csv")] == ["20", "30"]
    assert np.array_equal(read_eval_csv(str(tmp_path / "eval.csv"))["env_step"], [100.0, 200.0])
