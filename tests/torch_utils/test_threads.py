"""torch_threads='auto': one thread for narrow networks or small batches, the free cores (up to 4) for wide ones; an
int still pins it; the parallel pipeline keeps its workers at one thread."""
import os

import pytest
import torch
from easydict import EasyDict

from ding_lite.config import compile_config, read_config_file
from ding_lite.entry.build import compile_input, torch_threads
from ding_lite.torch_utils.threads import (MAX_AUTO_THREADS, auto_threads, available_cores, widest_layer,
                                          worker_threads)
from ding_lite.utils import ConfigError

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


def test_compile_input_sets_torch_threads():
    compile_input(config("pendulum_sac.py"), 0, {"policy.model.actor_head_hidden_size": 256,
                                                  "policy.model.critic_head_hidden_size": 256})
    assert torch.get_num_threads() == min(available_cores(), MAX_AUTO_THREADS)
    compile_input(config("pendulum_sac.py"), 0, {"torch_threads": 1, "policy.model.actor_head_hidden_size": 256})
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("value", ["x", 0, -1, 2.0])
def test_bad_values_are_refused(value):
    with pytest.raises(ConfigError, match="torch_threads"):
        compile_config(config("cartpole_impala.py"), overrides={"torch_threads": value})


def test_parallel_workers_keep_one_thread_under_auto():
    assert worker_threads("auto") == 1
    assert worker_threads(2) == 2  # a number is the user's choice
