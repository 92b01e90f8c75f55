"""Which :class:`~.update.UpdateEngine` a config asks for (``learn.manual_update``, ``learn.compile_update``), chosen
once when the learner is built. The engine modules are imported here, so that acting never loads them."""
from typing import List

import torch
from easydict import EasyDict
from torch import nn

from ding_lite.utils import ConfigError

from .action_space import SACActionSpace
from .update import AfterGradients, UpdateEngine


def make_update_engine(learn: EasyDict, actions: SACActionSpace, target_critic: nn.Module,
                       target_entropy: List[float], after: AfterGradients, device: torch.device) -> UpdateEngine:
    """The engine that ``learn.manual_update`` and ``learn.compile_update`` ask for (chosen once, at the learner's
    start): autograd's, the hand-written one, or the hand-written one compiled (from the first update with
    ``compile_update=True``; with None, from update ``compiled_update.AUTO_COMPILE_AFTER`` on a CPU or a GPU).
    Refuses a combination the model cannot run, naming the key to change."""
    from .manual_update import unsupported
    mode, compiled = learn.manual_update, learn.compile_update
    why_not = unsupported(actions.model)
    if compiled and (mode is False or why_not):
        raise ConfigError(f"policy.learn.compile_update=True compiles the hand-written update, but "
                          f"{'policy.learn.manual_update=False' if mode is False else why_not}: set "
                          f"compile_update to False")
    if mode is True and why_not:
        raise ConfigError(f"policy.learn.manual_update=True, but {why_not}: set it to None (autograd where the "
                          f"hand-written update does not apply) or False")
    if mode is False or why_not:
        from .autograd_update import AutogradUpdate
        return AutogradUpdate(actions, target_critic, target_entropy, after)
    if compiled is False or (compiled is None and device.type not in ("cpu", "cuda")):
        from .manual_update import ManualUpdate
        return ManualUpdate(actions, target_critic, target_entropy, after)
    from .compiled_update import AUTO_COMPILE_AFTER, CompiledUpdate
    return CompiledUpdate(actions, target_critic, target_entropy, after, None if compiled else AUTO_COMPILE_AFTER,
                          targets_every_update=learn.target_update_period == 1)
