"""IMPALA (Espeholt et al. 2018): an actor-critic trained off-policy on unrolls with V-trace corrections.

Collection, train samples and the episode-end convention are those of every unroll policy
(:mod:`ding_lite.policy.unroll_policy`); this module has the V-trace loss and, with ``learn.kl_weight``, a penalty on
the KL divergence from the behaviour policy.
"""
from typing import Any, Dict, List, Tuple

import torch
from easydict import EasyDict

from ding_lite.rl_utils import from_importance_weights, normalized_advantages
from ding_lite.torch_utils import GradClipper, adam_step, kl, make_dist, make_optimizer, tree_map
from ding_lite.torch_utils.precision import AUTOCAST_SETTINGS, autocast, resolve_autocast
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .checks import check_optimizer, check_positive
from .unroll_policy import UnrollPolicy


def encoder_grad_norms(terms: Dict[str, torch.Tensor], params: List[torch.Tensor]) -> Dict[str, torch.Tensor]:
    """``grad_norm_encoder_<name>``: the L2 norm of the gradient each weighted loss term alone puts on ``params``
    (detached 0-dim tensors; the graph is kept for the update's own backward). {} without parameters."""
    out = {}
    for name, term in terms.items():
        if not params:
            break
        if not term.requires_grad:
            out[f"grad_norm_encoder_{name}"] = params[0].new_zeros(())
            continue
        grads = [g for g in torch.autograd.grad(term, params, retain_graph=True, allow_unused=True) if g is not None]
        # a term that does not reach the encoder (a Gaussian's state-independent sigma in the entropy) puts 0 on it
        out[f"grad_norm_encoder_{name}"] = (torch.sqrt(sum(g.pow(2).sum() for g in grads)) if grads
                                            else params[0].new_zeros(()))
    return out


@POLICY_REGISTRY.register("impala")
class IMPALAPolicy(UnrollPolicy):
    """IMPALA with V-trace targets for discrete, continuous (Gaussian) and multi-discrete action spaces."""

    supports_action_mask = True

    priority_refusal = ("V-trace's truncated importance ratios already correct for the behaviour policy's "
                        "unrolls; sampling unrolls by priority changes that distribution again, and no derivation "
                        "combines the two corrections without bias")

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
            # (float) Weight of a penalty on the mean KL(mu || pi) per step, mu the behaviour policy that collected
            # the unroll (its logits travel with it) and pi the policy being trained: a soft trust region that keeps
            # the updates on replayed unrolls from moving pi far from the policies that produced them. 0: off (the
            # IMPALA paper's loss). Measured in docs/benchmarks.md#cartpole-past-475-do-the-shipped-configs-stay-solved.
            kl_weight=0.0,
            # (bool) Normalise each batch's policy-gradient advantages (V-trace's, all T x B steps together) to mean 0
            # and std 1 before the policy loss, as PPO does per minibatch. Off: the IMPALA paper's loss, where the
            # advantages stay on the value scale (small while rewards are rare, e.g. Pong's flat start).
            normalize_advantage=False,
            # (str) None: the learner's forward in float32. 'bfloat16': under torch.autocast (convolutions and matmuls
            # in bfloat16, the losses and the V-trace targets in float32, the weights and the optimiser float32):
            # about 2.2x the updates/s of the Nature-conv Atari learner on a CPU with AMX (docs/atari.md#learner-speed);
            # bfloat16's 8-bit mantissa changes the numbers, so what it does to learning is measured apart. 'auto':
            # bfloat16 for a conv encoder on a CPU with AMX or AVX-512 BF16 (or a GPU with bfloat16), else float32.
            autocast=None,
            # (int) Every this many updates, the gradient norm that each loss term alone puts on the actor's encoder
            # (the shared one with model.share_encoder) is logged as grad_norm_encoder_<term> (policy, value,
            # entropy, kl): which term drives the features. One extra backward pass per term then; 0: off.
            encoder_grad_norm_freq=100,
        ),
        collect=dict(n_sample=16),
        other=dict(
            # The learner works through the unrolls oldest first, each used max_use times ('fifo', data/fifo.py): with
            # n_sample * max_use = update_per_collect * batch_size (16 x 4 = 4 x 16) a serial run trains each unroll in
            # the 4 updates after its collection. type='columnar' samples uniformly with replacement from up to
            # replay_buffer_size unrolls instead (the replay of off-policy learners: older data, reused more).
            replay_buffer=dict(type="fifo", replay_buffer_size=256, max_use=4),
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
        if learn.autocast not in AUTOCAST_SETTINGS:
            raise ConfigError(f"{path}.learn.autocast={learn.autocast!r}: must be None (float32), 'bfloat16' or "
                              f"'auto' (bfloat16 for a conv encoder where the device has native bfloat16 matmuls)")
        freq = learn.encoder_grad_norm_freq
        if isinstance(freq, bool) or not isinstance(freq, int) or freq < 0:
            raise ConfigError(f"{path}.learn.encoder_grad_norm_freq={freq!r}: must be an int >= 0 (updates; 0: off)")
        if isinstance(learn.kl_weight, bool) or not isinstance(learn.kl_weight, (int, float)) or \
                not 0 <= learn.kl_weight < float("inf"):
            raise ConfigError(f"{path}.learn.kl_weight={learn.kl_weight!r}: must be a number >= 0 (0: no KL penalty)")

    def default_model(self) -> Tuple[str, List[str]]:
        return "vac", ["ding_lite.model.vac"]

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._init_collect()
        learn = self._cfg.learn
        self._params = list(self._model.parameters())  # listed once: a module's parameters() walks it every call
        self._optimizer = make_optimizer(learn.optim, self._params, learn.learning_rate)
        self._grad_clip = GradClipper(learn.grad_clip_type, learn.clip_value)
        self._gamma = learn.discount_factor
        self._learn_autocast = resolve_autocast(learn.autocast, self._device, self._model)
        encoder = getattr(self._model, "actor_encoder", None)
        self._encoder_params = [] if encoder is None else [p for p in encoder.parameters() if p.requires_grad]
        self._updates = 0

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, Any]:
        """One V-trace update on a batch of unrolls; ``data`` leaves are ``(B, T, ...)`` as sampled. Returns 0-dim
        tensors on the policy's device (and the learning rate): the learner reads them in one transfer."""
        batch = self._unroll_batch(data)
        data = batch.data  # (T, B, ...)
        with autocast(self._learn_autocast, self._device):  # a recurrent core replays the unrolls
            out = self._forward_unroll(batch, "compute_actor_critic")
        out = tree_map(lambda x: x.float() if x.is_floating_point() else x, out)  # the losses in float32
        value = out["value"]
        values, bootstrap_value = batch.steps(value), batch.last(value).detach()  # V(x_t) (T, B), V(x_T) (B,)
        # An action mask (T, B, A): pi re-masked with the actor's mask; mu's stored logits are already masked.
        target_dist = make_dist(self._action_space, tree_map(batch.steps, out["logit"]), self._nvec,
                                data.get("action_mask"))
        behaviour_dist = make_dist(self._action_space, data["logit"], self._nvec)
        action = data["action"]
        target_log_prob = target_dist.log_prob(action)
        with torch.no_grad():
            behaviour_log_prob = behaviour_dist.log_prob(action)
            vtrace_log_prob = self._vtrace_log_prob(batch, target_log_prob)
            log_rhos = vtrace_log_prob - behaviour_log_prob
            # The cut after an episode end (discount 0), and through a truncation r_t + gamma V(final_obs_t).
            reward = data["reward"] + self._gamma * batch.final_values(value)
            discounts = self._gamma * (~batch.done).float()
        learn = self._cfg.learn
        vtrace = from_importance_weights(log_rhos, discounts, reward, values.detach(), bootstrap_value,
                                         clip_rho_threshold=learn.rho_clip_ratio,
                                         clip_pg_rho_threshold=learn.rho_pg_clip_ratio,
                                         clip_c_threshold=learn.c_clip_ratio, lambda_=learn.lambda_)
        pg_advantages = vtrace.pg_advantages
        if learn.normalize_advantage:
            pg_advantages = normalized_advantages(pg_advantages)
        policy_loss, policy_info = self._policy_loss(target_log_prob, behaviour_log_prob, pg_advantages,
                                                     vtrace_log_prob)
        value_loss = (values - vtrace.vs).pow(2).mean()
        entropy = target_dist.entropy().mean()
        total_loss = policy_loss + learn.value_weight * value_loss - learn.entropy_weight * entropy
        kl_behaviour = None
        terms = {"policy": policy_loss, "value": learn.value_weight * value_loss,
                 "entropy": -learn.entropy_weight * entropy}
        if learn.kl_weight:  # KL(mu || pi), the behaviour policy's logits being data (no gradient)
            kl_behaviour = kl(behaviour_dist, target_dist).mean()
            total_loss = total_loss + learn.kl_weight * kl_behaviour
            terms["kl"] = learn.kl_weight * kl_behaviour
        freq, self._updates = learn.encoder_grad_norm_freq, self._updates + 1
        probe = encoder_grad_norms(terms, self._encoder_params) if freq and self._updates % freq == 1 % freq else {}
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        grad_norm = self._grad_clip(self._params)
        adam_step(self._optimizer)
        return {
            "cur_lr": self._optimizer.param_groups[0]["lr"],
            "total_loss": total_loss.detach(),
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy_loss": entropy.detach(),
            "rho_mean": log_rhos.exp().mean(),
            "grad_norm": grad_norm,
            **policy_info,
            **({} if kl_behaviour is None else {"kl_behaviour": kl_behaviour.detach()}),
            **probe,
        }

    def _state_dict_learn(self) -> Dict[str, Any]:
        # the update count: when the next encoder gradient norms (and APPO's target-network copy) are due
        return {**super()._state_dict_learn(), "updates": self._updates}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        self._updates = int(state.get("updates", 0))  # 0 in checkpoints written before it was saved

    def _vtrace_log_prob(self, batch: Any, target_log_prob: torch.Tensor) -> torch.Tensor:
        """(T, B) log-probabilities of the taken actions under V-trace's target policy, no gradient: IMPALA's is pi,
        the policy being trained; APPO's a target network (:mod:`ding_lite.policy.appo`)."""
        return target_log_prob.detach()

    def _policy_loss(self, target_log_prob: torch.Tensor, behaviour_log_prob: torch.Tensor,
                     pg_advantages: torch.Tensor,
                     vtrace_log_prob: torch.Tensor) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        """The policy-gradient term of the loss, to minimise, and extra 0-dim values to log (detached).

        IMPALA's is -mean(log pi(a_t|x_t) * pg_advantages_t): its gradient is V-trace's off-policy policy gradient.
        ``target_log_prob`` (T, B) log pi, differentiable; ``behaviour_log_prob`` (T, B) log mu of the behaviour policy
        that collected the unroll (no gradient); ``pg_advantages`` (T, B), detached (normalised under
        ``learn.normalize_advantage``); ``vtrace_log_prob`` (T, B) V-trace's target policy's (``_vtrace_log_prob``).
        APPO overrides this with PPO's clipped surrogate (:mod:`ding_lite.policy.appo`)."""
        return -(target_log_prob * pg_advantages).mean(), {}

    def _monitor_vars_learn(self) -> List[str]:
        learn = self._cfg.learn
        logged_kl = ["kl_behaviour"] if learn.kl_weight else []
        terms = ("policy", "value", "entropy", *(["kl"] if learn.kl_weight else []))
        probed = [f"grad_norm_encoder_{t}" for t in terms] if learn.encoder_grad_norm_freq else []
        return super()._monitor_vars_learn() + ["policy_loss", "value_loss", "entropy_loss", "rho_mean", "grad_norm",
                                                *logged_kl, *probed]
