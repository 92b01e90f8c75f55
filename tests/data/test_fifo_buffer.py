"""The 'fifo' buffer of IMPALA and APPO: every sample trained on exactly max_use times, never twice in one batch,
oldest first, so that in a serial run's balanced flow a sample's age is below update_per_collect updates."""
import random
from collections import Counter

import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.data import FIFOBuffer, ReplayBuffer
from ding_lite.utils import BUFFER_REGISTRY, ConfigError


def ids(a, b):
    return {"id": torch.arange(a, b), "obs": torch.arange(a, b).float().view(-1, 1).repeat(1, 3)}


def fifo(size=64, max_use=2, seed=0, **kw):
    return FIFOBuffer(dict(replay_buffer_size=size, max_use=max_use, **kw), seed=seed)


def test_registered_and_refuses_settings_it_cannot_honour():
    assert BUFFER_REGISTRY.get("fifo") is FIFOBuffer
    with pytest.raises(ConfigError, match=r"max_use=inf: the 'fifo' buffer .* replay_buffer.type='columnar'"):
        FIFOBuffer(dict(max_use=float("inf")))
    with pytest.raises(ConfigError, match="replacement=True: the 'fifo' buffer never draws a sample twice"):
        FIFOBuffer(dict(max_use=2, replacement=True))


@pytest.mark.parametrize("max_use", [1, 2, 3])
def test_every_sample_is_used_exactly_max_use_times_and_never_twice_in_a_batch(max_use):
    rng = random.Random(max_use)
    buf, uses, next_id, it = fifo(size=10_000, max_use=max_use, seed=max_use), Counter(), 0, 0
    for _ in range(60):  # pushes of uneven size, batches of uneven size
        n = rng.randint(1, 40)
        buf.push(ids(next_id, next_id + n), 0, collect_iter=it)
        next_id += n
        while True:
            batch = buf.sample(rng.randint(1, 24), it)
            if batch is None:
                break
            got = batch["id"].tolist()
            assert len(got) == len(set(got)), f"a sample twice in one batch: {got}"
            assert batch["obs"][:, 0].long().tolist() == got  # the rows are the samples' own
            uses.update(got)
            it += 1
    while (batch := buf.sample(24, it, min_valid=1)) is not None:  # drain what is left
        got = batch["id"].tolist()
        assert len(got) == len(set(got))
        uses.update(got)
    assert len(buf) == 0 and buf.queued() == 0
    assert set(uses) == set(range(next_id)) and set(uses.values()) == {max_use}


def test_a_balanced_serial_flow_trains_each_sample_in_the_updates_right_after_its_collection():
    """n_sample * max_use == update_per_collect * batch_size: ages 0 .. update_per_collect - 1, each sample used up
    before the next collection (what a serial run's collect-then-train loop does)."""
    n_sample, max_use, batch, updates = 32, 2, 16, 4
    buf, it, ages = fifo(size=256, max_use=max_use), 0, []
    for c in range(20):
        buf.push(ids(c * n_sample, (c + 1) * n_sample), 0, collect_iter=it)
        for _ in range(updates):
            got = buf.sample(batch, it)["id"]
            assert ((got // n_sample) == c).all(), "a batch from an older collection"
            ages.append(buf.last_batch_age)
            it += 1
        assert len(buf) == 0
    assert {max_age for _, max_age in ages} == {0, 1, 2, 3}
    assert max(mean for mean, _ in ages) == updates - 1


def test_each_pass_is_a_fresh_permutation_not_the_same_batches_again():
    buf = fifo(size=64, max_use=2, seed=3)
    buf.push(ids(0, 32), 0)
    batches = [tuple(sorted(buf.sample(16, 0)["id"].tolist())) for _ in range(4)]
    assert sorted(x for b in batches[:2] for x in b) == list(range(32))  # pass 1 covers every sample once
    assert sorted(x for b in batches[2:] for x in b) == list(range(32))  # so does pass 2
    assert set(batches[:2]) != set(batches[2:]), "pass 2 split the samples into the same two batches"


def test_when_the_learner_falls_behind_the_oldest_samples_are_overwritten_and_the_lag_stays_bounded():
    """Inflow 3x what the updates take: pushes overwrite the oldest (unused) samples, so a batch is at most
    capacity * max_use / batch_size updates behind the newest collection."""
    cap, max_use, batch = 48, 2, 16
    buf, it = fifo(size=cap, max_use=max_use), 0
    for c in range(30):
        buf.push(ids(c * 24, (c + 1) * 24), 0, collect_iter=it)
        got = buf.sample(batch, it)["id"]
        assert (got >= (c + 1) * 24 - cap).all(), "a sample older than the capacity"
        it += 1
    assert buf.overwritten > 0
    assert buf.last_batch_age[1] <= cap * max_use // batch


def test_stale_samples_are_skipped():
    buf = fifo(size=64, max_use=2, max_staleness=1)
    buf.push(ids(0, 8), 0, collect_iter=0)
    buf.push(ids(8, 16), 0, collect_iter=5)
    assert sorted(buf.sample(8, 5)["id"].tolist()) == list(range(8, 16))  # iter 0's are 5 > 1 updates old


def test_same_seed_same_batches():
    def draws(seed):
        buf, out = fifo(seed=seed), []
        for c in range(4):
            buf.push(ids(c * 16, c * 16 + 16), 0)
            out += [buf.sample(8, c)["id"].tolist() for _ in range(4)]
        return out
    assert draws(1) == draws(1) and draws(1) != draws(2)


def test_the_columnar_buffer_reports_its_batch_age_too():
    buf = ReplayBuffer(dict(replay_buffer_size=16), seed=0)
    buf.push(ids(0, 4), 0, collect_iter=2)
    buf.push(ids(4, 8), 0, collect_iter=7)
    got = buf.sample(64, 10, min_valid=1)["id"]
    mean, oldest = buf.last_batch_age
    assert oldest == 8 and mean == pytest.approx(((got < 4).float() * 8 + (got >= 4).float() * 3).mean().item())


@pytest.mark.parametrize("policy", ["impala", "appo"])
def test_impala_and_appo_default_to_the_fifo_buffer_and_columnar_stays_available(policy):
    main = dict(env=dict(env_id="CartPole-v1"), policy=dict())
    create = dict(policy=dict(type=policy))
    cfg = compile_config(main, create)
    assert cfg.policy.other.replay_buffer.type == "fifo"
    learn, buffer = cfg.policy.learn, cfg.policy.other.replay_buffer
    assert cfg.policy.collect.n_sample * buffer.max_use == learn.update_per_collect * learn.batch_size  # balanced
    main["policy"] = dict(other=dict(replay_buffer=dict(type="columnar", max_use=16)))
    assert compile_config(main, create).policy.other.replay_buffer.type == "columnar"
