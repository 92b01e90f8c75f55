"""grad_norm and GradClipper: the global gradient norm before clipping, as a 0-dim tensor, whether clipping is on or
off (the learner checks it for NaN and infinity), and the clipping itself."""
import math

import pytest
import torch

from ding_lite.torch_utils import GradClipper, grad_norm


def params_with_grads(*grads):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros_like(g))
        p.grad = g.clone()
        params.append(p)
    return params + [torch.nn.Parameter(torch.zeros(2))]  # one without a gradient: skipped


def test_grad_norm_is_the_global_l2_norm_and_skips_missing_gradients():
    params = params_with_grads(torch.tensor([3.0, 0.0]), torch.tensor([[4.0]]))
    norm = grad_norm(params)
    assert isinstance(norm, torch.Tensor) and norm.dim() == 0 and float(norm) == 5.0
    assert float(grad_norm([torch.nn.Parameter(torch.ones(1))])) == 0.0


@pytest.mark.parametrize("clip_type, after", [(None, [3.0, 4.0]), ("clip_value", [1.0, 1.0]),
                                              ("clip_norm", [0.6, 0.8])])
def test_clipper_returns_the_norm_before_clipping(clip_type, after):
    params = params_with_grads(torch.tensor([3.0, 4.0]))
    norm = GradClipper(clip_type, 1.0)(params)
    assert isinstance(norm, torch.Tensor) and float(norm) == pytest.approx(5.0)
    torch.testing.assert_close(params[0].grad, torch.tensor(after))


@pytest.mark.parametrize("clip_type", [None, "clip_value", "clip_norm"])
def test_a_non_finite_gradient_gives_a_non_finite_norm(clip_type):
    params = params_with_grads(torch.tensor([1.0, float("inf")]), torch.tensor([float("nan")]))
    assert not math.isfinite(float(GradClipper(clip_type, 1.0)(params)))


@pytest.mark.parametrize("clip_type", [None, "clip_norm", "clip_value"])
def test_no_gradient_gives_a_zero_norm_on_the_parameters_device(clip_type):
    """A zero made on the CPU would be one more device -> host transfer in a GPU update (issue 25); 'meta' stands in."""
    params = [torch.nn.Parameter(torch.ones(3, device="meta"))]
    assert grad_norm(params).device.type == "meta"
    assert GradClipper(clip_type, 1.0)(params).device.type == "meta"


def test_adam_is_fused_only_where_torch_has_the_kernel():
    """torch checks a fused optimizer's devices at its first step only: make_optimizer checks them up front."""
    from ding_lite.torch_utils import make_optimizer
    assert make_optimizer("adam", [torch.nn.Parameter(torch.ones(3))], 0.1).defaults["fused"]
    meta = make_optimizer("adam", [{"params": [torch.nn.Parameter(torch.ones(3, device="meta"))]}], 0.1)
    assert not meta.defaults["fused"] and meta.defaults["foreach"]
