"""Every shipped config in dizoo_configs/ compiles, and the Atari ones train end to end on their real ALE game."""
import glob
import json
import os

import pytest

from ding_lite.config import compile_config, read_config_file

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
CONFIGS = sorted(glob.glob(os.path.join(REPO, "dizoo_configs", "*.py")))


def test_the_shipped_configs_are_all_checked():
    names = {os.path.basename(path) for path in CONFIGS}
    assert {"cartpole_impala.py", "pendulum_sac.py", "pong_impala.py", "pong_acer.py", "breakout_impala.py"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[os.path.basename(p) for p in CONFIGS])
def test_shipped_config_compiles(path):
    if "pong" in os.path.basename(path) or "breakout" in os.path.basename(path):
        pytest.importorskip("ale_py")
    cfg = compile_config(read_config_file(path))
    assert cfg.exp_name and cfg.policy.type in ("impala", "appo", "acer", "sac", "discrete_sac", "ppo", "dqn")


# config -> (policy type, env id, the range of a game score over at most 60 agent steps (240 frames)).
ATARI_CONFIGS = {
    "pong_impala": ("impala", "ALE/Pong-v5", (-21, 21)),
    "pong_acer": ("acer", "ALE/Pong-v5", (-21, 21)),
    "pong_appo": ("appo", "ALE/Pong-v5", (-21, 21)),
    "pong_ppo": ("ppo", "ALE/Pong-v5", (-21, 21)),
    "breakout_impala": ("impala", "ALE/Breakout-v5", (0, 432)),
    "pong_dqn": ("dqn", "ALE/Pong-v5", (-21, 21)),
    "breakout_dqn": ("dqn", "ALE/Breakout-v5", (0, 432)),
}


@pytest.mark.parametrize("name", sorted(ATARI_CONFIGS))
def test_atari_config_trains_on_uint8_frames_end_to_end(name, tmp_path, monkeypatch):
    """A few updates of a shipped Atari config, shrunk: real ALE frames through the conv encoder, stored as uint8,
    evaluated on the true (unclipped) score."""
    pytest.importorskip("ale_py")
    from ding_lite.entry import serial_pipeline

    policy_type, env_id, (low, high) = ATARI_CONFIGS[name]
    monkeypatch.chdir(tmp_path)
    small = {"env.collector_env_num": 2, "env.evaluator_env_num": 1, "env.n_evaluator_episode": 1,
             "env.max_episode_steps": 60, "policy.collect.n_sample": 2, "policy.learn.batch_size": 2,
             "policy.eval.evaluator.eval_freq": 4, "torch_threads": 1}
    # DQN trains on transitions (unroll 1) after its random warm-up; the others on unrolls
    small.update({"policy.random_collect_size": 8, "policy.other.replay_buffer.replay_buffer_size": 64}
                 if policy_type == "dqn" else {"policy.unroll_len": 5})
    policy = serial_pipeline(read_config_file(os.path.join(REPO, "dizoo_configs", f"{name}.py")), seed=0,
                             max_train_iter=6, overrides=small, quiet=True)
    assert policy.cfg.type == policy_type and policy.cfg.model.encoder_type == "nature_conv"
    assert policy.cfg.model.obs_shape == [4, 84, 84]
    with open(tmp_path / f"{name}_seed0" / "total_config.py") as f:
        assert repr(env_id) in f.read()
    with open(tmp_path / f"{name}_seed0" / "result.json") as f:
        result = json.load(f)
    assert result["train_iter"] == 6 and result["stop_reason"] == "max_train_iter"
    assert low <= result["final_return"] <= high


@pytest.mark.parametrize("name", ["pong_dqn", "breakout_dqn"])
def test_the_atari_dqn_buffer_is_the_size_its_docstring_gives(name):
    """100k transitions, each two uint8 stacks of 4 x 84 x 84 frames (obs and next_obs): 5.6 GB."""
    pytest.importorskip("ale_py")
    from ding_lite.entry.build import compile_input, probe_env
    from ding_lite.entry.preflight import check_buffer_memory
    path = os.path.join(REPO, "dizoo_configs", f"{name}.py")
    cfg = compile_input(read_config_file(path), 0, {})
    _, observation_space = probe_env(cfg, 0)
    need = check_buffer_memory(cfg, observation_space, available=(1 << 62, "test"))
    assert 100_000 * 2 * 4 * 84 * 84 < need < 1.01 * 100_000 * 2 * 4 * 84 * 84
    assert "5.6 GB" in open(path).read()
