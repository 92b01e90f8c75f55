"""Optimizers (with the fastest available update kernel) and gradient clipping."""
import inspect
import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch.optim import optimizer as _torch_optimizer

FUSED_ADAM_DEVICES = ("cpu", "cuda")  # device types with a fused Adam kernel that ding_lite uses
# torch.optim.Optimizer's methods as written, without the torch._disable_dynamo wrappers around them (_Eager)
_UNGUARDED = {name: inspect.unwrap(getattr(torch.optim.Optimizer, name))
              for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict")}


class _Eager:
    """torch.optim's own methods, called without the guards that keep torch.compile from tracing into them.

    torch wraps ``Optimizer.add_param_group``, ``zero_grad``, ``state_dict`` and ``load_state_dict`` in
    ``torch._disable_dynamo``, and each optimizer's ``step`` in ``_use_grad_for_differentiable``: both import
    ``torch._dynamo`` when first called, 2.4 s of CPU per process on a 2-core VM (torch 2.13), as much as importing
    torch itself, in every process that trains (a run, each tune trial). The guards matter only inside a compiled
    region, where ding_lite never takes an optimizer call (its compiled SAC update steps with :func:`adam_update_`).
    So its optimizers call the functions the guards wrap (``inspect.unwrap``: functools.wraps records them): torch's
    code, the same results (tests/torch_utils/test_optimizer.py), and no import. ``step`` runs under ``no_grad``, as
    the guard does for an optimizer that is not ``differentiable`` (make_optimizer's never are); step hooks, which
    torch adds around ``step`` when the optimizer is made, still run."""

    _torch_step: Callable[..., Optional[float]]  # the unguarded step of the subclass's torch.optim class

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        torch_class = next(c for c in cls.__mro__ if c.__module__.startswith("torch.optim."))
        cls._torch_step = staticmethod(inspect.unwrap(torch_class.step))

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        _UNGUARDED["add_param_group"](self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        _UNGUARDED["zero_grad"](self, set_to_none)

    def state_dict(self) -> Dict[str, Any]:
        return _UNGUARDED["state_dict"](self)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        _UNGUARDED["load_state_dict"](self, state_dict)

    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        with torch.no_grad():
            return self._torch_step(self, closure)


class Adam(_Eager, torch.optim.Adam):
    """``torch.optim.Adam`` without the ``torch._dynamo`` import (:class:`_Eager`)."""


class RMSprop(_Eager, torch.optim.RMSprop):
    """``torch.optim.RMSprop`` without the ``torch._dynamo`` import (:class:`_Eager`)."""


def make_optimizer(name: str, params: Iterable[torch.nn.Parameter], lr: float, **kwargs) -> torch.optim.Optimizer:
    """'adam' or 'rmsprop' with the fastest update kernel torch has for them: fused Adam (about 3x faster than the
    multi-tensor one on the CPU for small networks, measured with torch 2.13), multi-tensor (foreach) RMSprop."""
    params = list(params)
    if name == "adam":
        # torch checks the devices of a fused optimizer only at its first step: check them here
        tensors = [p for g in params for p in (g["params"] if isinstance(g, dict) else [g])]
        if all(p.device.type in FUSED_ADAM_DEVICES and p.is_floating_point() for p in tensors):
            try:
                return Adam(params, lr=lr, fused=True, **kwargs)
            except RuntimeError:  # a dtype or option without a fused kernel
                pass
        return Adam(params, lr=lr, foreach=True, **kwargs)
    if name == "rmsprop":
        return RMSprop(params, lr=lr, foreach=True, **kwargs)
    raise ValueError(f"unknown optimizer '{name}': use 'adam' or 'rmsprop'")


def has_step_hooks(optimizer: torch.optim.Optimizer) -> bool:
    """Whether a hook waits on ``optimizer.step()`` (its own or a global one): a step taken another way would skip
    it."""
    return bool(optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks or
                getattr(_torch_optimizer, "_global_optimizer_pre_hooks", None) or
                getattr(_torch_optimizer, "_global_optimizer_post_hooks", None))


def lean_adam_ok(optimizer: torch.optim.Optimizer) -> bool:
    """Whether :func:`adam_step` may run ``optimizer``'s step itself: a plain fused Adam, no hooks."""
    if (type(optimizer) not in (torch.optim.Adam, Adam) or not hasattr(torch, "_fused_adam_")
            or has_step_hooks(optimizer)):
        return False
    return all(g["fused"] and not (g["amsgrad"] or g["maximize"] or g["capturable"] or g["differentiable"]
                                   or g.get("decoupled_weight_decay", False) or isinstance(g["lr"], torch.Tensor))
               for g in optimizer.param_groups)


def adam_step(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.step()`` for a fused Adam (:func:`make_optimizer`'s), with less Python around the kernel.

    The same kernel (``torch._fused_adam_``, what ``Adam(fused=True)`` calls) on the same state, so the result is
    bit-identical; but one call per set of equal hyperparameters and device instead of one per parameter group, and
    none of ``Optimizer.step``'s per-step bookkeeping (for SAC's three groups on the CPU, 50-60 us less per step:
    149 against 166-210 us at [256, 256], 60 against 103-109 us at [64, 64]). Anything else goes through
    ``optimizer.step()``: another optimizer, hooks, options such as amsgrad, and a step with a parameter whose state
    is not made yet (its first)."""
    if not lean_adam_ok(optimizer):
        optimizer.step()
        return
    calls: dict = {}
    for group in optimizer.param_groups:
        key = (group["lr"], group["betas"], group["eps"], group["weight_decay"])
        for p in group["params"]:
            if p.grad is None:
                continue
            state = optimizer.state.get(p)
            if not state:  # its first step: torch makes the state
                optimizer.step()
                return
            lists = calls.setdefault(key + (p.device, p.dtype), ([], [], [], [], []))
            for out, x in zip(lists, (p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"])):
                out.append(x)
    for (lr, (beta1, beta2), eps, weight_decay, _, _), (params, grads, exp_avgs, exp_avg_sqs, steps) in calls.items():
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False, lr=lr, beta1=beta1,
                           beta2=beta2, weight_decay=weight_decay, eps=eps, maximize=False, grad_scale=None,
                           found_inf=None)


def _log(beta: float) -> float:
    """log beta, -inf for beta = 0 (then beta^t = exp(t log beta) = 0 for every step t >= 1)."""
    return math.log(beta) if beta > 0 else -math.inf


def adam_update_(params: List[torch.Tensor], grads: List[torch.Tensor], exp_avgs: List[torch.Tensor],
                 exp_avg_sqs: List[torch.Tensor], steps: List[torch.Tensor], lrs: torch.Tensor,
                 hyper: Sequence[Tuple[Tuple[float, float], float, float]]) -> None:
    """Adam's step (Kingma & Ba, Algorithm 1; L2 weight decay added to the gradient, as torch's Adam does) on P
    parameters, in place, written with plain tensor operations.

    What ``torch._fused_adam_`` computes, in a form ``torch.compile`` can fold into the program that computes the
    gradients. Why a second Adam step beside :func:`adam_step` (which every eager update uses): the compiled SAC
    update (``policy/sac/compiled_update.py``) takes its optimizer step inside its program this way, and with it the
    clamp and the Polyak update; in a loop like a run's that made each env step 1.02-1.04x faster (docs/sac.md#speed),
    and on a GPU it lets the whole update run as one CUDA graph. ``steps``: the optimizer state's 0-dim
    step counts (incremented here); ``lrs`` (P,) the learning rates, a tensor so that a schedule can change them
    without a recompilation; ``hyper``: each parameter's ((beta1, beta2), eps, weight_decay). Equal to the fused
    kernel up to float rounding (it computes the bias corrections in double precision).

    The per-parameter scalars (step sizes, bias corrections) are computed once, as (P,) vectors, with beta^t written
    exp(t log beta): inductor realizes a reused value on a CPU when its expression holds an ``exp`` (its
    ``should_realize_on_cpu``), and inlines it otherwise: then every parameter's kernel evaluated two scalar ``pow``
    per 16 elements, and the compiled SAC update's own kernels took 1.29 against 0.83 ms per update at [256, 256]
    (torch 2.13, 2 threads, torch.profiler)."""
    device = lrs.device
    log_beta1 = torch.tensor([_log(h[0][0]) for h in hyper], device=device)
    log_beta2 = torch.tensor([_log(h[0][1]) for h in hyper], device=device)
    step = torch.stack(steps) + 1
    step_size = lrs / (1 - torch.exp(step * log_beta1))  # lr / (1 - beta1^t)
    bias_correction2_sqrt = (1 - torch.exp(step * log_beta2)).sqrt()  # sqrt(1 - beta2^t)
    for i, (param, grad, exp_avg, exp_avg_sq) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        (b1, b2), eps, weight_decay = hyper[i]
        steps[i].copy_(step[i])
        if weight_decay != 0:
            grad = grad + weight_decay * param
        exp_avg.lerp_(grad, 1 - b1)  # m <- beta1 m + (1 - beta1) g
        exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)  # v <- beta2 v + (1 - beta2) g^2
        # theta <- theta - lr / (1 - beta1^t) m / (sqrt(v / (1 - beta2^t)) + eps)
        param.sub_(step_size[i] * exp_avg / (exp_avg_sq.sqrt() / bias_correction2_sqrt[i] + eps))


def grad_norm(params: Iterable[torch.nn.Parameter]) -> torch.Tensor:
    """The global L2 norm of the parameters' gradients (those that have one), as a 0-dim tensor: no host sync.

    One fused multi-tensor norm (``foreach``) over every gradient, then the norm of those norms: about 25 us for
    IMPALA's CartPole model on one CPU thread, 10 us less than ``torch.nn.utils.get_total_norm``, which first groups
    the tensors by device and dtype (the gradients must be on one device here). A NaN or infinite gradient anywhere
    makes it non-finite, which is what the learner's finiteness check looks at."""
    params = list(params)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:  # 0 on the parameters' device (a CPU zero among a GPU update's scalars would be one more transfer)
        return torch.zeros((), device=params[0].device if params else None)
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))


class GradClipper:
    """Clips gradients in place after ``backward``: 'clip_norm' (global L2 norm), 'clip_value' (elementwise) or
    None (no clipping).

    Calling it returns the global gradient norm before clipping, a 0-dim tensor (no host sync), whether it clips
    or not: the learner checks it for NaN and infinity on every update.
    """

    def __init__(self, clip_type: Optional[str], clip_value: float) -> None:
        if clip_type not in (None, "clip_norm", "clip_value"):
            raise ValueError(f"unknown grad_clip_type '{clip_type}'")
        self.clip_type, self.clip_value = clip_type, clip_value

    def __call__(self, params: Iterable[torch.nn.Parameter]) -> torch.Tensor:
        params = list(params)
        if all(p.grad is None for p in params):
            return grad_norm(params)
        params = [p for p in params if p.grad is not None]
        if self.clip_type == "clip_norm":
            return torch.nn.utils.clip_grad_norm_(params, self.clip_value, foreach=True)
        norm = grad_norm(params)
        if self.clip_type == "clip_value":
            torch.nn.utils.clip_grad_value_(params, self.clip_value, foreach=True)
        return norm
