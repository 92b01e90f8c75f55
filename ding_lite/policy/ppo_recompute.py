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
``terminated`` and ``truncated`` (T,) and ``boot_obs`` (2, ...), the only observations beyond x_0 .. x_{T-1} that GAE
reads: slot 0 is ``next_obs`` of the last step (x_T, or the true final observation when that step ended the episode),
slot 1 the true final observation of the one step t < T-1 truncated and not terminated (zeros when there is none).
An unroll with two such steps (``unroll_len`` longer than the episodes' time limit) stops the collector with an error
that says so, as ``obs_storage='compact'`` does.
"""
from typing import Any, Callable, Dict, Tuple

import torch

from ding_lite.rl_utils.ppo import gae
from ding_lite.torch_utils import tree_cat, tree_map
from ding_lite.torch_utils.tree import Tree

from .unroll_policy import single_final_obs

# The keys a train sample adds with learn.recompute_adv (the module docstring).
RECOMPUTE_KEYS = ("reward", "terminated", "truncated", "boot_obs")


def recompute_inputs(segment: Dict[str, Any]) -> Dict[str, Any]:
    """From a time-major segment (T, N, ...): ``reward``, ``terminated``, ``truncated`` (T, N) and ``boot_obs``
    (2, N, ...), slot 0 ``next_obs[T-1]`` and slot 1 the one final observation inside the unroll (module docstring)."""
    final = single_final_obs(segment, "policy.learn.recompute_adv: a train sample keeps one final observation per "
                                      "unroll", "policy.learn.recompute_adv=False")
    boot_obs = tree_map(lambda x, f: torch.cat([x[-1:], f], dim=0), segment["next_obs"], final)
    return {"reward": segment["reward"], "terminated": segment["terminated"], "truncated": segment["truncated"],
            "boot_obs": boot_obs}


@torch.no_grad()
def recompute_gae(critic: Callable[[Tree], torch.Tensor], obs: Tree, recompute: Dict[str, Any], scale: torch.Tensor,
                  gamma: float, lambda_: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GAE with the current critic over B unrolls of T steps, in one critic call.

    Arguments:
        - critic: normalised observations (M, ...) -> V (M,), the critic's outputs (divided by sigma_R with
          value_norm).
        - obs: the B*T observations, normalised as the learner sees them, row b*T + t.
        - recompute: the :data:`RECOMPUTE_KEYS` of the batch, leaves (B, T) and ``boot_obs`` (B, 2, ...) normalised.
        - scale: 0-dim, sigma_R (1 without value_norm): the critic's outputs times it are in reward units.
    Returns:
        ``(values, advantages, returns)``, (B*T,) each in row b*T + t: V(x_t) as the critic gives it, and GAE's
        advantages and returns in reward units.
    """
    reward = recompute["reward"]
    B, T = reward.shape
    boot_obs = tree_map(lambda x: x.flatten(0, 1), recompute["boot_obs"])  # (2B, ...), row 2b + slot
    v = critic(tree_cat([obs, boot_obs]))
    values = v[:B * T].view(B, T).t()  # (T, B)
    boot = v[B * T:].view(B, 2)
    # every row: the final observation's value (read only at the one truncated step t < T-1); the last: x_T's
    next_values = torch.cat([boot[:, 1].expand(T - 1, B), boot[:, 0].view(1, B)], dim=0)
    advantages, returns = gae(reward.t(), values * scale, next_values * scale, terminated=recompute["terminated"].t(),
                              truncated=recompute["truncated"].t(), gamma=gamma, lambda_=lambda_)
    return tuple(x.t().reshape(B * T) for x in (values, advantages, returns))
