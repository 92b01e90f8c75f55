"""The reference SAC update: the action space's losses (the paper's, e.g. :meth:`~.continuous.ContinuousSAC.losses`),
their gradients from one backward pass, then the optimizer's step and the target critics' update. Every action space
and model; the faster engines for continuous SAC are tested against it."""
from typing import List

import torch
from torch import nn

from .action_space import SACActionSpace, SACLosses, Tensors
from .update import AfterGradients


class AutogradUpdate:
    """SAC's update with autograd's gradients (an :class:`~.update.UpdateEngine`)."""

    def __init__(self, actions: SACActionSpace, target_critic: nn.Module, target_entropy: List[float],
                 after: AfterGradients) -> None:
        self.actions, self.target_critic, self.after = actions, target_critic, after
        self.target_entropy = target_entropy

    def __call__(self, batch: Tensors, alphas: torch.Tensor, step: int, update_targets: bool) -> SACLosses:
        """Losses -> gradients -> Adam's step -> target critics, on B transitions."""
        self.after.optimizer.zero_grad(set_to_none=True)
        losses = self.actions.losses(batch, alphas, self.target_critic, self.target_entropy)
        # Each loss reaches only its own parameters (SACLosses), so one backward of their sum gives every gradient.
        total = losses.critic
        if losses.actor is not None:
            total = total + losses.actor
        if self.after.auto_alpha:
            total = total + losses.alpha
        total.backward()
        losses.info["grad_norm"] = self.after.step()
        if update_targets:
            self.after.update_targets()
        return losses
