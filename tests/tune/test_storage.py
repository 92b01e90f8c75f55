"""The study's SQLite storage hands each WAITING trial (an enqueued one, the retry of an interrupted one) to exactly one
worker, however many ask at once: ``--jobs`` threads of one tune process, or several tune processes on one file.

Before ``ding_lite.tune.study.serialise_transactions``, 4 threads asking for 40 enqueued trials got 2 to 7 of them
twice (3 runs of this test's scenario); in a study, the second run of such a trial failed on the first one's
run-directory lock and the first then died telling Optuna its result ("Cannot tell a FAIL trial")."""
import multiprocessing
import threading
import warnings

import pytest

optuna = pytest.importorskip("optuna")

from ding_lite.tune.study import open_storage  # noqa: E402

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
