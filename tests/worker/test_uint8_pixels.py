"""uint8 frames end to end: the collector hands the policy uint8 observations and stores them as uint8 (compact
unrolls), the replay buffer allocates uint8 columns and samples uint8 batches, the parallel message path keeps the
dtype, and a serial run of IMPALA and ACER with conv encoders on MovingDot trains on uint8 batches throughout."""
import dataclasses

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import ReplayBuffer
from ding_lite.entry import serial_pipeline
from ding_lite.entry.build import build
from ding_lite.parallel.roles import from_numpy, to_numpy
from ding_lite.worker import SampleCollector

T, N_ENV = 5, 3
FRAME = (1, 36, 36)


def pixel_config(policy_type, **policy):
    main = dict(
        exp_name=f"moving_dot_{policy_type}",
        env=dict(collector_env_num=N_ENV, evaluator_env_num=2, n_evaluator_episode=2, kwargs=dict(max_steps=7)),
        policy=dict(unroll_len=T, model=dict(encoder_type="nature_conv", conv_channels=[4, 8, 8], conv_hidden_size=16,
                                             actor_head_hidden_size=8, critic_head_hidden_size=8),
                    learn=dict(batch_size=4, update_per_collect=2), collect=dict(n_sample=N_ENV),
                    eval=dict(evaluator=dict(eval_freq=2)), **policy),
    )
    return main, dict(env=dict(type="moving_dot"), env_manager=dict(type="base"), policy=dict(type=policy_type))


@pytest.fixture(params=["impala", "acer"])
def components(request):
    cfg = compile_config(pixel_config(request.param))
    parts = build(cfg, seed=0)
    yield parts
    parts.collector_env.close()
    parts.evaluator_env.close()


def test_collector_feeds_and_stores_uint8(components):
    policy = components.policy
    seen = []
    forward = policy.collect_mode.forward
    mode = policy.collect_mode

    def spy(obs, **kw):
        seen.append(obs.dtype)
        return forward(obs, **kw)

    collector = SampleCollector(components.collector_env, dataclasses.replace(mode, forward=spy))
    samples = collector.collect(2 * N_ENV)  # 10 steps: every env's episode of 7 steps is cut inside an unroll
    assert set(seen) == {torch.uint8}
    assert samples["obs"].dtype == torch.uint8 and samples["obs"].shape == (2 * N_ENV, T + 1, *FRAME)
    assert samples["final_obs"].dtype == torch.uint8 and samples["final_obs"].shape == (2 * N_ENV, 1, *FRAME)
    assert "next_obs" not in samples
    assert samples["reward"].dtype == torch.float32
    # the second unroll of each env holds its truncation at step 7 = t 1 of the unroll; its final obs is stored
    assert samples["truncated"][N_ENV:, 1].all() and samples["final_obs"][N_ENV:].any()


def test_buffer_allocates_uint8_columns_and_samples_uint8(components):
    collector = SampleCollector(components.collector_env, components.policy.collect_mode)
    buffer = ReplayBuffer(dict(replay_buffer_size=20), seed=0)
    buffer.push(collector.collect(2 * N_ENV), cur_collector_envstep=collector.envstep)
    columns = {".".join(path): col for path, col in zip(buffer._paths, buffer._cols)}
    assert columns["obs"].dtype == torch.uint8 and columns["obs"].shape == (20, T + 1, *FRAME)
    assert columns["final_obs"].dtype == torch.uint8
    frame_bytes = int(np.prod(FRAME))
    assert columns["obs"].nbytes == 20 * (T + 1) * frame_bytes  # one byte per pixel
    batch = buffer.sample(4, cur_learner_iter=0)
    assert batch["obs"].dtype == torch.uint8 and batch["final_obs"].dtype == torch.uint8
    info = components.policy.learn_mode.forward(batch)
    assert np.isfinite(info["total_loss"])


def test_parallel_messages_keep_uint8():
    data = {"obs": torch.randint(0, 256, (2, T + 1, *FRAME), dtype=torch.uint8), "reward": torch.rand(2, T),
            "logit": {"mu": torch.rand(2, T, 1)}}
    message = to_numpy(data)
    assert message["obs"].dtype == np.uint8 and message["reward"].dtype == np.float32
    back = from_numpy(message)
    assert back["obs"].dtype == torch.uint8 and torch.equal(back["obs"], data["obs"])


@pytest.mark.parametrize("policy_type", ["impala", "acer"])
def test_serial_run_trains_on_uint8_batches(policy_type, in_tmp, monkeypatch):
    batches, obs_columns = [], []
    sample, allocate = ReplayBuffer.sample, ReplayBuffer._allocate

    def record_sample(self, *args, **kwargs):
        out = sample(self, *args, **kwargs)
        if out is not None:
            batches.append(out["obs"].dtype)
        return out

    def record_allocate(self, leaves):
        allocate(self, leaves)
        obs_columns.append(self._cols[self._paths.index(("obs",))].dtype)

    monkeypatch.setattr(ReplayBuffer, "sample", record_sample)
    monkeypatch.setattr(ReplayBuffer, "_allocate", record_allocate)
    policy = serial_pipeline(pixel_config(policy_type), seed=0, max_train_iter=4, quiet=True)
    assert obs_columns == [torch.uint8] and batches and set(batches) == {torch.uint8}
    assert policy.cfg.obs_storage == "auto"
    assert (in_tmp / f"moving_dot_{policy_type}_seed0" / "eval.csv").exists()
