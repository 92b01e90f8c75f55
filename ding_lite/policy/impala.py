"""IMPALA (Espeholt et al. 2018): an actor-critic trained off-policy on unrolls with V-trace corrections."""
from typing import Any, Dict, List, Tuple

import torch
from easydict import EasyDict

from ding_lite.rl_utils import from_importance_weights
from ding_lite.torch_utils import GradClipper, greedy_action, make_dist, make_optimizer, sample_action, tree_map
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .base_policy import Policy
from .checks import check_optimizer, check_positive


@POLICY_REGISTRY.register("impala")
class IMPALAPolicy(Policy):
    """IMPALA with V-trace targets for discrete, continuous (Gaussian) and multi-discrete action spaces."""

    config = dict(
        type="impala",
        # (int) Length T of the unrolls V-trace is computed over; one train sample is one unroll of one env.
        unroll_len=32,
        learn=dict(
            update_per_collect=4,
            batch_size=16,
            # (float) Optimiser step size.
            learning_rate=0.0005,
            # (float) Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # (float) Weight of the entropy bonus.
            entropy_weight=0.0001,
            discount_factor=0.99,
            # (float) V-trace lambda: the trace coefficient c_t is lambda_ * min(c_clip_ratio, rho_t).
            lambda_=0.95,
            # (float) rho-bar: clip of the importance weight in the value targets vs.
            rho_clip_ratio=1.0,
            # (float) c-bar: clip of the importance weight in the trace coefficients.
            c_clip_ratio=1.0,
            # (float) Clip of the importance weight in the policy-gradient advantage.
            rho_pg_clip_ratio=1.0,
            # (str) Gradient clipping: None, 'clip_norm' (global L2 norm) or 'clip_value' (each element).
            grad_clip_type=None,
            # (float) Threshold of the gradient clipping.
            clip_value=0.5,
            # (str) Optimiser: 'adam' or 'rmsprop'.
            optim="adam",
        ),
        collect=dict(n_sample=16),
        other=dict(
            replay_buffer=dict(replay_buffer_size=1000, max_use=16),
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        learn = cfg.learn
        check_optimizer(learn, f"{path}.learn")
        check_positive(learn, ("learning_rate", "rho_clip_ratio", "c_clip_ratio", "rho_pg_clip_ratio", "clip_value"),
                       f"{path}.learn")
        if not 0 <= learn.lambda_ <= 1:
            raise ConfigError(f"{path}.learn.lambda_={learn.lambda_}: must be in [0, 1]")

    def default_model(self) -> Tuple[str, List[str]]:
        return "vac", ["ding_lite.model.vac"]

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._init_collect()
        learn = self._cfg.learn
        self._optimizer = make_optimizer(learn.optim, self._model.parameters(), learn.learning_rate)
        self._grad_clip = GradClipper(learn.grad_clip_type, learn.clip_value)
        self._gamma = learn.discount_factor

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, float]:
        """One V-trace update on a batch of unrolls; ``data`` leaves are ``(B, T, ...)`` as sampled."""
        data = tree_map(lambda x: x.to(self._device, non_blocking=True).transpose(0, 1), data)  # -> (T, B, ...)
        obs, next_obs = data["obs"], data["next_obs"]
        T, B = obs.shape[:2]
        truncated, terminated = data["truncated"], data["terminated"]
        # Episodes cut by a time limit bootstrap from their true final observation (a truncation is not a death);
        # a step that is both terminated and truncated (TimeLimit on a terminal step) does not.
        bootstrapped = truncated & ~terminated
        # One forward pass: every obs of the unroll, the obs after the last step, and those final observations.
        final_obs = next_obs[bootstrapped]
        model_in = torch.cat([obs.reshape(T * B, *obs.shape[2:]), next_obs[-1], final_obs], dim=0)
        out = self._model(model_in, mode="compute_actor_critic")
        value = out["value"]
        values, bootstrap_value = value[:T * B].view(T, B), value[T * B:T * B + B].detach()
        target_dist = make_dist(self._action_space, tree_map(lambda x: x[:T * B].view(T, B, *x.shape[1:]),
                                                             out["logit"]), self._nvec)
        behaviour_dist = make_dist(self._action_space, data["logit"], self._nvec)
        action = data["action"]
        target_log_prob = target_dist.log_prob(action)
        with torch.no_grad():
            log_rhos = target_log_prob - behaviour_dist.log_prob(action)
            reward = data["reward"].clone()
            reward[bootstrapped] += self._gamma * value[T * B + B:].detach()
            discounts = self._gamma * (~(terminated | truncated)).float()
        learn = self._cfg.learn
        vtrace = from_importance_weights(log_rhos, discounts, reward, values.detach(), bootstrap_value,
                                         clip_rho_threshold=learn.rho_clip_ratio,
                                         clip_pg_rho_threshold=learn.rho_pg_clip_ratio,
                                         clip_c_threshold=learn.c_clip_ratio, lambda_=learn.lambda_)
        policy_loss = -(target_log_prob * vtrace.pg_advantages).mean()
        value_loss = (values - vtrace.vs).pow(2).mean()
        entropy = target_dist.entropy().mean()
        total_loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        grad_norm = self._grad_clip(self._model.parameters())
        self._optimizer.step()
        return {
            "cur_lr": self._optimizer.param_groups[0]["lr"],
            "total_loss": total_loss.item(),
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy_loss": entropy.item(),
            "rho_mean": log_rhos.exp().mean().item(),
            "grad_norm": grad_norm,
        }

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ["policy_loss", "value_loss", "entropy_loss", "rho_mean", "grad_norm"]

    # ---- collect -----------------------------------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._action_space = self._cfg.action_space
        self._nvec = self._cfg.model.action_shape if self._action_space == "multi_discrete" else None

    _init_eval = _init_collect

    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """Sample actions from the current policy; keep the behaviour logits for the importance weights."""
        logit = self._model(obs.to(self._device), mode="compute_actor")["logit"]
        action = sample_action(self._action_space, logit, self._nvec)
        return {"action": action, "logit": logit}

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The standard transition plus the behaviour policy's logits (for the importance weights)."""
        transition = super()._process_transition(obs, policy_output, timestep)
        transition["logit"] = policy_output["logit"]
        return transition

    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Each env's unroll of ``unroll_len`` steps is one train sample: ``(T, N, ...)`` -> ``(N, T, ...)``.

        Unrolls run across episode ends (as in the IMPALA paper): the stored ``terminated``/``truncated`` flags cut
        the V-trace recursion there, so every sample has exactly ``unroll_len`` steps and nothing is padded or lost.
        """
        return tree_map(lambda x: x.transpose(0, 1), segment)

    # ---- eval --------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _forward_eval(self, obs: torch.Tensor) -> Dict[str, Any]:
        logit = self._model(obs.to(self._device), mode="compute_actor")["logit"]
        return {"action": greedy_action(self._action_space, logit, self._nvec), "logit": logit}
