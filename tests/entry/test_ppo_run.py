"""PPO through the CLI: its learner values reach TensorBoard, and ``--resume`` of a PPO run continues from ckpt_last (model, Adam state, RNG, counters) and, being on-policy,
trains only on unrolls collected with the weights of the moment, also when the buffer is saved with the checkpoint
(what it holds then is a collection's left-over unrolls, dropped as stale before the first update)."""
import copy
import math
import os

import pytest
import torch

from ding_lite.entry.run_checkpoints import RunCheckpoints
from ding_lite.policy import PPOPolicy
from ding_lite.run.checkpoint import REPLAY_BUFFER_FILE

from entry_helpers import REPO, all_scalars, assert_trees_equal, load_ckpt, read_result

CARTPOLE_PPO = os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py")
# 3 envs x 16 steps per collection (3 unrolls, 2 trained on: one left over each time), an update per 48 env steps;
# the buffer saved with each checkpoint.
ARGS = ["--set", "env.collector_env_num=3", "--set", "policy.unroll_len=16", "--set", "policy.collect.n_sample=2",
        "--set", "policy.learn.batch_size=2", "--set", "policy.other.replay_buffer.replay_buffer_size=4",
        "--set", "policy.other.replay_buffer.save_replay_buffer=True", "--set", "env.stop_value=None",
        "--set", "policy.eval.evaluator.eval_freq=1000", "--set", "torch_threads=1", "--exp-name", "ppo"]


def test_resume_continues_and_trains_only_on_fresh_unrolls(cli, in_tmp, monkeypatch):
    res = cli.train(*ARGS, config=CARTPOLE_PPO, env_step=480)
    assert res.exit_code == 0, res.output
    run = in_tmp / "ppo_seed0"
    first, last = read_result(run), load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    saved = load_ckpt(run / "ckpt" / REPLAY_BUFFER_FILE)["buffer"]
    assert 0 < saved["n"] < 2, "expected the checkpoint's buffer to hold the last collection's left-over unroll"

    restored, gaps = {}, []
    original_restore, forward_learn = RunCheckpoints.restore, PPOPolicy._forward_learn

    def spy_restore(self, path, state):
        out = original_restore(self, path, state)
        restored["policy"] = copy.deepcopy(self.policy.learn_mode.state_dict())  # live tensors
        restored["counters"] = (self.learner.train_iter, self.counters.env_step)
        return out

    def on_policy_learn(self, data):
        # V(x_t) recorded at collection equals the current critic's: the batch was collected with these weights.
        with torch.no_grad():
            now = self._model(data["obs"].flatten(0, 1), mode="compute_critic")["value"]
        gaps.append((now - data["value"].flatten(0, 1)).abs().max().item())
        return forward_learn(self, data)

    monkeypatch.setattr(RunCheckpoints, "restore", spy_restore)
    monkeypatch.setattr(PPOPolicy, "_forward_learn", on_policy_learn)
    res = cli.train(*ARGS, "--resume", config=CARTPOLE_PPO, env_step=960)
    assert res.exit_code == 0, res.output

    assert_trees_equal(restored["policy"], last["policy"], "policy state after resume")
    assert restored["policy"]["optimizer"]["state"], "the Adam moments were not restored"
    assert restored["counters"] == (first["train_iter"], first["env_step"])
    second = read_result(run)
    assert second["env_step"] >= 960 and second["train_iter"] - first["train_iter"] == len(gaps) >= 9
    assert max(gaps) < 1e-5, gaps  # a left-over unroll replayed after the resume would differ
    log = (run / "log" / "train.log").read_text()
    assert "replay buffer: 1 samples loaded" in log


def test_ppo_learner_values_reach_tensorboard(cli, in_tmp):
    """Every value PPO logs is a TensorBoard scalar on the train_iter axis (the trackers mirror these scalars,
    tests/run/test_trackers.py), with values that mean what they say."""
    res = cli.train(*ARGS, "--set", "policy.learn.learner.hook.log_show_after_iter=1", "--set",
                    "policy.learn.epochs=3", config=CARTPOLE_PPO, env_step=480)
    assert res.exit_code == 0, res.output
    scalars = all_scalars(in_tmp / "ppo_seed0")
    if not scalars:
        pytest.skip("neither tensorboard nor tensorboardX.proto can read events files here")
    values = {}
    for tag, _, value in scalars:
        values.setdefault(tag, []).append(value)
    names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance", "epochs",
             "grad_norm", "cur_lr")
    missing = [n for n in names if f"learner/{n}" not in values]
    assert not missing, sorted(values)
    assert all(math.isfinite(v) for n in names for v in values[f"learner/{n}"])
    assert set(values["learner/epochs"]) == {3.0}  # no target_kl: every epoch runs
    assert all(0 <= v <= 1 for v in values["learner/clip_fraction"])
    assert all(v > 0 for v in values["learner/entropy"]) and all(v >= 0 for v in values["learner/value_loss"])
