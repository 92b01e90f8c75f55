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


def _adam_pair(**kwargs):
    """Two copies of the same parameters in make_optimizer's Adam, three groups (two with the same rate)."""
    from ding_lite.torch_utils import make_optimizer
    g = torch.Generator().manual_seed(0)
    shapes = [(4, 3), (3,), (5, 2), (2,), (1,)]
    pairs = []
    for _ in range(2):
        params = [torch.nn.Parameter(torch.randn(s, generator=torch.Generator().manual_seed(i)))
                  for i, s in enumerate(shapes)]
        groups = [{"params": params[:2], "lr": 0.01}, {"params": params[2:4], "lr": 0.01, "weight_decay": 0.1},
                  {"params": params[4:], "lr": 0.003}]
        pairs.append((params, make_optimizer("adam", groups, 0.01, **kwargs)))
    grads = [[torch.randn(s, generator=g) for s in shapes] for _ in range(6)]
    return pairs, grads


def _run(params, opt, grads, step, skip=()):
    for i, gs in enumerate(grads):
        opt.zero_grad(set_to_none=True)
        for j, (p, grad) in enumerate(zip(params, gs)):
            if (i, j) not in skip:  # a parameter without a gradient in some steps
                p.grad = grad.clone()
        step(opt)


@pytest.mark.parametrize("kwargs", [{}, {"amsgrad": True}], ids=["lean", "amsgrad_falls_back"])
def test_adam_step_is_bit_identical_to_optimizer_step(kwargs):
    from ding_lite.torch_utils import adam_step
    ((p1, o1), (p2, o2)), grads = _adam_pair(**kwargs)
    skip = {(0, 4), (3, 0), (3, 1)}  # log_alpha-like: no gradient on the first step; a group idle once
    _run(p1, o1, grads, lambda o: o.step(), skip)
    _run(p2, o2, grads, adam_step, skip)
    for a, b in zip(p1, p2):
        assert torch.equal(a, b)
    s1, s2 = o1.state_dict()["state"], o2.state_dict()["state"]
    for k in s1:
        for name in s1[k]:
            assert torch.equal(s1[k][name], s2[k][name]), (k, name)


def test_adam_step_runs_without_optimizer_step_and_falls_back_for_hooks():
    """After the first step (which makes the state) the lean path must not go through Optimizer.step; with a hook
    registered it must (so that the hook runs)."""
    from ding_lite.torch_utils import adam_step
    ((params, opt), _), grads = _adam_pair()
    _run(params, opt, grads[:1], adam_step)
    calls = []
    opt.step = lambda *a, **k: calls.append(1)  # the instance's step: counts instead of stepping
    before = [p.detach().clone() for p in params]
    _run(params, opt, grads[1:2], adam_step)
    assert not calls and all(not torch.equal(a, b) for a, b in zip(before, params))
    opt.register_step_pre_hook(lambda *a: None)
    _run(params, opt, grads[2:3], adam_step)
    assert calls == [1]


def test_adam_update_is_torch_adams_step(device):
    """adam_update_ (the Adam step that the compiled SAC update takes inside its program) against torch's fused Adam
    over six steps: three groups with their own rates, betas (one with beta1 = 0) and weight decay, and a rate
    changed after the third step, as a schedule does. On a GPU too, where fused Adam has its own CUDA kernel."""
    from ding_lite.torch_utils import make_optimizer
    from ding_lite.torch_utils.optimizer import adam_update_
    g = torch.Generator().manual_seed(0)
    shapes = [(4, 3), (3,), (5, 2), (1,)]
    params = [torch.nn.Parameter(torch.randn(s, generator=g).to(device)) for s in shapes]
    mine = [p.detach().clone() for p in params]
    groups = [{"params": params[:2], "lr": 0.01}, {"params": params[2:3], "lr": 0.003, "betas": (0.0, 0.99)},
              {"params": params[3:], "lr": 0.02, "weight_decay": 0.1, "eps": 1e-6}]
    opt = make_optimizer("adam", groups, 0.01)
    group_of = [0, 0, 1, 2]
    exp_avgs, exp_avg_sqs = [torch.zeros_like(p) for p in mine], [torch.zeros_like(p) for p in mine]
    steps = [torch.zeros((), device=device) for _ in mine]
    for t in range(6):
        if t == 3:
            opt.param_groups[0]["lr"] = 0.005
        grads = [torch.randn(s, generator=g).to(device) for s in shapes]
        for p, grad in zip(params, grads):
            p.grad = grad.clone()
        opt.step()
        hyper = [(grp["betas"], grp["eps"], grp["weight_decay"]) for grp in opt.param_groups]
        lrs = torch.tensor([opt.param_groups[i]["lr"] for i in group_of], device=device)
        adam_update_(mine, grads, exp_avgs, exp_avg_sqs, steps, lrs, [hyper[i] for i in group_of])
        for i, p in enumerate(params):
            state = opt.state[p]
            torch.testing.assert_close(mine[i], p.detach(), rtol=1e-5, atol=1e-6, msg=lambda m: f"step {t}: {m}")
            torch.testing.assert_close(exp_avgs[i], state["exp_avg"], rtol=1e-6, atol=1e-7)
            # CUDA's fused kernel rounds 1 - beta2 to float32 (0.00099998713 for 0.999, relative 1.3e-5 off; seen
            # on an H100), where the CPU's and adam_update_ take it in double: the second moments differ that much.
            torch.testing.assert_close(exp_avg_sqs[i], state["exp_avg_sq"], rtol=1e-6 if device == "cpu" else 3e-5,
                                       atol=1e-8)
            assert steps[i].item() == state["step"].item() == t + 1
