"""matmul_precision: validated at compile time, applied by every run when it starts (learner and parallel workers),
and reset by the next run that leaves it at 'highest'. Compiling a config changes nothing in the process: threads,
matmul precision and glibc's malloc are left as they were."""
import os

import pytest
import torch

from ding_lite.config import compile_config, read_config_file
from ding_lite.entry import serial_pipeline
from ding_lite.entry.build import compile_input, start_process
from ding_lite.parallel.roles import WorkerSpec, prepare_worker
from ding_lite.torch_utils.precision import set_matmul_precision
from ding_lite.utils import ConfigError

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def config(name: str = "pendulum_sac.py"):
    return read_config_file(os.path.join(REPO, "dizoo_configs", name))


@pytest.fixture(autouse=True)
def _restore_precision_and_threads():
    threads = torch.get_num_threads()  # prepare_worker pins a worker's threads
    yield
    torch.set_float32_matmul_precision("highest")
    torch.set_num_threads(threads)


def test_default_is_true_float32():
    assert compile_config(config()).matmul_precision == "highest"


@pytest.mark.parametrize("value,message", [("low", r"matmul_precision='low': must be one of 'highest', 'high', "
                                                   r"'medium'"),
                                           ("bf16", r"matmul_precision='bf16': must be one of"),
                                           (1, r"matmul_precision=1: expected str, got int"),
                                           (None, r"matmul_precision=None: expected str")])
def test_bad_values_are_refused_naming_the_key(value, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(config(), overrides={"matmul_precision": value})
    with pytest.raises(ValueError, match="matmul_precision"):
        set_matmul_precision(value)


def test_compiling_a_config_leaves_the_process_as_it_was(monkeypatch):
    import ding_lite.torch_utils.malloc as malloc
    mallopt = []  # glibc's setting cannot be undone in this process: the call is recorded instead
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: mallopt.append(1) or True)
    torch.set_num_threads(1)
    compile_input(config(), 0, {"matmul_precision": "medium", "torch_threads": 2, "keep_freed_memory": True})
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.get_num_threads() == 1 and mallopt == []
    start_process(compile_input(config(), 0, {"matmul_precision": "medium", "torch_threads": 2,
                                              "keep_freed_memory": True}))
    assert torch.get_float32_matmul_precision() == "medium"
    assert torch.get_num_threads() == 2 and mallopt == [1]


def test_each_run_sets_it_and_a_later_default_run_resets_it():
    start_process(compile_input(config(), 0, {"matmul_precision": "medium"}))
    assert torch.get_float32_matmul_precision() == "medium"
    start_process(compile_input(config(), 0))
    assert torch.get_float32_matmul_precision() == "highest"


def test_a_serial_run_applies_its_settings_when_it_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.set_num_threads(2)
    serial_pipeline(config("cartpole_impala.py"), seed=0, max_env_step=300, quiet=True,
                    overrides={"matmul_precision": "medium", "torch_threads": 1})
    assert torch.get_float32_matmul_precision() == "medium" and torch.get_num_threads() == 1


def test_parallel_workers_apply_the_learners_setting():
    cfg = compile_config(config(), overrides={"matmul_precision": "medium"})
    prepare_worker(WorkerSpec(role="collector", rank=0, cfg=cfg, seed=0))
    assert torch.get_float32_matmul_precision() == "medium"
