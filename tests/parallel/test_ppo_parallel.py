"""PPO in ``-m parallel``: synchronous collection (``parallel.sync``, on for on-policy policies). Every collector acts
one segment with the learner's current weights and waits for the next version; the learner trains once on each round
of segments and publishes. So the policy lag is 0, every delivered unroll is trained on once, a segment that arrives
stale anyway is dropped and counted, and configs whose rounds cannot work are refused with one line."""
import os
import sys
import time

import pytest

from entry_helpers import REPO, assert_user_error

from ding_lite.config import compile_config, read_config_file
from ding_lite.entry import parallel_pipeline
from ding_lite.entry.build import probe_env_spec
from ding_lite.entry.parallel import resolve_parallel
from ding_lite.parallel.local import LocalBackend
from ding_lite.parallel.roles import WorkerSpec
from ding_lite.parallel.worker_transport import WorkerTransport
from ding_lite.utils import POLICY_REGISTRY

PPO = os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py")
# A round: 2 collectors x 4 envs = the 8 unrolls (of 32 steps) of one PPO collection.
TWO = {"parallel.collector_num": 2, "env.collector_env_num": 4, "env.evaluator_env_num": 1,
       "env.n_evaluator_episode": 1, "env.stop_value": None}
ROUND_STEPS = 8 * 32


def _ppo_cfg():
    cfg = compile_config(read_config_file(PPO), overrides=TWO)
    probe_env_spec(cfg, 0)
    resolve_parallel(cfg)
    return cfg


@pytest.mark.slow
def test_ppo_trains_once_on_every_round_with_policy_lag_0(in_tmp):
    result = parallel_pipeline(read_config_file(PPO), 0, max_env_step=20 * ROUND_STEPS, overrides=TWO, quiet=True)
    stats = result["parallel"]
    assert result["stop_reason"] == "max_env_step" and stats["restarts"] == {}
    assert stats["policy_lag"]["max"] == 0 and stats["policy_lag_counts"] == {"0": stats["segments"]}
    assert stats["dropped_stale"] == 0
    # One update per round of 2 segments, each update on the whole round (batch_size = n_sample, max_use=1): every
    # delivered unroll is trained on exactly once.
    assert result["train_iter"] == 20 and stats["segments"] == 2 * 20 and result["env_step"] == 20 * ROUND_STEPS
    with open(in_tmp / "cartpole_ppo_seed0" / "total_config.py") as f:
        text = f.read().replace(" ", "")
    assert "sync=True" in text and "max_staleness=0," in text  # resolved from on_policy: recorded as run


def test_a_sync_collector_waits_for_new_weights_between_segments():
    cfg = _ppo_cfg()
    state = POLICY_REGISTRY.get("ppo")(cfg.policy, enable_field=("learn",)).model.state_dict()
    backend = LocalBackend(1, 2, state)  # room for 2 segments: only the weights hold the second one back
    try:
        backend.publish(0, state)
        backend.start(WorkerSpec("collector", 0, cfg, 1, sys_path=list(sys.path)))
        got, deadline = [], time.monotonic() + 60
        while not got and time.monotonic() < deadline:
            got = backend.poll(0.05)
        assert [m["version"] for m in got] == [0]
        assert backend.poll(1.5) == []  # no second segment with the same weights
        backend.publish(1, state)
        got, deadline = [], time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            got = backend.poll(0.05)
        assert [m["version"] for m in got] == [1]
    finally:
        backend.shutdown(3.0)


def test_a_stale_segment_is_dropped_and_counted():
    cfg = _ppo_cfg()
    transport = WorkerTransport(cfg, 0, POLICY_REGISTRY.get("ppo")(cfg.policy, enable_field=("learn",)), [])
    transport.version = 3

    def segment(version):
        return {"kind": "samples", "rank": 0, "version": version, "data": {}, "n": 4, "env_steps": 128,
                "episodes": [], "warm_up": False, "timing": {}}

    stale = transport._arrival(segment(2))
    assert stale.data is None and stale.n == 0 and stale.env_steps == 128  # its env steps still count
    assert transport._arrival(segment(3)).n == 4
    assert transport.dropped_stale == 4 and dict(transport.lag_counts) == {1: 1, 0: 1}


def test_configs_that_cannot_collect_synchronously_are_refused(cli, in_tmp):
    def train(*args):
        return cli.train("--set", "parallel.collector_num=2", *args, config=PPO, mode="parallel")

    # the test CLI runs 2 envs per collector: a round of 4 unrolls, not PPO's collection of 8
    assert_user_error(train(), "policy.collect.n_sample=8", "env.collector_env_num=4 or parallel.collector_num=4")
    assert_user_error(train("--set", "env.collector_env_num=4", "--set", "parallel.sync=False"),
                      "parallel.sync=False", "on-policy", "remove the key")
    assert_user_error(train("--set", "env.collector_env_num=4", "--set", "parallel.max_staleness=2"),
                      "parallel.max_staleness=2", "set 0")
    assert_user_error(train("--set", "env.collector_env_num=4", "--set", "parallel.weight_sync_freq=2"),
                      "parallel.weight_sync_freq=2", "once per round")
    assert_user_error(train("--set", "env.collector_env_num=4", "--backend", "ray", "--set",
                            "parallel.segments_per_call=2"), "parallel.segments_per_call=2", "one segment per collector")
    assert_user_error(train("--set", "parallel.sync=1"), "parallel.sync=1", "True, False or None")
    assert not os.listdir(in_tmp)  # nothing was started


def test_ppo_with_the_core_and_normalize_obs_trains_on_policy_in_rounds_and_after_resume(in_tmp, monkeypatch):
    """The LSTM core in synchronous rounds: each collector process carries its envs' states across rounds and
    stores each unroll's initial state; the learner replays the round from those states with the weights and
    observation statistics the collectors acted with, so every update's (only) minibatch is on-policy (approximate
    KL 0, nothing clipped), also after ``resume`` (weights and statistics from ckpt_last, new episodes)."""
    from ding_lite.policy import PPOPolicy

    overrides = {**TWO, "policy.model.core": "lstm", "policy.model.core_size": 16, "env.normalize_obs": True,
                 "policy.unroll_len": 16, "policy.learn.epochs": 1, "policy.learn.minibatch_size": 10_000,
                 "policy.learn.clip_ratio": 1e-4, "policy.eval.evaluator.eval_freq": 1000}
    seen = []
    update = PPOPolicy._update

    def spy(self, mb):
        out = update(self, mb)
        seen.append((mb["core_state"].shape, float(out["approx_kl"]), float(out["clip_fraction"])))
        return out

    monkeypatch.setattr(PPOPolicy, "_update", spy)  # the learner runs in this process
    rounds = 4
    for resume in (False, True):
        result = parallel_pipeline(read_config_file(PPO), 0, max_env_step=rounds * 8 * 16 * (1 + resume),
                                   overrides=overrides, resume=resume, quiet=True)
        stats = result["parallel"]
        assert stats["policy_lag"]["max"] == 0 and stats["dropped_stale"] == 0 and stats["restarts"] == {}
        assert result["train_iter"] == rounds * (1 + resume) == len(seen), (result, seen)
    assert all(shape == (8, 4, 16) for shape, _, _ in seen), seen  # 8 unrolls, the actor's and critic's states
    assert all(abs(kl) < 1e-5 and clipped == 0.0 for _, kl, clipped in seen), seen
