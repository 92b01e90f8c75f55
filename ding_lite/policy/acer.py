"""ACER (Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay") for discrete and continuous actions.

Each train sample is one env's unroll of T = ``unroll_len`` steps collected by a behaviour policy mu (an older copy of
pi). One update on a batch of B unrolls, time-major (T, B):

1. One forward pass of the actor and the critic over the T*B observations, the B observations x_T after the unrolls
   and the true final observations of the steps truncated inside them; one of the average actor over the T*B.
2. Retrace targets Q_ret (backwards from V(x_T); 0 after a termination, gamma V(final obs) after a truncation) with
   c_t = min(1, rho_t) (discrete) or min(1, rho_t^(1/d)) (d-dim. continuous).
3. Policy: truncated importance sampling min(c, rho_t) plus the bias correction (exact over all actions for discrete,
   one sample a' ~ pi for continuous) against Q_ret (or Q_opc); with the trust region, its gradient g w.r.t. the
   policy's statistics (logits; mu and sigma) is projected so that the linearised KL to the average policy stays below
   delta, and the projected surrogate replaces the policy loss. Entropy bonus outside the projection (as ChainerRL).
4. Critic: 0.5 (Q_ret - Q(x_t, a_t))^2, plus for the continuous stochastic dueling network 0.5 (V_target - V(x_t))^2.
5. One step of each optimiser (actor, critic); the average actor moves towards the actor by ``target_theta``.

The math lives in :mod:`ding_lite.rl_utils.acer`; this module builds its inputs. Collection, train samples and the
episode-end convention are those of every unroll policy (:mod:`ding_lite.policy.unroll_policy`).

Action masks (``env.action_mask_key``, discrete actions): acting samples under the mask and stores it with the
behaviour logits already masked, as every unroll policy does; ACER also stores the mask of each step's next
observation (``next_action_mask``), since V(x) = sum_a pi(a|x) Q(x, a) of x_T and of a truncated episode's final
observation sums over that state's valid actions. The learner re-masks pi and the average policy with the stored
masks: the ratios rho and the trace c compare masked pi and mu, and the bias correction, the trust region's g and k
and the entropy are exactly 0 at masked actions (:mod:`ding_lite.rl_utils.acer`).
"""
from typing import Any, Dict, List, Tuple

import torch
import torch.nn.functional as F
from easydict import EasyDict

from ding_lite.rl_utils import acer as A
from ding_lite.torch_utils import GradClipper, make_optimizer, polyak_update
from ding_lite.torch_utils.tree import leading_dim
from ding_lite.utils import POLICY_REGISTRY, ConfigError, UserError

from .action_mask import split_mask
from .checks import check_optimizer, check_positive
from .unroll_policy import UnrollBatch, UnrollPolicy

Tensors = Dict[str, torch.Tensor]


@POLICY_REGISTRY.register("acer")
class ACERPolicy(UnrollPolicy):
    """ACER with Retrace, truncated importance sampling with bias correction and the efficient trust region."""

    # policy.priority: an unroll's priority is its mean |Q_ret - Q| over T; IS weights scale the critic's loss.
    supports_priority = True
    supports_action_mask = True
    _is_weight = None

    config = dict(
        type="acer",
        # (int) Length T of the unrolls Retrace runs over (steps); one train sample is one env's unroll. ACER reads it
        # here only (DI-engine reads learn.unroll_len and collect.unroll_len).
        unroll_len=32,
        learn=dict(
            # (int) Learner updates after each collection (serial pipeline).
            update_per_collect=4,
            # (int) Unrolls per update (each of unroll_len steps).
            batch_size=16,
            # (float) Step size of the actor's optimiser.
            learning_rate_actor=0.0005,
            # (float) Step size of the critic's optimiser (it also trains a shared encoder, model.share_encoder).
            learning_rate_critic=0.0005,
            # (float) Weight of the policy's entropy bonus (nats), added outside the trust-region projection.
            entropy_weight=0.0001,
            # (float) Discount factor gamma per env step.
            discount_factor=0.9,
            # (float) Truncation threshold c of the importance weight min(c, rho) in the policy gradient (paper: 10).
            c_clip_ratio=10.0,
            # (bool) Project the policy gradient onto the efficient trust region around the average policy.
            trust_region=True,
            # (float) Trust-region bound delta on the linearised KL(average policy || policy) per step (nats).
            trust_region_value=1.0,
            # (float) Weight of the online actor in the average actor's update per train iteration:
            # avg <- (1 - target_theta) avg + target_theta actor (ChainerRL's 1 - trust_region_alpha).
            target_theta=0.01,
            # (bool) Policy gradient against Q_opc (the Retrace recursion with every c = 1; ChainerRL's use_Q_opc,
            # the paper's choice for continuous actions) instead of Q_ret. The critic always regresses Q_ret.
            use_q_opc=False,
            # (str) Gradient clipping, applied to the actor's and the critic's gradients separately: None,
            # 'clip_norm' (global L2 norm) or 'clip_value' (each element).
            grad_clip_type=None,
            # (float) Threshold of the gradient clipping (needed when grad_clip_type is set).
            clip_value=None,
            # (str) Optimiser of both networks: 'adam' or 'rmsprop'.
            optim="adam",
        ),
        collect=dict(
            # (int) Unrolls to collect per collection (rounded up to a multiple of env.collector_env_num).
            n_sample=16,
        ),
        other=dict(
            # (int) replay_buffer_size: capacity in unrolls; (int) max_use: an unroll is dropped after being sampled
            # this many times.
            replay_buffer=dict(replay_buffer_size=1000, max_use=16),
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        learn = cfg.learn
        if cfg.action_space not in ("auto", "discrete", "continuous"):
            raise ConfigError(f"{path}.action_space='{cfg.action_space}': ACER supports 'discrete' and 'continuous' "
                              f"action spaces (or 'auto')")
        check_positive(learn, ("learning_rate_actor", "learning_rate_critic", "c_clip_ratio", "trust_region_value"),
                       f"{path}.learn")
        if learn.entropy_weight < 0:
            raise ConfigError(f"{path}.learn.entropy_weight={learn.entropy_weight}: must be >= 0")
        if not 0 < learn.target_theta <= 1:
            raise ConfigError(f"{path}.learn.target_theta={learn.target_theta}: must be in (0, 1]")
        check_optimizer(learn, f"{path}.learn")

    def default_model(self) -> Tuple[str, List[str]]:
        return "acer", ["ding_lite.model.acer"]

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._init_collect()
        learn = self._cfg.learn
        self._actor_params = list(self._model.actor_parameters())
        self._critic_params = list(self._model.critic_parameters())
        self._optimizer_actor = make_optimizer(learn.optim, self._actor_params, learn.learning_rate_actor)
        self._optimizer_critic = make_optimizer(learn.optim, self._critic_params, learn.learning_rate_critic)
        self._grad_clip = GradClipper(learn.grad_clip_type, learn.clip_value)
        # The average policy network: an exponential moving average of the actor, never trained by gradients.
        self._avg_actor = self._model.make_average_actor()
        self._avg_params = list(self._avg_actor.parameters())
        self._online_actor_params = self._model.actor_parameters(include_shared_encoder=True)
        self._gamma = learn.discount_factor

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, Any]:
        """One ACER update on a batch of unrolls; ``data`` leaves are ``(B, T, ...)`` as sampled. Returns 0-dim
        tensors on the policy's device (and the learning rates): the learner reads them in one transfer. With
        ``policy.priority`` also ``priority`` (B,): each unroll's mean over T of |Q_ret - Q(x_t, a_t)|."""
        weight = data.get("weight")  # prioritised replay's importance weights (B,), on the critic's loss
        if weight is not None:
            data = {k: v for k, v in data.items() if k != "weight"}
            weight = weight.to(self._device, non_blocking=True)
        self._is_weight = weight
        batch = self._unroll_batch(data)
        with torch.no_grad():
            avg_stats = self._model.compute_actor(batch.flat_obs, actor=self._avg_actor,
                                                  **self._replay_kwargs(batch, steps_only=True))["logit"]
        if self._action_space == "discrete":
            losses = self._discrete_losses(batch, avg_stats)
        else:
            losses = self._continuous_losses(batch, avg_stats)
        learn = self._cfg.learn
        total_loss = losses["policy_loss"] - learn.entropy_weight * losses["entropy"] + losses["critic_loss"]
        self._optimizer_actor.zero_grad(set_to_none=True)
        self._optimizer_critic.zero_grad(set_to_none=True)
        total_loss.backward()
        grad_norm_actor = self._grad_clip(self._actor_params)
        grad_norm_critic = self._grad_clip(self._critic_params)
        self._optimizer_actor.step()
        self._optimizer_critic.step()
        polyak_update(self._avg_params, self._online_actor_params, learn.target_theta)
        # 0-dim tensors on the policy's device: the learner reads what it logs in one transfer
        info: Dict[str, Any] = {k: v.detach() for k, v in losses.items()}
        self._is_weight = None
        info.update(total_loss=total_loss.detach(), cur_lr_actor=self._optimizer_actor.param_groups[0]["lr"],
                    cur_lr_critic=self._optimizer_critic.param_groups[0]["lr"],
                    grad_norm_actor=grad_norm_actor, grad_norm_critic=grad_norm_critic)
        return info

    def _targets(self, data: Tensors, q_taken: torch.Tensor, values: torch.Tensor, next_values: torch.Tensor,
                 rho: torch.Tensor, action_dim: Any = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """(Q_ret, the policy gradient's target: Q_opc or Q_ret), (T, B) each, from detached (T, B) inputs."""
        bounds = A.acer_trace_boundaries(self._gamma, data["terminated"], data["truncated"], next_values)
        trace = A.acer_trace_coef(rho, action_dim)
        q_ret = A.acer_retrace_targets(data["reward"], q_taken, values, trace, bounds.discounts, bounds.bootstrap)
        if not self._cfg.learn.use_q_opc:
            return q_ret, q_ret
        return q_ret, A.acer_q_opc_targets(data["reward"], q_taken, values, bounds.discounts, bounds.bootstrap)

    def _policy_loss(self, loss: A.AcerPolicyLoss, stats: List[torch.Tensor], k: List[torch.Tensor]
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Mean policy loss (the trust-region surrogate when enabled) and the fraction of steps it projected."""
        if not self._cfg.learn.trust_region:
            return loss.loss.mean(), loss.loss.new_zeros(())
        delta = self._cfg.learn.trust_region_value
        g = list(loss.grad) if isinstance(loss.grad, tuple) else [loss.grad]
        z = A.acer_trust_region_update(g, k, delta)
        with torch.no_grad():
            kg = sum((a * b).sum(-1) for a, b in zip(k, g))
            active = ((kg > delta) & (sum((a * a).sum(-1) for a in k) > 0)).float().mean()
        return A.acer_trust_region_loss(stats, z).mean(), active

    def _discrete_losses(self, batch: UnrollBatch, avg_logits: torch.Tensor) -> Tensors:
        """The losses and logged scalars for a categorical policy; ``avg_logits`` (T*B, A) of the average actor."""
        T, B, data = batch.T, batch.B, batch.data
        out = self._model(batch.model_in, mode="compute_actor_critic", **self._replay_kwargs(batch))
        logits_all, q_all = out["logit"], out["q_value"]
        rows_mask, mask = self._row_masks(batch, leading_dim(logits_all)), data.get("action_mask")  # None: unmasked
        if rows_mask is not None:  # the most negative finite float at masked actions: no gradient reaches them
            logits_all = torch.where(rows_mask, logits_all, torch.finfo(logits_all.dtype).min)
        logits, q_values = batch.steps(logits_all), batch.steps(q_all)  # (T, B, A)
        action, behaviour = data["action"], data["logit"]  # mu's logits stored masked
        log_pi = F.log_softmax(logits, -1)  # (T, B, A), with gradient: the ratios' and the policy loss's
        with torch.no_grad():
            v_all = A.acer_state_values(logits_all, q_all, rows_mask)  # over each row's valid actions
            values = batch.steps(v_all)
            q_taken = q_values.gather(-1, action.unsqueeze(-1)).squeeze(-1)
            log_mu = F.log_softmax(behaviour, -1)
            rho = (log_pi - log_mu).gather(-1, action.unsqueeze(-1)).squeeze(-1).exp()
            q_ret, q_pg = self._targets(data, q_taken, values, batch.next_values(v_all), rho)
            avg_logits = avg_logits.view(T, B, -1)
            if mask is not None:
                avg_logits = torch.where(mask, avg_logits, torch.finfo(avg_logits.dtype).min)
            log_avg = F.log_softmax(avg_logits, -1)
            kl_terms = log_avg.exp() * (log_avg - log_pi)
            kl = (kl_terms if mask is None else kl_terms.masked_fill(~mask, 0.0)).sum(-1).mean()
        loss = A.acer_policy_loss_discrete(log_pi, log_mu, action, q_values, q_pg, self._cfg.learn.c_clip_ratio,
                                           values, normalized=True, mask=mask)
        k = [A.acer_kl_grad_categorical(avg_logits, logits, mask)] if self._cfg.learn.trust_region else []
        # the trust region's statistics: the logits, a constant 0 at masked actions (where g and k are exactly 0)
        policy_loss, active = self._policy_loss(loss, [logits if mask is None else logits.masked_fill(~mask, 0.0)], k)
        if mask is None:
            entropy = torch.distributions.Categorical(logits=logits, validate_args=False).entropy().mean()
        else:  # over the valid actions only
            entropy = (-log_pi.exp() * log_pi).masked_fill(~mask, 0.0).sum(-1).mean()
        critic_loss = self._critic_mean(A.acer_critic_loss_discrete(q_values, action, q_ret))
        return dict(**self._priority(q_ret, q_taken), policy_loss=policy_loss, critic_loss=critic_loss,
                    entropy=entropy, rho_mean=rho.mean(),
                    kl_avg=kl, trust_region_active=active, q_ret_mean=q_ret.mean(),
                    acer_loss=loss.loss.mean().detach(), correction_loss=loss.correction_loss.mean().detach())

    def _continuous_losses(self, batch: UnrollBatch, avg_stats: Tensors) -> Tensors:
        """The losses and logged scalars for a Gaussian policy; ``avg_stats`` ``{'mu', 'sigma'}`` (T*B, D) of the
        average actor."""
        T, B, data, model_in = batch.T, batch.B, batch.data, batch.model_in
        action, b_mu, b_sigma = data["action"], data["logit"]["mu"], data["logit"]["sigma"]
        drawn: Dict[str, torch.Tensor] = {}

        def taken_and_sampled(policy_all: Tensors) -> torch.Tensor:
            """(2, N, D): a_t and a'_t ~ pi(.|x_t) (bias correction) for Q~ of the SDN; zeros on the other rows."""
            with torch.no_grad():
                mu = batch.steps(policy_all["mu"])
                drawn["sampled"] = sampled = mu + batch.steps(policy_all["sigma"]) * torch.randn_like(mu)
                D = mu.shape[-1]
                actions = mu.new_zeros(2, model_in.shape[0], D)
                actions[0, :T * B], actions[1, :T * B] = action.reshape(T * B, D), sampled.reshape(T * B, D)
            return actions

        critic = self._model.compute_actor_then_critic(model_in, taken_and_sampled,  # one pass of a shared encoder
                                                       **self._replay_kwargs(batch))
        policy_all, sampled = critic["logit"], drawn["sampled"]
        mu, sigma = batch.steps(policy_all["mu"]), batch.steps(policy_all["sigma"])  # (T, B, D)
        D = mu.shape[-1]
        v_all = critic["value"]
        values, q_taken = batch.steps(v_all), batch.steps(critic["q_value"][0])  # (T, B), with gradient
        with torch.no_grad():
            q_sampled = batch.steps(critic["q_value"][1])
            pi_now = torch.distributions.Normal(mu, sigma, validate_args=False)
            mu_old = torch.distributions.Normal(b_mu, b_sigma, validate_args=False)
            rho = (pi_now.log_prob(action).sum(-1) - mu_old.log_prob(action).sum(-1)).exp()
            q_ret, q_pg = self._targets(data, q_taken.detach(), values.detach(), batch.next_values(v_all), rho, D)
            v_target = A.acer_value_target(q_ret, q_taken.detach(), values.detach(), rho)
            avg_mu, avg_sigma = avg_stats["mu"].view(T, B, D), avg_stats["sigma"].view(T, B, D)
            kl = (torch.log(sigma / avg_sigma) + (avg_sigma ** 2 + (mu - avg_mu) ** 2) / (2 * sigma ** 2)
                  - 0.5).sum(-1).mean()
        loss = A.acer_policy_loss_continuous(mu, sigma, b_mu, b_sigma, action, q_pg, values, sampled, q_sampled,
                                             self._cfg.learn.c_clip_ratio)
        k = list(A.acer_kl_grad_gaussian(avg_mu, avg_sigma, mu, sigma)) if self._cfg.learn.trust_region else []
        policy_loss, active = self._policy_loss(loss, [mu, sigma], k)
        entropy = torch.distributions.Normal(mu, sigma, validate_args=False).entropy().sum(-1).mean()
        critic_loss = self._critic_mean(A.acer_critic_loss_continuous(q_taken, values, q_ret, v_target))
        return dict(**self._priority(q_ret, q_taken), policy_loss=policy_loss, critic_loss=critic_loss,
                    entropy=entropy,
                    rho_mean=rho.clamp(max=1e6).mean(), kl_avg=kl, trust_region_active=active,
                    q_ret_mean=q_ret.mean(), acer_loss=loss.loss.mean().detach(),
                    correction_loss=loss.correction_loss.mean().detach(), sigma_mean=sigma.mean().detach())

    def _row_masks(self, batch: UnrollBatch, rows: int) -> Any:
        """The action mask (rows, A) bool of every row of ``batch.model_in``, or None without masks: the steps'
        ``action_mask``, then x_T's and the true final observations' from ``next_action_mask`` (a terminal
        observation's may allow nothing: its value is never read)."""
        data = batch.data
        if "action_mask" not in data:
            return None
        T, B = batch.T, batch.B
        steps, after = data["action_mask"].reshape(T * B, -1), data["next_action_mask"]
        out = steps.new_ones(rows, steps.shape[-1])
        out[:T * B] = steps
        out[T * B:T * B + B] = after[-1]
        finals = after.reshape(T * B, -1).index_select(0, batch.boot_index)  # (K, A), (t, b) row-major
        at = batch.final_index if batch.final_index is not None else \
            torch.arange(T * B + B, T * B + B + finals.shape[0], device=out.device)
        return out.index_copy_(0, at, finals)

    def _replay_kwargs(self, batch: UnrollBatch, steps_only: bool = False) -> Dict[str, Any]:
        """A recurrent core (policy.model.core): the model's arguments that replay the unrolls from their stored
        initial states with resets at episode ends (``steps_only``: the T*B step rows only); else none."""
        if not self._recurrent:
            return {}
        return dict(state=batch.data["core_state"][0], done=batch.done,
                    extra_state_index=None if steps_only else batch.extra_state_index)

    def _critic_mean(self, loss: torch.Tensor) -> torch.Tensor:
        """Mean of a (T, B) critic loss; with importance weights (B,) each unroll's steps weighted by its weight."""
        return loss.mean() if self._is_weight is None else (loss * self._is_weight).mean()

    def _priority(self, q_ret: torch.Tensor, q_taken: torch.Tensor) -> Tensors:
        """``{'priority': (B,) mean_t |Q_ret - Q(x_t, a_t)|}`` with policy.priority, else nothing."""
        if not self._cfg.priority:
            return {}
        return {"priority": (q_ret - q_taken.detach()).abs().mean(0)}

    def _monitor_vars_learn(self) -> List[str]:
        """Logged scalars. policy_loss is what is back-propagated (the trust-region surrogate when it is on, whose
        value means nothing); acer_loss the ACER policy loss itself (truncated term plus correction_loss); kl_avg
        KL(average policy || policy); trust_region_active the fraction of steps whose gradient was projected."""
        names = ["cur_lr_actor", "cur_lr_critic", "total_loss", "policy_loss", "acer_loss", "correction_loss",
                 "critic_loss", "entropy", "rho_mean", "kl_avg", "trust_region_active", "q_ret_mean",
                 "grad_norm_actor", "grad_norm_critic"]
        return names + (["sigma_mean"] if self._action_space == "continuous" else [])

    def _optimizers(self) -> List[torch.optim.Optimizer]:
        """The actor's and the critic's optimisers (``policy.learn.lr_scheduler`` scales both)."""
        return [self._optimizer_actor, self._optimizer_critic]

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {"model": self._model.state_dict(), "avg_actor": self._avg_actor.state_dict(),
                "optimizer_actor": self._optimizer_actor.state_dict(),
                "optimizer_critic": self._optimizer_critic.state_dict()}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        self._model.load_state_dict(state["model"])
        self._avg_actor.load_state_dict(state["avg_actor"])
        self._optimizer_actor.load_state_dict(state["optimizer_actor"])
        self._optimizer_critic.load_state_dict(state["optimizer_critic"])

    # ---- collect / eval ----------------------------------------------------------------------------------------
    def _process_transition(self, obs: Any, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The unroll policy's transition, plus with an action mask ``next_action_mask``: the mask of ``next_obs``
        (the true final observation where an episode ended), for V(x_T) and V(final_obs) (module docstring)."""
        transition = super()._process_transition(obs, policy_output, timestep)
        if "action_mask" in transition:
            transition["next_action_mask"] = split_mask(timestep["next_obs"], self._mask_key, check=False)[1]
        return transition

    def _init_collect(self) -> None:
        super()._init_collect()
        if self._action_space not in ("discrete", "continuous"):
            raise UserError(f"ACER supports discrete and continuous action spaces, got '{self._action_space}'")
