"""SharedWeights: versioned, never-blocking weight exchange through shared memory."""
import pytest
import torch
import torch.multiprocessing as tmp

from ding_lite.parallel.weights import SharedWeights, cpu_state


def _template():
    return {"w": torch.zeros(3, 2), "b": torch.zeros(2), "steps": torch.tensor(0)}


def _child_read(slot: SharedWeights, out) -> None:
    got = slot.read_if_newer(-1)
    out.put(None if got is None else (got[0], got[1]["w"].sum().item(), int(got[1]["steps"])))


def test_read_only_newer_complete_versions():
    slot = SharedWeights(_template(), tmp.get_context("spawn"))
    assert slot.version == -1 and slot.read_if_newer(-1) is None
    slot.write(0, {"w": torch.ones(3, 2), "b": torch.full((2,), 2.0), "steps": torch.tensor(7)})
    version, state = slot.read_if_newer(-1)
    assert version == 0 and torch.equal(state["w"], torch.ones(3, 2)) and int(state["steps"]) == 7
    assert slot.read_if_newer(0) is None  # nothing newer than what the reader has
    state["w"].add_(5)  # the copy is private: the slot is untouched
    assert torch.equal(slot.read_if_newer(-1)[1]["w"], torch.ones(3, 2))


def test_a_read_during_a_write_is_discarded():
    slot = SharedWeights(_template(), tmp.get_context("spawn"))
    slot.write(3, _template())
    slot._seq.value += 1  # a writer is mid-copy
    assert slot.read_if_newer(-1) is None
    slot._seq.value += 1
    assert slot.read_if_newer(-1)[0] == 3


def test_cpu_state_copies_and_detaches():
    p = torch.nn.Parameter(torch.ones(2))
    state = cpu_state({"p": p})
    assert not state["p"].requires_grad and state["p"].data_ptr() != p.data_ptr()


@pytest.mark.slow
def test_a_spawned_process_reads_what_the_parent_writes_later():
    ctx = tmp.get_context("spawn")
    slot = SharedWeights(_template(), ctx)
    slot.write(4, {"w": torch.full((3, 2), 0.5), "b": torch.zeros(2), "steps": torch.tensor(11)})  # after creation
    out = ctx.Queue()
    child = ctx.Process(target=_child_read, args=(slot, out))
    child.start()
    assert out.get(timeout=60) == (4, 3.0, 11)
    child.join(10)
    assert child.exitcode == 0
