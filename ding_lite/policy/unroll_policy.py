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

How a train sample stores its observations (``policy.obs_storage``):

* 'full': ``obs`` (T, ...) and ``next_obs`` (T, ...), every step's pair: 2 observations per step.
* 'compact': ``obs`` (T+1, ...), x_0 .. x_T (x_T = ``next_obs`` of step T-1, a true final observation if that step
  ended an episode), and ``final_obs`` (1, ...), the true final observation of the one step t < T-1 of the unroll
  that was truncated and not terminated (zeros when there is none): (T+2)/T observations per step. ``next_obs[t]`` of
  every other step is x_{t+1} or never read (a termination). An unroll with two such steps (episodes shorter than the
  unroll, cut by a time limit) cannot be stored so: the collector stops with an error that says so.
* 'auto' (the default): 'compact' when an observation leaf is uint8 (frames, where memory matters), 'full'
  otherwise.

The learner reads both layouts (:class:`UnrollBatch`); its forward pass and targets are the same either way.

A model with a recurrent core (``policy.model.core='lstm'``, :mod:`ding_lite.torch_utils.recurrent`): collect and
eval carry each env's state (``reset(env_ids)`` zeroes those of finished episodes), a transition stores the state its
step was taken with as ``core_state``, and an unroll keeps the first, ``core_state`` (1, 2, H): its initial state. The
learner replays the T steps from it (:meth:`UnrollPolicy._forward_unroll`), resetting after episode ends as acting
did, and the rows after the steps (x_T, final observations) continue from the state before that reset.

Action masks (``policy.action_mask_key``, :mod:`ding_lite.policy.action_mask`): acting takes the mask out of the
observation, samples and picks greedy actions under it, and a transition keeps it as ``action_mask`` (bool, shaped
like the logits) beside ``logit``, which is stored *already masked*: the behaviour policy mu of the importance ratios
is then exactly the distribution the action was drawn from, whatever the learner does. The learner re-masks the
target policy pi's fresh logits with the stored mask, so pi/mu compares two distributions over the same valid
actions (an unmasked pi would put mass on actions mu could never take, and its entropy would count them).
"""
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import torch
from easydict import EasyDict

from ding_lite.torch_utils import epsilon_greedy, greedy_action, mask_logits, sample_action, tree_cat, tree_map
from ding_lite.torch_utils.tree import Tree, leading_dim, tree_leaves
from ding_lite.torch_utils.precision import AUTOCAST_SETTINGS, autocast, describe_autocast, resolve_autocast
from ding_lite.utils import ConfigError, UserError

from .action_mask import split_mask
from .base_policy import Policy


@dataclass(frozen=True)
class UnrollBatch:
    """B unrolls of T steps, time-major, with the episode-end masks and the rows of the learner's one forward pass.

    Fields:
        - data: the sampled batch, every leaf (T, B, ...).
        - T, B: unroll length and number of unrolls.
        - done: (T, B) bool, terminated | truncated: the value recursion is cut after step t.
        - bootstrapped: (T, B) bool, truncated & ~terminated: step t's target adds gamma V(final_obs_t).
        - flat_obs: (T*B, *obs_shape), the observations x_t, row t*B + b (for a Dict/Tuple observation space, a
          nested dict of such tensors, as every observation field here).
        - model_in: (T*B + B + K, *obs_shape): ``flat_obs``, then the B observations x_T after the unrolls
          (``next_obs[-1]``), then final observations of ``bootstrapped`` steps: for the 'full' layout the K of
          every bootstrapped step in (t, b) row-major order; for 'compact' those of the steps t < T-1 only, in b
          order (a truncation at t = T-1 bootstraps from x_T, already a row).
        - boot_index: (K,) long, the flat positions t*B + b of the ``bootstrapped`` steps in (t, b) row-major order.
        - final_index: None ('full'), else (K,) the rows of ``model_in`` holding the final observation of each
          bootstrapped step in (t, b) row-major order.
        - extra_state_index: None without a recurrent core; else for each row of ``model_in`` after the T*B steps,
          the flat step t*B + b whose state (before its episode-end reset) that row continues from.

    Every field has a shape known on the host before the batch reaches the device: K is counted on the sampled
    (CPU) flags, so building and reading the batch never waits for a GPU.
    """

    data: Dict[str, Any]
    T: int
    B: int
    done: torch.Tensor
    bootstrapped: torch.Tensor
    flat_obs: Tree
    model_in: Tree
    boot_index: torch.Tensor
    final_index: Optional[torch.Tensor] = None
    extra_state_index: Optional[torch.Tensor] = None

    def steps(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of the unroll steps, (T, B, ...)."""
        return x[:self.T * self.B].view(self.T, self.B, *x.shape[1:])

    def last(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of x_T, the observations after the unrolls, (B, ...)."""
        TB = self.T * self.B
        return x[TB:TB + self.B]

    def finals(self, x: torch.Tensor) -> torch.Tensor:
        """Rows of ``model_in`` (N, ...) -> those of the true final observations of the bootstrapped steps, (K, ...),
        in (t, b) row-major order of ``bootstrapped``."""
        if self.final_index is None:
            return x[self.T * self.B + self.B:]
        return x.index_select(0, self.final_index)

    def final_values(self, v: torch.Tensor) -> torch.Tensor:
        """Values (N,) of ``model_in`` -> (T, B), detached: V(final_obs_t) at the bootstrapped steps, 0 elsewhere
        (a scatter to fixed positions, not a boolean-mask assignment, which would wait for a GPU)."""
        out = v.new_zeros(self.T * self.B)
        return out.index_copy_(0, self.boot_index, self.finals(v).detach()).view(self.T, self.B)

    def next_values(self, v: torch.Tensor) -> torch.Tensor:
        """Values (N,) of ``model_in`` -> (T, B), detached: the value of the state after step t where a target
        bootstraps from it, V(final_obs_t) at the bootstrapped steps and V(x_T) at t = T-1; 0 elsewhere (never read)."""
        TB, B = self.T * self.B, self.B
        out = self.final_values(v)
        out[-1] = v[TB:TB + B].detach()
        return out


class UnrollPolicy(Policy):
    """Collect, the two hooks, eval and the learn prelude of an unroll-based actor-critic (see the module docstring).

    Subclasses set ``config`` and ``default_model`` and write ``_init_learn`` and ``_forward_learn`` (the loss); the
    model must answer ``model(obs, mode='compute_actor')['logit']``.
    """

    config = dict(
        # (str) How a train sample (one unroll) stores its observations: 'full' (obs and next_obs of every step, 2 per
        # step), 'compact' (x_0 .. x_T plus one slot for a truncated episode's final observation, (T+2)/T per step) or
        # 'auto': 'compact' when an observation leaf is uint8 (frames), else 'full'. See unroll_policy.py.
        obs_storage="auto",
        collect=dict(
            # (str) The acting forward passes (collection and evaluation): None in float32; 'bfloat16' under
            # torch.autocast (convolutions and matmuls in bfloat16; the logits and values handed on in float32); 'auto':
            # bfloat16 for a conv encoder on a CPU with AMX or AVX-512 BF16, or a GPU with bfloat16, else float32.
            autocast=None,
        ),
        eval=dict(
            # (float) Evaluation acts greedily, except that with this probability an env's step takes a uniformly
            # random action instead (discrete and multi-discrete actions). 0.05 is DeepMind's Atari protocol: it
            # starts every game where a greedy policy never presses FIRE (Breakout). 0: purely greedy.
            epsilon=0.0,
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        if cfg.obs_storage not in ("auto", "full", "compact"):
            raise ConfigError(f"{path}.obs_storage={cfg.obs_storage!r}: must be 'auto', 'full' or 'compact'")
        if cfg.collect.autocast not in AUTOCAST_SETTINGS:
            raise ConfigError(f"{path}.collect.autocast={cfg.collect.autocast!r}: must be None (float32), 'bfloat16' or "
                              f"'auto' (bfloat16 for a conv encoder where the device has native bfloat16 matmuls)")
        if not 0 <= cfg.eval.epsilon <= 1:
            raise ConfigError(f"{path}.eval.epsilon={cfg.eval.epsilon}: must be in [0, 1] (0: greedy evaluation)")

    # ---- collect / eval ----------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._action_space = self._cfg.action_space
        self._nvec = self._cfg.model.action_shape if self._action_space == "multi_discrete" else None
        self._mask_key = self._cfg.action_mask_key  # None: the env gives no action mask
        # A recurrent core (policy.model.core): the state of every env, carried between calls (None: all zeros).
        self._recurrent = getattr(self._model, "core", None) is not None
        self._collect_state: Optional[torch.Tensor] = None
        self._eval_state: Optional[torch.Tensor] = None
        self._act_autocast = resolve_autocast(self._cfg.collect.autocast, self._device, self._model)

    def precision_note(self) -> str:
        """What the forward passes run in, as the run's first line says it: 'learner bfloat16, acting float32'."""
        return describe_autocast(getattr(self, "_learn_autocast", None), getattr(self, "_act_autocast", None))

    def _act_model(self, obs: Tree, mode: str, **kwargs: Any) -> Dict[str, Any]:
        """The model's acting forward (collection, evaluation) under ``collect.autocast``; floating outputs float32."""
        if self._act_autocast is None:
            return self._model(obs, mode=mode, **kwargs)
        with autocast(self._act_autocast, self._device):
            out = self._model(obs, mode=mode, **kwargs)
        return tree_map(lambda x: x.float() if x.is_floating_point() else x, out)

    def _init_eval(self) -> None:
        self._init_collect()
        self._eval_epsilon = float(self._cfg.eval.epsilon)
        if self._eval_epsilon > 0 and self._action_space not in ("discrete", "multi_discrete"):
            raise ConfigError(f"policy.eval.epsilon={self._eval_epsilon}: epsilon-greedy evaluation needs discrete "
                              f"actions, and this env's are {self._action_space}; set policy.eval.epsilon=0")

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """Sample a_t ~ mu(.|x_t) (the current policy); keep its statistics for the importance ratios.
        ``obs`` (N_env, *obs_shape) -> ``action`` (N_env, ...) and ``logit``."""
        if self._recurrent:
            return self._act_recurrent(obs, "collect", kwargs.get("core_state"))
        obs, mask = self._split_mask(obs)
        logit = self._act_model(self._on_device(obs), "compute_actor")["logit"]
        return self._masked_output(logit, mask, sample_action(self._action_space, logit, self._nvec, mask))

    def _split_mask(self, obs: Tree) -> Tuple[Tree, Optional[torch.Tensor]]:
        """The observation without the action mask, and the mask (N, A) bool on the policy's device (or None)."""
        obs, mask = split_mask(obs, self._mask_key, self._nvec)
        return obs, None if mask is None else mask.to(self._device)

    def _masked_output(self, logit: Any, mask: Optional[torch.Tensor], action: torch.Tensor) -> Dict[str, Any]:
        """``action``, ``logit`` (masked: what the action was drawn from) and ``action_mask`` when there is one."""
        if mask is None:
            return {"action": action, "logit": logit}
        return {"action": action, "logit": mask_logits(self._action_space, logit, mask), "action_mask": mask}

    def _act_recurrent(self, obs: Tree, which: str, core_state: Optional[torch.Tensor],
                       mode: str = "compute_actor") -> Dict[str, Any]:
        """One step of a recurrent model for collect or eval. ``core_state`` None: from the state this mode carries
        for the envs (zeros at the start), which is then replaced by the next one; a tensor (N, 2, H): from it, and
        the carried state is left alone (``predict``). Returns ``action``, ``logit``, ``core_state`` (the state the
        step was taken with: what an unroll stores) and, given ``core_state``, ``next_core_state``; with
        ``mode='compute_actor_critic'`` also ``value``, V(x_t) from the same step (PPO)."""
        obs, mask = self._split_mask(obs)
        obs = self._on_device(obs)
        carried = core_state is None
        if carried:
            core_state = getattr(self, f"_{which}_state")
            if core_state is None:
                core_state = self._model.initial_state(leading_dim(obs), self._device)
            elif core_state.shape[0] != leading_dim(obs):
                raise UserError(f"the {which} mode carries the recurrent state of {core_state.shape[0]} envs but got "
                                f"{leading_dim(obs)} observations; call reset(None) when the number of envs changes")
        else:
            core_state = core_state.to(self._device)
        out = self._act_model(obs, mode, state=core_state)
        next_state = out["state"]
        if carried:
            setattr(self, f"_{which}_state", next_state)
        logit = out["logit"]
        if which == "collect":
            action = sample_action(self._action_space, logit, self._nvec, mask)
        else:
            action = self._greedy(logit, mask)
        value = out.get("value")
        out = {**self._masked_output(logit, mask, action), "core_state": core_state}
        if value is not None:
            out["value"] = value
        if not carried:  # predict carries the state itself (collection would only move it to the host every step)
            out["next_core_state"] = next_state
        return out

    def _reset_collect(self, env_ids: Optional[Sequence[int]] = None) -> None:
        """Zero the carried recurrent state of ``env_ids`` (None: every env): their next step starts an episode."""
        self._collect_state = _reset_rows(self._collect_state, env_ids)

    def _reset_eval(self, env_ids: Optional[Sequence[int]] = None) -> None:
        self._eval_state = _reset_rows(self._eval_state, env_ids)

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The standard transition plus the behaviour policy's statistics mu(.|x_t) (logits, or ``{'mu', 'sigma'}``)
        for the importance ratios."""
        if self._mask_key is not None:  # the mask travels as action_mask, not in the observations
            obs = split_mask(obs, self._mask_key, check=False)[0]
            timestep = {**timestep, "next_obs": split_mask(timestep["next_obs"], self._mask_key, check=False)[0]}
        transition = super()._process_transition(obs, policy_output, timestep)
        transition["logit"] = policy_output["logit"]
        if "action_mask" in policy_output:
            transition["action_mask"] = policy_output["action_mask"]
        if "core_state" in policy_output:  # a recurrent core: the state this step was taken with
            transition["core_state"] = policy_output["core_state"]
        return transition

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Each env's unroll of ``unroll_len`` steps is one train sample: ``(T, N, ...)`` -> ``(N, T, ...)``.

        Unrolls run across episode ends: the stored ``terminated``/``truncated`` flags cut the value recursion there,
        so every sample has exactly ``unroll_len`` steps and nothing is padded or lost. Observations are stored as
        ``policy.obs_storage`` says (module docstring): 'compact' replaces ``obs``/``next_obs`` by ``obs`` (T+1, ...)
        and ``final_obs`` (1, ...).
        """
        if "core_state" in segment:  # a recurrent core: the unroll keeps its initial state only, (1, N, 2, H)
            segment = {**segment, "core_state": segment["core_state"][:1]}
        if self._compact_obs(segment["obs"]):
            segment = compact_observations(segment)
        return tree_map(lambda x: x.transpose(0, 1), segment)

    def _compact_obs(self, obs: Tree) -> bool:
        """'compact' storage: asked for, or 'auto' and some observation leaf is uint8 (frames, where memory matters;
        not the small integer leaves of Discrete or MultiBinary spaces)."""
        storage = self._cfg.obs_storage
        return storage == "compact" or (storage == "auto" and any(x.dtype == torch.uint8 for x in tree_leaves(obs)))

    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor, core_state: Optional[torch.Tensor] = None) -> Dict[str, Any]:
        """The most likely action (the argmax of the logits, or the Gaussian's mean), (N_env, ...); with probability
        ``policy.eval.epsilon`` per env a uniformly random discrete action instead. A recurrent core: from the
        carried state, or from ``core_state`` when given (see :meth:`_act_recurrent`)."""
        if self._recurrent:
            return self._act_recurrent(obs, "eval", core_state)
        obs, mask = self._split_mask(obs)
        logit = self._act_model(self._on_device(obs), "compute_actor")["logit"]
        return self._masked_output(logit, mask, self._greedy(logit, mask))

    def _greedy(self, logit: Any, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        action = greedy_action(self._action_space, logit, self._nvec, mask)
        if self._eval_epsilon > 0:
            if mask is None:
                return epsilon_greedy(action, self._nvec or [logit.shape[-1]], self._eval_epsilon)
            # a uniformly random *valid* action: a draw from equal logits under the mask
            random = sample_action(self._action_space, torch.zeros_like(logit), self._nvec, mask)
            explore = torch.rand(action.shape[0], device=action.device) < self._eval_epsilon
            action = torch.where(explore.view(-1, *[1] * (action.dim() - 1)), random, action)
        return action

    def _forward_unroll(self, batch: UnrollBatch, mode: str = "compute_actor_critic",
                        model: Optional[torch.nn.Module] = None) -> Dict[str, Any]:
        """The learner's one pass of the model (or of ``model``, e.g. a target network) over ``batch.model_in``; a
        recurrent core replays the unrolls from their stored initial states (``data['core_state']``) with resets at
        episode ends."""
        model = self._model if model is None else model
        if not self._recurrent:
            return model(batch.model_in, mode=mode)
        return model.forward_unroll(batch.model_in, batch.data["core_state"][0], batch.done,
                                    batch.extra_state_index, mode=mode)

    # ---- learn prelude -----------------------------------------------------------------------------------------
    def _unroll_batch(self, data: Dict[str, Any]) -> UnrollBatch:
        """A sampled batch, leaves (B, T, ...) -> an :class:`UnrollBatch` on the policy's device, leaves (T, B, ...).

        The final observations of truncated steps are data-dependent in number (K): which rows to gather is worked
        out here from the episode-end flags while they are still on the host (the replay buffer's CPU tensors), and
        only the index moves to the device, so no step waits for a GPU. (Flags already on a GPU make the count
        ``nonzero`` wait for it: the one data-dependent shape, unavoidable without a fixed bound on K.)"""
        device = self._device
        # (T, B) on the host (NumPy: ~1 us an op on these few flags, torch's CPU ops ~4 us); a no-op for CPU flags
        boot_host = (data["truncated"] & ~data["terminated"]).cpu().numpy().T
        T, B = boot_host.shape
        t, b = np.nonzero(boot_host)  # (K,) each, (t, b) row-major

        def index(values: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(values).to(device, non_blocking=True)

        data = tree_map(lambda x: x.to(device, non_blocking=True).transpose(0, 1), data)  # -> (T, B, ...)
        for key in ("obs", "next_obs", "final_obs"):  # env.normalize_obs: the statistics of the moment
            if key in data:
                data[key] = self._normalized(data[key])
        if "next_obs" in data:  # 'full': the K final observations are the next_obs of the bootstrapped steps
            rows = index(b * T + t)  # next_obs as sampled is (B, T, ...): its rows are b*T + t
            finals = tree_map(lambda x: x.transpose(0, 1).reshape(B * T, *x.shape[2:]).index_select(0, rows),
                              data["next_obs"])
        else:  # 'compact': K' <= B final observations, one per unroll that has one (t < T-1)
            has_final = boot_host[:-1].any(0)  # (B,)
            slot = np.cumsum(has_final) - 1  # the row of column b among the final observations
            final_index = index(np.where(t == T - 1, T * B + b, T * B + B + slot[b]))
            final_cols = index(np.flatnonzero(has_final))
        boot_index = index(t * B + b)
        extra = None
        if self._recurrent:  # the state each row after the steps continues from: x_T's, then the finals'
            last = (T - 1) * B + np.arange(B)
            if "next_obs" in data:
                extra = index(np.concatenate([last, t * B + b]))
            else:
                inside = t < T - 1
                order = np.argsort(b[inside], kind="stable")
                extra = index(np.concatenate([last, (t[inside] * B + b[inside])[order]]))
        terminated, truncated = data["terminated"], data["truncated"]
        bootstrapped = truncated & ~terminated
        obs = data["obs"]
        flat_obs = tree_map(lambda x: x[:T].reshape(T * B, *x.shape[2:]), obs)
        # One forward pass: every obs of the unroll, the obs after the last step, and the true final observations.
        if "next_obs" in data:  # 'full': each step's next_obs
            model_in = tree_cat([flat_obs, tree_map(lambda x: x[-1], data["next_obs"]), finals])
            return UnrollBatch(data, T, B, terminated | truncated, bootstrapped, flat_obs, model_in, boot_index,
                               extra_state_index=extra)
        # 'compact': obs holds x_0 .. x_T, final_obs the one final obs of a step t < T-1 truncated inside the unroll
        model_in = tree_cat([flat_obs, tree_map(lambda x: x[T], obs),
                             tree_map(lambda x: x[0].index_select(0, final_cols), data["final_obs"])])
        return UnrollBatch(data, T, B, terminated | truncated, bootstrapped, flat_obs, model_in, boot_index,
                           final_index, extra)


def _reset_rows(state: Optional[torch.Tensor], env_ids: Optional[Sequence[int]]) -> Optional[torch.Tensor]:
    """A carried recurrent state with the rows of ``env_ids`` zeroed (a new tensor); None for ``env_ids=None``."""
    if state is None or env_ids is None:
        return None
    env_ids = list(env_ids)
    if not env_ids:
        return state
    return state.index_fill(0, torch.as_tensor(env_ids, dtype=torch.long, device=state.device), 0.0)


def compact_observations(segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """A time-major segment (T, N, ...) with ``obs`` and ``next_obs`` -> the same with ``obs`` (T+1, N, ...) =
    x_0 .. x_T and ``final_obs`` (1, N, ...), the final observation of each env's one step t < T-1 that was truncated
    and not terminated (zeros where none was); see the module docstring."""
    obs, next_obs = segment["obs"], segment["next_obs"]
    T = segment["reward"].shape[0]
    boot = segment["truncated"][:-1] & ~segment["terminated"][:-1]  # (T-1, N)
    counts = boot.sum(0)
    if (counts > 1).any():
        env = int(torch.nonzero(counts > 1)[0, 0])
        steps = torch.nonzero(boot[:, env]).flatten().tolist()
        raise UserError(f"policy.obs_storage: env {env} had {int(counts[env])} episodes cut by a time limit (steps "
                        f"{steps}) within one unroll of {T} steps; compact storage keeps one final "
                        f"observation per unroll. Use an unroll_len no longer than the episodes' time limit, or "
                        f"policy.obs_storage='full'")
    t, n = boot.nonzero(as_tuple=True) if counts.any() else (None, None)

    def final(x: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros((1, *x.shape[1:]))
        if t is not None:
            out[0, n] = x[t, n]
        return out

    out = {k: v for k, v in segment.items() if k not in ("obs", "next_obs")}
    out["obs"] = tree_map(lambda x, y: torch.cat([x, y[-1:]], dim=0), obs, next_obs)
    out["final_obs"] = tree_map(final, next_obs)
    return out
