"""The collect hooks of policies that train on single (n-step) transitions from a replay buffer (SAC, DQN).

* ``_process_transition``: the standard transition; with an action mask (``policy.action_mask_key``) the masks leave
  the observations and travel as ``action_mask`` (of s) and ``next_action_mask`` (of s', for the target's max or
  soft value), (N_env, A) bool each.
* ``_get_train_sample``: a ``(1, N_env, ...)`` segment -> N_env samples ``(N_env, ...)``. With ``policy.nstep`` = n >
  1, the n-step sample of the step n - 1 steps back (:func:`ding_lite.rl_utils.nstep.nstep_first_transition`): its
  window is then complete, so only an episode end (terminated or truncated) shortens it, never the collection's cuts;
  the sample's ``discount`` is gamma^m, ``next_obs`` and ``terminated`` are those of its window's last step. The first
  n - 1 steps after a reset return None (nothing is complete yet): steps are held back, not lost, apart from the
  n - 1 in hand when the collector resets.
* ``_reset_collect``: every env reset (``env_ids`` None) drops the steps held back; some envs reset: their newest step
  held back is marked truncated, so that no window runs from their old episode into the new one.
"""
from collections import deque
from typing import Any, Deque, Dict, List, Optional

import torch

from ding_lite.rl_utils.nstep import nstep_first_transition
from ding_lite.torch_utils import tree_map

from .action_mask import split_mask


class TransitionHooks:
    """Mixin for a :class:`~ding_lite.policy.base_policy.Policy` with ``policy.nstep`` (module docstring)."""

    def _process_transition(self, obs: Any, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        key = self._cfg.action_mask_key
        if key is None:
            return super()._process_transition(obs, policy_output, timestep)
        obs, mask = split_mask(obs, key, check=False)
        next_obs, next_mask = split_mask(timestep["next_obs"], key, check=False)
        transition = super()._process_transition(obs, policy_output, {**timestep, "next_obs": next_obs})
        if mask is not None:
            transition.update(action_mask=mask, next_action_mask=next_mask)
        return transition

    def _init_collect(self) -> None:
        # policy.nstep > 1: the last nstep steps of every env, (N_env, ...) each, oldest first.
        self._nstep_window: Deque[Dict[str, Any]] = deque(maxlen=int(self._cfg.nstep))

    def _reset_collect(self, env_ids: Optional[List[int]] = None) -> None:
        if int(self._cfg.nstep) == 1 or not self._nstep_window:
            return
        if env_ids is None:
            self._nstep_window.clear()
        else:
            newest = dict(self._nstep_window[-1])
            newest["truncated"] = newest["truncated"].clone()
            newest["truncated"][list(env_ids)] = True
            self._nstep_window[-1] = newest

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Optional[Dict[str, torch.Tensor]]:
        n = int(self._cfg.nstep)
        if n == 1:
            return tree_map(lambda x: x[0], segment)
        self._nstep_window.append(tree_map(lambda x: x[0], segment))
        if len(self._nstep_window) < n:
            return None
        return nstep_first_transition(self._nstep_window, self._cfg.learn.discount_factor)
