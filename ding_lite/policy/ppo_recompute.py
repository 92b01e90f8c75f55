"""PPO's ``learn.recompute_adv`` (Tianshou's and DI-engine's option of the same name): the advantages and returns of
a batch recomputed with the current critic before every epoch after the first.

At collection GAE runs with the values of the critic that collected (:meth:`PPOPolicy._get_train_sample`). With the
option on, each epoch after the first starts by evaluating, under no_grad and in one batched critic call, V(x_t) of
every step and the bootstrap values of the rows GAE reads (the true final observation after a truncation, x_T after
the unroll's last step; nothing after a termination), and runs :func:`ding_lite.rl_utils.gae` again on the stored
rewards and episode ends. What the epoch's minibatches then see, as Tianshou (``A2CPolicy._compute_returns``, called
again by ``PPOPolicy.learn``) and DI-engine (``PPOPolicy._forward_learn``) do it:

* ``value``, the value clip's reference (``learn.value_clip``): the recomputed V(x_t), which replaces the value of
  collection; ``advantage`` and ``return``: the recomputed ones.
* ``learn.value_norm``: the critic's outputs are multiplied by the current sigma_R for GAE and the new returns are
  divided by it; then the new (unnormalised) returns join the running statistics, at every recompute, as in both
  (an update of E epochs merges its batch's returns E times: the collection's, then each recompute's).
* ``env.normalize_obs``: the observations go through the learner's normalisation, the one its minibatches see (the
  statistics of the collection: they change only after the update).

What a train sample keeps for this, only with the option on (the keys of :data:`RECOMPUTE_KEYS`): ``reward``,
``terminated`` and ``truncated`` (T,) and ``boot_obs`` (T, ...), the observation reached after each step (its
``next_obs``: the true final observation where the step ended an episode). GAE reads it only where the trace is cut
without a termination (a truncation, and the unroll's last step), and only those rows go through the critic; the
others are kept so that any number of time-limit truncations fits in one unroll (Pendulum's 200-step episodes in a
DI-engine unroll of 500 steps), at the price of twice the observation memory of a batch, with the option on only.
"""
from typing import Any, Callable, Dict, Tuple

import torch

from ding_lite.rl_utils.ppo import gae, gae_next_value_rows
from ding_lite.torch_utils import tree_cat, tree_map
from ding_lite.torch_utils.tree import Tree


# The keys a train sample adds with learn.recompute_adv (the module docstring).
RECOMPUTE_KEYS = ("reward", "terminated", "truncated", "boot_obs")


def recompute_inputs(segment: Dict[str, Any]) -> Dict[str, Any]:
    """From a time-major segment (T, N, ...): ``reward``, ``terminated``, ``truncated`` (T, N) and ``boot_obs``
    (T, N, ...), the segment's ``next_obs`` (module docstring)."""
    return {"reward": segment["reward"], "terminated": segment["terminated"], "truncated": segment["truncated"],
            "boot_obs": segment["next_obs"]}


@torch.no_grad()
def recompute_gae(critic: Callable[[Tree], torch.Tensor], obs: Tree, recompute: Dict[str, Any], scale: torch.Tensor,
                  gamma: float, lambda_: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE with the current critic over B unrolls of T steps, in one critic call.

    Arguments:
        - critic: normalised observations (M, ...) -> V (M,), the critic's outputs (divided by sigma_R with
          value_norm).
        - obs: the B*T observations, normalised as the learner sees them, row b*T + t.
        - recompute: the :data:`RECOMPUTE_KEYS` of the batch, leaves (B, T, ...), ``boot_obs`` normalised.
        - scale: 0-dim, sigma_R (1 without value_norm): the critic's outputs times it are in reward units.
    Returns:
        ``(values, advantages, returns)``, (B*T,) each in row b*T + t: V(x_t) as the critic gives it, and GAE's
        advantages and returns in reward units.
    """
    reward, terminated, truncated = (recompute[k].t() for k in ("reward", "terminated", "truncated"))  # (T, B)
    T, B = reward.shape
    t, b = gae_next_value_rows(terminated, truncated).nonzero(as_tuple=True)
    v = critic(tree_cat([obs, tree_map(lambda x: x[b, t], recompute["boot_obs"])]))
    values = v[:B * T].view(B, T).t()
    next_values = torch.zeros_like(values)
    next_values[t, b] = v[B * T:]
    advantages, returns = gae(reward, values * scale, next_values * scale, terminated=terminated, truncated=truncated,
                              gamma=gamma, lambda_=lambda_)
    return tuple(x.t().reshape(B * T) for x in (values, advantages, returns))
