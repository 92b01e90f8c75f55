"""The training loop shared by the serial and parallel pipelines, driven by a scripted transport: the replay ratio,
warm-up and stale samples, asynchronous evaluations, the stop rules and the final evaluation. The transports
themselves are covered by the pipeline tests (tests/entry/test_serial.py, tests/parallel/)."""
import os
from typing import Dict, List, Optional, Tuple

import pytest

from ding_lite.config import read_config_file
from ding_lite.entry.build import build, compile_input
from ding_lite.entry.training_loop import TrainingRun, run_training
from ding_lite.torch_utils import tree_map
from ding_lite.worker import SampleCollector
from ding_lite.worker.collector import leading_dim
from ding_lite.worker.transport import Arrival

from entry_helpers import CARTPOLE, load_ckpt, read_eval_csv

N_SAMPLE, UPDATES = 16, 8  # cartpole_impala.py: update_per_collect=8 per n_sample=16 unrolls


def result(ret: float) -> Dict[str, float]:
    return {"return_mean": ret, "return_std": 0.0, "return_min": ret, "return_max": ret, "episodes": 1}


class ScriptedTransport:
    """Hands out ``script`` (one list of arrivals per request for samples) and answers evaluation requests as the
    test says; records what the loop asked for."""

    name, description, evaluates_in_place, weight_sync_freq, sync = "scripted", "scripted", False, 2, False

    def __init__(self, script: List[List[Arrival]], answers: Dict[int, Tuple[float, int]]) -> None:
        self.script = script
        # train_iter evaluated -> (its return, the learner's train_iter from which the answer may arrive)
        self.answers = answers
        self.run: Optional[TrainingRun] = None
        self.iter_at_request: List[int] = []  # the learner's train_iter at each request for samples
        self.published: List[int] = []
        self.eval_requests: List[int] = []
        self.evaluated_now: List[int] = []
        self.launched, self.stopped = None, 0

    def launch(self, env_step: int, warm_up_steps: int, logger) -> None:
        self.launched = (env_step, warm_up_steps)

    def publish(self, version: int, weights) -> None:
        self.published.append(version)

    def receive(self, timeout: float, samples: bool):
        now = self.run.learner.train_iter
        due = [it for it, (_, after) in self.answers.items() if it in self.eval_requests and now >= after]
        evals = [(it, result(self.answers.pop(it)[0])) for it in due]
        if not samples:
            return [], evals
        self.iter_at_request.append(now)
        return (self.script.pop(0) if self.script else []), evals

    def request_eval(self, train_iter: int, weights) -> None:
        self.eval_requests.append(train_iter)

    def evaluate_now(self, train_iter: int) -> Dict[str, float]:
        self.evaluated_now.append(train_iter)
        return result(-1.0)

    def supervise(self, env_step: int) -> None:
        pass

    def progress(self, dt: float, env_step: int):
        return "", "", ""

    def stop(self) -> None:
        self.stopped += 1

    def summary(self, common):
        return {"scripted": sorted(common)}

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def unrolls():
    """Real train samples of cartpole_impala (8 unrolls per collect) to script arrivals with."""
    cfg = compile_input(read_config_file(CARTPOLE), 0, {"env.collector_env_num": 8})
    parts = build(cfg, 0)
    collector = SampleCollector(parts.collector_env, parts.policy.collect_mode)
    data = collector.collect(8)
    collector.close()
    parts.evaluator_env.close()
    assert leading_dim(data) == 8
    return data


def arrival(data, version: int = 0, warm_up: bool = False, stale: bool = False) -> Arrival:
    n = leading_dim(data)
    return Arrival(None if stale else data, 0 if stale else n, n * 16, version, [], warm_up)


def train(tmp_path, transport: ScriptedTransport, max_train_iter: int, **overrides):
    settings = {"env.collector_env_num": 8, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1,
                "policy.learn.batch_size": 4, "policy.other.replay_buffer.max_use": 1000,
                "policy.eval.evaluator.eval_freq": 1000, **overrides}
    cfg = compile_input(read_config_file(CARTPOLE), 0, settings, str(tmp_path / "loop"))
    run_dir = str(tmp_path / "loop_seed0")

    def make_run() -> TrainingRun:
        parts = build(cfg, 0)
        parts.collector_env.close()
        parts.evaluator_env.close()
        transport.run = TrainingRun(cfg, 0, run_dir, parts.policy, transport)
        return transport.run

    run, res = run_training(run_dir, False, True, make_run, None, max_train_iter)
    return run, res, run_dir


def test_the_replay_ratio_is_update_per_collect_per_n_sample_and_warm_up_or_stale_samples_buy_none(tmp_path,
                                                                                                   unrolls):
    half = tree_map(lambda x: x[:4], unrolls)
    script = [[arrival(unrolls, warm_up=True)],  # 8 warm-up unrolls: fill the buffer, no updates
              [arrival(unrolls, stale=True)],  # dropped as stale: env steps count, nothing pushed
              [arrival(unrolls)],  # 8 of n_sample=16: 4 updates
              [arrival(unrolls)],  # 4 more
              [arrival(unrolls), arrival(unrolls), arrival(unrolls)],  # 24: 12 updates, 8 now and 4 next pass
              [arrival(half)]]  # 4 unrolls: 2 updates
    transport = ScriptedTransport(script, {0: (1.0, 0)})
    run, res, _ = train(tmp_path, transport, max_train_iter=22)
    assert transport.launched == (0, 0)  # IMPALA declares no random_collect_size: no warm-up asked for
    assert transport.iter_at_request == [0, 0, 0, 4, 8, 20]
    assert res["train_iter"] == 22 and res["stop_reason"] == "max_train_iter"
    assert res["env_step"] == 16 * (8 * 7 + 4)  # every arrival's env steps, the stale ones' included
    assert len(run.buffer) == 8 * 6 + 4  # everything pushed but the stale arrival
    # weights published at the start and every weight_sync_freq=2 iterations, versions counting up
    assert transport.published == list(range(12))
    assert res["scripted"] == ["env_step_per_s", "learner_time_s", "run_s", "train_iter_per_s"]


def test_an_asynchronous_evaluation_is_recorded_for_the_weights_it_scored_and_stops_the_run(tmp_path, unrolls):
    # train_iter 0 scores 10 at once; train_iter 8 scores 600 (>= stop_value) once the learner is past 12
    transport = ScriptedTransport([[arrival(unrolls)] for _ in range(20)], {0: (10.0, 0), 8: (600.0, 13)})
    run, res, run_dir = train(tmp_path, transport, max_train_iter=200, **{"policy.eval.evaluator.eval_freq": 8,
                                                                          "env.stop_value": 500})
    assert res["stop_reason"] == "stop_value"
    assert transport.eval_requests == [0, 8]  # one at a time: 16 was not requested while 8 was under way
    assert run.learner.train_iter == 16  # it stops as the answer arrives, without the updates of that pass
    _, rows = read_eval_csv(run_dir)
    assert [(int(r["train_iter"]), float(r["return_mean"])) for r in rows] == [(0, 10.0), (8, 600.0)]
    assert int(rows[1]["env_step"]) == 2 * 8 * 16  # the env steps when train_iter 8 was sent: 2 arrivals
    best = load_ckpt(os.path.join(run_dir, "ckpt", "ckpt_best.pth.tar"))
    assert best["counters"]["train_iter"] == 8  # the snapshot that scored 600, not the weights at the stop
    assert transport.evaluated_now == []  # the stop came from an evaluation: no final one


def test_a_normal_stop_waits_for_the_evaluation_under_way_then_evaluates_the_final_weights(tmp_path, unrolls):
    # the evaluation of train_iter 16 comes back only once the learner is at 20, the budget: while finishing
    transport = ScriptedTransport([[arrival(unrolls)] for _ in range(20)], {0: (1.0, 0), 16: (5.0, 20)})
    run, res, run_dir = train(tmp_path, transport, max_train_iter=20, **{"policy.eval.evaluator.eval_freq": 16})
    assert res["stop_reason"] == "max_train_iter" and res["train_iter"] == 20
    _, rows = read_eval_csv(run_dir)
    assert [int(r["train_iter"]) for r in rows] == [0, 16, 20]  # 16 awaited; 20 the final evaluation
    assert transport.evaluated_now == [20] and transport.stopped >= 1
    assert res["final_return"] == -1.0 and res["best_return"] == 5.0


class InterruptedFinalEval(ScriptedTransport):
    """Ctrl-C arrives inside the final evaluation (the first ``evaluate_now``)."""

    def evaluate_now(self, train_iter: int) -> Dict[str, float]:
        self.evaluated_now.append(train_iter)
        raise KeyboardInterrupt


def test_an_interrupted_final_evaluation_is_not_recorded_and_resume_runs_it(tmp_path, unrolls):
    """Before the fix, the final evaluation was marked done before it ran: the interrupt's ckpt_last said it had, and
    --resume skipped it, reporting the step-0 evaluation as the final return (what ``ding_lite tune`` reads)."""
    transport = InterruptedFinalEval([[arrival(unrolls)] for _ in range(20)], {0: (1.0, 0)})
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path, transport, max_train_iter=8)
    assert transport.evaluated_now == [8]
    run_dir = str(tmp_path / "loop_seed0")
    last = load_ckpt(os.path.join(run_dir, "ckpt", "ckpt_last.pth.tar"))
    assert last["counters"]["train_iter"] == 8 and last["counters"]["last_eval_iter"] == 0

    again = ScriptedTransport([], {})
    cfg = transport.run.cfg

    def make_run() -> TrainingRun:
        parts = build(cfg, 0)
        parts.collector_env.close()
        parts.evaluator_env.close()
        again.run = TrainingRun(cfg, 0, run_dir, parts.policy, again)
        return again.run

    _, res = run_training(run_dir, True, True, make_run, None, 8)
    assert again.evaluated_now == [8]  # the final evaluation, now
    assert res["stop_reason"] == "max_train_iter" and res["final_return"] == -1.0
    _, rows = read_eval_csv(run_dir)
    assert [int(r["train_iter"]) for r in rows] == [0, 8]
