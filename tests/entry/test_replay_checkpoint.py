"""The replay buffer in checkpoints (policy.other.replay_buffer.save_replay_buffer): its content round-trips exactly
(columns, bookkeeping, priorities, the sampling generator), and a SAC run resumed with --resume continues with it."""
import os

import numpy as np
import pytest
import torch

from ding_lite.data import FIFOBuffer, ReplayBuffer
from ding_lite.data.buffer_io import buffer_content, load_buffer_content
from ding_lite.data.prioritized import PrioritizedReplayBuffer
from ding_lite.utils import UserError
from ding_lite.run.checkpoint import REPLAY_BUFFER_FILE

from entry_helpers import REPO, assert_trees_equal, load_ckpt, read_result

PENDULUM = os.path.join(REPO, "dizoo_configs", "pendulum_sac.py")


def data(ids):
    ids = torch.as_tensor(ids)
    return {"id": ids.clone(), "obs": {"x": ids.float().unsqueeze(-1).repeat(1, 3)},
            "frame": (ids % 256).to(torch.uint8).view(-1, 1, 1).repeat(1, 4, 4)}


@pytest.mark.parametrize("kind", ["columnar", "prioritized", "fifo"])
def test_content_round_trips_and_sampling_continues_identically(kind, tmp_path):
    prioritized = kind == "prioritized"

    def make():
        kw = dict(max_use=3, max_staleness=50)
        if prioritized:
            return PrioritizedReplayBuffer(dict(replay_buffer_size=40, **kw), seed=7, IS_weight=True)
        return (FIFOBuffer if kind == "fifo" else ReplayBuffer)(dict(replay_buffer_size=40, **kw), seed=7)

    a = make()
    for i in range(6):  # wraps the ring; some items used up
        a.push(data(range(i * 9, i * 9 + 9)), 0, collect_iter=i)
        a.sample(8, i)
        if prioritized:
            a.update_priority(a.last_index, torch.rand(8) * 3)
    path = tmp_path / "buf.pth"
    torch.save(buffer_content(a), path)
    b = make()
    load_buffer_content(b, torch.load(path, weights_only=True))
    assert len(a) == len(b) and a.stats() == b.stats()
    assert np.array_equal(a._live[:len(a)], b._live[:len(b)])
    if kind == "fifo":  # the queue of uses still to make, in its order
        assert a.queued() == b.queued() > 0
    if prioritized:
        assert np.array_equal(a.priorities(), b.priorities())
    for it in range(6, 12):  # the same draws from the same items, removals included
        x, y = a.sample(8, it, min_valid=1), b.sample(8, it, min_valid=1)
        assert_trees_equal(x, y, f"sample at {it}")
        if prioritized:
            p = torch.rand(8)
            a.update_priority(a.last_index, p)
            b.update_priority(b.last_index, p)


def test_content_of_another_capacity_or_priority_setting_is_refused():
    a = ReplayBuffer(dict(replay_buffer_size=10), seed=0)
    a.push(data(range(4)), 0)
    with pytest.raises(UserError, match="capacity 10"):
        load_buffer_content(ReplayBuffer(dict(replay_buffer_size=11)), buffer_content(a))
    with pytest.raises(UserError, match="prioritised"):
        load_buffer_content(PrioritizedReplayBuffer(dict(replay_buffer_size=10)), buffer_content(a))
    with pytest.raises(UserError, match="saved by a ReplayBuffer buffer, this config builds a FIFOBuffer"):
        load_buffer_content(FIFOBuffer(dict(replay_buffer_size=10, max_use=2)), buffer_content(a))


@pytest.mark.slow
def test_sac_run_saves_its_buffer_and_resume_continues_with_it(cli, in_tmp):
    args = ["--set", "policy.random_collect_size=200", "--set", "policy.learn.batch_size=32",
            "--set", "policy.other.replay_buffer.save_replay_buffer=True", "--set", "policy.priority=True",
            "--set", "policy.priority_IS_weight=True", "--set", "policy.eval.evaluator.eval_freq=100000",
            "--set", "env.stop_value=None", "--exp-name", "r"]
    res = cli.train(*args, config=PENDULUM, env_step=400)
    assert res.exit_code == 0, res.output
    run = in_tmp / "r_seed0"
    saved = load_ckpt(run / "ckpt" / REPLAY_BUFFER_FILE)
    last = load_ckpt(run / "ckpt" / "ckpt_last.pth.tar")
    assert saved["counters"] == {k: last["counters"][k] for k in ("train_iter", "env_step")}
    content = saved["buffer"]
    assert content["n"] == 400 and content["type"] == "PrioritizedReplayBuffer"
    assert len(set(content["priorities"].tolist())) > 10  # priorities set from TD errors, not all at the max
    # Resume with nothing left to do: the buffer is loaded and written back unchanged.
    res = cli.train(*args, "--resume", config=PENDULUM, env_step=400)
    assert res.exit_code == 0, res.output
    again = load_ckpt(run / "ckpt" / REPLAY_BUFFER_FILE)
    assert_trees_equal(saved["buffer"], again["buffer"], "buffer after a resume")
    # Resume and train on: SAC continues with its 400 samples (no second warm-up) and adds 200.
    res = cli.train(*args, "--resume", config=PENDULUM, env_step=600)
    assert res.exit_code == 0, res.output
    result = read_result(run)
    assert result["env_step"] == 600 and result["train_iter"] > last["counters"]["train_iter"] + 150
    final = load_ckpt(run / "ckpt" / REPLAY_BUFFER_FILE)["buffer"]
    assert final["n"] == 600
    torch.testing.assert_close(final["columns"][0][:400], content["columns"][0])  # the first 400 kept as they were
    log = (run / "log" / "train.log").read_text()
    assert "replay buffer: 400 samples loaded" in log and log.count("warm-up:") == 1  # no second warm-up


def test_a_resume_without_the_saved_buffer_says_that_it_starts_empty(cli, in_tmp):
    """SAC resumed without save_replay_buffer trains on its new samples only (no second warm-up): the log says so and
    names the key. PPO, whose buffer never holds samples past an update (max_staleness=0), has nothing to say."""
    args = ["--set", "policy.random_collect_size=200", "--set", "policy.learn.batch_size=32",
            "--set", "policy.eval.evaluator.eval_freq=100000", "--set", "env.stop_value=None", "--exp-name", "s"]
    for env_step, resume in ((300, []), (400, ["--resume"])):
        res = cli.train(*args, *resume, config=PENDULUM, env_step=env_step)
        assert res.exit_code == 0, res.output
    log = (in_tmp / "s_seed0" / "log" / "train.log").read_text()
    assert "replay buffer: starting empty" in log and "save_replay_buffer=True" in log, log
    assert read_result(in_tmp / "s_seed0")["env_step"] == 400
    ppo = os.path.join(REPO, "dizoo_configs", "cartpole_ppo.py")
    for env_step, resume in ((512, []), (1024, ["--resume"])):
        res = cli.train("--exp-name", "p", *resume, config=ppo, env_step=env_step)
        assert res.exit_code == 0, res.output
    log = (in_tmp / "p_seed0" / "log" / "train.log").read_text()
    assert "resuming from" in log and "replay buffer" not in log, log
