"""The base of actor-critic policies trained on fixed-length unrolls (IMPALA, ACER).

What such a policy collects, and how its learner sees a batch, does not depend on the algorithm:

* collect: a_t ~ mu(.|x_t), the current policy; the transition keeps mu's statistics (``logit``) for the importance
  ratios pi/mu of the learner.
* train samples: each env's unroll of T = ``unroll_len`` steps is one sample, (T, N_env, ...) -> (N_env, T, ...).
  Unrolls run across episode ends (as in the IMPALA paper), so every sample has exactly T steps, unpadded.
* learn: a batch of B unrolls becomes time-major (T, B, ...) tensors with the episode-end masks, and one model input
  that holds every observation the value targets need (:class:`UnrollBatch`).

The episode-end convention (gymnasium's), the one place it is decided for both policies:

* ``terminated_t``: step t reached a terminal state; the value after it is 0. The value target stops there.
* ``truncated_t`` and not terminated: the episode was cut (time limit) and could have gone on. The target bootstraps
  from gamma V(final_obs_t), the true final observation (``next_obs_t``; the next row of the unroll already belongs to
  the next episode).
* both at once (a terminal state reached at the time limit): terminated, no bootstrap.
* either way the recursion (V-trace's or Retrace's trace) is cut after step t: nothing at or after step t+1 reaches
  the targets of the steps up to t. After the last step of an unroll (t = T-1, not ended) it bootstraps from V(x_T).
"""
from dataclasses import dataclass
from typing import Any, Dict

import torch

from ding_lite.torch_utils import greedy_action, sample_action, tree_map

from .base_policy import Policy


@dataclass(frozen=True)
class UnrollBatch:
    """B unrolls of T steps, time-major, with the episode-end masks and the rows of the learner's one forward pass.

    Fields:
        - data: the sampled batch, every leaf (T, B, ...).
        - T, B: unroll length and number of unrolls.
        - done: (T, B) bool, terminated | truncated: the value recursion is cut after step t.
        - bootstrapped: (T, B) bool, truncated & ~terminated: step t's target adds gamma V(final_obs_t).
        - flat_obs: (T*B, *obs_shape), the observations x_t, row t*B + b.
        - model_in: (T*B + B + K, *obs_shape): ``flat_obs``, then the B observations x_T after the unrolls
          (``next_obs[-1]``), then the K final observations of the ``bootstrapped`` steps in (t, b) row-major order.
    """

    data: Dict[str, Any]
    T: int
    B: int
    done: torch.Tensor
    bootstrapped: torch.Tensor
    flat_obs: torch.Tensor
    model_in: torch.Tensor

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of the unroll steps, (T, B, ...)."""
        return x[:self.T * self.B].view(self.T, self.B, *x.shape[1:])

    def last(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of x_T, the observations after the unrolls, (B, ...)."""
        TB = self.T * self.B
        return x[TB:TB + self.B]

    def finals(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of the true final observations of the bootstrapped steps, (K, ...)."""
        return x[self.T * self.B + self.B:]

    def next_values(self, v: torch.Tensor) -> torch.Tensor:
        """Values (N,) of ``model_in`` -> (T, B), detached: the value of the state after step t where a target
        bootstraps from it, V(final_obs_t) at the bootstrapped steps and V(x_T) at t = T-1; 0 elsewhere (never read)."""
        TB, B = self.T * self.B, self.B
        out = torch.zeros(self.T, B, dtype=v.dtype, device=v.device)
        out[self.bootstrapped] = v[TB + B:].detach()
        out[-1] = v[TB:TB + B].detach()
        return out


class UnrollPolicy(Policy):
    """Collect, the two hooks, eval and the learn prelude of an unroll-based actor-critic (see the module docstring).

    Subclasses set ``config`` and ``default_model`` and write ``_init_learn`` and ``_forward_learn`` (the loss); the
    model must answer ``model(obs, mode='compute_actor')['logit']``.
    """

    # ---- collect / eval ----------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._action_space = self._cfg.action_space
        self._nvec = self._cfg.model.action_shape if self._action_space == "multi_discrete" else None

    def _init_eval(self) -> None:
        self._init_collect()

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """Sample a_t ~ mu(.|x_t) (the current policy); keep its statistics for the importance ratios.
        ``obs`` (N_env, *obs_shape) -> ``action`` (N_env, ...) and ``logit``."""
        logit = self._model(obs.to(self._device), mode="compute_actor")["logit"]
        return {"action": sample_action(self._action_space, logit, self._nvec), "logit": logit}

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The standard transition plus the behaviour policy's statistics mu(.|x_t) (logits, or ``{'mu', 'sigma'}``)
        for the importance ratios."""
        transition = super()._process_transition(obs, policy_output, timestep)
        transition["logit"] = policy_output["logit"]
        return transition

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Each env's unroll of ``unroll_len`` steps is one train sample: ``(T, N, ...)`` -> ``(N, T, ...)``.

        Unrolls run across episode ends: the stored ``terminated``/``truncated`` flags cut the value recursion there,
        so every sample has exactly ``unroll_len`` steps and nothing is padded or lost.
        """
        return tree_map(lambda x: x.transpose(0, 1), segment)

    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, Any]:
        """The most likely action (the argmax of the logits, or the Gaussian's mean), (N_env, ...)."""
        logit = self._model(obs.to(self._device), mode="compute_actor")["logit"]
        return {"action": greedy_action(self._action_space, logit, self._nvec), "logit": logit}

    # ---- learn prelude -----------------------------------------------------------------------------------------
    def _unroll_batch(self, data: Dict[str, Any]) -> UnrollBatch:
        """A sampled batch, leaves (B, T, ...) -> an :class:`UnrollBatch` on the policy's device, leaves (T, B, ...)."""
        data = tree_map(lambda x: x.to(self._device, non_blocking=True).transpose(0, 1), data)  # -> (T, B, ...)
        obs, next_obs = data["obs"], data["next_obs"]
        T, B = obs.shape[:2]
        terminated, truncated = data["terminated"], data["truncated"]
        bootstrapped = truncated & ~terminated
        flat_obs = obs.reshape(T * B, *obs.shape[2:])
        # One forward pass: every obs of the unroll, the obs after the last step, and the true final observations.
        model_in = torch.cat([flat_obs, next_obs[-1], next_obs[bootstrapped]], dim=0)
        return UnrollBatch(data, T, B, terminated | truncated, bootstrapped, flat_obs, model_in)
