"""Rules of the columnar ReplayBuffer: ring capacity, max_use, max_staleness, structure and reproducibility."""
import random
from collections import Counter

import pytest
import torch

from ding_lite.data import ReplayBuffer
from ding_lite.utils import BUFFER_REGISTRY, ConfigError

T = 4


def make(ids, t=T):
    """Batched unrolls whose every leaf encodes the sample id, so a gathered row can be checked per item."""
    ids = torch.as_tensor(ids, dtype=torch.int64)
    n = ids.numel()
    base = ids.view(n, 1).expand(n, t)
    return {
        "id": ids.clone(),
        "obs": base.unsqueeze(-1).float() * 10 + torch.arange(3).float(),  # (N, T, 3)
        "info": {"a": base.clone(), "b": {"c": (ids.view(n, 1, 1).expand(n, 2, 2) % 2 == 0).clone()}},
    }


def buffer(size=8, seed=0, **kw):
    return ReplayBuffer(dict(replay_buffer_size=size, **kw), seed=seed)


def drawn_ids(buf, draws=256, it=0):
    batch = buf.sample(draws, it, min_valid=1)
    return set(batch["id"].tolist())


def check_invariants(buf):
    live = buf._live[:len(buf)]
    assert sorted(live.tolist()) == buf._valid.nonzero()[0].tolist()
    assert buf._pos[live].tolist() == list(range(len(buf)))


def test_registered_and_defaults():
    assert BUFFER_REGISTRY.get("columnar") is ReplayBuffer
    cfg = ReplayBuffer.default_config()
    assert cfg.replay_buffer_size == 1000 and cfg.max_use == float("inf") and cfg.max_staleness == float("inf")


@pytest.mark.parametrize("key,value", [("replay_buffer_size", 0), ("replay_buffer_size", 2.5), ("max_use", 0),
                                       ("max_use", 1.5), ("max_staleness", -1)])
def test_check_config_names_path(key, value):
    cfg = ReplayBuffer.default_config()
    cfg[key] = value
    with pytest.raises(ConfigError, match=f"policy.other.replay_buffer.{key}"):
        ReplayBuffer.check_config(cfg, "policy.other.replay_buffer")


def test_capacity_overwrites_oldest_with_wraparound():
    buf = buffer(size=4)
    buf.push(make([0, 1, 2]), cur_collector_envstep=3)
    buf.push(make([3, 4, 5]), cur_collector_envstep=6)  # wraps: slots 3, 0, 1
    assert len(buf) == 4 and buf.count() == 4
    assert drawn_ids(buf) == {2, 3, 4, 5}
    assert buf._cols[0].tolist() == [4, 5, 2, 3]  # written in place, ring order
    assert buf.stats()["overwritten"] == 2 and buf.push_count == 6
    check_invariants(buf)


def test_push_larger_than_capacity_keeps_last():
    buf = buffer(size=4)
    buf.push(make([0]), 1)
    buf.push(make(range(1, 11)), 11)
    assert len(buf) == 4 and drawn_ids(buf) == {7, 8, 9, 10}
    assert buf.stats()["overwritten"] == 7  # 6 never fit + id 0 replaced


def test_max_use_removes_after_exactly_k_uses():
    buf = buffer(size=8, max_use=2)
    buf.push(make(range(5)), 5)
    uses = Counter()
    while (batch := buf.sample(1, 0)) is not None:
        uses.update(batch["id"].tolist())
        check_invariants(buf)
    assert uses == {i: 2 for i in range(5)}
    assert len(buf) == 0 and buf.stats()["removed_by_max_use"] == 5


@pytest.mark.parametrize("max_use", [3, 2])
def test_duplicate_in_one_batch_counts_twice(max_use):
    buf = buffer(size=4, max_use=max_use)
    buf.push(make([7]), 1)
    batch = buf.sample(3, 0, min_valid=1)
    assert batch["id"].tolist() == [7, 7, 7]  # all returned even when max_use < 3
    assert len(buf) == 0 and buf.sample(1, 0) is None
    assert buf.stats()["removed_by_max_use"] == 1


def test_duplicate_below_max_use_stays():
    buf = buffer(size=4, max_use=4)
    buf.push(make([7]), 1)
    assert buf.sample(3, 0, min_valid=1) is not None and len(buf) == 1
    assert buf.sample(1, 0)["id"].tolist() == [7] and len(buf) == 0


def test_max_staleness_drops_old_items():
    buf = buffer(size=8, max_staleness=3)
    buf.push(make([0, 1, 2]), 3, collect_iter=0)
    buf.push(make([3, 4]), 5, collect_iter=5)
    assert drawn_ids(buf, it=3) == {0, 1, 2, 3, 4}  # age 3 == max_staleness: kept
    assert drawn_ids(buf, it=6) == {3, 4}  # age 6 > 3: dropped
    assert len(buf) == 2 and buf.stats()["removed_by_staleness"] == 3
    assert buf.sample(1, 8) is not None and buf.sample(1, 9) is None
    check_invariants(buf)


def test_sample_returns_none_when_too_few():
    buf = buffer(size=8)
    assert buf.sample(1, 0) is None
    buf.push(make([0, 1]), 2)
    assert buf.sample(3, 0) is None  # fewer valid items than batch_size
    assert buf.sample(2, 0)["id"].shape == (2,)
    assert buf.sample(3, 0, min_valid=2)["id"].shape == (3,)
    assert buf.sample(1, 0, min_valid=3) is None


def test_nested_round_trip_per_item():
    buf = buffer(size=16)
    pushed = make(range(10))
    buf.push(pushed, 10)
    batch = buf.sample(32, 0, min_valid=1)
    assert batch.keys() == pushed.keys() and batch["info"]["b"].keys() == {"c"}
    assert batch["obs"].shape == (32, T, 3) and batch["info"]["b"]["c"].dtype == torch.bool
    for row, i in enumerate(batch["id"].tolist()):
        assert torch.equal(batch["obs"][row], pushed["obs"][i])
        assert torch.equal(batch["info"]["a"][row], pushed["info"]["a"][i])
        assert torch.equal(batch["info"]["b"]["c"][row], pushed["info"]["b"]["c"][i])


def test_list_of_dicts_push_matches_batched():
    batched = make(range(3))
    items = [{"id": batched["id"][i], "obs": batched["obs"][i],
              "info": {"a": batched["info"]["a"][i], "b": {"c": batched["info"]["b"]["c"][i]}}} for i in range(3)]
    a, b = buffer(seed=1), buffer(seed=1)
    a.push(batched, 3)
    b.push(items, 3)
    x, y = a.sample(5, 0, min_valid=1), b.sample(5, 0, min_valid=1)
    assert torch.equal(x["obs"], y["obs"]) and torch.equal(x["info"]["b"]["c"], y["info"]["b"]["c"])


def test_seed_reproducibility_and_state_dict():
    def run(seed):
        buf = buffer(size=32, seed=seed)
        buf.push(make(range(20)), 20)
        return buf, [buf.sample(8, 0)["id"] for _ in range(3)]

    (buf, first), (_, again), (_, other) = run(3), run(3), run(4)
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert not all(torch.equal(x, y) for x, y in zip(first, other))
    state = buf.state_dict()
    nxt = buf.sample(8, 0)["id"]
    buf.load_state_dict(state)
    assert torch.equal(buf.sample(8, 0)["id"], nxt) and buf.stats()["sample_calls"] == 4


def test_seed_none_follows_global_seed():
    torch.manual_seed(5)
    a = ReplayBuffer(dict(replay_buffer_size=8))
    torch.manual_seed(5)
    b = ReplayBuffer(dict(replay_buffer_size=8))
    for buf in (a, b):
        buf.push(make(range(8)), 8)
    assert torch.equal(a.sample(16, 0, min_valid=1)["id"], b.sample(16, 0, min_valid=1)["id"])


def test_structure_shape_and_dtype_errors_name_the_leaf():
    buf = buffer()
    buf.push(make([0]), 1)
    bad = make([1])
    bad["info"]["a"] = torch.zeros(1, T + 1, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"'info\.a'.*\(N, \*\(4,\)\).*\(1, 5\)"):
        buf.push(bad, 2)
    bad = make([1])
    bad["obs"] = bad["obs"].double()
    with pytest.raises(ValueError, match=r"'obs'.*float32.*float64"):
        buf.push(bad, 2)
    bad = make([1])
    del bad["info"]["b"]
    with pytest.raises(ValueError, match=r"missing leaves \['info\.b\.c'\]"):
        buf.push(bad, 2)
    with pytest.raises(ValueError, match="same leading batch dim"):
        buf.push({"id": torch.zeros(2, dtype=torch.int64), "obs": torch.zeros(3, T, 3)}, 2)
    assert len(buf) == 1  # failed pushes store nothing


def test_key_order_does_not_matter():
    buf = buffer()
    buf.push(make([0]), 1)
    reordered = dict(reversed(list(make([1]).items())))
    buf.push(reordered, 2)
    assert drawn_ids(buf) == {0, 1}


def test_batch_does_not_alias_storage():
    buf = buffer(size=4)
    buf.push(make([0]), 1)
    batch = buf.sample(2, 0, min_valid=1)
    col_ptrs = {c.untyped_storage().data_ptr() for c in buf._cols}
    assert all(v.untyped_storage().data_ptr() not in col_ptrs for v in (batch["obs"], batch["info"]["a"]))
    batch["obs"].fill_(-1)
    assert buf.sample(1, 0)["obs"].min() >= 0


def test_clear_and_stats():
    buf = buffer(size=4)
    buf.push(make(range(3)), 3)
    buf.sample(2, 0)
    stats = buf.stats()
    assert stats["size"] == 3 and stats["pushed"] == 3 and stats["sampled"] == 2 and buf.sample_count == 2
    buf.clear()
    assert len(buf) == 0 and buf.sample(1, 0) is None
    buf.push(make([9]), 4)
    assert drawn_ids(buf) == {9}


def test_random_ops_keep_bookkeeping_consistent():
    rng = random.Random(0)
    buf = buffer(size=16, max_use=3, max_staleness=4, seed=2)
    it = next_id = 0
    for _ in range(300):
        if rng.random() < 0.4:
            n = rng.randint(1, 20)
            buf.push(make(range(next_id, next_id + n)), next_id, collect_iter=it)
            next_id += n
        else:
            it += rng.randint(0, 1)
            batch = buf.sample(rng.randint(1, 6), it)
            if batch is not None:
                assert (batch["id"] >= next_id - 16).all()
        check_invariants(buf)
        assert len(buf) <= 16


def test_without_replacement_a_whole_buffer_batch_is_a_permutation():
    """replacement=False (PPO's on-policy batches): a batch of the whole content holds every item exactly once, in an
    order that changes from batch to batch; a smaller batch holds distinct items."""
    buf = buffer(size=16, replacement=False)
    orders = set()
    for _ in range(5):
        buf.push(make(range(10)), 10)
        ids = buf.sample(10, 0)["id"].tolist()
        assert sorted(ids) == list(range(10))
        orders.add(tuple(ids))
        buf.clear()
    assert len(orders) > 1
    buf.push(make(range(10)), 10)
    for _ in range(20):
        ids = buf.sample(6, 0)["id"].tolist()
        assert len(set(ids)) == 6
    assert buf.sample(11, 0) is None
    assert sorted(buf.sample(20, 0, min_valid=1)["id"].tolist()) == list(range(10))  # fewer rows, all distinct


def test_without_replacement_and_max_use_1_empties_the_buffer_in_one_batch():
    buf = buffer(size=8, replacement=False, max_use=1)
    buf.push(make(range(8)), 8)
    assert sorted(buf.sample(8, 0)["id"].tolist()) == list(range(8))
    assert len(buf) == 0 and buf.sample(1, 0, min_valid=1) is None
    check_invariants(buf)


def test_replacement_must_be_a_bool():
    cfg = ReplayBuffer.default_config()
    assert cfg.replacement is True
    cfg.replacement = 0
    with pytest.raises(ConfigError, match="policy.other.replay_buffer.replacement"):
        ReplayBuffer.check_config(cfg, "policy.other.replay_buffer")
