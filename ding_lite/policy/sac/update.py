"""One SAC update, whichever way it is computed: the :class:`UpdateEngine` interface and what follows the gradients in
every engine (:class:`AfterGradients`: the gradient norm, Adam's step, the temperature's clamp and the target
critics' Polyak update). The engine a config asks for: :func:`~.update_choice.make_update_engine`.

The engines compute the same update from the same random numbers (``tests/policy/test_sac_manual.py``):

* :class:`~.autograd_update.AutogradUpdate`, the reference: the action space's losses, one backward pass;
* :class:`~.manual_update.ManualUpdate`: continuous SAC with the built-in networks, its gradients written out by hand
  (``learn.manual_update``; faster on a CPU, fewer and larger operations);
* :class:`~.compiled_update.CompiledUpdate`: the hand-written update as one ``torch.compile`` program with the
  optimizer's step, the clamp and the Polyak update inside, a CUDA graph on a GPU (``learn.compile_update``).

The engine modules are imported when the learner is built (:mod:`.update_choice`), never by acting.
"""
from dataclasses import dataclass
from typing import List, Optional, Protocol

import torch
from torch import nn

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils import adam_step, grad_norm, polyak_update

from .action_space import SACLosses, Tensors


class UpdateEngine(Protocol):
    """One SAC update on a batch: its losses, their gradients, the optimizer's step (with the temperature's clamp)
    and, when ``update_targets``, the target critics' Polyak update; the losses as :class:`SACLosses` (the gradient
    norm in their ``info['grad_norm']``)."""

    def __call__(self, batch: Tensors, alphas: torch.Tensor, step: int, update_targets: bool) -> SACLosses:
        """``batch``: B transitions (float reward and terminated (B,), normalised observations); ``alphas`` the
        detached temperatures (n_alphas,); ``step`` the number of updates before this one (a resumed run's
        included: the compiled engine switches to its program at a step)."""


@dataclass(frozen=True)
class AfterGradients:
    """What follows the gradients in a SAC update: :meth:`step` (the gradient norm, then Adam's step on ``trained``,
    then log alpha's clamp to [``min_log_alpha``, ``max_log_alpha``] when ``auto_alpha``) and
    :meth:`update_targets` (``target_params`` <- (1 - ``target_theta``) ``target_params`` + ``target_theta``
    ``critic_params``). The compiled update calls :meth:`clamp_temperature` and :meth:`update_targets` inside its
    program."""
    optimizer: torch.optim.Optimizer  # one fused Adam, a parameter group per learning rate
    trained: List[nn.Parameter]  # every parameter the optimizer steps, for the gradient norm
    log_alpha: nn.Parameter
    auto_alpha: bool
    min_log_alpha: Optional[float]
    max_log_alpha: Optional[float]
    target_params: List[torch.Tensor]
    critic_params: List[nn.Parameter]
    target_theta: float

    def step(self) -> torch.Tensor:
        """Adam's step and the temperature's clamp on the gradients in ``.grad``; returns the gradient norm, taken
        before the step (0-dim: the learner checks that it is finite)."""
        norm = grad_norm(self.trained)
        adam_step(self.optimizer)
        self.clamp_temperature()
        return norm

    def clamp_temperature(self) -> None:
        """log alpha back into its bounds after a step (a fixed alpha, ``auto_alpha=False``, is the user's own)."""
        if self.auto_alpha:
            S.clamp_log_alpha_(self.log_alpha, self.max_log_alpha, self.min_log_alpha)

    def update_targets(self) -> None:
        """The target critics' Polyak update, the one place it is written."""
        polyak_update(self.target_params, self.critic_params, self.target_theta)
