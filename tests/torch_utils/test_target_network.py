"""polyak_update: the soft target update of SAC's target critics and ACER's average actor."""
import math

import pytest
import torch

from ding_lite.torch_utils import polyak_update


def test_polyak_update():
    torch.manual_seed(1)
    net, target = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    online = [p.detach().clone() for p in net.parameters()]
    before = [p.detach().clone() for p in target.parameters()]
    polyak_update(target.parameters(), net.parameters(), 0.25)
    for t, b, o in zip(target.parameters(), before, online):
        for idx in range(t.numel()):
            ref = 0.75 * b.flatten()[idx].item() + 0.25 * o.flatten()[idx].item()
            assert math.isclose(t.detach().flatten()[idx].item(), ref, rel_tol=1e-6, abs_tol=1e-7)
        assert t.grad is None and t.requires_grad
    for p, o in zip(net.parameters(), online):  # the online network is untouched
        assert torch.equal(p.detach(), o)
    snapshot = [p.detach().clone() for p in target.parameters()]
    polyak_update(target.parameters(), net.parameters(), 0.0)
    assert all(torch.equal(t.detach(), s) for t, s in zip(target.parameters(), snapshot))
    polyak_update(target.parameters(), net.parameters(), 1.0)
    assert all(torch.equal(t.detach(), o) for t, o in zip(target.parameters(), online))
    with pytest.raises(ValueError):
        polyak_update(target.parameters(), net.parameters(), 1.5)
    with pytest.raises(ValueError):
        polyak_update(list(target.parameters())[:1], net.parameters(), 0.5)
