"""PPO (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"): on-policy actor-critic with the clipped
surrogate objective and GAE advantages. The loss math is :mod:`ding_lite.rl_utils.ppo`.

One iteration of the algorithm is one collection and one learner update:

1. collect: every env acts for ``unroll_len`` steps with the current policy; each env's unroll is one train sample,
   and ``_get_train_sample`` computes its GAE advantages and returns there, with the values of that same policy (the
   true final observation's value at a truncation, no bootstrap at a termination, V(x_T) after the last step).
2. learn: the update takes the whole batch (``collect.n_sample`` unrolls) and runs ``learn.epochs`` passes over its
   steps, each pass in shuffled minibatches of about ``learn.minibatch_size`` steps; ``learn.target_kl`` stops the
   remaining passes once a pass's mean approximate KL from the collecting policy exceeds it.
3. the batch is dropped, and the next collection acts with the new weights.

``learn.recompute_adv`` (off by default; Tianshou's and DI-engine's option): every epoch after the first starts by
recomputing the values, advantages and returns of the whole batch with the current critic
(:mod:`ding_lite.policy.ppo_recompute`, which says what value_norm, normalize_obs and value_clip do then); the samples
then also keep the rewards, episode ends and bootstrap observations GAE reads. Feed-forward models only.

On-policy through the one data path (the replay buffer and the training loop, nothing beside them): the buffer holds
one collection (``replay_buffer_size >= n_sample``); the one update per collection (``update_per_collect=1``) samples
``batch_size = n_sample`` unrolls without replacement (``replacement=False``: every unroll exactly once), which
``max_use=1`` then removes; ``max_staleness=0`` drops anything left from before that update (the extra unrolls of a
collection rounded up to whole envs). :meth:`PPOPolicy.check_config` refuses a config that breaks this.

Observations are stored once per step (x_t, whatever ``obs_storage`` says): the learner needs no next observation.

``env.normalize_obs``: a collection's observations join the statistics after the update that learns from it, not when
it reaches the buffer (:meth:`PPOPolicy.update_obs_stats`), so the learner normalises exactly as the collecting policy
did and the first minibatch of each update is on-policy (ratio 1). Merged at arrival, CartPole's shifting statistics
gave that first minibatch an approximate KL of up to 0.008 (seed 0, cartpole_ppo.py), of the order of a target_kl.
Action masks (``env.action_mask_key``): as in every unroll policy (:mod:`ding_lite.policy.unroll_policy`), the actor
samples under the mask and stores it (``action_mask``); ``logp`` comes from the masked logits it acted with, and each
minibatch re-masks the new policy with the stored mask, so the ratio and the entropy cover the valid actions only.

A recurrent core (``policy.model.core='lstm'``, :mod:`ding_lite.torch_utils.recurrent`): collection acts as IMPALA's
does (each env's state carried, zeroed after its episode ends, the step's state stored as ``core_state``) and takes
V(x_t) from the same recurrent step. ``_get_train_sample`` evaluates V(final observation) after a truncation and
V(x_T) from the state after that step *before* the reset (one core step from the step's stored state over x_t, then
the critic at the next observation: the state the learner's replay reaches there), and keeps the unroll's initial
state ``core_state`` (1, *state_shape) and its episode ends ``done`` (T,). The learner keeps sequences whole: each
epoch shuffles the B unrolls and splits them into ``min(B, ceil(B * T / minibatch_size))`` minibatches of nearly
equal numbers of unrolls (about ``minibatch_size`` steps each, at least one unroll); each minibatch replays its
unrolls from their initial states with the resets of acting (``model.forward_unroll``), then takes the same loss as
the feed-forward path. The first minibatch of an update is then on-policy to float rounding.
Not supported: prioritised replay.
"""
import math
from typing import Any, Dict, List, Tuple

import torch
from easydict import EasyDict

from ding_lite.rl_utils.ppo import gae, gae_next_value_rows, normalized_advantages, ppo_policy_loss, ppo_value_loss
from ding_lite.torch_utils import GradClipper, adam_step, make_dist, make_optimizer, sample_action, tree_map
from ding_lite.torch_utils.return_scale import ReturnScale
from ding_lite.torch_utils.precision import AUTOCAST_SETTINGS, autocast, resolve_autocast
from ding_lite.torch_utils.tree import leading_dim
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .checks import check_optimizer, check_positive
from .ppo_recompute import RECOMPUTE_KEYS, recompute_gae, recompute_inputs
from .unroll_policy import UnrollPolicy

# Logged means over the minibatch updates of one learner update.
UPDATE_STATS = ("total_loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm")


@POLICY_REGISTRY.register("ppo")
class PPOPolicy(UnrollPolicy):
    """PPO with GAE for discrete and continuous (Gaussian, state-independent log std by default) action spaces."""

    supports_action_mask = True
    priority_refusal = "PPO uses every sample of a collection once per epoch; there is nothing to prioritise"

    config = dict(
        type="ppo",
        on_policy=True,
        # (int) Steps T each env acts per collection; one train sample is one env's unroll of T steps.
        unroll_len=128,
        learn=dict(
            # (int) One update per collection: it runs all the epochs over the batch (on-policy, module docstring).
            update_per_collect=1,
            # (int) Unrolls per update: the whole collection, so it must equal collect.n_sample.
            batch_size=8,
            # (int) Passes over each batch (K epochs in the PPO paper).
            epochs=4,
            # (int) Steps per minibatch: each epoch splits the batch's n = batch_size x unroll_len steps, shuffled,
            # into ceil(n / minibatch_size) minibatches of nearly equal size.
            minibatch_size=256,
            learning_rate=0.00025,
            # (float) epsilon of the clipped surrogate: the ratio pi/pi_old is clipped to [1 - eps, 1 + eps].
            clip_ratio=0.2,
            # (float) None: the value loss is 0.5 (V - R)^2. A number c: OpenAI baselines' clipped value loss, which
            # stops rewarding moves of V more than c from the value at collection.
            value_clip=None,
            # (float) Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # (float) Weight of the entropy bonus.
            entropy_weight=0.01,
            discount_factor=0.99,
            # (float) GAE's lambda in [0, 1]: 0 gives TD(0) advantages, 1 Monte Carlo returns minus V.
            gae_lambda=0.95,
            # (bool) Normalise the advantages of each minibatch to mean 0 and std 1.
            normalize_advantage=True,
            # (bool) Value normalisation (Tianshou's rew_norm, DI-engine's value_norm): the critic learns the returns
            # divided by their running std, so the value loss has the same scale whatever the rewards'. The std is
            # kept with the model (model.return_scale) and updated after each update from its batch's returns.
            value_norm=False,
            # (bool) Tianshou's and DI-engine's recompute_adv: before every epoch after the first, recompute V(x_t),
            # the bootstrap values and GAE's advantages and returns with the current critic (module docstring).
            # Feed-forward models only; the samples then also keep reward, terminated, truncated and ``boot_obs``.
            recompute_adv=False,
            # (float) None: every epoch runs. A number: stop the remaining epochs of a batch once an epoch's mean
            # approximate KL(pi_old || pi) exceeds it.
            target_kl=None,
            # (str) Gradient clipping: None, 'clip_norm' (global L2 norm) or 'clip_value' (each element).
            grad_clip_type="clip_norm",
            # (float) Threshold of the gradient clipping.
            clip_value=0.5,
            # (str) Optimiser: 'adam' or 'rmsprop'.
            optim="adam",
            # (str) None: the learner's forward passes in float32. 'bfloat16': under torch.autocast (convolutions and
            # matmuls in bfloat16; the losses, GAE, the weights and the optimiser in float32). 'auto': bfloat16 for a
            # conv encoder on a CPU with AMX or AVX-512 BF16 (or a GPU with bfloat16), else float32.
            autocast=None,
        ),
        collect=dict(n_sample=8),
        other=dict(
            replay_buffer=dict(replay_buffer_size=8, max_use=1, max_staleness=0, replacement=False),
        ),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        learn, buffer = cfg.learn, cfg.other.replay_buffer
        check_optimizer(learn, f"{path}.learn")
        check_positive(learn, ("learning_rate", "clip_ratio", "epochs", "minibatch_size"), f"{path}.learn")
        if not 0 <= learn.gae_lambda <= 1:
            raise ConfigError(f"{path}.learn.gae_lambda={learn.gae_lambda}: must be in [0, 1]")
        if learn.autocast not in AUTOCAST_SETTINGS:
            raise ConfigError(f"{path}.learn.autocast={learn.autocast!r}: must be None (float32), 'bfloat16' or "
                              f"'auto' (bfloat16 for a conv encoder where the device has native bfloat16 matmuls)")
        for key in ("value_clip", "target_kl"):
            if learn[key] is not None and not learn[key] > 0:
                raise ConfigError(f"{path}.learn.{key}={learn[key]!r}: must be a positive number or None (off)")
        # The on-policy contract (module docstring): each collection is one batch, used for its epochs, then dropped.
        n_sample = cfg.collect.n_sample
        for key, value, want in (
                ("learn.update_per_collect", learn.update_per_collect, 1),
                ("learn.batch_size", learn.batch_size, n_sample),
                ("other.replay_buffer.replacement", buffer.replacement, False),
                ("other.replay_buffer.max_staleness", buffer.max_staleness, 0),
                ("other.replay_buffer.max_use", buffer.max_use, 1)):
            if value != want:
                raise ConfigError(f"{path}.{key}={value!r}: PPO is on-policy and needs {want!r} (each update uses "
                                  f"the whole collection of {path}.collect.n_sample={n_sample} unrolls for "
                                  f"learn.epochs passes, then drops it)")
        if buffer.replay_buffer_size < n_sample:
            raise ConfigError(f"{path}.other.replay_buffer.replay_buffer_size={buffer.replay_buffer_size}: must hold "
                              f"a whole collection, at least {path}.collect.n_sample={n_sample}")
        if learn.recompute_adv and cfg.model.get("core") is not None:
            raise ConfigError(f"{path}.learn.recompute_adv=True: not supported with {path}.model.core="
                              f"{cfg.model.core!r} (the recurrent learner keeps the advantages of collection); set "
                              f"{path}.learn.recompute_adv=False")
        if cfg.obs_storage != "auto":
            raise ConfigError(f"{path}.obs_storage={cfg.obs_storage!r}: PPO stores one observation per step (its "
                              f"advantages are computed at collection); remove the key")

    def default_model(self) -> Tuple[str, List[str]]:
        return "vac", ["ding_lite.model.vac"]

    def _setup_model(self) -> None:
        """``learn.value_norm``: attach ``model.return_scale`` (a copy of a model set up here keeps its own), so the
        collectors scale values as the learner does and checkpoints keep the statistics."""
        super()._setup_model()
        if self._cfg.learn.value_norm and getattr(self._model, "return_scale", None) is None:
            self._model.add_module("return_scale", ReturnScale().to(self._device))
        self._return_scale = self._model.return_scale if self._cfg.learn.value_norm else None

    def _value_scale(self) -> torch.Tensor:
        """What turns the critic's outputs into reward units: sigma_R with ``value_norm``, else 1 (0-dim, CPU)."""
        return torch.ones(()) if self._return_scale is None else self._return_scale.scale().cpu()

    # ---- collect -----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> Dict[str, Any]:
        """a_t ~ pi(.|x_t), with pi's ``logit`` and V(x_t) (``value``) for the advantages. ``obs`` (N_env, ...).
        A recurrent core: one step from each env's carried state, which the output keeps as ``core_state``."""
        if self._recurrent:
            return self._act_recurrent(obs, "collect", kwargs.get("core_state"), mode="compute_actor_critic")
        obs, mask = self._split_mask(obs)  # an action mask: sampled under it, logit stored masked
        out = self._act_model(self._on_device(obs), "compute_actor_critic")
        action = sample_action(self._action_space, out["logit"], self._nvec, mask)
        return {**self._masked_output(out["logit"], mask, action), "value": out["value"]}

    def _process_transition(self, obs: torch.Tensor, policy_output: Dict[str, Any],
                            timestep: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The unroll transition (with pi's logits) plus V(x_t)."""
        transition = super()._process_transition(obs, policy_output, timestep)
        transition["value"] = policy_output["value"]
        return transition

    @torch.no_grad()
    def _get_train_sample(self, segment: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """Each env's unroll (T, N, ...) -> N train samples (N, T, ...) of ``obs``, ``action``, ``logp`` (log
        pi_old(a_t|x_t)), ``value`` (V_old(x_t)), ``advantage`` and ``return`` (GAE's, module docstring).

        GAE reads the value after step t only where its trace is cut without a termination: the true final
        observation of a truncated step, and x_T after the last step. Only those rows of ``next_obs`` go through the
        critic, in one batch. With ``value_norm`` the critic's outputs are scaled to reward units for GAE (``value``
        stays as the critic gave it; ``return`` is in reward units, scaled down at the learner).

        A recurrent core: those values continue from the state after step t before its reset (module docstring),
        and the sample adds ``core_state`` (1, *state_shape), the unroll's initial state, and ``done`` (T,)."""
        reward, terminated, truncated = segment["reward"], segment["terminated"], segment["truncated"]
        scale = self._value_scale()
        t, n = gae_next_value_rows(terminated, truncated).nonzero(as_tuple=True)
        next_obs = tree_map(lambda x: x[t, n], segment["next_obs"])
        next_values = torch.zeros_like(reward)
        if "core_state" not in segment:
            next_values[t, n] = self._model(self._on_device(next_obs), mode="compute_critic")["value"].cpu()
        elif t.numel():  # the state after step t: one step from the state it was taken with, over x_t
            obs_t = self._on_device(tree_map(lambda x: x[t, n], segment["obs"]))
            after = self._model(obs_t, mode="compute_critic", state=segment["core_state"][t, n].to(self._device))
            next_values[t, n] = self._model(self._on_device(next_obs), mode="compute_critic",
                                            state=after["state"])["value"].cpu()
        advantages, returns = gae(reward, segment["value"] * scale, next_values * scale, terminated=terminated,
                                  truncated=truncated, gamma=self._cfg.learn.discount_factor,
                                  lambda_=self._cfg.learn.gae_lambda)
        logp = make_dist(self._action_space, segment["logit"], self._nvec).log_prob(segment["action"])
        sample = {"obs": segment["obs"], "action": segment["action"], "logp": logp, "value": segment["value"],
                  "advantage": advantages, "return": returns}
        if "action_mask" in segment:  # the learner masks pi with the mask the actor used
            sample["action_mask"] = segment["action_mask"]
        if self._cfg.learn.recompute_adv:  # what GAE needs again at the learner (ppo_recompute.py)
            sample.update(recompute_inputs(segment))
        if "core_state" in segment:  # the learner replays the unroll from its initial state, resetting at the ends
            sample["core_state"] = segment["core_state"][:1]
            sample["done"] = terminated | truncated
        return tree_map(lambda x: x.transpose(0, 1).contiguous(), sample)

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        self._init_collect()
        learn = self._cfg.learn
        self._params = list(self._model.parameters())  # listed once: a module's parameters() walks it every call
        self._optimizer = make_optimizer(learn.optim, self._params, learn.learning_rate)
        self._grad_clip = GradClipper(learn.grad_clip_type, learn.clip_value)
        self._learn_autocast = resolve_autocast(learn.autocast, self._device, self._model)
        self._pending_obs: List[Any] = []  # observations of the collections not yet learned from (normalize_obs)

    def update_obs_stats(self, samples: Dict[str, Any]) -> None:
        """Keep the observations of a collection until the update that learns from it has run (module docstring);
        :meth:`_forward_learn` then merges them into the statistics. Without a learn mode they are merged now."""
        if "learn" not in self._enable_field:
            super().update_obs_stats(samples)
        elif self._obs_norm is not None:
            self._pending_obs.append(samples["obs"])

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, Any]:
        """``learn.epochs`` passes of minibatch updates over one batch of unrolls (leaves (B, T, ...), as sampled).
        Returns the means over the minibatch updates run (0-dim tensors on the policy's device), the number of
        epochs run, the explained variance of the returns by the values at collection, and the learning rate.
        A recurrent core (``core_state`` in ``data``): the minibatches are whole unrolls (module docstring)."""
        learn = self._cfg.learn
        recurrent = "core_state" in data
        recompute = None
        if learn.recompute_adv:  # kept (B, T, ...) apart from the steps: no minibatch reads them
            data = dict(data)
            recompute = tree_map(lambda x: x.to(self._device, non_blocking=True),
                                 {key: data.pop(key) for key in RECOMPUTE_KEYS})
            recompute["boot_obs"] = self._normalized(recompute["boot_obs"])
        if recurrent:  # whole unrolls: the leaves stay (B, T, ...)
            steps = tree_map(lambda x: x.to(self._device, non_blocking=True), data)
        else:
            steps = tree_map(lambda x: x.to(self._device, non_blocking=True).flatten(0, 1), data)  # (B*T, ...)
        steps["obs"] = self._normalized(steps["obs"])
        returns = steps["return"]  # reward units
        if self._return_scale is not None:  # the scale the collector acted with: it changes after this update
            steps["return"] = returns / self._return_scale.scale()
        if recurrent:
            n, T = steps["done"].shape  # n unrolls of T steps
            n_minibatches = min(n, math.ceil(n * T / learn.minibatch_size))
        else:
            n = leading_dim(steps["obs"])
            n_minibatches = math.ceil(n / learn.minibatch_size)
        explained = explained_variance(steps["value"], steps["return"])  # the critic of collection
        stats: List[Dict[str, torch.Tensor]] = []
        epochs = 0
        for epoch in range(learn.epochs):
            if recompute is not None and epoch > 0:
                returns = self._recompute_targets(steps, recompute, returns)
            order = torch.randperm(n, device=self._device)
            for index in order.tensor_split(n_minibatches):
                if recurrent:
                    stats.append(self._update(unroll_minibatch(steps, index)))
                else:
                    stats.append(self._update(tree_map(lambda x: x.index_select(0, index), steps)))
            epochs += 1
            if learn.target_kl is not None:  # one host sync per epoch, only with the early stop on
                epoch_kl = torch.stack([s["approx_kl"] for s in stats[-n_minibatches:]]).mean()
                if epoch_kl.item() > learn.target_kl:
                    break
        for obs in self._pending_obs:  # the statistics the next collection acts with
            super().update_obs_stats({"obs": obs})
        self._pending_obs.clear()
        if self._return_scale is not None:
            self._return_scale.update(returns)
        means = {key: torch.stack([s[key] for s in stats]).mean() for key in UPDATE_STATS}
        info = {"cur_lr": self._optimizer.param_groups[0]["lr"], **means, "epochs": epochs,
                "explained_variance": explained}
        if self._return_scale is not None:
            info["return_scale"] = self._return_scale.scale()
        return info

    def _recompute_targets(self, steps: Dict[str, Any], recompute: Dict[str, Any],
                           previous: torch.Tensor) -> torch.Tensor:
        """``learn.recompute_adv`` before an epoch (:mod:`ding_lite.policy.ppo_recompute`): the previous returns
        (reward units) join the value_norm statistics, then ``steps``' ``value``, ``advantage`` and ``return``
        (divided by the new sigma_R) are replaced by those of the current critic. Returns the new returns in reward
        units, which join the statistics at the next recompute or after the update."""
        scale = torch.ones((), device=self._device)
        if self._return_scale is not None:
            self._return_scale.update(previous)
            scale = self._return_scale.scale()  # on the device: no wait for a GPU
        learn = self._cfg.learn
        values, advantages, returns = recompute_gae(
            lambda obs: self._model(obs, mode="compute_critic")["value"], steps["obs"], recompute, scale,
            learn.discount_factor, learn.gae_lambda)
        steps["value"], steps["advantage"], steps["return"] = values, advantages, returns / scale
        return returns

    def _update(self, mb: Dict[str, Any]) -> Dict[str, torch.Tensor]:
        """One gradient step on a minibatch of steps (leaves (M, ...)); its detached loss terms and diagnostics.
        A recurrent core: the M = T x b steps of b whole unrolls, rows t*b + j, replayed from ``core_state``."""
        learn = self._cfg.learn
        with autocast(self._learn_autocast, self._device):
            if "core_state" in mb:
                out = self._model.forward_unroll(mb["obs"], mb["core_state"], mb["done"], mode="compute_actor_critic")
            else:
                out = self._model(mb["obs"], mode="compute_actor_critic")
        out = tree_map(lambda x: x.float() if x.is_floating_point() else x, out)  # the losses in float32
        dist = make_dist(self._action_space, out["logit"], self._nvec, mb.get("action_mask"))
        advantages = mb["advantage"]
        if learn.normalize_advantage:
            advantages = normalized_advantages(advantages)
        policy = ppo_policy_loss(dist.log_prob(mb["action"]), mb["logp"], advantages, learn.clip_ratio)
        value_loss = ppo_value_loss(out["value"], mb["value"], mb["return"], learn.value_clip)
        entropy = dist.entropy().mean()
        total_loss = policy.loss + learn.value_weight * value_loss - learn.entropy_weight * entropy
        self._optimizer.zero_grad(set_to_none=True)
        total_loss.backward()
        grad_norm = self._grad_clip(self._params)
        adam_step(self._optimizer)
        return {"total_loss": total_loss.detach(), "policy_loss": policy.loss.detach(),
                "value_loss": value_loss.detach(), "entropy": entropy.detach(), "approx_kl": policy.approx_kl,
                "clip_fraction": policy.clip_fraction, "grad_norm": grad_norm}

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + [k for k in UPDATE_STATS if k != "total_loss"] + [
            "epochs", "explained_variance"] + (["return_scale"] if self._cfg.learn.value_norm else [])


def unroll_minibatch(steps: Dict[str, Any], index: torch.Tensor) -> Dict[str, Any]:
    """The unrolls ``index`` (b,) of a batch (leaves (B, T, ...)) as one minibatch for the replay: every step leaf
    time-major and flat, (T*b, ...) with row t*b + j, ``core_state`` (b, *state_shape) their initial states and
    ``done`` (T, b) their episode ends."""
    mb = {key: tree_map(lambda x: x.index_select(0, index).transpose(0, 1).flatten(0, 1), value)
          for key, value in steps.items() if key not in ("core_state", "done")}
    mb["core_state"] = steps["core_state"].index_select(0, index)[:, 0]
    mb["done"] = steps["done"].index_select(0, index).t()
    return mb


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """1 - Var(R - V) / Var(R), 0-dim: 1 when the values predict the returns exactly, 0 when no better than their
    mean, negative when worse; 0 when the returns do not vary."""
    var = returns.var(correction=0)
    return torch.where(var > 0, 1 - (returns - values).var(correction=0) / var.clamp_min(1e-12), var.new_zeros(()))
