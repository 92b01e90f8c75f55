"""Continuous SAC's hand-written update (:mod:`.manual_update`) as one ``torch.compile`` program
(``learn.compile_update``), with the optimizer's step, the temperature's clamp and the Polyak update inside it, and on
a GPU replayed as one CUDA graph.

It compiles for several seconds and needs a C++ compiler, or Triton on a GPU; ``compile_update=None`` (the default)
switches to it at update :data:`AUTO_COMPILE_AFTER`, where a run is likely to repay the compilation, and a run whose
compilation fails warns and goes on eagerly (docs/sac.md#speed).
"""
import warnings
from typing import List, Optional, Sequence, Union

import torch
from torch import nn

from ding_lite.torch_utils.malloc import keep_freed_memory_on_request
from ding_lite.torch_utils.optimizer import adam_update_, has_step_hooks, lean_adam_ok

from .action_space import SACActionSpace, SACLosses, Tensors
from .manual_update import ManualUpdate, Workspace
from .update import AfterGradients

# policy.learn.compile_update=None compiles the update on a CPU or a GPU from this update on. The compiled update saves
# 0.5 ms per update at [64, 64] and about 1 ms at [256, 256] on 2 CPU threads (benchmarks/studies/sac_compiled_step.py
# --variants manual, docs/sac.md#speed) for 3 s of compilation (7-12 s with a cold inductor cache): repaid after
# 3,000-6,000 more updates with a warm cache. By update 5,000 a run has spent 8-25 s on updates, so the compilation adds
# 12-45% to a run that stops right there (more the first time on a machine), and a run past about 11,000 updates gains.
# On an H100 (benchmarks/studies/sac_gpu_update.py) the compiled update with its CUDA graph takes 0.93 ms against 3.49
# eager at [256, 256] (1.06 against 3.42 at [64, 64]), for 10-18 s of compilation: repaid after 4,000-7,500 more
# updates.
AUTO_COMPILE_AFTER = 5_000


def _static_addresses(tensors: Sequence[torch.Tensor]) -> None:
    """Mark tensors that a CUDA graph updates in place as living at a fixed address (each once)."""
    for t in tensors:
        if getattr(t, "_dynamo_static_input_type", None) is None:
            torch._dynamo.mark_static_address(t)


class CompileFailed(RuntimeError):
    """torch.compile could not compile the update (on its first call): no C++ compiler, an unwritable cache..."""


class CompiledUpdate(ManualUpdate):
    """The hand-written update, compiled (an :class:`~.update.UpdateEngine`).

    ``compile_at``: the update from which the program runs (the eager hand-written update before it; a failed
    compilation warns and keeps the eager one); None: from the first update, and a failed compilation is an error.
    ``targets_every_update``: the Polyak update comes every update (``learn.target_update_period=1``), so the
    program takes it too; otherwise it follows the program.

    From the optimizer's second step on (its first makes its state) the program also takes Adam's step, the
    temperature's clamp and the Polyak update (:meth:`fold`), and sets no ``.grad``: one program per update instead
    of a dozen more kernel calls and their Python. In a loop like a run's (act, env step, sample, update) that made
    each step 1.02-1.04x faster, at [256, 256] on 2 threads and at [64, 64] on 1 (docs/sac.md#speed).
    """

    def __init__(self, actions: SACActionSpace, target_critic: nn.Module, target_entropy: List[float],
                 after: AfterGradients, compile_at: Optional[int], targets_every_update: bool) -> None:
        super().__init__(actions, target_critic, target_entropy, after)
        self.compile_at, self.must_compile, self.targets_every_update = compile_at, compile_at is None, \
            targets_every_update
        self._eager, self._eager_step = self._losses_and_grads, self._losses_grads_and_step
        self.compiled, self._calls, self._grads_set, self._graphs = False, 0, False, False
        self._lr_values: Optional[List[float]] = None
        self.folded = self.fold(after)
        if self.must_compile:
            self.compile()

    def fold(self, after: AfterGradients) -> bool:
        """Whether the program may take ``after``'s step itself: only for a plain fused Adam over exactly
        :attr:`params` and the temperature. Each update then also checks that no hook waits on
        ``optimizer.step()`` and that the optimizer has made its state, and otherwise leaves the step to ``after``."""
        trained = self.params + [self.log_alpha]
        grouped = {id(p) for g in after.optimizer.param_groups for p in g["params"]}
        if not lean_adam_ok(after.optimizer) or grouped != set(map(id, trained)):
            return False
        grouped_at = {id(p): i for i, g in enumerate(after.optimizer.param_groups) for p in g["params"]}
        self._group_of = [grouped_at[id(p)] for p in trained]
        return True

    def compile(self) -> None:
        """From the next update on, the losses and gradients as one ``torch.compile`` program (it compiles there).

        On a CPU it asks glibc to keep freed memory (the top-level ``keep_freed_memory``, unless the run set it to
        False): the program allocates its intermediate results afresh on every call, which otherwise cost 60-330
        page faults and 0.2-0.35 ms of system time per update at [256, 256].

        On a GPU the folded program is recorded as a CUDA graph and replayed (inductor's ``triton.cudagraphs``, what
        ``mode="reduce-overhead"`` turns on): at these sizes an update is a few hundred small kernels, each costing a
        launch, and the graph launches them as one. The tensors it updates in place (parameters, target critics, the
        optimizer's state) get static addresses (``mark_static_address``), so the graph steps them where they are;
        its outputs are copied out, since its next replay overwrites them."""
        self.compiled, self._calls, self.ws = True, 0, None
        device = self.params[0].device.type
        if device == "cpu":
            keep_freed_memory_on_request()
        self._graphs = device == "cuda"  # (only the folded program runs as a graph)
        if self._graphs:
            _static_addresses(self.params + [self.log_alpha] + self.after.target_params)
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

    @torch.no_grad()
    def __call__(self, batch: Tensors, alphas: torch.Tensor, step: int, update_targets: bool) -> SACLosses:
        """The update, compiled from update :attr:`compile_at` on (also after a resume past it)."""
        if self.compile_at is not None and step >= self.compile_at and not self.compiled:
            self.compile()
        inputs = self._inputs(batch, alphas)
        try:
            return self._update(inputs, update_targets)
        except CompileFailed as error:
            if self.must_compile:
                raise
            warnings.warn(f"{error}; this run goes on with the eager update", RuntimeWarning)
            self.uncompile()
            self.compile_at = None
            return self._update(inputs, update_targets)

    def _update(self, inputs: tuple, update_targets: bool) -> SACLosses:
        """One update on :meth:`_inputs`: the folded program where it applies, else the (compiled) losses and
        gradients followed by ``after``'s step."""
        folds = self.compiled and self.folded and not has_step_hooks(self.after.optimizer)
        adam = self._adam_inputs() if folds else None
        if adam is not None:  # the optimizer's step and what follows it inside the program
            in_program = update_targets and self.targets_every_update
            if self._graphs:  # (a resume replaces the optimizer's state tensors: marked as they come)
                _static_addresses([t for state in adam[2:] for t in state])
                torch.compiler.cudagraph_mark_step_begin()
            out = self._compiling(self._losses_grads_and_step, *inputs, in_program, *adam)
            if self._graphs:  # the graph's outputs live in its memory pool, which its next replay overwrites
                out = [t.clone() for t in out]
            critic_loss, actor_loss, alpha_loss, q, target, logp_mean, norm = out
            if self._grads_set:  # gradients of earlier updates: stale from now on
                for p in self.params + [self.log_alpha]:
                    p.grad = None
                self._grads_set = False
            if update_targets and not in_program:
                self.after.update_targets()
            return SACLosses(critic_loss, actor_loss, alpha_loss, q, target,
                             {"entropy": -logp_mean, "grad_norm": norm})
        # The optimizer's first step (it makes its state) is eager, not a program compiled for one update.
        losses = self._set_gradients(self._eager(*inputs) if folds else
                                     self._compiling(self._losses_and_grads, *inputs))
        self._grads_set = True
        losses.info["grad_norm"] = self.after.step()
        if update_targets:
            self.after.update_targets()
        return losses

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

    def _adam_inputs(self) -> Optional[tuple]:
        """The optimizer's side of the folded program, read afresh on every update (a resume replaces the state, a
        schedule moves the learning rates): the learning rates (G,) as a tensor, so that a new rate is a new value
        and not a recompilation; each group's (betas, eps, weight_decay); each trained parameter's exp_avg,
        exp_avg_sq and step. None before the optimizer's first step, which makes its state."""
        optimizer = self.after.optimizer
        trained = self.params + [self.log_alpha] if self.after.auto_alpha else self.params
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
                               eps: torch.Tensor, update_targets: bool, lrs: torch.Tensor, hyper: tuple,
                               exp_avgs: List[torch.Tensor], exp_avg_sqs: List[torch.Tensor],
                               steps: List[torch.Tensor]) -> tuple:
        """:meth:`_losses_and_grads`, then what :class:`~.update.AfterGradients` does with the gradients: the
        global gradient norm (returned in place of the gradients), Adam's step on every trained parameter, the
        temperature's clamp and, with ``update_targets``, the Polyak update; the same order and values.

        Adam's step here is ``adam_update_`` (plain tensor operations that inductor fuses into the program), not
        ``AfterGradients.step``'s ``adam_step``: that calls ``torch._fused_adam_``, one opaque kernel per call."""
        critic_loss, actor_loss, alpha_loss, q, target, logp_mean, grads = self._eager(
            obs, action, next_obs, reward, terminated, gamma, alpha, target_entropy, weight, eps)
        trained = self.params
        if self.after.auto_alpha:
            trained, grads = trained + [self.log_alpha], grads + [(-(logp_mean + target_entropy)).reshape(1)]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        group_of = self._group_of[:len(trained)]
        adam_update_(trained, grads, exp_avgs, exp_avg_sqs, steps, lrs[group_of], [hyper[g] for g in group_of])
        self.after.clamp_temperature()
        if update_targets:
            self.after.update_targets()
        return critic_loss, actor_loss, alpha_loss, q, target, logp_mean, norm
