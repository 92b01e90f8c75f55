"""torch_threads='auto': one thread for narrow networks or small batches, the free cores (up to 4) for wide ones, where
the learner then keeps whichever of 1 and that count its timed updates find faster (a shared machine); an int still
pins it; the parallel pipeline keeps its workers at one thread. No timings here: the tuner runs on a fake clock."""
import os

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config, read_config_file
from ding_lite.entry.build import compile_input, start_process, torch_threads
from ding_lite.torch_utils.threads import (MAX_AUTO_THREADS, ThreadTuner, auto_threads, available_cores,
                                          cgroup_cpu_quota, learner_tuner, widest_layer, worker_threads)
from ding_lite.utils import ConfigError
from ding_lite.worker import Learner

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def config(name: str):
    return read_config_file(os.path.join(REPO, "dizoo_configs", name))


def policy(hidden, batch=256, unroll_len=1):
    return EasyDict(model=dict(actor_head_hidden_size=hidden, critic_head_hidden_size=hidden, action_shape=64),
                    learn=dict(batch_size=batch), unroll_len=unroll_len)


def test_widest_layer_reads_every_hidden_size_key():
    assert widest_layer({"encoder_hidden_size_list": [64, 512], "actor_head_hidden_size": 128, "obs_shape": 1000}) == 512
    assert widest_layer({"obs_shape": 4}) == 0


@pytest.mark.parametrize("hidden, batch, unroll_len, cores, expected", [
    (64, 256, 1, 2, 1),     # narrow: a second thread costs more than it saves (measured 1.62 vs 1.81 ms)
    (128, 256, 1, 2, 2),    # 3.19 vs 2.56 ms
    (256, 256, 1, 2, 2),    # 9.33 vs 5.87 ms
    (256, 64, 1, 2, 1),     # too few rows per matmul
    (256, 16, 4, 2, 1),     # unrolls count: 16 x 4 = 64 rows ...
    (256, 16, 8, 2, 2),     # ... 16 x 8 = 128
    (256, 256, 1, 1, 1),    # one core
    (256, 256, 1, 16, MAX_AUTO_THREADS),
])
def test_auto_rule(hidden, batch, unroll_len, cores, expected):
    assert auto_threads(policy(hidden, batch, unroll_len), cores) == expected


@pytest.mark.parametrize("encoder_type, batch, unroll_len, expected", [
    ("nature_conv", 32, 20, 2),   # a conv encoder counts as wide, whatever its hidden sizes
    ("impala_resnet", 32, 20, 2),
    ("impala_resnet", 4, 8, 1),   # still too few rows
    ("mlp", 32, 20, 1),           # narrow MLP
])
def test_auto_rule_conv_encoders(encoder_type, batch, unroll_len, expected):
    cfg = policy(64, batch, unroll_len)
    cfg.model.encoder_type = encoder_type
    assert auto_threads(cfg, 2) == expected


def test_shipped_configs_resolve_as_measured():
    cores = available_cores()
    for name, wide in (("cartpole_impala.py", False), ("pendulum_sac.py", False), ("mixed_sac.py", True)):
        cfg = compile_config(config(name))
        assert cfg.torch_threads == "auto"
        assert torch_threads(cfg, cores) == (min(cores, MAX_AUTO_THREADS) if wide else 1), name


def test_a_run_start_sets_torch_threads():
    """``start_process`` (as every pipeline calls it) applies torch_threads ('auto' resolved for the learner's cores);
    compiling alone does not."""
    wide = {"policy.model.actor_head_hidden_size": 256, "policy.model.critic_head_hidden_size": 256}
    torch.set_num_threads(1)
    cfg = compile_input(config("pendulum_sac.py"), 0, wide)
    assert torch.get_num_threads() == 1
    start_process(cfg)
    assert torch.get_num_threads() == min(available_cores(), MAX_AUTO_THREADS)
    start_process(compile_input(config("pendulum_sac.py"), 0, {"torch_threads": 1, **wide}))
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("value", ["x", 0, -1, 2.0])
def test_bad_values_are_refused(value):
    with pytest.raises(ConfigError, match="torch_threads"):
        compile_config(config("cartpole_impala.py"), overrides={"torch_threads": value})


def test_parallel_workers_keep_one_thread_under_auto():
    assert worker_threads("auto") == 1
    assert worker_threads(2) == 2  # a number is the user's choice


class FakeMachine:
    """A 2-CPU machine on a fake clock: an update takes ``cost(threads, now)`` seconds, other processes keep
    ``others(now)`` CPUs busy; ``counters`` reads it as ``cpu_counters`` reads /proc/stat (None: not readable)."""

    def __init__(self, cost, others=lambda now: 0.0, readable=True):
        self.now, self.cost, self.others, self.readable = 0.0, cost, others, readable
        self.threads, self.log, self.busy, self.own = None, [], 0.0, 0.0

    def set_threads(self, n):
        self.threads = n

    def update(self):
        self.log.append(self.threads)
        dt = self.cost(self.threads, self.now)
        self.own += self.threads * dt
        self.busy += self.threads * dt + self.others(self.now) * dt
        self.now += dt
        return {"loss": 0.0}

    def counters(self):
        return (2, self.busy, self.own) if self.readable else None

    def tuner(self, choices=(1, 2)):
        return ThreadTuner(choices, set_threads=self.set_threads, clock=lambda: self.now, counters=self.counters)


def two_threads_slower(n, now):
    return {1: 0.010, 2: 0.200}[n]  # the case: another process busy, OpenMP's spinning threads 20x slower


def test_auto_keeps_one_thread_beside_a_busy_process():
    """With another process holding a CPU, today's rule ran every update at 2 threads; the tuner reads the busy CPU
    and never tries a second thread."""
    machine = FakeMachine(two_threads_slower, others=lambda now: 1.0)
    tuner = machine.tuner()
    for _ in range(2000):
        tuner.run(machine.update)
    assert tuner.current == 1 and tuner.updates[2] == 0
    assert tuner.decisions[-1]["free_cpus"] == pytest.approx(1.0)


def test_auto_keeps_one_thread_when_two_time_slower_and_the_load_cannot_be_read():
    """Without /proc/stat (or where it misleads) the timing decides: one losing update per check, no more, and
    the checks grow rarer while the answer holds."""
    machine = FakeMachine(two_threads_slower, readable=False)
    tuner = machine.tuner()
    for _ in range(5000):
        tuner.run(machine.update)
    assert tuner.current == 1
    assert tuner.updates[2] <= tuner.probes + 1 and tuner.probes <= 5


def test_auto_uses_the_second_cpu_when_it_pays():
    machine = FakeMachine(lambda n, now: {1: 0.010, 2: 0.006}[n])
    tuner = machine.tuner()
    for _ in range(5000):
        tuner.run(machine.update)
    assert tuner.current == 2
    assert machine.log.count(1) < 100  # checks at 1 thread: >= 0.25 s each, 5 s then 10, 20, ... apart


def test_auto_prefers_fewer_threads_on_a_tie():
    machine = FakeMachine(lambda n, now: {1: 0.010, 2: 0.0099}[n])
    tuner = machine.tuner()
    for _ in range(200):
        tuner.run(machine.update)
    assert tuner.current == 1


@pytest.mark.parametrize("readable", [True, False])
def test_auto_drops_to_one_thread_when_contention_arrives_and_returns_when_it_leaves(readable):
    busy = (30.0, 60.0)  # another process runs from 30 s to 60 s

    def cost(n, now):
        return {1: 0.010, 2: 0.200 if busy[0] <= now < busy[1] else 0.006}[n]
    machine = FakeMachine(cost, others=lambda now: float(busy[0] <= now < busy[1]), readable=readable)
    tuner = machine.tuner()
    late_two = 0
    while machine.now < 200.0:
        before = machine.now
        tuner.run(machine.update)
        if busy[0] + 1.0 <= before < busy[1] and machine.threads == 2:
            late_two += 1
        if before < busy[0] - 1.0:
            assert tuner.current == 2 or tuner.probing
    assert late_two <= 5  # noticed at once (1.5x slower than when chosen), not at the next scheduled check
    assert tuner.current == 2  # and back after the process left (a scheduled check, at most 80 s later)


def test_tuner_tries_one_thread_first_and_repeats_warm_up_updates():
    machine = FakeMachine(lambda n, now: {1: 0.010, 2: 0.006}[n])
    tuner = machine.tuner((2, 1))
    # an untimed warm-up at 1 thread, then 0.25 s of timed ones; an untimed warm-up at 2, three timed; the choice
    assert machine.threads == 1 and not machine.log  # set at once: what runs before the first update gets 1 too
    for _ in range(40):
        tuner.run(machine.update)
    ones = machine.log.index(2)
    assert 25 <= ones <= 27 and machine.log[ones:] == [2] * (40 - ones)
    assert tuner.probes == 1 and tuner.current == 2 and tuner.decisions[0]["threads"] == 2


def test_tuner_does_not_try_more_threads_than_free_cpus():
    machine = FakeMachine(lambda n, now: {1: 0.010, 2: 0.006, 4: 0.004}[n])
    tuner = machine.tuner((1, 2, 4))  # 4 threads on a 2-CPU machine: never tried
    for _ in range(2000):
        tuner.run(machine.update)
    assert tuner.current == 2 and tuner.updates[4] == 0


def test_learner_runs_updates_through_the_tuner():
    machine = FakeMachine(two_threads_slower, others=lambda now: 1.0)

    class Mode:
        def forward(self, batch):
            return machine.update()

        def monitor_vars(self):
            return ["loss"]
    learner = Learner(Mode(), threads=machine.tuner())
    for _ in range(50):
        learner.train({})
    assert learner.train_iter == 50 and learner.threads.updates[1] >= 45


def test_learner_tuner_only_under_auto_with_several_threads():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        tuner = learner_tuner("auto")
        assert isinstance(tuner, ThreadTuner) and tuner.choices == [1, 2]
        assert learner_tuner(2) is None  # a number is the user's choice
        torch.set_num_threads(1)
        assert learner_tuner("auto") is None
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2.0),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_cgroup_cpu_quota(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_quota(str(tmp_path)) == quota
    cores = len(os.sched_getaffinity(0))
    assert available_cores(str(tmp_path)) == (cores if quota is None else max(1, min(cores, int(quota))))


def test_a_serial_run_under_auto_trains_through_the_tuner(in_tmp, monkeypatch):
    """The wiring: compile_input gives a wide model the rule's threads (2 cores here, whatever this machine has), and
    the run's learner times every update through a ThreadTuner between 1 and 2."""
    import ding_lite.entry.build as build_module
    import ding_lite.entry.training_loop as loop_module
    from ding_lite.entry import serial_pipeline
    made = []

    def recording_tuner(setting):
        made.append(learner_tuner(setting))
        return made[-1]
    monkeypatch.setattr(build_module, "available_cores", lambda: 2)
    monkeypatch.setattr(loop_module, "learner_tuner", recording_tuner)
    serial_pipeline(config("mixed_sac.py"), 0, max_train_iter=30, quiet=True,
                    overrides={"policy.random_collect_size": 64, "policy.learn.batch_size": 128,
                               "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1})
    assert isinstance(made[0], ThreadTuner) and made[0].choices == [1, 2]
    assert sum(made[0].updates.values()) == 30
