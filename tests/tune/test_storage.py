"""The study's SQLite storage hands each WAITING trial (an enqueued one, the retry of an interrupted one) to exactly one
worker, however many ask at once: ``--jobs`` threads of one tune process, or several tune processes on one file.

Before ``ding_lite.tune.study.serialise_transactions``, 4 threads asking for 40 enqueued trials got 2 to 7 of them
twice (3 runs of this test's scenario); in a study, the second run of such a trial failed on the first one's
run-directory lock and the first then died telling Optuna its result ("Cannot tell a FAIL trial").

A study file whose lock another process holds past the storage's wait (a tune process stopped inside a write) is one
line naming the file and what to do, whether it is held when the study opens or in the middle of a trial."""
import multiprocessing
import os
import sqlite3
import threading
import warnings

import pytest

optuna = pytest.importorskip("optuna")

from ding_lite.tune import study as study_module  # noqa: E402
from ding_lite.tune.study import open_storage  # noqa: E402

from entry_helpers import CARTPOLE  # noqa: E402

ENQUEUED, WORKERS = 40, 4


def _study(study_dir: str):
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.create_study(study_name="s", storage=open_storage(None, study_dir), load_if_exists=True)


def _ask(study_dir: str, times: int, barrier, out) -> None:
    study = _study(study_dir)
    barrier.wait()
    out.extend(study.ask().number for _ in range(times))


def _enqueue(study_dir: str) -> None:
    study = _study(study_dir)
    for i in range(ENQUEUED):
        study.enqueue_trial({"x": float(i)})


def test_threads_of_one_process_never_get_the_same_waiting_trial(tmp_path):
    _enqueue(str(tmp_path))
    got: list = []
    barrier = threading.Barrier(WORKERS)
    threads = [threading.Thread(target=_ask, args=(str(tmp_path), ENQUEUED // WORKERS, barrier, got))
               for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(ENQUEUED)), sorted(n for n in set(got) if got.count(n) > 1)


def _ask_in_process(study_dir: str, times: int, barrier, queue) -> None:
    out: list = []
    _ask(study_dir, times, barrier, out)
    queue.put(out)


@pytest.mark.slow
def test_processes_on_one_file_never_get_the_same_waiting_trial(tmp_path):
    """Two processes (each start of Python and Optuna costs seconds here)."""
    _enqueue(str(tmp_path))
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_ask_in_process, args=(str(tmp_path), ENQUEUED // 2, barrier, queue))
             for _ in range(2)]
    for p in procs:
        p.start()
    got = [n for _ in procs for n in queue.get(timeout=120)]
    for p in procs:
        p.join(30)
    assert sorted(got) == list(range(ENQUEUED)), sorted(n for n in set(got) if got.count(n) > 1)


LOCKED = "another process held the study database's lock for 1 s"


def _tune(cli, *args):
    return cli("tune", "-c", CARTPOLE, "--param", "policy.learn.learning_rate=loguniform(1e-3, 1e-2)", "--trials", "1",
               "--study", "s", "--env-step", "500", *args)


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("ding_lite: error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def test_a_study_file_locked_when_the_study_opens_is_one_line(cli, in_tmp, monkeypatch):
    monkeypatch.setattr(study_module, "SQLITE_LOCK_WAIT_S", 1.0)
    os.makedirs("s")
    holder = sqlite3.connect("s/study.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # as a tune process stopped inside a write holds it
    try:
        line = _one_error_line(_tune(cli))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(in_tmp / "s" / "study.db") in line and LOCKED in line and "resume it with fg" in line, line


def test_a_study_file_locked_in_the_middle_of_a_trial_is_one_line(cli, in_tmp, monkeypatch):
    """The trial's run is replaced by one that takes the file's lock from another connection and ends: the trial's
    next write to the storage then waits on the lock and fails, inside Optuna's optimize."""
    monkeypatch.setattr(study_module, "SQLITE_LOCK_WAIT_S", 1.0)
    holders = []

    def run_taking_the_lock(cmd, run_dir, log_path, on_eval):
        holder = sqlite3.connect("s/study.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        holders.append(holder)
        return 0, False

    monkeypatch.setattr(study_module, "run_seed", run_taking_the_lock)
    try:
        line = _one_error_line(_tune(cli))
    finally:
        for holder in holders:
            holder.execute("ROLLBACK")
            holder.close()
    assert len(holders) == 1 and LOCKED in line, (holders, line)
