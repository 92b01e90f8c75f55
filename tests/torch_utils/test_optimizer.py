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


def _steps(make, params, grads, closure=False):
    """Steps of ``make(params)`` on ``grads`` (a list of per-parameter gradients per step); the optimizer."""
    opt = make(params)
    for gs in grads:
        opt.zero_grad()
        for p, grad in zip(params, gs):
            p.grad = grad.clone()
        loss = opt.step((lambda: 1.5) if closure else None)
        assert loss == (1.5 if closure else None)
    return opt


@pytest.mark.parametrize("name, options", [("Adam", dict(fused=True)), ("Adam", dict(foreach=True, weight_decay=0.1)),
                                           ("Adam", dict(foreach=False, amsgrad=True)),
                                           ("RMSprop", dict(foreach=True)), ("RMSprop", dict(momentum=0.9))])
def test_ding_lites_optimizers_are_torchs(name, options):
    """make_optimizer's Adam and RMSprop call torch.optim's own methods without their torch.compile guards
    (ding_lite.torch_utils.optimizer._Eager): the parameters and the state after some steps are bit-identical to
    torch.optim's, a closure's loss comes back, their state dicts load into each other, and zero_grad clears."""
    from ding_lite.torch_utils import optimizer as ours
    g = torch.Generator().manual_seed(1)
    shapes = [(4, 3), (3,), (1,)]
    grads = [[torch.randn(s, generator=g) for s in shapes] for _ in range(5)]
    start = [torch.randn(s, generator=g) for s in shapes]
    results = []
    for cls in (getattr(torch.optim, name), getattr(ours, name)):
        params = [torch.nn.Parameter(x.clone()) for x in start]
        opt = _steps(lambda ps: cls(ps, lr=0.01, **options), params, grads, closure=True)
        results.append((params, opt))
    (p_torch, o_torch), (p_ours, o_ours) = results
    assert isinstance(o_ours, getattr(torch.optim, name)) and type(o_ours) is not type(o_torch)
    for a, b in zip(p_torch, p_ours):
        assert torch.equal(a, b)
    s_torch, s_ours = o_torch.state_dict(), o_ours.state_dict()
    assert s_torch["param_groups"] == s_ours["param_groups"]
    for k, state in s_torch["state"].items():
        assert state.keys() == s_ours["state"][k].keys()
        for key in state:
            assert torch.equal(torch.as_tensor(state[key]), torch.as_tensor(s_ours["state"][k][key])), (k, key)
    o_torch.load_state_dict(s_ours)  # each loads the other's, and they step on alike
    o_ours.load_state_dict(s_torch)
    for p, opt in ((p_torch, o_torch), (p_ours, o_ours)):
        for q, grad in zip(p, grads[0]):
            q.grad = grad.clone()
        opt.step()
    for a, b in zip(p_torch, p_ours):
        assert torch.equal(a, b)
    o_ours.zero_grad()
    assert all(p.grad is None for p in p_ours)


def test_step_hooks_run_on_ding_lites_optimizers():
    from ding_lite.torch_utils import make_optimizer
    p = torch.nn.Parameter(torch.ones(3))
    calls = []
    for name in ("adam", "rmsprop"):
        opt = make_optimizer(name, [p], 0.1)
        opt.register_step_pre_hook(lambda *a: calls.append(f"{name} pre"))
        opt.register_step_post_hook(lambda *a: calls.append(f"{name} post"))
        p.grad = torch.ones(3)
        opt.step()
    assert calls == ["adam pre", "adam post", "rmsprop pre", "rmsprop post"]


def test_a_training_process_never_imports_torch_dynamo():
    """torch.optim's guards import torch._dynamo at an optimizer's first call: 2.4 s of CPU per process on a 2-core
    VM, as much as importing torch. Short IMPALA (Adam; RMSprop through learn.optim), PPO and SAC runs in a fresh
    process leave it unimported."""
    import os
    import subprocess
    import sys
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    code = (
        "import sys, tempfile, os\n"
        "from ding_lite.cli import main\n"
        "os.chdir(tempfile.mkdtemp())\n"
        "runs = [('cartpole_impala', ['--set', 'policy.learn.optim=rmsprop']), ('cartpole_ppo', []),\n"
        "        ('pendulum_sac', ['--set', 'policy.random_collect_size=64'])]\n"
        "for name, extra in runs:\n"
        "    try:\n"
        "        main(['-m', 'serial', '-c', os.path.join(sys.argv[1], 'dizoo_configs', name + '.py'), '-q',\n"
        "              '--train-iter', '3', '--exp-name', name, *extra])\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (name, e.code)\n"
        "    assert os.path.exists(os.path.join(name + '_seed0', 'ckpt', 'ckpt_last.pth.tar')), name\n"
        "print('dynamo' if 'torch._dynamo' in sys.modules else 'no dynamo')\n")
    out = subprocess.run([sys.executable, "-c", code, repo], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "no dynamo", out.stdout[-2000:]
