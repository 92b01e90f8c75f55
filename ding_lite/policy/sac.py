"""SAC (Haarnoja et al. 2018) for continuous, discrete and mixed (Tuple(Discrete, Box)) actions, as in ALF.

Continuous: a tanh-squashed Gaussian actor (actions in [-1, 1], mapped onto the env's Box by the library).
Discrete: the actor's softmax (DI-engine's ``discrete_sac``) or, with ``learn.discrete_policy='boltzmann'``, ALF's
p(a|s) ∝ exp(Q(s, a)/alpha) with no actor. Mixed: the continuous part from the actor, the discrete part from the
Boltzmann policy of a Q network that takes the continuous action as input; each part has its own alpha.
"""
import math
from typing import Any, Dict, List, Optional, Tuple

import torch
from easydict import EasyDict

from ding_lite.rl_utils import sac as S
from ding_lite.torch_utils import grad_norm, make_optimizer, polyak_update, tree_map
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .base_policy import Policy
from .checks import check_positive


@POLICY_REGISTRY.register("sac")
class SACPolicy(Policy):
    """Soft actor-critic with N critic replicas (``model.num_critics``) and automatic entropy tuning."""

    action_bound = "rescale"

    config = dict(
        type="sac",
        # (int) Env steps of uniformly random actions collected before the first update (warm-up).
        random_collect_size=10000,
        unroll_len=1,
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
            # (float) Target entropy; None: -dim(A) for continuous actions, target_entropy_ratio * log|A| for discrete.
            target_entropy=None,
            # (float) Discrete (and mixed discrete part) target entropy as a fraction of log|A|, in (0, 1).
            target_entropy_ratio=0.5,
            # (float) Cap on log(alpha); None: no cap.
            max_log_alpha=None,
            # (str) Discrete policy: 'actor' (softmax of an actor network) or 'boltzmann' (exp(Q/alpha), no actor).
            discrete_policy="actor",
            # (bool) DI-engine compatibility: treat every transition as non-terminal. Not needed for time limits,
            # which ding_lite already bootstraps through (truncated is not terminated).
            ignore_done=False,
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
        n_alphas = 2 if self._cfg.model.action_space == "mixed" else 1
        log_alpha = dict(self._model.named_parameters(recurse=False)).get("log_alpha")
        if log_alpha is None:
            init = torch.full((n_alphas,), math.log(self._cfg.learn.alpha), device=self._device)
            log_alpha = torch.nn.Parameter(init)
            self._model.register_parameter("log_alpha", log_alpha)
        elif log_alpha.shape != (n_alphas,):
            raise ValueError(f"model.log_alpha has shape {tuple(log_alpha.shape)}; SAC on a "
                             f"'{self._cfg.model.action_space}' action space needs ({n_alphas},)")
        self._log_alpha = log_alpha

    def checkpoint_model_state(self, policy_state: Dict[str, Any]) -> Dict[str, Any]:
        """Checkpoints written before the temperature moved into the model keep it beside the model, as
        ``policy_state['log_alpha']``: put it back into the model's state."""
        model = policy_state["model"]
        if "log_alpha" not in model and "log_alpha" in policy_state:
            model = {**model, "log_alpha": policy_state["log_alpha"]}
        return model

    # ---- shared ------------------------------------------------------------------------------------------------
    def _init_spaces(self) -> None:
        self._space = self._cfg.model.action_space
        self._boltzmann = self._space == "discrete" and self._cfg.learn.discrete_policy == "boltzmann"
        shape = self._cfg.model.action_shape
        self._n_discrete = shape if self._space == "discrete" else shape[0] if self._space == "mixed" else None
        self._action_dim = shape if self._space == "continuous" else shape[1] if self._space == "mixed" else None

    def _alphas(self) -> torch.Tensor:
        return self._log_alpha.detach().exp()

    def _act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """A squashed-Gaussian action in [-1, 1]^D without its density (acting needs none)."""
        out = self._model.compute_actor(obs)
        return S.squashed_gaussian_action(out["mu"], out["log_std"], deterministic)

    def _continuous(self, obs: torch.Tensor, deterministic: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        """A squashed-Gaussian action in [-1, 1]^D and its log-density (reparameterised)."""
        out = self._model.compute_actor(obs)
        return S.squashed_gaussian_sample(out["mu"], log_std=out["log_std"], deterministic=deterministic)

    def _discrete_log_probs(self, obs: torch.Tensor, q: Optional[torch.Tensor] = None,
                            alpha: Optional[torch.Tensor] = None) -> torch.Tensor:
        """log pi(.|s) (B, A): the actor's log-softmax, or the Boltzmann policy of ``q`` (min over critics)."""
        if self._boltzmann or self._space == "mixed":
            return S.boltzmann_policy(S.ensemble_min(q), alpha)[1]
        return torch.log_softmax(self._model.compute_actor(obs)["logit"], dim=-1)

    # ---- collect / eval ----------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._init_spaces()

    _init_eval = _init_collect

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, random_action: bool = False, **kwargs: Any) -> Dict[str, Any]:
        """Sampled actions (uniformly random ones during warm-up, ``random_action=True``)."""
        obs = obs.to(self._device)
        B = obs.shape[0]
        if random_action:
            cont = torch.rand(B, self._action_dim or 0, device=self._device) * 2 - 1
            disc = torch.randint(self._n_discrete or 1, (B,), device=self._device)
        else:
            cont = self._act(obs) if self._space != "discrete" else None
            disc = None
            if self._space != "continuous":
                alpha = self._alphas()[0]
                q = self._model.compute_critic(obs, cont) if self._boltzmann or self._space == "mixed" else None
                log_probs = self._discrete_log_probs(obs, q, alpha)
                disc = (log_probs - torch.empty_like(log_probs).exponential_().log()).argmax(-1)  # Gumbel-max
        return {"action": self._pack(disc, cont)}

    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, Any]:
        """The deterministic action: tanh(mu) for the continuous part, the most likely discrete action."""
        obs = obs.to(self._device)
        cont = self._act(obs, deterministic=True) if self._space != "discrete" else None
        disc = None
        if self._space != "continuous":
            q = self._model.compute_critic(obs, cont) if self._boltzmann or self._space == "mixed" else None
            disc = self._discrete_log_probs(obs, q, self._alphas()[0]).argmax(-1)
        return {"action": self._pack(disc, cont)}

    def _pack(self, disc: Optional[torch.Tensor], cont: Optional[torch.Tensor]) -> Any:
        if self._space == "mixed":
            return {"discrete": disc, "continuous": cont}
        return cont if self._space == "continuous" else disc

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Single transitions: a ``(1, N_env, ...)`` segment -> N_env samples ``(N_env, ...)``."""
        return tree_map(lambda x: x[0], segment)

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._init_spaces()
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
        self._target_entropy = self._default_target_entropy()
        self._learn_steps = 0

    def _default_target_entropy(self) -> List[float]:
        """Per alpha: [continuous] -D, [discrete] ratio * log|A|, [mixed] [discrete, continuous]."""
        learn = self._cfg.learn
        if learn.target_entropy is not None:
            return [float(learn.target_entropy)] * self._log_alpha.numel()
        discrete = (S.discrete_target_entropy(self._n_discrete, learn.target_entropy_ratio)
                    if self._n_discrete else None)
        continuous = S.continuous_target_entropy(self._action_dim) if self._action_dim else None
        return {"continuous": [continuous], "discrete": [discrete], "mixed": [discrete, continuous]}[self._space]

    def _critic_target(self, data: Dict[str, torch.Tensor], alphas: torch.Tensor, a2: Optional[torch.Tensor] = None,
                       logp2: Optional[torch.Tensor] = None) -> torch.Tensor:
        """y = r + gamma (1 - terminated) V'(s'), the soft value under the target critics (no gradient).

        ``a2``/``logp2``: a fresh continuous action at s' and its log-density (continuous and mixed spaces)."""
        next_obs, reward, gamma = data["next_obs"], data["reward"], self._cfg.learn.discount_factor
        terminated = torch.zeros_like(reward) if self._cfg.learn.ignore_done else data["terminated"]
        with torch.no_grad():
            if self._space == "continuous":
                q2 = self._target_q(next_obs, a2)
                return S.sac_critic_target(reward, q2, logp2, alphas[0], gamma, terminated)
            if self._space == "discrete":
                q2 = self._target_q(next_obs)
                online_q2 = self._model.compute_critic(next_obs) if self._boltzmann else None
                log_probs2 = self._discrete_log_probs(next_obs, online_q2, alphas[0])
                return S.discrete_sac_critic_target(reward, q2, log_probs2, alphas[0], gamma, terminated)
            q2 = self._target_q(next_obs, a2)
            log_probs2 = S.boltzmann_policy(S.ensemble_min(self._model.compute_critic(next_obs, a2)), alphas[0])[1]
            return S.mixed_sac_critic_target(reward, q2, log_probs2, logp2, alphas[0], alphas[1], gamma, terminated)

    def _target_q(self, obs: torch.Tensor, action: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self._model.compute_critic(obs, action, critic=self._target_critic)

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, float]:
        """One update of the critics, the actor and alpha, then (every period) the target critics.

        As in ALF, the three losses are computed from the same parameters and stepped together: the actor's loss
        sees the critics before this update's step (SB3 steps the critics first; the difference is one update).
        """
        data = tree_map(lambda x: x.to(self._device, non_blocking=True), data)
        obs, action = data["obs"], data["action"]
        data["reward"] = data["reward"].float()
        data["terminated"] = data["terminated"].float()
        alphas = self._alphas()
        learn = self._cfg.learn

        # One actor pass for s and s': the actions for the actor loss (with gradient) and for the targets (without).
        a = logp = a2 = logp2 = None
        if self._space != "discrete":
            B = obs.shape[0]
            a_all, logp_all = self._continuous(torch.cat([obs, data["next_obs"]]))
            a, logp, a2, logp2 = a_all[:B], logp_all[:B], a_all[B:].detach(), logp_all[B:].detach()

        # Critics: regress every replica on the soft Bellman target.
        target = self._critic_target(data, alphas, a2, logp2)
        if self._space == "continuous":
            q = self._model.compute_critic(obs, action)
        elif self._space == "discrete":
            q = S.gather_q(self._model.compute_critic(obs), action)
        else:
            q = S.gather_q(self._model.compute_critic(obs, action["continuous"]), action["discrete"])
        critic_loss = S.sac_critic_loss(q, target)

        # Actor, and the entropies alpha is tuned on.
        info = {}
        if self._space == "continuous":
            actor_loss = S.sac_actor_loss(self._model.compute_critic(obs, a), logp, alphas[0])
            alpha_loss = S.sac_alpha_loss(self._log_alpha[0], logp, self._target_entropy[0])
            info["entropy"] = -logp.detach().mean()
        elif self._space == "discrete":
            q_now = self._model.compute_critic(obs).detach()
            log_probs = self._discrete_log_probs(obs, q_now, alphas[0])
            actor_loss = None if self._boltzmann else S.discrete_sac_actor_loss(q_now, log_probs, alphas[0])
            entropy = S.discrete_entropy(log_probs.detach())
            alpha_loss = S.sac_alpha_loss_from_entropy(self._log_alpha[0], entropy, self._target_entropy[0])
            info["entropy"] = entropy.mean()
        else:
            q_a = self._model.compute_critic(obs, a)
            actor_loss = S.mixed_sac_actor_loss(q_a, logp, alphas[0], alphas[1])
            entropy_d = S.discrete_entropy(S.boltzmann_policy(S.ensemble_min(q_a.detach()), alphas[0])[1])
            alpha_loss = (S.sac_alpha_loss_from_entropy(self._log_alpha[0], entropy_d, self._target_entropy[0])
                          + S.sac_alpha_loss(self._log_alpha[1], logp, self._target_entropy[1]))
            info["entropy"] = -logp.detach().mean()
            info["entropy_discrete"] = entropy_d.mean()

        self._optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        if actor_loss is not None:
            actor_loss.backward(inputs=self._actor_params)  # its gradient on the critics is not wanted
            info["actor_loss"] = actor_loss.detach()
        if learn.auto_alpha:
            alpha_loss.backward()
            info["alpha_loss"] = alpha_loss.detach()
        info["grad_norm"] = grad_norm(self._trained_params)  # before the step: the learner checks it is finite
        self._optimizer.step()
        S.clamp_log_alpha_(self._log_alpha, learn.max_log_alpha)
        self._learn_steps += 1
        if self._learn_steps % learn.target_update_period == 0:
            polyak_update(self._target_params, self._critic_params, learn.target_theta)

        info.update(critic_loss=critic_loss.detach(), q_mean=q.detach().mean(), target_q_mean=target.mean(),
                    alpha=alphas[-1])
        if self._space == "mixed":
            info["alpha_discrete"] = alphas[0]
        return info  # 0-dim tensors: the learner converts only what it logs

    def _monitor_vars_learn(self) -> List[str]:
        return ["critic_loss", "actor_loss", "alpha_loss", "alpha", "alpha_discrete", "entropy", "entropy_discrete",
                "q_mean", "target_q_mean", "grad_norm"]

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
