"""SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications"), as in ALF, with DI-engine's keys:
:class:`SACPolicy`, which owns the networks, the temperature, the optimiser and the target critics, acts, and runs
one update (:meth:`SACPolicy._forward_learn`: batch -> losses and gradients -> Adam's step -> target critics -> logged
values).

SAC maximises the entropy-regularised return with N critics Q_i, slowly moving target copies Q_i' and a temperature
alpha tuned towards a target entropy. The action space's part (acting and the losses) is a
:class:`~.action_space.SACActionSpace` picked from ``model.action_space``: :class:`~.continuous.ContinuousSAC`,
:class:`~.discrete.DiscreteSAC`, :class:`~.mixed.MixedSAC`. How an update's gradients are computed is an
:class:`~.update.UpdateEngine` chosen once, at the learner's start (:func:`~.update_choice.make_update_engine`):
autograd's on the action space's losses (the reference), or for continuous SAC with the built-in networks the same
update with hand-written gradients, eager or compiled.

The loss math is in :mod:`ding_lite.rl_utils.sac`. Shapes are batch-major: B transitions, N critic replicas, D
continuous action dims.
"""
import math
from typing import Any, Dict, List, Optional, Tuple

import torch
from easydict import EasyDict

from ding_lite.torch_utils import make_optimizer, sample_action, tree_map
from ding_lite.torch_utils.tree import leading_dim
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from ..action_mask import split_mask
from ..base_policy import Policy
from ..transitions import TransitionHooks
from ..checks import check_positive
from .action_space import SACActionSpace, SACLosses
from .continuous import ContinuousSAC
from .discrete import DiscreteSAC
from .mixed import MixedSAC
from .temperature import check_temperature_config, target_entropies
from .update import AfterGradients, UpdateEngine
from .update_choice import make_update_engine


ACTION_SPACES = {"continuous": ContinuousSAC, "discrete": DiscreteSAC, "mixed": MixedSAC}


@POLICY_REGISTRY.register("sac")
class SACPolicy(TransitionHooks, Policy):
    """Soft actor-critic with N critic replicas (``model.num_critics``) and automatic entropy tuning (one temperature
    per part of the action); the action space's part (acting, losses) is an :class:`~.action_space.SACActionSpace`."""

    action_bound = "rescale"
    # policy.priority: per-sample priority mean_i |y - Q_i(s, a)| over the critics; IS weights scale the critics' loss.
    supports_priority = True
    # Action masks: discrete SAC (policy/sac/discrete.py); the pipeline refuses them for continuous and mixed actions.
    supports_action_mask = True

    config = dict(
        type="sac",
        # (int) Env steps of uniformly random actions collected before the first update (warm-up).
        random_collect_size=10000,
        unroll_len=1,
        # (int) n-step returns (DI-engine's key): the critics regress sum_{k<m} gamma^k r_{t+k} + gamma^m (1 -
        # terminated) V(s_{t+m}), m <= nstep cut short by an episode end. 1: the one-step target.
        nstep=1,
        learn=dict(
            update_per_collect=1,
            batch_size=256,
            # (float) Learning rate of the critics.
            learning_rate_q=3e-4,
            # (float) Learning rate of the actor.
            learning_rate_policy=3e-4,
            # (float) Learning rate of log(alpha).
            learning_rate_alpha=3e-4,
            # (float) Polyak weight of the online critics in the target critics' update (DI-engine's theta).
            target_theta=0.005,
            # (int) Update the target critics every this many train iterations.
            target_update_period=1,
            discount_factor=0.99,
            # (float) Initial (or, with auto_alpha=False, fixed) entropy temperature; both parts of a mixed action.
            alpha=0.2,
            # (bool) Tune alpha (in log space) towards the target entropy.
            auto_alpha=True,
            # (float, list or dict) Target entropy of each temperature; None: -dim(A) for continuous actions,
            # target_entropy_ratio * log|A| for discrete ones. A number for an action with one part; for a mixed
            # action one per part, [discrete, continuous] or dict(discrete=..., continuous=...). A discrete part's
            # must be in (0, log|A|), a continuous part's below 0.6836 * dim(A) (see policy/sac/temperature.py).
            target_entropy=None,
            # (float) Discrete (and mixed discrete part) target entropy as a fraction of log|A|, in (0, 1).
            target_entropy_ratio=0.5,
            # (float) Floor on log(alpha) (alpha >= exp(-10) = 4.5e-5 by default), so that alpha cannot decay
            # towards 0 for ever; applied after each update when auto_alpha.
            min_log_alpha=-10.0,
            # (float) Cap on log(alpha); None: no cap. Applied after each update when auto_alpha.
            max_log_alpha=None,
            # (str) Discrete policy: 'actor' (softmax of an actor network) or 'boltzmann' (exp(Q/alpha), no actor).
            discrete_policy="actor",
            # (bool) DI-engine compatibility: treat every transition as non-terminal. Not needed for time limits,
            # which ding_lite already bootstraps through (truncated is not terminated).
            ignore_done=False,
            # (bool or None) Continuous actions: compute the losses' gradients by hand instead of with autograd
            # (policy/sac/manual_update.py: the same losses and gradients, fewer and larger operations). None:
            # wherever the model is the built-in QAC with ReLU or tanh layers; True: require it; False: autograd.
            manual_update=None,
            # (bool or None) The hand-written update as one torch.compile program (needs a C++ compiler, or Triton
            # on a GPU; compiles for 3-18 s): 1.5x faster per update at [64, 64] on a CPU, 1.1-1.3x at [256, 256];
            # on a GPU it runs as a CUDA graph, 3.2-3.8x faster on an H100 (docs/sac.md#speed). None: from
            # update 5,000 on, on a CPU or a GPU (policy/sac/compiled_update.py, AUTO_COMPILE_AFTER: where a run is
            # likely to repay the compilation; if it fails, the run warns and goes on eagerly); True: from the first
            # update; False: never. On a CPU it turns on the top-level keep_freed_memory unless that is False.
            compile_update=None,
        ),
        collect=dict(n_sample=1),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        learn = cfg.learn
        check_positive(learn, ("learning_rate_q", "learning_rate_policy", "learning_rate_alpha", "alpha"),
                       f"{path}.learn")
        if not 0 < learn.target_theta <= 1:
            raise ConfigError(f"{path}.learn.target_theta={learn.target_theta}: must be in (0, 1]")
        if learn.target_update_period < 1:
            raise ConfigError(f"{path}.learn.target_update_period={learn.target_update_period}: must be >= 1")
        if not 0 < learn.target_entropy_ratio < 1:
            raise ConfigError(f"{path}.learn.target_entropy_ratio={learn.target_entropy_ratio}: must be in (0, 1)")
        check_temperature_config(learn, f"{path}.learn")
        if learn.compile_update not in (None, True, False):
            raise ConfigError(f"{path}.learn.compile_update={learn.compile_update!r}: must be None (long runs on "
                              f"a CPU), True or False")
        if learn.manual_update not in (None, True, False):
            raise ConfigError(f"{path}.learn.manual_update={learn.manual_update!r}: must be None (wherever it "
                              f"applies), True or False")
        if learn.discrete_policy not in ("actor", "boltzmann"):
            raise ConfigError(f"{path}.learn.discrete_policy='{learn.discrete_policy}': must be 'actor' or "
                              f"'boltzmann'")
        if cfg.random_collect_size < 0:
            raise ConfigError(f"{path}.random_collect_size={cfg.random_collect_size}: must be >= 0")
        if cfg.model.actor is not True:
            raise ConfigError(f"{path}.model.actor={cfg.model.actor}: SAC decides whether there is an actor; for a "
                              f"discrete policy without one set {path}.learn.discrete_policy='boltzmann'")
        if cfg.unroll_len != 1:
            raise ConfigError(f"{path}.unroll_len={cfg.unroll_len}: SAC trains on single transitions; set it to 1")
        if isinstance(cfg.nstep, bool) or not isinstance(cfg.nstep, int) or cfg.nstep < 1:
            raise ConfigError(f"{path}.nstep={cfg.nstep!r}: must be an integer >= 1 (the horizon of the critics' "
                              f"n-step targets; 1: one-step targets)")

    def default_model(self) -> Tuple[str, List[str]]:
        return "qac", ["ding_lite.model.qac"]

    def _create_model(self, model_cfg: EasyDict) -> torch.nn.Module:
        if model_cfg.action_space == "discrete" and self._cfg.learn.discrete_policy == "boltzmann":
            model_cfg = EasyDict(model_cfg, actor=False)
        return super()._create_model(model_cfg)

    def _setup_model(self) -> None:
        """Make the temperature part of the model: the parameter ``model.log_alpha`` (``learn.alpha`` initially;
        shape (1,), or (2,) [discrete, continuous] for mixed actions). Collectors and evaluators get their weights as
        ``model.state_dict()``, so they act with the learner's alpha, not the initial one. A model that already has
        it (a copy of one set up here) keeps its own."""
        n_alphas = ACTION_SPACES[self._cfg.model.action_space].n_alphas
        log_alpha = dict(self._model.named_parameters(recurse=False)).get("log_alpha")
        if log_alpha is None:
            init = torch.full((n_alphas,), math.log(self._cfg.learn.alpha), device=self._device)
            log_alpha = torch.nn.Parameter(init)
            self._model.register_parameter("log_alpha", log_alpha)
        elif log_alpha.shape != (n_alphas,):
            raise ValueError(f"model.log_alpha has shape {tuple(log_alpha.shape)}; SAC on a "
                             f"'{self._cfg.model.action_space}' action space needs ({n_alphas},)")
        self._log_alpha = log_alpha
        # The action space's part of SAC, bound to this model and its temperature.
        self._actions: SACActionSpace = ACTION_SPACES[self._cfg.model.action_space](self._model, self._cfg,
                                                                                    log_alpha)

    def checkpoint_model_state(self, policy_state: Dict[str, Any]) -> Dict[str, Any]:
        """Checkpoints written before the temperature moved into the model keep it beside the model, as
        ``policy_state['log_alpha']``: put it back into the model's state."""
        model = policy_state["model"]
        if "log_alpha" not in model and "log_alpha" in policy_state:
            model = {**model, "log_alpha": policy_state["log_alpha"]}
        return model

    # ---- collect / eval ----------------------------------------------------------------------------------------
    def _alphas(self) -> torch.Tensor:
        return self._log_alpha.detach().exp()

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, random_action: bool = False, **kwargs: Any) -> Dict[str, Any]:
        """Sampled actions (uniformly random ones during warm-up, ``random_action=True``; with an action mask,
        uniformly random valid ones), (N_env, ...)."""
        obs, mask = self._split_mask(obs)
        obs = self._on_device(obs)
        if random_action:  # both parts are drawn whatever the action space: one random stream for all of them
            B, space = leading_dim(obs), self._actions
            cont = torch.rand(B, space.action_dim or 0, device=self._device) * 2 - 1
            if mask is None:
                disc = torch.randint(space.n_discrete or 1, (B,), device=self._device)
            else:  # a draw from equal logits under the mask
                disc = sample_action("discrete", torch.zeros(mask.shape, device=self._device), None, mask)
            return {"action": space.pack(disc, cont)}
        return {"action": self._act(obs, False, mask)}

    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, Any]:
        """The deterministic action: tanh(mu) for the continuous part, the most likely (valid) discrete action."""
        obs, mask = self._split_mask(obs)
        return {"action": self._act(self._on_device(obs), True, mask)}

    def _act(self, obs: Any, deterministic: bool, mask: Optional[torch.Tensor]) -> Any:
        return self._actions.act(obs, deterministic) if mask is None else self._actions.act(obs, deterministic, mask)

    def _split_mask(self, obs: Any) -> Tuple[Any, Optional[torch.Tensor]]:
        """The observation without the action mask (``policy.action_mask_key``; discrete actions only, which
        :func:`ding_lite.entry.build.resolve_action_mask` checks), and the mask (N, A) bool on the device or None."""
        obs, mask = split_mask(obs, self._cfg.action_mask_key)
        return obs, None if mask is None else mask.to(self._device)

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._target_critic = self._model.make_target_critic()
        self._critic_params = self._model.critic_parameters()
        self._target_params = list(self._target_critic.parameters())
        self._actor_params = self._model.actor_parameters()
        # One optimizer, one parameter group per learning rate: a single (fused) step per update instead of three.
        groups = [{"params": self._critic_params, "lr": learn.learning_rate_q},
                  {"params": [self._log_alpha], "lr": learn.learning_rate_alpha}]
        if self._actor_params:
            groups.append({"params": self._actor_params, "lr": learn.learning_rate_policy})
        self._optimizer = make_optimizer("adam", groups, learn.learning_rate_q)
        self._trained_params = [p for group in groups for p in group["params"]]  # for the gradient norm
        # One target per temperature, checked against the entropies this action space can have.
        self._target_entropy = target_entropies(learn, self._actions.head_sizes(),
                                                self._cfg.model.get("log_std_min", -20.0), "policy.learn")
        after = AfterGradients(self._optimizer, self._trained_params, self._log_alpha, learn.auto_alpha,
                               learn.min_log_alpha, learn.max_log_alpha, self._target_params, self._critic_params,
                               learn.target_theta)
        # How the update's gradients are computed (learn.manual_update, learn.compile_update): chosen once, here.
        self._update: UpdateEngine = make_update_engine(learn, self._actions, self._target_critic,
                                                        self._target_entropy, after, self._device)
        self._learn_steps = 0

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, float]:
        """One update of the critics, the actor and alpha, then (every ``learn.target_update_period`` updates) the
        target critics; ``data`` leaves are (B, ...) transitions.

        As in ALF, the three losses are computed from the same parameters and stepped together: the actor's loss
        sees the critics before this update's step (SB3 steps the critics first; the difference is one update).
        """
        batch = self._learn_batch(data)
        alphas = self._alphas()
        update_targets = (self._learn_steps + 1) % self._cfg.learn.target_update_period == 0
        # losses -> gradients -> Adam's step (and log alpha's clamp) -> with update_targets, the target critics
        losses = self._update(batch, alphas, self._learn_steps, update_targets)
        self._learn_steps += 1
        return self._learn_info(losses, alphas)

    def _learn_batch(self, data: Dict[str, Any]) -> Dict[str, torch.Tensor]:
        """The sampled transitions on the policy's device, observations normalised, reward and terminated float."""
        data = tree_map(lambda x: x.to(self._device, non_blocking=True), data)
        data["obs"], data["next_obs"] = self._normalized(data["obs"]), self._normalized(data["next_obs"])
        data["reward"] = data["reward"].float()
        data["terminated"] = data["terminated"].float()
        return data

    def _learn_info(self, losses: SACLosses, alphas: torch.Tensor) -> Dict[str, Any]:
        """What the learner logs of one update (0-dim tensors: it converts only what it logs), and with
        ``policy.priority`` each sample's new priority."""
        info = dict(losses.info)
        if losses.actor is not None:
            info["actor_loss"] = losses.actor.detach()
        if self._cfg.learn.auto_alpha:
            info["alpha_loss"] = losses.alpha.detach()
        info.update(critic_loss=losses.critic.detach(), q_mean=losses.q.detach().mean(),
                    target_q_mean=losses.target.mean(), **self._actions.alpha_info(alphas))
        if self._cfg.priority:  # (B,) |TD error| averaged over the critics, for the replay buffer
            err = (losses.q.detach() - losses.target.detach()).abs()
            info["priority"] = err.mean(0) if err.dim() == 2 else err
        if self._lr_scheduler is not None:  # the scheduled rates (floats: no device transfer)
            groups = self._optimizer.param_groups
            info.update(cur_lr_q=groups[0]["lr"], cur_lr_alpha=groups[1]["lr"])
            if len(groups) > 2:
                info["cur_lr_policy"] = groups[2]["lr"]
        return info

    def _monitor_vars_learn(self) -> List[str]:
        return ["critic_loss", "actor_loss", "alpha_loss", "alpha", "alpha_discrete", "entropy", "entropy_discrete",
                "q_mean", "target_q_mean", "grad_norm", "cur_lr_q", "cur_lr_policy", "cur_lr_alpha"]

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {
            "model": self._model.state_dict(),
            "target_critic": self._target_critic.state_dict(),
            "optimizer": self._optimizer.state_dict(),
            "learn_steps": self._learn_steps,
        }

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        self._model.load_state_dict(self.checkpoint_model_state(state))
        self._target_critic.load_state_dict(state["target_critic"])
        self._optimizer.load_state_dict(state["optimizer"])
        self._learn_steps = int(state["learn_steps"])


@POLICY_REGISTRY.register("discrete_sac")
class DiscreteSACPolicy(SACPolicy):
    """DI-engine's ``discrete_sac`` name for SAC on a Discrete action space (the same implementation)."""

    config = dict(type="discrete_sac")
