"""The running scale of the returns for value normalisation (PPO's ``learn.value_norm``).

With rewards of very different sizes (HalfCheetah's returns run to the thousands, CartPole's to 500) a critic that
learns raw returns needs a learning rate and a gradient clip per task. Value normalisation (Tianshou's ``rew_norm``,
DI-engine's ``value_norm``) lets the critic learn R / sigma_R instead, sigma_R the running standard deviation of the
returns seen so far: the critic's outputs are multiplied by sigma_R wherever a value in reward units is needed (GAE),
and the value targets are divided by it. Scale only: no mean is subtracted, so V = 0 still means a return of 0.

The statistics are buffers of a module attached to the model (``model.return_scale``), so they are in every checkpoint
and reach parallel and Ray collectors with the weights, as the observation statistics do
(:mod:`ding_lite.torch_utils.obs_norm`, whose exact running mean and variance this reuses).
"""
import torch
from torch import nn

from .obs_norm import ObsNormalizer


class ReturnScale(nn.Module):
    """sigma_R = sqrt(Var[R] + epsilon) over every return merged by :meth:`update`; 1 before the first update."""

    def __init__(self, epsilon: float = 1e-8) -> None:
        super().__init__()
        self.stats = ObsNormalizer(paths=[()], shapes=[[]], clip=None, epsilon=epsilon)  # one scalar leaf

    @torch.no_grad()
    def update(self, returns: torch.Tensor) -> None:
        """Merge every element of ``returns`` (any shape, reward units) into the running variance."""
        self.stats.update(returns.reshape(-1))

    def scale(self) -> torch.Tensor:
        """sigma_R, a 0-dim float32 tensor on the module's device."""
        return torch.sqrt(self.stats.var_0 + self.stats.epsilon).float()
