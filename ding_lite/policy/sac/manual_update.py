"""Continuous SAC's update with its gradients written out by hand: the same losses as
:meth:`~.sac.ContinuousSAC.losses`, without autograd.

Why: at SAC's sizes on a CPU (batch 256, [256, 256] networks) an autograd update spends about a third of its time
outside the matmuls, in some 150 small operations and the autograd engine's bookkeeping. Written out, the update is
the matmuls plus a few fused elementwise passes:

* the actor runs once on ``[s'; s]`` (2B rows) instead of twice;
* the online critics run once on ``[(s, a); (s, a~pi(s))]`` (2B rows): the first B rows make the critic loss, the
  last B the actor loss, whose gradient goes back to the action only (no weight gradients for those rows);
* every backward step is the matmul it needs and one pass for the activation's derivative.

It applies to the built-in QAC model with an MLP actor and an :class:`~ding_lite.torch_utils.network.EnsembleMLP`
of critics, whose activations are ReLU or tanh (:func:`unsupported`); the policy falls back to autograd otherwise.
``tests/policy/test_sac_manual.py`` checks every gradient against autograd's on the same random numbers. With
``policy.learn.compile_update`` the losses and gradients run as one ``torch.compile`` program (it compiles for several
seconds and needs a C++ compiler, or Triton on a GPU; by default long runs switch to it, see
:data:`AUTO_COMPILE_AFTER` and docs/sac.md#speed). On a GPU that program, with the optimizer's step folded in, runs as
a CUDA graph: one launch per update instead of a few hundred.

Shapes: B transitions, N critics, O observation features, D action dims, H hidden units; the actor's layers are
``nn.Linear`` (weight (out, in)), the critics' ``EnsembleLinear`` (weight (N, in, out), bias (N, 1, out)).
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils.malloc import keep_freed_memory_on_request
from ding_lite.torch_utils.optimizer import adam_update_, has_step_hooks, lean_adam_ok
from ding_lite.torch_utils.network import EnsembleLinear, EnsembleMLP

from .sac_common import SACLosses

ACTIVATIONS = {nn.ReLU: "relu", nn.Tanh: "tanh"}
# policy.learn.compile_update=None compiles the update on a CPU or a GPU from this update on. The compiled update
# saves 0.5 ms per update at [64, 64] and about 1 ms at [256, 256] on the 2-core VM (benchmarks/sac_compiled_step.py
# --variants manual, docs/sac.md#speed) for 3 s of compilation (7-12 s with a cold inductor cache): repaid after
# 3,000-6,000 more updates with a warm cache. By update 5,000 a run has spent 8-25 s on updates, so the compilation
# adds 12-45% to a run that stops right there (more the first time on a machine), and a run past about 11,000 updates
# gains. On an H100 (benchmarks/sac_gpu_update.py) the compiled update with its CUDA graph takes 0.93 ms against
# 3.49 eager at [256, 256] (1.06 against 3.42 at [64, 64]), for 10-18 s of compilation: repaid after 4,000-7,500
# more updates.
AUTO_COMPILE_AFTER = 5_000


def _static_addresses(tensors: Sequence[torch.Tensor]) -> None:
    """Mark tensors that a CUDA graph updates in place as living at a fixed address (each once)."""
    for t in tensors:
        if getattr(t, "_dynamo_static_input_type", None) is None:
            torch._dynamo.mark_static_address(t)


class CompileFailed(RuntimeError):
    """torch.compile could not compile the update (on its first call): no C++ compiler, an unwritable cache..."""


@dataclass(frozen=True)
class AfterGradients:
    """What follows the gradients in a SAC update, for the compiled program to do as well
    (:meth:`ManualContinuousSAC.fold`): the step of ``optimizer`` (a plain fused Adam, as
    ``torch_utils.make_optimizer`` makes it), the temperature's clamp to [``min_log_alpha``, ``max_log_alpha``]
    (None: no bound on that side) and, with ``target_theta``, the Polyak update of the target critics (None: the
    policy does it itself, as when it is not every update)."""
    optimizer: torch.optim.Optimizer
    min_log_alpha: Optional[float]
    max_log_alpha: Optional[float]
    target_theta: Optional[float]


def _activation_name(layers: List[nn.Module]) -> Optional[str]:
    """The one activation between a stack's linear layers, if it is ReLU or tanh everywhere; else None."""
    names = {ACTIVATIONS.get(type(m)) for m in layers if not isinstance(m, (nn.Linear, EnsembleLinear))}
    return names.pop() if len(names) == 1 and None not in names else None


def _mlp_actor_activation(model: nn.Module) -> Optional[str]:
    """The activation of ``model.actor`` if it is an MLP ending in a linear layer with one activation (ReLU or tanh)
    between its layers; else None."""
    actor = list(model.actor)
    return _activation_name(actor) if actor and isinstance(actor[-1], nn.Linear) else None


def unsupported(model: nn.Module) -> Optional[str]:
    """Why :class:`ManualContinuousSAC` cannot run ``model``'s update (for the config error); None if it can."""
    from ding_lite.model.qac import QAC
    if type(model) is not QAC:
        return f"the model is a {type(model).__name__}, not the built-in QAC"
    if model.action_space != "continuous":
        return f"the action space is '{model.action_space}', not 'continuous'"
    if not isinstance(model.actor, nn.Sequential) or not isinstance(model.critic, EnsembleMLP):
        return "the actor or the critics are not the built-in MLPs"
    if any(p.requires_grad for p in model.flatten_obs.parameters()):
        return "the observation flattener has parameters"
    act = _mlp_actor_activation(model)
    if act is None or _activation_name(list(model.critic.net)) != act:
        return "the activations are not ReLU or tanh (the same in the actor and the critics, with a hidden layer)"
    return None


def _act_(x: torch.Tensor, name: str) -> torch.Tensor:
    return x.clamp_min_(0.0) if name == "relu" else x.tanh_()


def _act_backward(grad: torch.Tensor, out: torch.Tensor, name: str, in_place: bool) -> torch.Tensor:
    """The gradient at an activation's input from the gradient ``grad`` at its output and the output ``out`` (ReLU:
    grad where out > 0; tanh: grad (1 - out^2)); one pass, written over ``grad`` when ``in_place``."""
    if name == "relu":
        op = torch.ops.aten.threshold_backward
        return op.grad_input(grad, out, 0.0, grad_input=grad) if in_place else op(grad, out, 0.0)
    op = torch.ops.aten.tanh_backward
    return op.grad_input(grad, out, grad_input=grad) if in_place else op(grad, out)


class ActingActor:
    """The built-in actor MLP for acting, layer by layer with ``addmm`` and in-place activations: the same action
    and random draws as ``ContinuousSAC``'s module path (``compute_actor``, then the squashed Gaussian), without a
    module call per layer. Acting runs between updates with cold caches, where each call costs more: right after a
    [256, 256] update, 189 against 285 us per action on the 2-core VM (docs/sac.md#speed). Built by :meth:`of` for
    the built-in QAC on a continuous action space."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.layers: List[nn.Linear] = [m for m in model.actor if isinstance(m, nn.Linear)]
        self.act = _activation_name(list(model.actor))
        self.log_std_min, self.log_std_max = model.log_std_min, model.log_std_max

    @classmethod
    def of(cls, model: nn.Module) -> Optional["ActingActor"]:
        """One for ``model`` where it applies (an MLP actor of the built-in QAC, ReLU or tanh), else None."""
        from ding_lite.model.qac import QAC
        if type(model) is not QAC or model.action_space != "continuous" or not isinstance(model.actor, nn.Sequential):
            return None
        return cls(model) if _mlp_actor_activation(model) is not None else None

    def __call__(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """tanh(mu + std eps) (or tanh(mu)) for observations (B, ...) or a nested dict of them, (B, D)."""
        x = self.model.flatten_obs(obs)  # (B, O)
        for layer in self.layers[:-1]:
            x = _act_(torch.addmm(layer.bias, x, layer.weight.t()), self.act)
        last = self.layers[-1]
        mu, log_std = torch.addmm(last.bias, x, last.weight.t()).chunk(2, dim=-1)
        return S.squashed_gaussian_action(mu, log_std.clamp(self.log_std_min, self.log_std_max), deterministic)


class Workspace:
    """Tensors kept from one update to the next for the large intermediate results (``out=``), so that an update
    allocates almost nothing: fresh megabyte-sized tensors each update cost page faults once glibc trims its heap
    (measured 200-1,000 per update at [256, 256] without this)."""

    def __init__(self) -> None:
        self._tensors: Dict[Tuple[str, Tuple[int, ...]], torch.Tensor] = {}

    def __call__(self, name: str, shape: Sequence[int], like: torch.Tensor) -> torch.Tensor:
        key = (name, tuple(shape))
        t = self._tensors.get(key)
        if t is None or t.device != like.device or t.dtype != like.dtype:
            t = self._tensors[key] = torch.empty(key[1], device=like.device, dtype=like.dtype)
        return t


class ManualContinuousSAC:
    """The losses and gradients of one continuous SAC update on a QAC model (see the module doc).

    :meth:`step` computes the critic, actor and temperature losses exactly as ``ContinuousSAC.losses`` (same
    random numbers, drawn in the same order) and writes their gradients into the parameters' ``.grad``.

    ``compiled``: the losses and gradients (everything but drawing the noise and setting ``.grad``) as one
    ``torch.compile`` program (``fullgraph``); intermediate results are then inductor's to place, not kept in a
    :class:`Workspace`. After :meth:`fold`, the compiled program also takes the optimizer's step and what follows it
    (:class:`AfterGradients`), and sets no ``.grad``.
    """

    def __init__(self, model: nn.Module, log_alpha: nn.Parameter, target_critic: nn.Module,
                 compiled: bool = False) -> None:
        self.log_alpha = log_alpha
        self.act = _activation_name(list(model.actor))
        self.actor_layers: List[nn.Linear] = [m for m in model.actor if isinstance(m, nn.Linear)]
        self.critic_layers: List[EnsembleLinear] = [m for m in model.critic.net if isinstance(m, EnsembleLinear)]
        # Flat [weight, bias, weight, bias, ...] of the online and the target critics, as _critic_forward takes them.
        self.online_layers = [p for m in self.critic_layers for p in (m.weight, m.bias)]
        self.target_layers = [p for m in target_critic.net if isinstance(m, EnsembleLinear) for p in (m.weight, m.bias)]
        self._targets_complete = [id(p) for p in target_critic.parameters()] == [id(p) for p in self.target_layers]
        self.log_std_min, self.log_std_max = model.log_std_min, model.log_std_max
        # The parameters in the order of the gradients that _losses_and_grads returns.
        self.params = self.online_layers + [p for m in self.actor_layers for p in (m.weight, m.bias)]
        self._eager, self._eager_step = self._losses_and_grads, self._losses_grads_and_step
        self.after: Optional[AfterGradients] = None
        self.compiled, self._calls, self.ws, self._grads_set, self._graphs = False, 0, Workspace(), False, False
        self._lr_values: Optional[List[float]] = None
        if compiled:
            self.compile()

    def fold(self, after: AfterGradients) -> bool:
        """Let the compiled program take the optimizer's step, the temperature's clamp and (``after.target_theta``)
        the Polyak update too: one program per update instead of a dozen more kernel calls and their Python. In a
        loop like a run's (act, env step, sample, update) that made each step 1.02-1.04x faster, at [256, 256] on
        2 threads and at [64, 64] on 1 (docs/sac.md#speed); alone, the update is no faster. Only for a plain fused
        Adam over exactly :attr:`params` and the temperature; returns whether it applies. Each call then checks
        that no hook waits on ``optimizer.step()`` and that the optimizer has made its state (its first step), and
        otherwise leaves the step to the policy."""
        trained = self.params + [self.log_alpha]
        grouped = {id(p): i for i, g in enumerate(after.optimizer.param_groups) for p in g["params"]}
        if not lean_adam_ok(after.optimizer) or sorted(grouped) != sorted(map(id, trained)) or \
                (after.target_theta is not None and not self._targets_complete):
            return False
        self.after, self._group_of = after, [grouped[id(p)] for p in trained]
        return True

    def compile(self) -> None:
        """From the next step on, the losses and gradients as one ``torch.compile`` program (it compiles there).

        On a CPU it asks glibc to keep freed memory (the top-level ``keep_freed_memory``, unless the run set it to
        False): the program allocates its intermediate results afresh on every call, which otherwise cost 60-330
        page faults and 0.2-0.35 ms of system time per update at [256, 256].

        On a GPU the folded program (after :meth:`fold`) is recorded as a CUDA graph and replayed (inductor's
        ``triton.cudagraphs``, what ``mode="reduce-overhead"`` turns on): at these sizes an update is a few hundred
        small kernels, each costing a launch, and the graph launches them as one. The tensors it updates in place
        (parameters, target critics, the optimizer's state) get static addresses (``mark_static_address``), so the
        graph steps them where they are; its outputs are copied out, since its next replay overwrites them."""
        self.compiled, self._calls, self.ws = True, 0, None
        device = self.params[0].device.type
        if device == "cpu":
            keep_freed_memory_on_request()
        self._graphs = device == "cuda"  # (only the folded program runs as a graph)
        if self._graphs:
            _static_addresses(self.params + [self.log_alpha] + self.target_layers)
        # cpp.dynamic_threads: the kernels take torch's thread count when they run, not the one at compile time
        # (torch_threads='auto' times the update at 1 thread now and then, and may compile during such a check).
        # Serial Pendulum runs at [256, 256] under 'auto': 5.65 ms per compiled update against 5.86 eager before,
        # 4.86-4.92 against 5.19-5.47 with it.
        options = {"cpp.dynamic_threads": True}
        self._losses_and_grads = torch.compile(self._eager, dynamic=False, fullgraph=True, options=options)
        self._losses_grads_and_step = torch.compile(self._eager_step, dynamic=False, fullgraph=True,
                                                    options={**options, "triton.cudagraphs": self._graphs})

    def uncompile(self) -> None:
        """Back to the eager update."""
        self.compiled, self.ws, self._graphs = False, Workspace(), False
        self._losses_and_grads, self._losses_grads_and_step = self._eager, self._eager_step

    def _out(self, name: str, shape: Sequence[int], like: torch.Tensor) -> Optional[torch.Tensor]:
        """A kept tensor for an ``out=`` argument (None, a fresh result, when compiled)."""
        return None if self.ws is None else self.ws(name, shape, like)

    # ---- forward passes that keep what their backward needs ----------------------------------------------------
    def _actor_forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """(M, O) -> the actor's output (M, 2D) and each hidden layer's output (M, H)."""
        hidden = []
        for i, layer in enumerate(self.actor_layers[:-1]):
            out = self._out(f"actor{i}", (x.shape[0], layer.out_features), x)
            x = _act_(torch.addmm(layer.bias, x, layer.weight.t(), out=out), self.act)
            hidden.append(x)
        last = self.actor_layers[-1]
        return torch.addmm(last.bias, x, last.weight.t()), hidden

    def _critic_forward(self, x: torch.Tensor, layers: List[torch.Tensor], name: str
                        ) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        """(M, O + D) -> Q (N, M) of every replica and each hidden layer's output (N, M, H). ``layers``: the
        flat [weight, bias, weight, bias, ...] of the online or the target critics (``name``)."""
        n = layers[0].shape[0]
        h, hidden = x.unsqueeze(0).expand(n, *x.shape), []
        for i in range(0, len(layers) - 2, 2):
            out = self._out(f"{name}{i}", (n, x.shape[0], layers[i].shape[-1]), x)
            h = _act_(torch.baddbmm(layers[i + 1], h, layers[i], out=out), self.act)
            hidden.append(h)
        # One output unit: a dot product per row (one pass over h), 4-5x faster than a (M, H) x (H, 1) matmul here.
        return torch.linalg.vecdot(h, layers[-2].transpose(1, 2)) + layers[-1].squeeze(-1), hidden

    # ---- the update --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def step(self, obs: torch.Tensor, action: torch.Tensor, next_obs: torch.Tensor, reward: torch.Tensor,
             terminated: torch.Tensor, gamma: Union[float, torch.Tensor], alpha: torch.Tensor, target_entropy: float,
             weight: Optional[torch.Tensor], auto_alpha: bool) -> SACLosses:
        """Losses and gradients of one update on B transitions: flattened observations ``obs``, ``next_obs``
        (B, O), ``action`` (B, D) in [-1, 1], ``reward`` and ``terminated`` (B,) float, ``gamma`` a number or (B,),
        ``alpha`` the 0-dim temperature, ``weight`` (B,) importance weights of the critics' loss or None.

        Sets ``.grad`` of the actor's and critics' parameters (and of log_alpha when ``auto_alpha``); returns the
        losses as :class:`~.sac_common.SACLosses`, every tensor detached (``q`` (N, B), ``target`` (B,), the
        entropy estimate in ``info``). Compiled after :meth:`fold` (and after the optimizer's first step), it sets
        no ``.grad`` but takes the optimizer's step and what follows it; the losses then say ``stepped`` and carry
        the gradient norm in ``info['grad_norm']``."""
        B, D = action.shape
        eps = torch.empty(2 * B, D, dtype=action.dtype, device=action.device)
        eps[:B].normal_(), eps[B:].normal_()  # as the autograd update draws them: s' first, then s
        args = (obs, action, next_obs, reward, terminated, gamma, alpha, target_entropy, weight, eps)
        folds = self.compiled and self.after is not None and not has_step_hooks(self.after.optimizer)
        adam = self._adam_inputs(auto_alpha) if folds else None
        if adam is not None:  # the optimizer's step and what follows it inside the program
            if self._graphs:  # (a resume replaces the optimizer's state tensors: marked as they come)
                _static_addresses([t for state in adam[2:] for t in state])
                torch.compiler.cudagraph_mark_step_begin()
            out = self._compiling(self._losses_grads_and_step, *args, auto_alpha, *adam)
            if self._graphs:  # the graph's outputs live in its memory pool, which its next replay overwrites
                out = [t.clone() for t in out]
            critic_loss, actor_loss, alpha_loss, q, target, logp_mean, norm = out
            if self._grads_set:  # gradients of earlier updates: stale from now on
                for p in self.params + [self.log_alpha]:
                    p.grad = None
                self._grads_set = False
            return SACLosses(critic_loss, actor_loss, alpha_loss, q, target,
                             {"entropy": -logp_mean, "grad_norm": norm}, stepped=True)
        if folds:  # the optimizer's first step (it makes its state): eager, not a program compiled for one update
            critic_loss, actor_loss, alpha_loss, q, target, logp_mean, grads = self._eager(*args)
        else:
            critic_loss, actor_loss, alpha_loss, q, target, logp_mean, grads = self._compiling(
                self._losses_and_grads, *args)
        for p, grad in zip(self.params, grads):
            p.grad = grad
        if auto_alpha:
            self.log_alpha.grad = (-(logp_mean + target_entropy)).reshape(1)
        self._grads_set = True
        return SACLosses(critic_loss, actor_loss, alpha_loss, q, target, {"entropy": -logp_mean})

    def _compiling(self, fn, *args) -> tuple:
        """``fn(*args)``; a failure of its first call, where torch.compile compiles, as :class:`CompileFailed`; with
        a CUDA graph, also of the second and third, where the graph is recorded and first replayed (the first call
        runs the program without it)."""
        try:
            out = fn(*args)
        except Exception as error:  # torch.compile's first calls compile: say which key turns it off
            if not self.compiled or self._calls >= (3 if self._graphs else 1):
                raise
            raise CompileFailed(f"torch.compile of the SAC update failed ({type(error).__name__}: "
                                f"{str(error)[:300]}); set policy.learn.compile_update=False") from error
        self._calls += 1
        return out

    def _adam_inputs(self, auto_alpha: bool) -> Optional[tuple]:
        """The optimizer's side of the folded program, read afresh on every update (a resume replaces the state, a
        schedule moves the learning rates): the learning rates (G,) as a tensor, so that a new rate is a new value
        and not a recompilation; each group's (betas, eps, weight_decay); each trained parameter's exp_avg,
        exp_avg_sq and step. None before the optimizer's first step, which makes its state."""
        optimizer = self.after.optimizer
        trained = self.params + [self.log_alpha] if auto_alpha else self.params
        state = optimizer.state
        if not state.get(trained[-1]):
            return None
        groups = optimizer.param_groups
        lr_values = [g["lr"] for g in groups]
        if lr_values != self._lr_values:
            self._lrs = torch.tensor(lr_values, dtype=torch.float32, device=self.log_alpha.device)
            self._lr_values = lr_values
        hyper = tuple((g["betas"], g["eps"], g["weight_decay"]) for g in groups)
        moments = [state[p] for p in trained]
        return (self._lrs, hyper, [m["exp_avg"] for m in moments], [m["exp_avg_sq"] for m in moments],
                [m["step"] for m in moments])

    def _losses_grads_and_step(self, obs: torch.Tensor, action: torch.Tensor, next_obs: torch.Tensor,
                               reward: torch.Tensor, terminated: torch.Tensor, gamma: Union[float, torch.Tensor],
                               alpha: torch.Tensor, target_entropy: float, weight: Optional[torch.Tensor],
                               eps: torch.Tensor, auto_alpha: bool, lrs: torch.Tensor, hyper: tuple,
                               exp_avgs: List[torch.Tensor], exp_avg_sqs: List[torch.Tensor],
                               steps: List[torch.Tensor]) -> tuple:
        """:meth:`_losses_and_grads`, then what the policy does with the gradients (:class:`AfterGradients`): the
        global gradient norm (returned in place of the gradients), Adam's step on every trained parameter, the
        temperature's clamp and the Polyak update. The order and the values are the policy's own."""
        critic_loss, actor_loss, alpha_loss, q, target, logp_mean, grads = self._eager(
            obs, action, next_obs, reward, terminated, gamma, alpha, target_entropy, weight, eps)
        trained = self.params
        if auto_alpha:
            trained, grads = trained + [self.log_alpha], grads + [(-(logp_mean + target_entropy)).reshape(1)]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        group_of = self._group_of[:len(trained)]
        adam_update_(trained, grads, exp_avgs, exp_avg_sqs, steps, lrs[group_of], [hyper[g] for g in group_of])
        after = self.after
        if auto_alpha and (after.min_log_alpha is not None or after.max_log_alpha is not None):
            self.log_alpha.clamp_(min=after.min_log_alpha, max=after.max_log_alpha)
        if after.target_theta is not None:
            for target_param, param in zip(self.target_layers, self.online_layers):
                target_param.lerp_(param, after.target_theta)
        return critic_loss, actor_loss, alpha_loss, q, target, logp_mean, norm

    def _losses_and_grads(self, obs: torch.Tensor, action: torch.Tensor, next_obs: torch.Tensor,
                          reward: torch.Tensor, terminated: torch.Tensor, gamma: Union[float, torch.Tensor],
                          alpha: torch.Tensor, target_entropy: float, weight: Optional[torch.Tensor],
                          eps: torch.Tensor) -> tuple:
        """:meth:`step` given the noise ``eps`` (2B, D) (s' rows, then s rows): the three losses, q, the target,
        mean log pi(a|s) and the gradients of :attr:`params`."""
        B, D = action.shape
        inv_b = 1.0 / B
        # The actor on [s'; s]: its s' half acts for the critics' target, its s half for the actor's loss.
        out, actor_hidden = self._actor_forward(torch.cat([next_obs, obs]))
        mu, raw_log_std = out[:, :D], out[:, D:]
        log_std = raw_log_std.clamp(self.log_std_min, self.log_std_max)
        a_all, logp_all = S.squashed_gaussian_sample(mu, log_std=log_std, noise=eps)
        a2, logp2, a_pi, logp = a_all[:B], logp_all[:B], a_all[B:], logp_all[B:]

        # Critic target y = r + gamma (1 - terminated) (min_i Q_i'(s', a') - alpha log pi(a'|s')).
        q2, _ = self._critic_forward(torch.cat([next_obs, a2], dim=-1), self.target_layers, "target")
        target = S.sac_critic_target(reward, q2, logp2, alpha, gamma, terminated)

        # The online critics on [(s, a); (s, a_pi)].
        critic_in = torch.cat([torch.cat([obs, obs]), torch.cat([action, a_pi])], dim=-1)
        q_all, critic_hidden = self._critic_forward(critic_in, self.online_layers, "critic")
        q, q_pi = q_all[:, :B], q_all[:, B:]
        # The losses' values from the paper's functions (rl_utils.sac), as the autograd update computes them.
        critic_loss = S.sac_critic_loss(q, target, weight)
        actor_loss = S.sac_actor_loss(q_pi, logp, alpha)
        alpha_loss = S.sac_alpha_loss(self.log_alpha[0], logp, target_entropy)

        # d loss / d Q: the critics' loss on the first B rows, the actor's (-1/B at the minimum replica) on the rest.
        td = q - target
        grad_pi = torch.zeros_like(q_pi).scatter_(0, q_pi.argmin(0, keepdim=True), -inv_b)
        grad_q = torch.cat([(2.0 * inv_b) * (td if weight is None else td * weight), grad_pi], dim=1)
        critic_grads, grad_a = self._critic_backward(critic_in, critic_hidden, grad_q, B, D)  # grad_a (B, D)

        # Back through a = tanh(u), u = mu + std eps and log pi: d log pi / d u = 2 tanh(u), d log pi / d log_std =
        # -1 (directly), the actor loss weighing each log pi(a_b|s_b) by alpha / B.
        grad_u = grad_a * (1.0 - a_pi.square()) + (2.0 * inv_b) * alpha * a_pi
        grad_log_std = grad_u * log_std[B:].exp() * eps[B:] - alpha * inv_b
        in_range = (raw_log_std[B:] >= self.log_std_min) & (raw_log_std[B:] <= self.log_std_max)
        grad_out = torch.cat([grad_u, grad_log_std * in_range], dim=-1)
        actor_grads = self._actor_backward(obs, [h[B:] for h in actor_hidden], grad_out)
        return critic_loss, actor_loss, alpha_loss, q, target, logp.mean(), critic_grads + actor_grads

    def _critic_backward(self, x: torch.Tensor, hidden: List[torch.Tensor], grad_q: torch.Tensor, n_weighted: int,
                         n_action: int) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """Back through the online critics from d loss / d Q (N, M): weight gradients from the first ``n_weighted``
        rows only (the critics' loss; the other rows' loss trains the actor alone). Returns the gradients of every
        layer's weight and bias, in order, and d loss / d action for the other rows, (M - n_weighted, D) summed
        over the replicas (the action: the input's last ``n_action`` columns)."""
        rows, layers, in_place = slice(0, n_weighted), self.critic_layers, self.ws is not None
        grads: List[torch.Tensor] = []
        g = grad_q.unsqueeze(-1)  # (N, M, 1)
        for i in range(len(layers) - 1, -1, -1):
            weight = layers[i].weight
            below = hidden[i - 1] if i > 0 else x.unsqueeze(0).expand(g.shape[0], *x.shape)
            if weight.shape[-1] == 1:  # one output unit: sum_m h_m g_m, not a matmul (as in the forward pass)
                product = torch.mul(below[:, rows], g[:, rows], out=self._out("critic_hg", below[:, rows].shape, g))
                weight_grad = product.sum(1).unsqueeze(-1)
            else:
                weight_grad = torch.bmm(below[:, rows].transpose(1, 2), g[:, rows],
                                        out=self._out(f"critic_w{i}", weight.shape, g))
            grads[:0] = [weight_grad, g[:, rows].sum(1, keepdim=True)]
            if i > 0:  # (N, M, out) -> (N, M, in); an output of one unit is a broadcast product, not a matmul
                out = self._out(f"critic_g{i}", below.shape, g)
                g = torch.mul(g, weight.transpose(1, 2), out=out) if g.shape[-1] == 1 else \
                    torch.bmm(g, weight.transpose(1, 2), out=out)
                g = _act_backward(g, below, self.act, in_place)
        grad_action = torch.bmm(g[:, n_weighted:], layers[0].weight[:, -n_action:].transpose(1, 2)).sum(0)
        return grads, grad_action

    def _actor_backward(self, x: torch.Tensor, hidden: List[torch.Tensor], grad_out: torch.Tensor
                        ) -> List[torch.Tensor]:
        """Back through the actor MLP from d loss / d output (B, 2D) at input ``x`` (B, O) with hidden outputs
        ``hidden``; returns the gradients of every layer's weight and bias, in order."""
        g, layers, in_place = grad_out, self.actor_layers, self.ws is not None
        grads: List[torch.Tensor] = []
        for i in range(len(layers) - 1, -1, -1):
            weight = layers[i].weight
            below = hidden[i - 1] if i > 0 else x
            grads[:0] = [torch.mm(g.t(), below, out=self._out(f"actor_w{i}", weight.shape, g)), g.sum(0)]
            if i > 0:
                g = _act_backward(torch.mm(g, weight, out=self._out(f"actor_g{i}", below.shape, g)), below, self.act,
                                  in_place)
        return grads
