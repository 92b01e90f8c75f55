"""DQN (Mnih et al. 2015) with the Rainbow parts a config turns on one by one (``ding_lite/rl_utils/dqn.py``):

* double Q-learning (``learn.double``: on by default, as in DI-engine and Tianshou; SB3's and CleanRL's DQN are not
  double, ``double=False`` to compare with them),
* a dueling head (``model.dueling``),
* n-step targets (``policy.nstep``, the transitions of :mod:`ding_lite.rl_utils.nstep`: an episode end cuts the
  window, a termination stops the bootstrap, a truncation bootstraps from the true final observation),
* prioritised replay with importance weights (``policy.priority``, ``policy.priority_IS_weight``: the buffer's),
* a target network copied every ``learn.target_update_freq`` updates, or moved softly by ``learn.target_theta``,
* epsilon-greedy collection on a linear or exponential schedule over the run's env steps (``collect.eps``),
* Huber or MSE TD loss (``learn.loss``), gradient clipping,
* QR-DQN (Dabney et al. 2018), the distributional variant, with ``model.num_quantiles`` > 0: the same policy, its
  critic's N quantiles trained with the quantile Huber loss (chosen over C51: no support bounds to set per game and
  no projection step; SB3-contrib ships it).

Discrete and multi-discrete actions (one set of Q-values per head, each head's target and loss on its own, the loss
averaged over heads: action branching); action masks (``policy.action_mask_key``): an invalid action is never the
greedy one, never an epsilon draw and never the max of a target (the next observation's mask travels with the
transition). The model is ``'qnet'`` (:mod:`ding_lite.model.qnet`): ding_lite's encoders ('auto': the Nature conv on
frames) and the head. No recurrent core (transitions are sampled one by one, as DQN's are).
"""
import copy
import math
from typing import Any, Dict, List, Optional, Tuple

import torch
from easydict import EasyDict

from ding_lite.rl_utils.dqn import masked_argmax, q_target, quantile_huber_loss, quantile_target, td_loss
from ding_lite.torch_utils import GradClipper, adam_step, make_optimizer, sample_action, tree_map
from ding_lite.torch_utils.precision import AUTOCAST_SETTINGS, autocast, describe_autocast, resolve_autocast
from ding_lite.torch_utils.tree import leading_dim
from ding_lite.utils import POLICY_REGISTRY, ConfigError

from .action_mask import split_mask
from .base_policy import Policy
from .transitions import TransitionHooks
from .checks import check_optimizer, check_positive

EPS_TYPES = ("linear", "exp")


def epsilon_at(eps: EasyDict, env_step: int) -> float:
    """The exploration rate after ``env_step`` env steps: from ``start`` to ``end`` over ``decay`` env steps,
    linearly (then ``end``), or exponentially, end + (start - end) exp(-env_step / decay)."""
    if eps.type == "linear":
        return eps.end + (eps.start - eps.end) * max(0.0, 1.0 - env_step / eps.decay)
    return eps.end + (eps.start - eps.end) * math.exp(-env_step / eps.decay)


@POLICY_REGISTRY.register("dqn")
class DQNPolicy(TransitionHooks, Policy):
    """DQN and its Rainbow parts, QR-DQN with ``model.num_quantiles`` (module docstring)."""

    supports_priority = True
    supports_action_mask = True

    config = dict(
        type="dqn",
        # (int) Env steps of uniformly random (valid) actions before the first update.
        random_collect_size=1000,
        unroll_len=1,
        # (int) n-step targets: sum_{k<m} gamma^k r_{t+k} + gamma^m max Q'(s_{t+m}), m <= nstep cut by an episode end.
        nstep=1,
        learn=dict(
            update_per_collect=1,
            batch_size=64,
            learning_rate=0.0001,
            # (bool) Double Q-learning: the online network chooses the target's action, the target network values it.
            double=True,
            # (str) TD loss: 'huber' (the Nature DQN's clipped error) or 'mse'. QR-DQN uses its quantile Huber loss.
            loss="huber",
            # (int) Updates between copies of the online network into the target network (hard update).
            target_update_freq=500,
            # (float) None: the hard copies above. A number in (0, 1]: a soft update after every update instead,
            # target <- (1 - theta) target + theta online.
            target_theta=None,
            # (str) Gradient clipping: None, 'clip_norm' (global L2 norm) or 'clip_value' (each element).
            grad_clip_type="clip_norm",
            # (float) Threshold of the gradient clipping (SB3's max_grad_norm).
            clip_value=10.0,
            # (str) Optimiser: 'adam' or 'rmsprop'.
            optim="adam",
            # (str) None: the learner's forward passes (online and target networks) in float32. 'bfloat16': under
            # torch.autocast (convolutions and matmuls in bfloat16; the Q-values, targets and loss in float32; the
            # weights and the optimiser float32). 'auto': bfloat16 for a conv encoder on a CPU with AMX or AVX-512
            # BF16 (or a GPU with bfloat16), else float32.
            autocast=None,
        ),
        collect=dict(
            n_sample=4,
            # (str) The acting forward passes (collection and evaluation), as learn.autocast.
            autocast=None,
            # (dict) Epsilon-greedy exploration over the run's env steps: 'linear' from start to end over decay env
            # steps, or 'exp' (end + (start - end) exp(-env_step / decay)).
            eps=dict(type="linear", start=1.0, end=0.05, decay=10000),
        ),
        eval=dict(
            # (float) Evaluation acts greedily, except with this probability per step a uniformly random valid action.
            epsilon=0.0,
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    )

    @classmethod
    def check_config(cls, cfg: EasyDict, path: str) -> None:
        super().check_config(cfg, path)
        learn, eps = cfg.learn, cfg.collect.eps
        check_optimizer(learn, f"{path}.learn")
        check_positive(learn, ("learning_rate", "clip_value", "target_update_freq"), f"{path}.learn")
        if learn.loss not in ("huber", "mse"):
            raise ConfigError(f"{path}.learn.loss={learn.loss!r}: must be 'huber' or 'mse'")
        theta = learn.target_theta
        if theta is not None and not (isinstance(theta, (int, float)) and 0 < theta <= 1):
            raise ConfigError(f"{path}.learn.target_theta={theta!r}: must be in (0, 1] (a soft update each update), "
                              f"or None for hard copies every learn.target_update_freq updates")
        if eps.type not in EPS_TYPES:
            raise ConfigError(f"{path}.collect.eps.type={eps.type!r}: must be 'linear' or 'exp'")
        if not (0 <= eps.end <= eps.start <= 1) or not eps.decay > 0:
            raise ConfigError(f"{path}.collect.eps: start={eps.start}, end={eps.end}, decay={eps.decay}: need "
                              f"0 <= end <= start <= 1 and decay > 0 (env steps)")
        if not 0 <= cfg.eval.epsilon <= 1:
            raise ConfigError(f"{path}.eval.epsilon={cfg.eval.epsilon}: must be in [0, 1]")
        for section in ("learn", "collect"):
            if cfg[section].autocast not in AUTOCAST_SETTINGS:
                raise ConfigError(f"{path}.{section}.autocast={cfg[section].autocast!r}: must be None (float32), "
                                  f"'bfloat16' or 'auto' (bfloat16 for a conv encoder where the device has native "
                                  f"bfloat16 matmuls)")
        if isinstance(cfg.nstep, bool) or not isinstance(cfg.nstep, int) or cfg.nstep < 1:
            raise ConfigError(f"{path}.nstep={cfg.nstep!r}: must be an integer >= 1 (1: one-step targets)")
        if cfg.unroll_len != 1:
            raise ConfigError(f"{path}.unroll_len={cfg.unroll_len}: DQN trains on single transitions; set it to 1")
        if cfg.random_collect_size < 0:
            raise ConfigError(f"{path}.random_collect_size={cfg.random_collect_size}: must be >= 0")

    def default_model(self) -> Tuple[str, List[str]]:
        return "qnet", ["ding_lite.model.qnet"]

    # ---- acting ------------------------------------------------------------------------------------------------
    def _forward(self, model: torch.nn.Module, obs: Any, dtype: Optional[str]) -> Dict[str, torch.Tensor]:
        """``model(obs)`` under autocast ``dtype`` (None: float32), its floating outputs float32."""
        if dtype is None:
            return model(obs)
        with autocast(dtype, self._device):
            out = model(obs)
        return {k: v.float() if v.is_floating_point() else v for k, v in out.items()}

    def _init_collect(self) -> None:
        super()._init_collect()
        self._act_autocast = resolve_autocast(self._cfg.collect.autocast, self._device, self._model)

    def _init_eval(self) -> None:
        super()._init_eval()
        self._act_autocast = resolve_autocast(self._cfg.collect.autocast, self._device, self._model)

    def precision_note(self) -> str:
        """What the forward passes run in, for the run's first line: 'learner bfloat16, acting bfloat16'."""
        return describe_autocast(getattr(self, "_learn_autocast", None), getattr(self, "_act_autocast", None))

    def _heads(self) -> List[int]:
        return list(self._model.nvec)

    def _split_mask(self, obs: Any) -> Tuple[Any, Optional[torch.Tensor]]:
        nvec = self._heads() if len(self._heads()) > 1 else None
        obs, mask = split_mask(obs, self._cfg.action_mask_key, nvec)
        return obs, None if mask is None else mask.to(self._device)

    def _greedy(self, q: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """The greedy action (N,) or per head (N, H) of Q-values (N, sum(nvec)) under ``mask``."""
        heads = self._heads()
        masks = [None] * len(heads) if mask is None else mask.split(heads, -1)
        actions = [masked_argmax(chunk, m) for chunk, m in zip(q.split(heads, -1), masks)]
        return actions[0] if len(heads) == 1 else torch.stack(actions, -1)

    def _random(self, n: int, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """Uniformly random valid actions (a draw from equal logits under the mask)."""
        heads = self._heads()
        space = "discrete" if len(heads) == 1 else "multi_discrete"
        logit = torch.zeros(n, sum(heads), device=self._device)
        return sample_action(space, logit, None if len(heads) == 1 else heads, mask)

    def _explore(self, action: torch.Tensor, mask: Optional[torch.Tensor], epsilon: float) -> torch.Tensor:
        if epsilon <= 0:
            return action
        n = action.shape[0]
        explore = torch.rand(n, device=self._device) < epsilon
        return torch.where(explore.view(-1, *[1] * (action.dim() - 1)), self._random(n, mask), action)

    @torch.no_grad()
    def _forward_collect(self, obs: Any, random_action: bool = False, env_step: int = 0,
                         **kwargs: Any) -> Dict[str, Any]:
        """Epsilon-greedy actions at the schedule's epsilon for ``env_step`` (the collector passes the run's env
        steps); uniformly random valid ones during the warm-up (``random_action``)."""
        obs, mask = self._split_mask(obs)
        obs = self._on_device(obs)
        n = leading_dim(obs)
        if random_action:
            return {"action": self._random(n, mask)}
        greedy = self._greedy(self._forward(self._model, obs, self._act_autocast)["q"], mask)
        return {"action": self._explore(greedy, mask, epsilon_at(self._cfg.collect.eps, env_step))}

    @torch.no_grad()
    def _forward_eval(self, obs: Any) -> Dict[str, Any]:
        obs, mask = self._split_mask(obs)
        greedy = self._greedy(self._forward(self._model, self._on_device(obs), self._act_autocast)["q"], mask)
        return {"action": self._explore(greedy, mask, float(self._cfg.eval.epsilon))}

    # ---- learn -------------------------------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._target_model = copy.deepcopy(self._model).requires_grad_(False)
        self._params = list(self._model.parameters())
        self._optimizer = make_optimizer(learn.optim, self._params, learn.learning_rate)
        self._grad_clip = GradClipper(learn.grad_clip_type, learn.clip_value)
        self._learn_autocast = resolve_autocast(learn.autocast, self._device, self._model)
        self._updates = 0

    def _forward_learn(self, data: Dict[str, Any]) -> Dict[str, Any]:
        """One update on a batch of transitions (leaves (B, ...)), then the target network's update when due."""
        learn = self._cfg.learn
        data = tree_map(lambda x: x.to(self._device, non_blocking=True), data)
        obs, next_obs = self._normalized(data["obs"]), self._normalized(data["next_obs"])
        reward, terminated = data["reward"], data["terminated"]
        discount = data.get("discount", torch.full_like(reward, learn.discount_factor))
        weight = data.get("weight")
        heads = self._heads()
        action = data["action"].view(reward.shape[0], len(heads)).long()
        next_mask = data.get("next_action_mask")
        next_masks = [None] * len(heads) if next_mask is None else next_mask.split(heads, -1)
        dtype = self._learn_autocast
        out = self._forward(self._model, obs, dtype)
        with torch.no_grad():
            target_out = self._forward(self._target_model, next_obs, dtype)
            online_next = self._forward(self._model, next_obs, dtype) if learn.double else None
        quantile = "quantiles" in out
        losses, errors, q_means = [], [], []
        start = 0
        for h, (size, nmask) in enumerate(zip(heads, next_masks)):
            part = slice(start, start + size)
            start += size
            a = action[:, h]
            if quantile:
                taken = out["quantiles"][:, part].gather(1, a.view(-1, 1, 1).expand(-1, 1, out["quantiles"].shape[-1]))
                target = quantile_target(target_out["quantiles"][:, part], reward, discount, terminated, nmask,
                                         None if online_next is None else online_next["quantiles"][:, part])
                result = quantile_huber_loss(taken.squeeze(1), target, weights=weight)
            else:
                q = out["q"][:, part]
                taken = q.gather(1, a.view(-1, 1)).squeeze(1)
                target = q_target(target_out["q"][:, part], reward, discount, terminated,
                                  None if online_next is None else online_next["q"][:, part], nmask)
                result = td_loss(taken, target, learn.loss, weight)
            losses.append(result.loss)
            errors.append(result.td_error)
            q_means.append(out["q"][:, part].gather(1, a.view(-1, 1)).mean().detach())
        loss = torch.stack(losses).mean()  # action branching: the heads' losses averaged
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = self._grad_clip(self._params)
        adam_step(self._optimizer)
        self._updates += 1
        self._update_target()
        info = {"cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": loss.detach(),
                "q_mean": torch.stack(q_means).mean(), "grad_norm": grad_norm}
        if self._cfg.priority:
            info["priority"] = torch.stack(errors).mean(0)
        return info

    def _update_target(self) -> None:
        theta = self._cfg.learn.target_theta
        if theta is not None:
            with torch.no_grad():
                for target, online in zip(self._target_model.parameters(), self._params):
                    target.lerp_(online, float(theta))
        elif self._updates % self._cfg.learn.target_update_freq == 0:
            self._target_model.load_state_dict(self._model.state_dict())

    def _monitor_vars_learn(self) -> List[str]:
        return super()._monitor_vars_learn() + ["q_mean", "grad_norm"]

    def _state_dict_learn(self) -> Dict[str, Any]:
        return {**super()._state_dict_learn(), "target_model": self._target_model.state_dict(),
                "updates": self._updates}

    def _load_state_dict_learn(self, state: Dict[str, Any]) -> None:
        super()._load_state_dict_learn(state)
        self._target_model.load_state_dict(state["target_model"])
        self._updates = int(state["updates"])
