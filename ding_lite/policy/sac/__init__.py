"""Soft actor-critic (:mod:`.policy`: ``'sac'``, ``'discrete_sac'``), read in this order:

* :mod:`.policy`: :class:`SACPolicy`: config, networks, temperature, acting, and one update
  (``_forward_learn``: batch -> losses and gradients -> Adam's step -> target critics -> logged values);
* :mod:`.action_space`, :mod:`.continuous`, :mod:`.discrete`, :mod:`.mixed`: what depends on the action space,
  acting and the paper's losses (continuous: :meth:`ContinuousSAC.losses`, the reference update's);
* :mod:`.temperature`: the target entropies and log alpha's bounds;
* :mod:`.update`: the :class:`UpdateEngine` interface and what follows the gradients (:class:`AfterGradients`);
  :mod:`.update_choice`: the engine a config chooses; the engines: :mod:`.autograd_update` (the reference),
  :mod:`.manual_update` (hand-written gradients) and :mod:`.compiled_update` (that update as one ``torch.compile``
  program, a CUDA graph on a GPU);
* :mod:`.acting`: continuous acting with the built-in actor, layer by layer.

The loss math is :mod:`ding_lite.rl_utils.sac`; the Adam step :func:`ding_lite.torch_utils.adam_step`.
"""
from .action_space import SACActionSpace, SACLosses
from .continuous import ContinuousSAC
from .discrete import DiscreteSAC
from .mixed import MixedSAC
from .policy import ACTION_SPACES, DiscreteSACPolicy, SACPolicy
from .update import AfterGradients, UpdateEngine

__all__ = ["SACPolicy", "DiscreteSACPolicy", "SACActionSpace", "SACLosses", "ContinuousSAC", "DiscreteSAC",
           "MixedSAC", "ACTION_SPACES", "AfterGradients", "UpdateEngine"]
